// Runs the shared abstract-level compliance suite against LsmLevel with the given
// engine options, each database in its own directory under one temporary root.
// `Db` is the class under test: the compiled modules by default, or the
// package's bundle (dist/node/lsm-level.js, what users load).
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../../index'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

/** Engine options so small that flushes, compactions and block cache evictions happen inside the suite's own tests. */
export const TINY_OPTIONS = {
  writeBufferSize: 1024,
  blockSize: 256,
  targetFileSize: 1024,
  maxBytesForLevelBase: 4096,
  cacheSize: 16 * 1024,
  level0CompactionTrigger: 1
}

export function runCompliance (name: string, engineOptions: Record<string, unknown>, Db: typeof LsmLevel = LsmLevel): void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `lsm-compliance-${name}-`))
  let n = 0
  // Counted from the engines of the suite's own databases, every one opened
  // (closed or not), so that the counts come from the module copy under test:
  // the bundle or the compiled modules.
  const engines: Array<{ counters: { flushes: number, compactions: number, trivialMoves: number } }> = []
  suite({
    test,
    factory (options?: Record<string, unknown>) {
      const db = new Db(path.join(root, String(n++)), { ...engineOptions, ...options })
      db.on('open', () => engines.push(db.engine))
      return db
    }
  })
  test(`compliance (${name}): background work during the suite`, (t) => {
    const seen = { flushes: 0, compactions: 0, trivialMoves: 0 }
    for (const { counters: c } of engines) {
      seen.flushes += c.flushes
      seen.compactions += c.compactions
      seen.trivialMoves += c.trivialMoves
    }
    t.comment(`flushes ${seen.flushes}, compactions ${seen.compactions}, trivial moves ${seen.trivialMoves}`)
    if (engineOptions.writeBufferSize !== undefined) {
      t.ok(seen.flushes >= 20, 'memtables were flushed inside the suite')
      if (engineOptions.compaction === 'tiered') {
        t.ok(seen.compactions >= 20, 'tiered merges of sorted runs ran inside the suite')
      } else {
        // At least one: how many run before the suite's databases close depends on the CPU it gets (2 of 3 with a browser test beside it).
        t.ok(seen.compactions >= 1, 'merging compactions ran inside the suite')
        t.ok(seen.compactions + seen.trivialMoves >= 20, 'tables moved down the levels inside the suite')
      }
    } else {
      // The suite's writes fit in memtables, and its databases close before a
      // replayed log's flush starts: no background work to count (the
      // tiny-buffer and tiered runs have it). What is checked: the suite ran
      // on databases of the class under test.
      t.ok(engines.length >= 100, `the suite opened ${engines.length} databases of the class under test`)
    }
    t.end()
  })
  test.onFinish(() => {
    fs.rmSync(root, { recursive: true, force: true })
  })
}
