// lsm-level in the browser (`lsm-level/browser`): BrowserLevel, an
// abstract-level database for a page or any worker, whose engine runs on the
// Origin Private File System in a dedicated Web Worker that it starts (the
// worker entry, bundled as lsm-level-worker.js beside this one).
export * from './adapters/browser-level'
export { default } from './adapters/browser-level'
