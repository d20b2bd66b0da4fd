// The abstract-level compliance suite with default options, through the
// package's entry: the bundle that `require('lsm-level')` loads
// (scripts/build-node.js), whose flushes run on the worker bundle's threads.
import * as path from 'node:path'
import type { LsmLevel } from '../index'
import { runCompliance } from './util/compliance'

// dist/test/ -> dist/node/
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bundle = require(path.join(__dirname, '..', 'node', 'lsm-level.js')) as { LsmLevel: typeof LsmLevel }

runCompliance('default', {}, bundle.LsmLevel)
