// Model-based randomized test (after LevelDB's): the database and a plain Map get
// the same random operations (puts, deletes, batches, clears of random ranges —
// range tombstones, or point deletes with a limit or snapshot — snapshots,
// flushes, compactions, reopens); reads, and iterators over random ranges in both
// directions, with and without a snapshot, seeking anywhere, must agree with the model. Tiny
// buffers make flushes and compactions happen all the time.
// Replay a failure with SEED=<n>; OPS=<n> runs longer.
import test from 'tape'
import { LsmLevel, type LsmLevelOptions } from '../index'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const OPS = Number(process.env.OPS ?? 6000)

type Model = Map<string, string>

function expectedRange (model: Model, o: { gt?: string, gte?: string, lt?: string, lte?: string, reverse?: boolean, limit?: number }): Array<[string, string]> {
  let keys = [...model.keys()].sort()
  keys = keys.filter((k) =>
    (o.gte === undefined || k >= o.gte) && (o.gt === undefined || o.gte !== undefined || k > o.gt) &&
    (o.lte === undefined || k <= o.lte) && (o.lt === undefined || o.lte !== undefined || k < o.lt))
  if (o.reverse) keys.reverse()
  if (o.limit !== undefined && o.limit >= 0) keys = keys.slice(0, o.limit)
  return keys.map((k) => [k, model.get(k)!])
}

const OPTION_SETS: LsmLevelOptions[] = [
  { writeBufferSize: 1024, blockSize: 256, targetFileSize: 1024, maxBytesForLevelBase: 4096, level0CompactionTrigger: 2, cacheSize: 8192 },
  { writeBufferSize: 4096, blockSize: 128, blockRestartInterval: 2, targetFileSize: 2048, maxBytesForLevelBase: 8192, bloomBitsPerKey: 0, maxOpenFiles: 4 },
  { writeBufferSize: 64 * 1024 },
  { compaction: 'tiered', writeBufferSize: 1024, blockSize: 256, targetFileSize: 2048, level0CompactionTrigger: 3 }
]

OPTION_SETS.forEach((options, setIndex) => {
  test(`model-based random operations, option set ${setIndex}`, async (t) => {
    const rnd = new Random(seed + setIndex)
    const dir = tempDir()
    let db = new LsmLevel(dir, options)
    await db.open()
    const model: Model = new Map()
    const snapshots: Array<{ snap: ReturnType<typeof db.snapshot>, model: Model }> = []
    const keySpace = 400
    const randKey = (): string => 'key' + String(rnd.int(keySpace)).padStart(4, '0') + (rnd.int(4) === 0 ? '-' + rnd.int(10) : '')
    const randValue = (): string => 'v' + rnd.next().toString(36) + 'x'.repeat(rnd.int(60))
    let failures = 0
    const fail = (msg: string): void => {
      failures++
      if (failures <= 5) t.fail(msg)
    }
    let reads = 0
    let iterations = 0
    let reopens = 0
    let clears = 0

    for (let op = 0; op < OPS && failures === 0; op++) {
      const r = rnd.int(100)
      if (r < 3) {
        const o: any = {}
        const a = randKey(); const b = randKey()
        const [lo, hi] = a < b ? [a, b] : [b, a]
        if (rnd.int(4) !== 0) o[rnd.int(2) ? 'gte' : 'gt'] = lo
        if (rnd.int(4) !== 0) o[rnd.int(2) ? 'lte' : 'lt'] = hi
        const mode = rnd.int(6)
        if (mode === 0) { o.limit = rnd.int(30); if (rnd.int(2)) o.reverse = true }
        const useSnap = mode === 1 && snapshots.length > 0 ? rnd.pick(snapshots) : undefined
        if (useSnap) o.snapshot = useSnap.snap
        // The entries the clear deletes: those in range (in the snapshot, if one is given), the first `limit` of them.
        for (const [k] of expectedRange(useSnap ? useSnap.model : model, o)) model.delete(k)
        await db.clear(o)
        clears++
      } else if (r < 35) {
        const k = randKey(); const v = randValue()
        model.set(k, v)
        await db.put(k, v)
      } else if (r < 45) {
        const k = randKey()
        model.delete(k)
        await db.del(k)
      } else if (r < 55) {
        const ops: Array<{ type: 'put' | 'del', key: string, value?: string }> = []
        const n = 1 + rnd.int(20)
        for (let i = 0; i < n; i++) {
          const k = randKey()
          if (rnd.int(3) === 0) { ops.push({ type: 'del', key: k }); model.delete(k) } else { const v = randValue(); ops.push({ type: 'put', key: k, value: v }); model.set(k, v) }
        }
        await db.batch(ops as any)
      } else if (r < 75) {
        const k = randKey()
        const useSnap = snapshots.length > 0 && rnd.int(3) === 0 ? rnd.pick(snapshots) : undefined
        const m = useSnap ? useSnap.model : model
        const got = rnd.int(2) === 0 ? await db.get(k, useSnap ? { snapshot: useSnap.snap } : {}) : db.getSync(k, useSnap ? { snapshot: useSnap.snap } : {})
        reads++
        if (got !== m.get(k)) fail(`op ${op}: get(${k}) = ${got}, model ${m.get(k)}${useSnap ? ' (snapshot)' : ''}`)
      } else if (r < 87) {
        const o: any = {}
        const a = randKey(); const b = randKey()
        const [lo, hi] = a < b ? [a, b] : [b, a]
        if (rnd.int(2)) o[rnd.int(2) ? 'gte' : 'gt'] = lo
        if (rnd.int(2)) o[rnd.int(2) ? 'lte' : 'lt'] = hi
        if (rnd.int(2)) o.reverse = true
        if (rnd.int(4) === 0) o.limit = rnd.int(30)
        const useSnap = snapshots.length > 0 && rnd.int(3) === 0 ? rnd.pick(snapshots) : undefined
        if (useSnap) o.snapshot = useSnap.snap
        let expected = expectedRange(useSnap ? useSnap.model : model, o)
        let got: Array<[string, string]>
        const unlimited = expectedRange(useSnap ? useSnap.model : model, { ...o, limit: undefined })
        if (rnd.int(4) === 0) {
          // Seek anywhere (a present or absent key, before, inside or after the range), with
          // any iterator kind: a target outside the range ends the iterator (abstract-level's seek()).
          const target = randKey()
          const kind = rnd.int(3)
          const it = kind === 0 ? db.iterator(o) : kind === 1 ? db.keys(o) : db.values(o)
          it.seek(target)
          const items: unknown[] = await it.all()
          const before = o.gte !== undefined ? target < o.gte : o.gt !== undefined && target <= o.gt
          const after = o.lte !== undefined ? target > o.lte : o.lt !== undefined && target >= o.lt
          expected = (o.reverse ? after : before) ? [] : unlimited.filter(([k]) => o.reverse ? k <= target : k >= target)
          if (o.limit !== undefined) expected = expected.slice(0, o.limit)
          // keys() and values() are compared on what they yield.
          got = kind === 0 ? items as Array<[string, string]> : items.map((x, i) => kind === 1 ? [x as string, expected[i]?.[1]] : [expected[i]?.[0], x as string])
        } else if (rnd.int(3) === 0 && unlimited.length > 0) {
          // Seek into the middle (to a present key or just past one), then read the rest.
          const it = db.iterator(o)
          const idx = rnd.int(unlimited.length)
          const exact = rnd.int(2) === 0
          const target = exact ? unlimited[idx][0] : unlimited[idx][0] + (o.reverse ? '' : '\x00')
          it.seek(target)
          got = await it.all()
          expected = unlimited.slice(exact || !o.reverse ? (exact ? idx : idx + 1) : idx)
          if (o.limit !== undefined) expected = expected.slice(0, o.limit)
        } else {
          got = await db.iterator(o).all()
        }
        iterations++
        const same = got.length === expected.length && got.every(([k, v], i) => k === expected[i][0] && v === expected[i][1])
        if (!same) fail(`op ${op}: iterator ${JSON.stringify({ ...o, snapshot: !!o.snapshot })} gave ${got.length} entries, model ${expected.length}: first diff at ${got.findIndex(([k, v], i) => !expected[i] || k !== expected[i][0] || v !== expected[i][1])}`)
      } else if (r < 91) {
        if (snapshots.length < 4) snapshots.push({ snap: db.snapshot(), model: new Map(model) })
      } else if (r < 94) {
        const s = snapshots.splice(rnd.int(Math.max(1, snapshots.length)), 1)[0]
        if (s) await s.snap.close()
      } else if (r < 96) {
        await db.flush()
      } else if (r < 98) {
        await db.compactRange()
      } else {
        for (const s of snapshots.splice(0)) await s.snap.close()
        await db.close()
        db = new LsmLevel(dir, options)
        await db.open()
        reopens++
      }
    }
    // Final full comparison, after a reopen.
    for (const s of snapshots.splice(0)) await s.snap.close()
    await db.close()
    db = new LsmLevel(dir, options)
    await db.open()
    const all = await db.iterator().all()
    const expected = expectedRange(model, {})
    t.same(all, expected, `final state matches the model (${expected.length} keys)`)
    t.is(failures, 0, `${OPS} ops: ${reads} reads, ${iterations} iterators, ${clears} clears, ${reopens} reopens agree with the model`)
    t.comment(`levels: ${JSON.stringify(db.levels().filter((l) => l.files > 0))}`)
    await db.close()
  })
})
