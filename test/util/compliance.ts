// Runs the shared abstract-level compliance suite against LsmLevel with the given
// engine options, each database in its own directory under one temporary root.
// `Db` is the class under test: the compiled modules by default, or the
// package's bundle (dist/node/lsm-level.js, what users load).
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../../index'
import { processCounters } from '../../lib/db'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

export function runCompliance (name: string, engineOptions: Record<string, unknown>, Db: typeof LsmLevel = LsmLevel): void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `lsm-compliance-${name}-`))
  let n = 0
  suite({
    test,
    factory (options?: Record<string, unknown>) {
      return new Db(path.join(root, String(n++)), { ...engineOptions, ...options })
    }
  })
  test(`compliance (${name}): background work during the suite`, (t) => {
    t.comment(`flushes ${processCounters.flushes}, compactions ${processCounters.compactions}, trivial moves ${processCounters.trivialMoves}`)
    if (engineOptions.writeBufferSize !== undefined) {
      t.ok(processCounters.flushes >= 20, 'memtables were flushed inside the suite')
      if (engineOptions.compaction === 'tiered') {
        t.ok(processCounters.compactions >= 20, 'tiered merges of sorted runs ran inside the suite')
      } else {
        t.ok(processCounters.compactions >= 3, 'merging compactions ran inside the suite')
        t.ok(processCounters.compactions + processCounters.trivialMoves >= 20, 'tables moved down the levels inside the suite')
      }
    } else {
      t.pass('default options: the suite fits in memtables')
    }
    t.end()
  })
  test.onFinish(() => {
    fs.rmSync(root, { recursive: true, force: true })
  })
}
