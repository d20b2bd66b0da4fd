// The change feed (lib/change-feed.ts) and log retention (lib/wal/log-retention.ts):
// batches in commit order with their sequence numbers, clear() as one op, live
// following, resuming across restarts from retained logs, the errors for a
// `since` that is not retained or is ahead of the database, and a seeded run in
// which a consumer applies the feed to a model through flushes, compactions
// and restarts and ends equal to the database. SEED=<n> replays.
import test from 'tape'
import * as fs from 'node:fs'
import { randomBytes } from 'node:crypto'
import { LsmLevel, type ChangeBatch } from '../index'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

type Db = LsmLevel<string, string>

/** Applies a feed batch to a model of the database (keys and values as latin1 strings). */
function apply (model: Map<string, string>, batch: ChangeBatch): void {
  for (const op of batch.ops) {
    if (op.type === 'put') model.set(op.key.toString('latin1'), op.value!.toString('latin1'))
    else if (op.type === 'del') model.delete(op.key.toString('latin1'))
    else {
      const start = op.key.toString('latin1')
      const end = op.end?.toString('latin1')
      for (const k of [...model.keys()]) if (k >= start && (end === undefined || k < end)) model.delete(k)
    }
  }
}

async function same (t: test.Test, db: Db, model: Map<string, string>, msg: string): Promise<void> {
  const all = await db.iterator().all()
  const sorted = [...model.entries()].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
  t.same(all, sorted, msg)
}

/** Reads `n` batches of a feed (then stops it). */
async function take (feed: AsyncGenerator<ChangeBatch>, n: number): Promise<ChangeBatch[]> {
  const out: ChangeBatch[] = []
  if (n === 0) return out
  for await (const b of feed) {
    out.push(b)
    if (out.length === n) break
  }
  return out
}

test('the feed lists batches in commit order, a clear() as one range-delete op', async (t) => {
  const db: Db = new LsmLevel(tempDir())
  await db.open()
  t.equal(db.sequence, 0, 'a new database is at sequence 0')
  await db.put('a', '1')
  await db.batch([{ type: 'put', key: 'b', value: '2' }, { type: 'del', key: 'a' }])
  await db.clear({ gte: 'a', lt: 'c' })
  await db.put('c', '3')
  t.equal(db.sequence, 5, 'one sequence number per op')
  const got = await take(db.changes({ since: 0 }), 4)
  t.same(got.map((b) => b.seq), [1, 3, 4, 5], 'seq is each batch\'s last sequence number')
  t.same(got[1].ops.map((o) => [o.type, o.key.toString()]), [['put', 'b'], ['del', 'a']], 'a batch\'s ops in order')
  t.same(got[2].ops.map((o) => [o.type, o.key.toString(), o.end?.toString()]), [['clear', 'a', 'c']], 'clear() is one op')
  const later = await take(db.changes({ since: 3 }), 2)
  t.same(later.map((b) => b.seq), [4, 5], 'since: the batches after it')
  await db.close()
})

test('the feed follows live writes and ends when the database closes', async (t) => {
  const db: Db = new LsmLevel(tempDir(), { writeBufferSize: 4096 })
  await db.open()
  const seen: number[] = []
  const reading = (async () => { for await (const b of db.changes()) seen.push(b.seq) })()
  for (let i = 0; i < 2000; i++) await db.put('k' + i, 'v'.repeat(20))
  while (seen.length < 2000) await new Promise((resolve) => setTimeout(resolve, 5))
  t.same(seen, Array.from({ length: 2000 }, (_, i) => i + 1), '2,000 live writes, in order, across log rotations')
  await db.close()
  await reading
  t.pass('the feed ended at close')
})

test('without retention a flushed history is gone; with it, the feed resumes after a restart', async (t) => {
  const dir = tempDir()
  let db: Db = new LsmLevel(dir, { writeBufferSize: 4096 })
  await db.open()
  for (let i = 0; i < 500; i++) await db.put('k' + i, 'v'.repeat(40))
  await db.flush()
  try {
    await take(db.changes({ since: 0 }), 1)
    t.fail('a flushed history was listed')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_CHANGES_NOT_RETAINED', 'LEVEL_CHANGES_NOT_RETAINED')
    t.ok(/checkpoint/.test((err as Error).message), 'the error says to start from a checkpoint')
  }
  try {
    await take(db.changes({ since: db.sequence + 1 }), 1)
    t.fail('a since ahead of the database was taken')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'a since ahead of the database is refused')
  }
  await db.close()

  const dir2 = tempDir()
  db = new LsmLevel(dir2, { writeBufferSize: 4096, retainLogBytes: 1024 * 1024 })
  await db.open()
  for (let i = 0; i < 500; i++) await db.put('k' + i, 'v'.repeat(40))
  await db.flush()
  await db.close()
  db = new LsmLevel(dir2, { writeBufferSize: 4096, retainLogBytes: 1024 * 1024 })
  await db.open()
  const logs = fs.readdirSync(dir2).filter((n) => n.endsWith('.log')).length
  t.ok(logs > 3, `${logs} logs retained across the restart`)
  const all = await take(db.changes({ since: 0 }), 500)
  t.same(all.map((b) => b.seq), Array.from({ length: 500 }, (_, i) => i + 1), 'every batch since the first, after the restart')
  const recovery = db.stats().recovery
  t.equal(recovery.recordsReplayed, 0, 'retained logs are not replayed at open')
  await db.close()
})

test('retention by bytes keeps the newest retired logs within the limit', async (t) => {
  const dir = tempDir()
  const db: Db = new LsmLevel(dir, { writeBufferSize: 4096, retainLogBytes: 16 * 1024 })
  await db.open()
  // Values that do not compress: with compressible ones and these tiny buffers, a compaction
  // writes more tables than it reserved file numbers for (a bug of its own, reported apart).
  for (let i = 0; i < 3000; i++) await db.put('k' + i, randomBytes(20).toString('hex'))
  await db.flush()
  await db.engine.waitForIdle()
  await new Promise((resolve) => setTimeout(resolve, 50))
  const bytes = fs.readdirSync(dir).filter((n) => n.endsWith('.log')).reduce((s, n) => s + fs.statSync(`${dir}/${n}`).size, 0)
  t.ok(bytes <= 16 * 1024 + 8192, `${bytes} bytes of logs kept (limit 16 KiB of retired logs, plus the live log)`)
  let oldest = -1
  try {
    await take(db.changes({ since: 0 }), 1)
  } catch (err) {
    oldest = Number(/from sequence number (\d+)/.exec((err as Error).message)?.[1])
  }
  t.ok(oldest > 1, `the feed starts at ${oldest}`)
  const rest = await take(db.changes({ since: oldest - 1 }), 3000 - oldest + 1)
  t.equal(rest[rest.length - 1].seq, 3000, 'and runs without a hole to the last write')
  await db.close()
})

test('seeded: a consumer applying the feed through flushes, compactions, clears and restarts converges', async (t) => {
  const rnd = new Random(seed)
  const dir = tempDir()
  const options = { writeBufferSize: 8192, level0CompactionTrigger: 2, retainLogBytes: 64 * 1024 * 1024 }
  const model = new Map<string, string>()
  let applied = 0
  for (let round = 0; round < 4; round++) {
    const db: Db = new LsmLevel(dir, options)
    await db.open()
    const reading = (async () => {
      for await (const b of db.changes({ since: applied })) {
        apply(model, b)
        applied = b.seq
        if (rnd.int(50) === 0) await new Promise((resolve) => setTimeout(resolve, 2)) // a slow consumer now and then
      }
    })()
    const key = (): string => 'k' + String(rnd.int(500)).padStart(4, '0')
    for (let i = 0; i < 1500; i++) {
      const r = rnd.int(100)
      if (r < 60) await db.put(key(), rnd.bytes(1 + rnd.int(30)).toString('hex'))
      else if (r < 80) await db.del(key())
      else if (r < 98) await db.batch([{ type: 'put', key: key(), value: 'b' }, { type: 'del', key: key() }, { type: 'put', key: key(), value: 'c' }])
      else { const a = key(); await db.clear({ gte: a, lt: a.slice(0, 3) + 'z' }) }
    }
    while (applied < db.sequence) await new Promise((resolve) => setTimeout(resolve, 5))
    await same(t, db, model, `round ${round}: the feed's model equals the database at sequence ${db.sequence}`)
    await db.close()
    await reading
  }
})
