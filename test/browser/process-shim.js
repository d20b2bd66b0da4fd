// The `process` that tape expects, in the test page's bundle (scripts/build-browser.js --tests).
export const process = {
  env: {},
  argv: [],
  browser: true,
  cwd: () => '/',
  nextTick: (fn, ...args) => queueMicrotask(() => fn(...args))
}
