// lsm-level inside a dedicated Web Worker (`lsm-level/browser/in-worker`): the
// engine itself, on the Origin Private File System, with no message hop per
// operation; getSync() works. For code on a page, lsm-level/browser's
// BrowserLevel runs the same engine in a worker of its own.
export { OpfsLevel, OpfsLevel as Level, type OpfsLevelOptions } from './adapters/opfs-level'
export { OpfsLevel as default } from './adapters/opfs-level'
