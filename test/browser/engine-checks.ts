// Engine checks in a real browser (test/browser.test.ts loads page.ts with
// ?run=engine&seed=N): what the Node engine and model tests check, through the
// main thread's BrowserLevel on OPFS, with buffers small enough that the data
// goes through flushes and compactions in the engine's worker:
//   - random writes (puts, deletes, batches, range clears) against a model, the
//     database reopened now and then, read back whole forward and backward;
//   - snapshots across a flush and a compaction;
//   - a range delete across a compaction, and a snapshot taken before it;
//   - a burst of flushes on a new database (a write buffer smaller than each
//     batch: a new log and a flush per write), which takes new files faster
//     than the OPFS pool makes them: the writes wait for the pool, none fails.
// Seeded: the seed is printed, and ?seed=N replays a run.
import test from 'tape'
import { BrowserLevel, type BrowserLevelOptions } from '../../adapters/browser-level'
import { Random } from '../util/random'

const TINY = {
  writeBufferSize: 2048,
  blockSize: 256,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  level0CompactionTrigger: 2
}

/** The burst: a flush per batch, in a row on a new database. */
const BURST = { writeBufferSize: 4096, targetFileSize: 512, blockSize: 256, maxBytesForLevelBase: 8192, level0CompactionTrigger: 2 }
const BURST_BATCHES = 200
const BURST_BATCH_SIZE = 40

type Worker = NonNullable<BrowserLevelOptions['worker']>

/** Every entry, forward and backward, against the model's sorted entries. */
async function checkAll (t: test.Test, db: BrowserLevel, model: Map<string, string>, what: string): Promise<void> {
  const expected = [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  t.same(await db.iterator().all(), expected, `${what}: every entry, forward (${expected.length})`)
  t.same(await db.iterator({ reverse: true }).all(), expected.slice().reverse(), `${what}: every entry, backward`)
}

export function registerEngineChecks (worker: Worker, seed: number, root: string): void {
  test(`engine: random writes against a model, with reopens (seed ${seed})`, async (t) => {
    const rnd = new Random(seed)
    const location = `${root}/model`
    const model = new Map<string, string>()
    const key = (): string => `k${String(rnd.int(400)).padStart(4, '0')}`
    let db = new BrowserLevel(location, { worker, ...TINY })
    await db.open()
    // Background work done, summed over the opens (stats count from the open).
    let flushes = 0
    let compactions = 0
    const count = async (): Promise<void> => {
      const stats = await db.stats() as { flushes: number, compactions: { done: number } }
      flushes += stats.flushes
      compactions += stats.compactions.done
    }
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 150; i++) {
        const r = rnd.int(100)
        if (r < 55) {
          const k = key()
          const v = `v${round}.${i}.${'x'.repeat(rnd.int(120))}`
          await db.put(k, v)
          model.set(k, v)
        } else if (r < 75) {
          const k = key()
          await db.del(k)
          model.delete(k)
        } else if (r < 95) {
          const ops = Array.from({ length: 1 + rnd.int(20) }, () => rnd.int(3) === 0
            ? { type: 'del' as const, key: key() }
            : { type: 'put' as const, key: key(), value: `b${round}.${i}.${rnd.int(1000)}` })
          await db.batch(ops)
          for (const op of ops) {
            if (op.type === 'put') model.set(op.key, op.value)
            else model.delete(op.key)
          }
        } else {
          const [a, b] = [key(), key()].sort()
          await db.clear({ gte: a, lt: b })
          for (const k of [...model.keys()]) if (k >= a && k < b) model.delete(k)
        }
      }
      const probe = key()
      t.is(await db.get(probe), model.get(probe), `round ${round}: get(${probe})`)
      if (round % 3 === 2) await db.compactRange()
      if (round % 2 === 1) {
        await count()
        await db.close()
        db = new BrowserLevel(location, { worker, ...TINY })
        await db.open()
      }
      await checkAll(t, db, model, `round ${round}`)
    }
    await count()
    t.ok(flushes > 0 && compactions > 0, `the data went through flushes (${flushes}) and compactions (${compactions})`)
    await db.close()
  })

  test('engine: a snapshot keeps its view across a flush and a compaction', async (t) => {
    const db = new BrowserLevel(`${root}/snapshot`, { worker, ...TINY })
    await db.open()
    const N = 300
    await db.batch(Array.from({ length: N }, (_, i) => ({ type: 'put' as const, key: `s${String(i).padStart(4, '0')}`, value: `old ${i}` })))
    const snapshot = db.snapshot()
    await db.batch(Array.from({ length: N }, (_, i) => i % 3 === 0
      ? { type: 'del' as const, key: `s${String(i).padStart(4, '0')}` }
      : { type: 'put' as const, key: `s${String(i).padStart(4, '0')}`, value: `new ${i}` }))
    await db.flush()
    await db.compactRange()
    const seen = await db.iterator({ snapshot }).all()
    t.is(seen.length, N, 'the snapshot sees every key it saw')
    t.ok(seen.every(([k, v]) => v === `old ${Number(k.slice(1))}`), 'with the values it saw')
    t.is(await db.get('s0003', { snapshot }), 'old 3', 'get at the snapshot: a key deleted since')
    t.is(await db.get('s0003'), undefined, 'get now: deleted')
    t.is(await db.get('s0004'), 'new 4', 'get now: the new value')
    await snapshot.close()
    t.is((await db.iterator().all()).length, N - Math.ceil(N / 3), 'now: the deletes applied')
    await db.close()
  })

  test('engine: a range delete holds across a compaction; a snapshot before it still sees the range', async (t) => {
    const db = new BrowserLevel(`${root}/range`, { worker, ...TINY })
    await db.open()
    await db.batch(Array.from({ length: 500 }, (_, i) => ({ type: 'put' as const, key: `r${String(i).padStart(4, '0')}`, value: `value ${i}` })))
    await db.flush()
    const before = db.snapshot()
    await db.clear({ gte: 'r0100', lt: 'r0400' })
    t.is((await db.keys().all()).length, 200, 'the range is gone')
    await db.compactRange()
    const keys = await db.keys().all()
    t.is(keys.length, 200, 'still gone after the compaction')
    t.ok(keys.every((k) => k < 'r0100' || k >= 'r0400'), 'only keys outside the range remain')
    t.is((await db.keys({ snapshot: before }).all()).length, 500, 'the snapshot taken before the delete sees all 500')
    t.is(await db.get('r0250', { snapshot: before }), 'value 250', 'get at that snapshot')
    await before.close()
    await db.put('r0250', 'again')
    t.is(await db.get('r0250'), 'again', 'a write after the range delete is visible')
    await db.close()
  })

  test('engine: a burst of flushes on a new database waits for the OPFS pool, never fails', async (t) => {
    const db = new BrowserLevel(`${root}/burst`, { worker, ...BURST })
    await db.open()
    const value = (b: number, i: number): string => `burst ${b} ${i} ${'y'.repeat(100)}`
    const key = (b: number, i: number): string => `b${String((b * BURST_BATCH_SIZE + i) % 800).padStart(5, '0')}`
    let failure: unknown
    const t0 = Date.now()
    for (let b = 0; b < BURST_BATCHES && failure === undefined; b++) {
      try {
        await db.batch(Array.from({ length: BURST_BATCH_SIZE }, (_, i) => ({ type: 'put' as const, key: key(b, i), value: value(b, i) })))
      } catch (err) {
        failure = err
      }
    }
    const cause = (failure as { cause?: { message?: string } } | undefined)?.cause?.message
    t.is(failure, undefined, `${BURST_BATCHES} batches of about 4.5 KiB in a row, none failed (${Date.now() - t0} ms)${failure === undefined ? '' : `: ${String(failure)}${cause === undefined ? '' : ` (${cause})`}`}`)
    if (failure === undefined) {
      const stats = await db.stats() as { flushes: number }
      t.ok(stats.flushes >= BURST_BATCHES / 2, `the burst went through ${stats.flushes} flushes`)
      const entries = await db.iterator().all()
      const expected = new Map<string, string>()
      for (let b = 0; b < BURST_BATCHES; b++) for (let i = 0; i < BURST_BATCH_SIZE; i++) expected.set(key(b, i), value(b, i))
      t.ok(entries.length === expected.size && entries.every(([k, v]) => expected.get(k) === v), `every key reads back its last value (${entries.length})`)
    }
    try { await db.close() } catch {}
  })
}
