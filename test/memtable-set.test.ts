// The active and frozen memtables alone (lib/memtable/memtable-set.ts): freeze
// order and reads newest first, a frozen memtable flushable only once the write
// groups written to its log are applied (scripted, then against a model in a
// seeded run), when a memtable is full (bytes times a factor, or range
// tombstones), memtables replayed at open, a read-only open's follow() and
// copy(), and the totals; the write buffer sized for a file system that
// counts the room it grants files being written.
import test from 'tape'
import { MemTableSet } from '../lib/memtable/memtable-set'
import { MemTable } from '../lib/memtable/memtable'
import { KIND_VALUE } from '../lib/keys'
import { currentUserKey } from '../lib/iterators/internal-iterator'
import { Random, seedFromEnv } from './util/random'
import { MemFileSystem } from './fs/mem-fs'
import { writeBufferFor } from '../lib/fs/fs'
import { Engine, encodeBatch } from '../hosts/node/index'
import { JobThread } from '../hosts/node/job-thread'

const seed = seedFromEnv()
const k = (s: string): Buffer => Buffer.from(s)

/** A memtable holding `key` = `value` at `seq`. */
function memWith (key: string, value: string, seq: number): MemTable {
  const m = new MemTable()
  m.add(seq, KIND_VALUE, k(key), k(value))
  return m
}

test('memtable set: freeze() keeps frozen memtables oldest first with their logs; reads and iterators go newest first', (t) => {
  const set = new MemTableSet(1 << 20)
  const first = set.active
  first.add(1, KIND_VALUE, k('a'), k('1'))
  set.freeze(7)
  const second = set.active
  t.not(second, first, 'a new active memtable')
  second.add(2, KIND_VALUE, k('a'), k('2'))
  set.freeze(8)
  set.active.add(3, KIND_VALUE, k('b'), k('3'))
  t.same(set.frozen.map((f) => [f.mem === first, f.mem === second, f.logNumber]), [[true, false, 7], [false, true, 8]], 'frozen: oldest first, each with its log')
  t.is(set.get(k('a'), 10)?.value.toString(), '2', 'the newer frozen memtable wins')
  t.is(set.get(k('a'), 1)?.value.toString(), '1', 'at an older sequence number, the older one')
  t.is(set.get(k('b'), 10)?.value.toString(), '3', 'the active memtable is read')
  t.is(set.get(k('c'), 10), undefined, 'absent')
  const firstKeys = set.iterators().map((it) => { it.seekToFirst(); return it.valid() ? `${currentUserKey(it).toString()}@${it.seq()}` : '-' })
  t.same(firstKeys, ['b@3', 'a@2', 'a@1'], 'iterators: active, then frozen newest first')
  t.is(set.logAfterOldest(9), 8, 'once the oldest is flushed, the writes start in the next frozen one\'s log')
  set.dropOldest()
  t.is(set.frozen[0].mem, second, 'dropOldest drops the oldest')
  t.is(set.logAfterOldest(9), 9, 'with one frozen memtable: the active memtable\'s log')
  t.end()
})

test('memtable set: a frozen memtable is flushable only once the groups written to its log are applied', (t) => {
  const set = new MemTableSet(1 << 20)
  const a = set.groupWritten()
  const b = set.groupWritten()
  t.is(a, set.active, 'a group goes to the active memtable')
  t.is(set.groupApplied(a), false, 'applied to the active memtable: nothing to flush')
  const mem = set.active
  set.freeze(1)
  t.is(set.flushable(), undefined, 'frozen with a group in flight: not flushable')
  const c = set.groupWritten()
  t.not(c, mem, 'a group written after the freeze goes to the new memtable')
  t.is(set.groupApplied(c), false, 'and does not make the frozen one ready')
  t.is(set.flushable(), undefined, 'still not flushable')
  t.is(set.groupApplied(b), true, 'the last group applied: ready to flush')
  t.is(set.flushable()?.mem, mem, 'flushable')
  set.freeze(2)
  t.is(set.flushable()?.mem, mem, 'the oldest is the one offered')
  set.dropOldest()
  t.is(set.flushable()?.logNumber, 2, 'then the next (no groups in flight when frozen)')
  t.end()
})

test('memtable set: flushable() against a model over a seeded run of writes, applies, freezes and flushes', (t) => {
  const rnd = new Random(seed)
  const set = new MemTableSet(1 << 20)
  /** Groups written and not applied, by the memtable they go to. */
  let inFlight: MemTable[] = []
  /** Frozen memtables, oldest first (the model). */
  const frozen: MemTable[] = []
  let log = 1
  let wrong = 0
  let flushes = 0
  let readyReports = 0
  const steps = 5000
  for (let step = 0; step < steps; step++) {
    const r = rnd.int(10)
    if (r < 4) {
      inFlight.push(set.groupWritten())
    } else if (r < 8 && inFlight.length > 0) {
      const i = rnd.int(inFlight.length)
      const mem = inFlight[i]
      inFlight = inFlight.filter((_, j) => j !== i)
      const ready = set.groupApplied(mem)
      const expected = frozen.includes(mem) && !inFlight.includes(mem)
      if (ready !== expected) wrong++
      if (ready) readyReports++
    } else if (r < 9) {
      frozen.push(set.active)
      set.freeze(log++)
    } else if (set.flushable() !== undefined) {
      set.dropOldest()
      frozen.shift()
      flushes++
    }
    const expected = frozen.length > 0 && !inFlight.includes(frozen[0]) ? frozen[0] : undefined
    if (set.flushable()?.mem !== expected) wrong++
  }
  t.is(wrong, 0, `flushable() and groupApplied() agree with the model at every step (${steps} steps)`)
  t.ok(flushes > 50 && readyReports > 50, `the run flushed (${flushes}) and saw groups make memtables ready (${readyReports})`)
  t.end()
})

test('memtable set: isFull at the write buffer\'s bytes times a factor', (t) => {
  const set = new MemTableSet(4096)
  const mem = set.active
  let seq = 1
  let fullEarly = 0
  while (mem.approximateBytes() < 4096) {
    if (set.isFull(mem)) fullEarly++
    mem.add(seq++, KIND_VALUE, k(`key${seq}`), Buffer.alloc(100))
  }
  t.is(fullEarly, 0, 'not full below 4096 bytes')
  t.ok(set.isFull(mem), `full at ${mem.approximateBytes()} bytes (write buffer 4096)`)
  t.notOk(set.isFull(mem, 2), 'not full at factor 2')
  while (mem.approximateBytes() < 8192) mem.add(seq++, KIND_VALUE, k(`key${seq}`), Buffer.alloc(100))
  t.ok(set.isFull(mem, 2), `full at factor 2 at ${mem.approximateBytes()} bytes`)
  t.notOk(set.isFull(mem, 3), 'not at factor 3')
  t.end()
})

test('memtable set: a memtable is full at 1,000 range tombstones, however few its bytes', (t) => {
  const set = new MemTableSet(1 << 30)
  const mem = set.active
  // Disjoint ranges [r0000, r0000~), [r0001, r0001~), ... at seq 1, 2, ...
  const start = (i: number): Buffer => k(`r${String(i).padStart(4, '0')}`)
  for (let i = 0; i < 999; i++) mem.addRangeTombstone(i + 1, start(i), k(`${start(i).toString()}~`))
  t.notOk(set.isFull(mem), `999 tombstones (${mem.approximateBytes()} bytes): not full`)
  mem.addRangeTombstone(1000, k('0'), k('1'))
  t.ok(set.isFull(mem), '1,000: full')
  t.is(set.rangeTombstoneCount(), 1000, 'counted')
  set.freeze(1)
  set.active.addRangeTombstone(1001, k('x'), k('y'))
  t.is(set.rangeTombstoneCount(), 1001, 'counted across memtables')
  t.ok(set.hides(start(5), 3, 2000), 'a frozen memtable\'s tombstone (seq 6) hides an older version')
  t.notOk(set.hides(start(5), 3, 5), 'not at a read sequence number before the tombstone')
  t.notOk(set.hides(start(5), 7, 2000), 'nor a newer version')
  t.ok(set.hides(k('x1'), 3, 2000), 'the active memtable\'s tombstone too')
  t.end()
})

test('memtable set: memtables replayed at open wait, flushable at once, oldest first', (t) => {
  const set = new MemTableSet(1 << 20)
  const r1 = memWith('a', '1', 1)
  const r2 = memWith('a', '2', 2)
  set.adoptReplayed([{ mem: r1, logNumber: 4 }, { mem: r2, logNumber: 5 }])
  t.same(set.frozen.map((f) => [f.logNumber, f.writesInFlight]), [[4, 0], [5, 0]], 'frozen with their logs, nothing in flight')
  t.is(set.flushable()?.mem, r1, 'the oldest is flushable at once')
  t.is(set.get(k('a'), 10)?.value.toString(), '2', 'reads see the newer replayed memtable')
  t.is(set.logAfterOldest(6), 5, 'after the oldest: log 5')
  t.end()
})

test('memtable set: follow() for a read-only open; copy() keeps what it had', (t) => {
  const set = new MemTableSet(1 << 20)
  const m1 = memWith('a', '1', 1)
  const m2 = memWith('a', '2', 2)
  const m3 = memWith('b', '3', 3)
  set.follow([m1, m2, m3])
  t.is(set.active, m3, 'the last memtable is active')
  t.same(set.frozen.map((f) => f.mem), [m1, m2], 'the others frozen, oldest first')
  const before = set.copy()
  const m4 = memWith('a', '4', 4)
  set.follow([m4])
  t.is(set.active, m4, 'followed again: the new memtables')
  t.is(set.frozen.length, 0, 'none frozen')
  t.is(set.get(k('a'), 10)?.value.toString(), '4', 'the set reads the new state')
  t.is(before.active, m3, 'the copy keeps its active memtable')
  t.same(before.frozen.map((f) => f.mem), [m1, m2], 'and its frozen ones')
  t.is(before.get(k('a'), 10)?.value.toString(), '2', 'and reads what it read')
  set.follow([])
  t.ok(set.active.isEmpty() && set.frozen.length === 0, 'no logs: an empty active memtable')
  t.end()
})

test('memtable set: approximateBytes sums every memtable', (t) => {
  const set = new MemTableSet(1 << 20)
  set.active.add(1, KIND_VALUE, k('a'), Buffer.alloc(1000))
  const frozenBytes = set.active.approximateBytes()
  set.freeze(1)
  set.active.add(2, KIND_VALUE, k('b'), Buffer.alloc(500))
  t.is(set.approximateBytes(), frozenBytes + set.active.approximateBytes(), 'frozen + active')
  t.ok(set.approximateBytes() >= 1500, 'at least the values\' bytes')
  set.dropOldest()
  t.is(set.approximateBytes(), set.active.approximateBytes(), 'a flushed memtable no longer counts')
  t.end()
})

test('write buffer: on a file system that counts the room it grants files being written (Chromium\'s OPFS), a sixteenth of the tables\' bytes, at least a grant less 128 KiB, at most writeBufferSize', async (t) => {
  const plain = new MemFileSystem()
  t.is(writeBufferFor(plain, '/db', 4 << 20, 0), 4 << 20, 'elsewhere: writeBufferSize')
  const counting = Object.assign(new MemFileSystem(), { growthGrantBytes: (): number => 1 << 20 })
  t.is(writeBufferFor(counting, '/db', 4 << 20, 0), (1 << 20) - 131072, 'an empty database: a grant less 128 KiB')
  t.is(writeBufferFor(counting, '/db', 4 << 20, 32 << 20), 2 << 20, '32 MiB of tables: 2 MiB')
  t.is(writeBufferFor(counting, '/db', 4 << 20, 1 << 30), 4 << 20, '1 GiB: writeBufferSize')
  t.is(writeBufferFor(counting, '/db', 256 << 10, 0), 256 << 10, 'never above writeBufferSize')
  // An engine on each: 6 MiB of writes at random keys with the default 4 MiB write buffer.
  const rnd = new Random(seed)
  const stats: Array<{ flushes: number, compactions: number }> = []
  for (const fs of [plain, counting]) {
    const engine = await Engine.open('/db', { compression: false }, fs, { compaction: JobThread.inProcess(fs), flush: JobThread.inProcess(fs) })
    const value = Buffer.alloc(1000, 7)
    for (let i = 0; i < 6000; i++) await engine.write(encodeBatch([{ kind: KIND_VALUE, key: `k${String(rnd.int(1e6)).padStart(6, '0')}`, value }]), false)
    await engine.waitForIdle()
    const s = engine.stats()
    stats.push({ flushes: s.flushes, compactions: s.compactions.done + s.compactions.trivialMoves })
    await engine.close()
  }
  t.is(stats[0].flushes, 1, `6 MiB into a 4 MiB write buffer: one flush (seed ${seed})`)
  t.ok(stats[1].flushes >= 5, `the same where grants count: flushed at about 896 KiB (${stats[1].flushes} flushes)`)
  t.is(stats[1].compactions, 0, 'and level 0 holds them all: its triggers count four times as many tables while the buffer is a quarter of the configured one')
})
