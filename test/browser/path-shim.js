// The `path` that tape expects (for stack traces), in the test page's bundle.
export const sep = '/'
export default { sep }
