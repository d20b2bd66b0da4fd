// Stands in, in the browser bundle, for the Node-only modules that adapters/lsm-level.ts
// loads on demand (repair, destroy, importLevelDB): they work on node:fs
// directories, not on OPFS.
import { levelError } from '../../lib/errors'

function notSupported (): never {
  throw levelError('LEVEL_NOT_SUPPORTED', 'repair(), destroy() and importLevelDB() are available in Node only')
}

export const repair = notSupported
export const destroy = notSupported
export const importLevelDB = notSupported
