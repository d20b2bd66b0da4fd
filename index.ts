// lsm-level for Node: the abstract-level database of level.ts over node:fs,
// with worker threads for flushes and compactions (lib/node-platform.ts).
// The browser entry is browser.ts.
import './lib/node-platform'
import { LsmLevel } from './level'

export * from './level'
export default LsmLevel
