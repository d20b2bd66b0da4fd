// The `process` that tape expects, in the test page's bundle (scripts/build-browser.js --tests).
const shim = {
  env: {},
  argv: [],
  browser: true,
  cwd: () => '/',
  nextTick: (fn, ...args) => queueMicrotask(() => fn(...args))
}

export { shim as process }
