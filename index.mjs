// ESM entry point: re-exports the CommonJS bundle (dist/node/lsm-level.js), so that
// `import { Level } from 'lsm-level'` and `require('lsm-level')` give the same class.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const cjs = require('./dist/node/lsm-level.js')

export const LsmLevel = cjs.LsmLevel
export const Level = cjs.Level
export const DirectoryStore = cjs.DirectoryStore
export const S3Store = cjs.S3Store
export const ReplicaLevel = cjs.ReplicaLevel
export default cjs.LsmLevel
