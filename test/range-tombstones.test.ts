// Range tombstones (lib/range-tombstones.ts): the fragment index against a brute
// force, clear()'s bounds, and the engine's contract: one record whatever the
// range's size, entries written later survive, snapshots keep seeing what they
// saw across flushes and compactions, the tombstone survives a reopen (from the
// log and from the manifest), and it is dropped once compaction has removed the
// data it hid. Replay with SEED=<n>.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { RangeTombstoneIndex, clearBounds, type RangeTombstone } from '../lib/range-tombstones'
import { pickRangeTombstoneCompaction } from '../lib/compaction/range-tombstone-picker'
import type { RangeTombstoneTask } from '../lib/compaction/task'
import type { FileMeta } from '../lib/manifest/file-meta'
import { decodeVersionEdit, encodeVersionEdit, MANIFEST_FORMAT_VERSION, TAG_END, TAG_FORMAT_VERSION } from '../lib/manifest/version-edit'
import { decodeBatch, encodeBatch, setBatchSequence, OP_RANGE_DELETE } from '../lib/wal/batch'
import { FOUND, PAUSED, entryKey } from '../lib/iterators/db-iterator'
import { KIND_VALUE } from '../lib/keys'
import { ByteWriter } from '../lib/util/coding'
import { LogWriter } from '../lib/wal/log-writer'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const key = (i: number): string => 'k' + String(i).padStart(6, '0')

test('fragment index agrees with a brute force over random tombstones', (t) => {
  const rnd = new Random(seed)
  let checks = 0
  let wrong = 0
  for (let round = 0; round < 200; round++) {
    const list: RangeTombstone[] = []
    const n = rnd.int(12)
    const k = (): Buffer => Buffer.from([rnd.int(20)])
    for (let i = 0; i < n; i++) {
      const a = k()
      const end = rnd.int(5) === 0 ? undefined : k()
      list.push({ start: a, end, seq: 1 + rnd.int(100) })
    }
    const index = RangeTombstoneIndex.build(list)
    for (let q = 0; q < 50; q++) {
      const probe = Buffer.from([rnd.int(21)])
      const readSeq = rnd.int(110)
      let want = 0
      for (const ts of list) {
        const inside = Buffer.compare(ts.start, probe) <= 0 && (ts.end === undefined || Buffer.compare(probe, ts.end) < 0)
        if (inside && ts.seq <= readSeq && ts.seq > want) want = ts.seq
      }
      checks++
      if (index.coveringSeq(probe, readSeq) !== want) wrong++
    }
  }
  t.is(wrong, 0, `${checks} random lookups agree with the brute force (SEED=${seed})`)
  t.is(RangeTombstoneIndex.build([{ start: Buffer.from('b'), end: Buffer.from('b'), seq: 5 }]).size, 0, 'an empty range indexes nothing')
  t.end()
})

test('clear() bounds: gte/gt/lt/lte map to [start, end)', (t) => {
  const b = (s: string): Buffer => Buffer.from(s)
  t.same(clearBounds({}), { start: Buffer.alloc(0), end: undefined }, 'no bounds: everything')
  t.same(clearBounds({ gte: b('a'), lt: b('c') }), { start: b('a'), end: b('c') })
  t.same(clearBounds({ gt: b('a'), lte: b('c') }), { start: b('a\0'), end: b('c\0') }, 'exclusive lower, inclusive upper: the next key in byte order')
  t.same(clearBounds({ gt: b('a'), gte: b('b') }), { start: b('b'), end: undefined }, 'gte wins over gt')
  t.end()
})

test('batch and manifest encodings round-trip range tombstones; a newer manifest format is refused', (t) => {
  const ops = [
    { kind: OP_RANGE_DELETE, key: Buffer.from('a'), end: Buffer.from('m') },
    { kind: KIND_VALUE, key: Buffer.from('x'), value: Buffer.from('1') },
    { kind: OP_RANGE_DELETE, key: Buffer.from('q') }
  ]
  const payload = encodeBatch(ops)
  setBatchSequence(payload, 7)
  const decoded = decodeBatch(payload, 'test.log')
  t.same(decoded.ops.map((o) => [o.kind, String(o.key), o.end === undefined ? null : String(o.end)]), [[OP_RANGE_DELETE, 'a', 'm'], [KIND_VALUE, 'x', null], [OP_RANGE_DELETE, 'q', null]], 'batch round trip')
  const bad = encodeBatch([ops[0]])
  setBatchSequence(bad, 7)
  bad[bad.length - 2] = 200 // end length beyond the payload
  t.throws(() => decodeBatch(bad, 'test.log'), /LEVEL_CORRUPTION|range end/, 'a damaged range end length is corruption')

  const edit = {
    rangeTombstones: [{ start: Buffer.from('a'), end: Buffer.from('b'), seq: 9 }, { start: Buffer.from('c'), end: undefined, seq: 12 }],
    newFiles: [{ level: 1, meta: { number: 5, size: 100, entries: 3, floor: 11, smallest: { userKey: Buffer.from('a'), seq: 3, kind: 1 }, largest: { userKey: Buffer.from('z'), seq: 4, kind: 1 } } }]
  }
  const back = decodeVersionEdit(encodeVersionEdit(edit), 'MANIFEST-000001')
  t.same(back.rangeTombstones, edit.rangeTombstones, 'manifest round trip of tombstones')
  t.is(back.newFiles?.[0].meta.floor, 11, 'and of a table floor')

  const dir = tempDir()
  const w = new ByteWriter()
  w.varint(TAG_FORMAT_VERSION)
  w.varint(MANIFEST_FORMAT_VERSION + 1)
  w.varint(TAG_END)
  const log = new LogWriter(nodeFileSystem.openWrite(path.join(dir, 'MANIFEST-000001')))
  log.addRecord(w.toBuffer())
  log.close()
  fs.writeFileSync(path.join(dir, 'CURRENT'), 'MANIFEST-000001\n')
  const db = new LsmLevel(dir)
  db.open().then(() => t.fail('opened'), (err) => {
    t.is(err.code, 'LEVEL_DATABASE_NOT_OPEN', 'open fails')
    t.is(err.cause?.code, 'LEVEL_NOT_SUPPORTED', `because of the newer format: ${err.cause?.message}`)
    t.end()
  })
})

test('clear() writes one record, whatever the size of the range, and reads nothing', async (t) => {
  const db = new LsmLevel(tempDir(), { writeBufferSize: 256 * 1024 })
  await db.open()
  for (let i = 0; i < 50_000; i += 1000) await db.batch(Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'v'.repeat(50) })))
  await db.compactRange()
  const before = db.stats()
  await db.clear({ gte: key(1000), lt: key(49_000) })
  const after = db.stats()
  t.is(after.blockCache.hits + after.blockCache.misses, before.blockCache.hits + before.blockCache.misses, 'no table block was read')
  t.ok(after.bytes.wal - before.bytes.wal < 100, `one small log record (${after.bytes.wal - before.bytes.wal} bytes)`)
  t.is(after.rangeTombstones, 1, 'one range tombstone')
  t.is(await db.get(key(999)), 'v'.repeat(50), 'below the range: kept')
  t.is(await db.get(key(1000)), undefined, 'first key of the range: gone')
  t.is(await db.get(key(48_999)), undefined, 'last key of the range: gone')
  t.is(await db.get(key(49_000)), 'v'.repeat(50), 'the end bound is exclusive')
  t.is((await db.keys().all()).length, 2000, 'iteration sees only what is left')
  t.is((await db.keys({ reverse: true }).all()).length, 2000, 'in reverse too')
  await db.close()
})

test('writes after clear() survive it; snapshots taken before it still see the old data through flush and compaction', async (t) => {
  const db = new LsmLevel(tempDir(), { writeBufferSize: 16 * 1024, level0CompactionTrigger: 2 })
  await db.open()
  for (let i = 0; i < 2000; i++) await db.put(key(i), 'old' + i)
  const snap = db.snapshot()
  const clearing = db.clear({ gte: key(500), lte: key(1499) })
  const later = db.put(key(700), 'new') // issued after clear(): not affected
  await Promise.all([clearing, later])
  await db.put(key(800), 'new2')
  const check = async (when: string): Promise<void> => {
    t.is(await db.get(key(700)), 'new', `${when}: write issued after clear() survives`)
    t.is(await db.get(key(800)), 'new2', `${when}: write after clear() survives`)
    t.is(await db.get(key(1499)), undefined, `${when}: lte bound is inclusive`)
    t.is(await db.get(key(1500)), 'old1500', `${when}: past the range`)
    t.is(await db.get(key(600), { snapshot: snap }), 'old600', `${when}: the snapshot still sees a cleared key`)
    const inSnap = await db.keys({ snapshot: snap }).all()
    t.is(inSnap.length, 2000, `${when}: the snapshot iterates all of its keys`)
    const now = await db.keys().all()
    t.is(now.length, 1002, `${when}: now: 1000 outside the range + 2 rewritten`)
  }
  await check('in the memtable')
  await db.flush()
  await check('after a flush')
  await db.compactRange()
  await check('after compactRange with the snapshot open')
  t.is(db.stats().rangeTombstones, 1, 'the tombstone stays while a snapshot needs the data under it')
  await snap.close()
  await db.compactRange()
  t.is(db.stats().rangeTombstones, 0, 'and is dropped once compaction removed everything it hid')
  t.is(await db.get(key(600)), undefined, 'cleared data does not come back')
  t.is((await db.keys().all()).length, 1002, 'still 1002 keys')
  await db.close()
})

test('a range tombstone survives reopen: from the log and from the manifest', async (t) => {
  const dir = tempDir()
  let db = new LsmLevel(dir)
  await db.open()
  for (let i = 0; i < 1000; i++) await db.put(key(i), 'v')
  await db.flush()
  await db.clear({ gt: key(99), lt: key(900) })
  await db.close() // the tombstone is only in the log
  db = new LsmLevel(dir)
  await db.open()
  t.is((await db.keys().all()).length, 200, 'replayed from the log')
  await db.flush() // now in the manifest, the data under it still in a table
  t.is(db.stats().rangeTombstones, 1, 'flushed into the manifest')
  await db.close()
  db = new LsmLevel(dir)
  await db.open()
  t.is(db.stats().rangeTombstones, 1, 'read back from the manifest')
  t.is((await db.keys().all()).length, 200, 'still hides the range')
  t.is(await db.get(key(100)), undefined)
  t.is(await db.get(key(99)), 'v')
  await db.compactRange()
  t.is(db.stats().rangeTombstones, 0, 'dropped by the compaction')
  await db.close()
})

test('clear() with a limit or a snapshot deletes entries one by one (abstract-level semantics)', async (t) => {
  const db = new LsmLevel(tempDir())
  await db.open()
  for (let i = 0; i < 100; i++) await db.put(key(i), 'v')
  const snap = db.snapshot()
  await db.put(key(200), 'after-snapshot')
  await db.clear({ snapshot: snap, gte: key(50) })
  t.is(await db.get(key(200)), 'after-snapshot', 'an entry not in the snapshot is not deleted')
  t.is(await db.get(key(50)), undefined, 'entries in the snapshot are')
  await snap.close()
  await db.clear({ limit: 10, reverse: true })
  t.same(await db.keys({ gte: key(40) }).all(), [key(40)], 'limit 10 in reverse deleted key 200 and keys 41-49, and not more')
  t.is(db.stats().rangeTombstones, 0, 'no range tombstone for these')
  await db.close()
})

test('many clears: the memtable is frozen at 1,000 range tombstones, reads stay right', async (t) => {
  const db = new LsmLevel(tempDir())
  await db.open()
  for (let round = 0; round < 2500; round++) {
    const a = round % 100
    await db.put(key(a), 'r' + round)
    await db.clear({ gte: key(a), lt: key(a + 1) })
    if (round % 3 === 0) await db.put(key(a), 'x' + round)
  }
  const got = await db.iterator().all()
  const model = new Map<string, string>()
  for (let round = 0; round < 2500; round++) {
    const a = round % 100
    model.delete(key(a))
    if (round % 3 === 0) model.set(key(a), 'x' + round)
  }
  t.same(got, [...model.entries()].sort((x, y) => x[0] < y[0] ? -1 : 1), `iteration matches the model (${model.size} keys)`)
  await db.engine.waitForIdle() // the frozen memtables' flushes finish (the active one is not flushed)
  t.ok(db.stats().flushes >= 2, `memtables were frozen by tombstone count (${db.stats().flushes} flushes of a few hundred KB)`)
  await db.compactRange()
  t.is(db.stats().rangeTombstones, 0, 'all tombstones dropped after a full compaction')
  t.same(await db.iterator().all(), got, 'same contents after compaction')
  await db.close()
})

test('sublevel clear() deletes only the sublevel', async (t) => {
  const db = new LsmLevel(tempDir())
  await db.open()
  const a = db.sublevel('a')
  const b = db.sublevel('b')
  for (let i = 0; i < 100; i++) { await a.put(key(i), 'a'); await b.put(key(i), 'b') }
  await a.clear()
  t.is((await a.keys().all()).length, 0, 'sublevel a is empty')
  t.is((await b.keys().all()).length, 100, 'sublevel b is untouched')
  await b.clear({ gte: key(10), lt: key(20) })
  t.is((await b.keys().all()).length, 90, 'a range within sublevel b')
  await db.close()
})

test('range-tombstone picker: tables under a tombstone, in place at levels 1+, level 0 into level 1, adjacent, not past a snapshot', (t) => {
  const meta = (number: number, a: string, b: string, floor = 0): FileMeta => ({
    number, size: 100, entries: 1, floor, smallest: { userKey: Buffer.from(a), seq: 1, kind: 1 }, largest: { userKey: Buffer.from(b), seq: 1, kind: 1 }
  })
  const levels: FileMeta[][] = [[meta(20, 'a', 'z')], [meta(10, 'a', 'c'), meta(11, 'd', 'f', 50), meta(12, 'g', 'i')], [meta(5, 'a', 'm')], [], [], [], []]
  const ts = (start: string, end: string | undefined, seq: number): RangeTombstone => ({ start: Buffer.from(start), end: end === undefined ? undefined : Buffer.from(end), seq })
  const numbers = (task: RangeTombstoneTask | undefined): string => task === undefined ? 'none' : `L${task.level}->L${task.outputLevel} ${task.inputs.map((f) => f.number).join(',')}`
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('b', 'e', 40)], 100)), 'L0->L1 20', 'an L0 table under the tombstone: all of level 0 into level 1')
  levels[0][0].floor = 100
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('b', 'e', 40)], 100)), 'L1->L1 10', 'L0 past it: the level 1 table overlapping [b, e) with floor < 40, in place (11 has floor 50)')
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('b', 'h', 60)], 100)), 'L1->L1 10,11,12', 'all three are below seq 60')
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('d', 'f', 40)], 100)), 'L2->L2 5', 'table 11 is past seq 40 (floor 50): the next level')
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('b', 'h', 40)], 100)), 'L1->L1 10', 'inputs stay adjacent: 10, not 10 and 12 around 11')
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('b', 'e', 40)], 30)), 'none', 'a snapshot older than the tombstone holds it back')
  t.is(numbers(pickRangeTombstoneCompaction(levels, [ts('n', undefined, 40)], 100)), 'none', 'nothing at levels 1+ overlaps [n, end)')
  t.end()
})

test('the space under a clear() comes back without compactRange (background range-tombstone compactions)', async (t) => {
  const dir = tempDir()
  // Uncompressed, so the bytes measure what the tombstone frees, not whether
  // the remaining keys sit in level 0 (stored as is) or deeper (compressed).
  const db = new LsmLevel(dir, { writeBufferSize: 256 * 1024, compression: false })
  await db.open()
  for (let i = 0; i < 100_000; i += 1000) await db.batch(Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'v'.repeat(100) })))
  await db.engine.waitForIdle()
  const tables = (): number => fs.readdirSync(dir).filter((n) => n.endsWith('.sst')).reduce((s, n) => s + fs.statSync(path.join(dir, n)).size, 0)
  const before = tables()
  await db.clear({ gte: key(5000), lt: key(95_000) })
  await db.flush()
  await db.engine.waitForIdle()
  const after = tables()
  t.comment(`tables ${(before / 1e6).toFixed(2)} MB -> ${(after / 1e6).toFixed(2)} MB`)
  t.ok(after < before * 0.2, `bytes on disk down to ${(after / before * 100).toFixed(1)}% with no compactRange`)
  t.is(db.stats().rangeTombstones, 0, 'the tombstone is gone')
  t.is((await db.keys().all()).length, 10_000, 'the 10,000 keys outside the range remain')
  await db.close()
})

test('an iterator skips a long deleted run a few thousand entries per event-loop turn', async (t) => {
  const db = new LsmLevel(tempDir())
  await db.open()
  for (let i = 0; i < 200_000; i += 1000) await db.batch(Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'v' })))
  await db.put(key(999_999), 'last')
  const hold = db.snapshot() // keeps the hidden versions in place
  await db.clear({ lt: key(200_000) })
  const it = db.engine.iterator({})
  let pauses = 0
  let r
  while ((r = it.step(4096)) === PAUSED) pauses++
  t.is(r, FOUND, 'the step finds the one live key')
  t.is(String(entryKey(it)), key(999_999))
  t.ok(pauses >= 40, `200,000 hidden entries took ${pauses} paused steps of 4,096 visits`)
  it.close()
  // A 1 ms timer runs only between turns: an all() that skipped the run in
  // one turn would let it run once at most. Counted in ticks, not in the
  // longest gap between them, which a loaded machine lengthens whatever the
  // code does (143 ms once, at a load average of 20 on 2 cores); a slower
  // machine only gives more ticks.
  let longest = 0
  let ticks = 0
  let last = Date.now()
  const timer = setInterval(() => { const now = Date.now(); longest = Math.max(longest, now - last); last = now; ticks++ }, 1)
  const started = Date.now()
  const entries = await db.iterator().all()
  const reverse = await db.iterator({ reverse: true }).all()
  const ms = Date.now() - started
  clearInterval(timer)
  t.same(entries.map(([k]) => k), [key(999_999)], 'iterator.all() sees only the live key')
  t.same(reverse.map(([k]) => k), [key(999_999)], 'in reverse too')
  t.ok(ticks >= 10, `the event loop kept turning: a 1 ms timer ran ${ticks} times in ${ms} ms (longest gap ${longest} ms)`)
  await hold.close()
  await db.close()
})
