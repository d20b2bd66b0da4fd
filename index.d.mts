// Typings of the ES module entry point (index.mjs): the CommonJS build's
// exports, with the class as the default export (as index.mjs does at run time).
import { LsmLevel } from './dist/index.js'

export * from './dist/index.js'
export default LsmLevel
