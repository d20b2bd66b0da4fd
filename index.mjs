// ESM entry point: re-exports the CommonJS build (dist/index.js), so that
// `import { Level } from 'lsm-level'` and `require('lsm-level')` give the same class.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const cjs = require('./dist/index.js')

export const LsmLevel = cjs.LsmLevel
export const Level = cjs.Level
export default cjs.LsmLevel
