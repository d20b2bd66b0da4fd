// lsm-level for Node: the abstract-level database of adapters/lsm-level.ts over node:fs,
// with worker threads for flushes and compactions (hosts/node/platform.ts), and
// multiProcess opens (adapters/multi-process/).
// The browser entry is adapters/browser-level.ts.
import './hosts/node/platform'
import './adapters/multi-process/index'
import { LsmLevel } from './adapters/lsm-level'

export * from './adapters/lsm-level'
export default LsmLevel
