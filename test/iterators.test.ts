// MergingIterator and LevelIterator against a sorted-array model, in both
// directions, with seeks and random direction switches. Children are MemTables,
// array-backed stand-ins for tables, and LevelIterators over such arrays.
import test from 'tape'
import { MergingIterator } from '../lib/iterators/merging-iterator'
import { DbIterator, FOUND, PAUSED, type RangeOptions, entryKey, entryValue } from '../lib/iterators/db-iterator'
import { LevelIterator } from '../lib/iterators/level-iterator'
import { type InternalIterator, currentUserKey, currentValue } from '../lib/iterators/internal-iterator'
import type { FileMeta } from '../lib/manifest/file-meta'
import { MemTable } from '../lib/memtable/memtable'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, compareInternal } from '../lib/keys'
import { Random, seedFromEnv } from './util/random'
import { ArrayIterator, type Entry, compareEntries, diffAt, lowerBound, upperBound } from './util/array-iterator'

const seed = seedFromEnv()

/** An entry plus the child it was given to (the tie-breaker of the merge). */
interface Placed extends Entry {
  child: number
}

function comparePlaced (a: Placed, b: Placed): number {
  return compareEntries(a, b) || a.child - b.child
}

/** Even-numbered keys 'k00000000'..; odd numbers are guaranteed gaps. */
function evenKey (i: number): Buffer {
  return Buffer.from('k' + String(2 * i).padStart(8, '0'))
}

function oddKey (i: number): Buffer {
  return Buffer.from('k' + String(2 * i + 1).padStart(8, '0'))
}

/** `n` entries with unique (userKey, seq): a few versions per key, ~10% tombstones, seqs unique. */
function randomEntries (rnd: Random, n: number, keySpace: number, child = 0): Placed[] {
  const seqs = new Set<number>()
  const out: Placed[] = []
  while (out.length < n) {
    const seq = 1 + rnd.int(n * 10)
    if (seqs.has(seq)) continue
    seqs.add(seq)
    const kind = rnd.int(10) === 0 ? KIND_DELETE : KIND_VALUE
    out.push({ userKey: evenKey(rnd.int(keySpace)), seq, kind, value: Buffer.from(`v${seq}/${child}`), child })
  }
  return out
}

/** A seek target: an existing key, a gap key, or something before/after everything; any seq. */
function randomTarget (rnd: Random, model: Entry[], keySpace: number): { key: Buffer, seq: number } {
  const r = rnd.int(10)
  let key: Buffer
  if (r < 5 && model.length > 0) key = rnd.pick(model).userKey
  else if (r < 8) key = oddKey(rnd.int(keySpace))
  else if (r === 8) key = Buffer.from('a') // before every key
  else key = Buffer.from('z') // after every key
  const s = rnd.int(8)
  const seq = s === 0 ? MAX_SEQ : s === 1 ? 0 : rnd.int(model.length * 10 + 2)
  return { key, seq }
}

/** Runs checks, reporting the first few failures and one summary line. */
class Checker {
  failures = 0
  checks = 0
  constructor (private readonly t: test.Test, private readonly what: string) {}
  check (message: string): void {
    this.checks++
    if (message !== '' && ++this.failures <= 5) this.t.fail(`${this.what}: ${message}`)
  }

  done (): void {
    if (this.failures === 0) this.t.pass(`${this.what}: ${this.checks} checks`)
    else this.t.fail(`${this.what}: ${this.failures} failures`)
  }
}

/** Full scans both ways, then `ops` random seeks and steps with frequent direction changes. */
function exercise (c: Checker, rnd: Random, it: InternalIterator, model: Entry[], keySpace: number, ops: number, afterEach?: () => string): void {
  const verify = (pos: number): void => {
    c.check(diffAt(it, model, pos))
    if (afterEach !== undefined) c.check(afterEach())
  }
  let pos = 0
  for (it.seekToFirst(); it.valid(); it.next()) verify(pos++)
  verify(pos)
  pos = model.length - 1
  for (it.seekToLast(); it.valid(); it.prev()) verify(pos--)
  verify(pos)

  for (let i = 0; i < ops; i++) {
    const op = rnd.int(10)
    if (op < 4 || !it.valid()) {
      const { key, seq } = randomTarget(rnd, model, keySpace)
      const how = rnd.int(10)
      if (how < 4) {
        it.seek(key, seq)
        pos = lowerBound(model, key, seq)
      } else if (how < 8) {
        it.seekForPrev(key, seq)
        pos = upperBound(model, key, seq) - 1
      } else if (how === 8) {
        it.seekToFirst()
        pos = 0
      } else {
        it.seekToLast()
        pos = model.length - 1
      }
    } else if (op < 7) {
      it.next()
      pos++
    } else {
      it.prev()
      pos--
    }
    verify(pos)
  }
}

/** Opens array-backed "tables" and tracks opens and closes. */
class TableSet {
  opens = 0
  opened: number[] = []
  private readonly live = new Set<ArrayIterator>()
  private readonly contents = new Map<number, Entry[]>()
  files: FileMeta[] = []

  /** Splits a sorted run into tables at random cut points (a key's versions may straddle a cut). */
  static split (rnd: Random, sorted: Entry[], firstNumber: number, maxPerFile: number): TableSet {
    const set = new TableSet()
    let start = 0
    let number = firstNumber
    while (start < sorted.length) {
      const end = Math.min(sorted.length, start + 1 + rnd.int(maxPerFile))
      set.add(number++, sorted.slice(start, end))
      start = end
    }
    return set
  }

  add (number: number, entries: Entry[]): void {
    const first = entries[0]
    const last = entries[entries.length - 1]
    this.contents.set(number, entries)
    this.files.push({
      number,
      size: entries.length * 32,
      smallest: { userKey: first.userKey, seq: first.seq, kind: first.kind },
      largest: { userKey: last.userKey, seq: last.seq, kind: last.kind },
      entries: entries.length
    })
  }

  readonly open = (meta: FileMeta): InternalIterator => {
    this.opens++
    this.opened.push(meta.number)
    const it = new ArrayIterator(this.contents.get(meta.number)!)
    this.live.add(it)
    const close = it.close.bind(it)
    it.close = () => {
      this.live.delete(it)
      close()
    }
    return it
  }

  get liveCount (): number {
    return this.live.size
  }

  level (): LevelIterator {
    return new LevelIterator(this.files, this.open)
  }
}

test('merging iterator: 1-8 children of mixed kinds vs model', (t) => {
  const rnd = new Random(seed)
  const c = new Checker(t, 'merge')
  let closedOk = true
  for (let trial = 0; trial < 120; trial++) {
    const k = 1 + rnd.int(8)
    const keySpace = 1 + rnd.int(trial % 3 === 0 ? 20 : 2000)
    const total = rnd.int(trial % 10 === 0 ? 5 : 3000)
    const all = randomEntries(rnd, total, keySpace)
    const parts: Placed[][] = Array.from({ length: k }, () => [])
    for (const e of all) {
      e.child = rnd.int(k)
      e.value = Buffer.from(`v${e.seq}/${e.child}`)
      parts[e.child].push(e)
    }
    const tableSets: TableSet[] = []
    const arrays: ArrayIterator[] = []
    const children: InternalIterator[] = parts.map((part, i) => {
      part.sort(comparePlaced)
      const type = rnd.int(3)
      if (type === 0) {
        const mem = new MemTable()
        for (const e of part) mem.add(e.seq, e.kind, e.userKey, e.value)
        return mem.iterator()
      } else if (type === 1 || part.length === 0) {
        const it = new ArrayIterator(part)
        arrays.push(it)
        return it
      } else {
        const set = TableSet.split(rnd, part, i * 1000, 1 + rnd.int(200))
        tableSets.push(set)
        return set.level()
      }
    })
    const model = all.slice().sort(comparePlaced)
    const it = new MergingIterator(children)
    c.check(it.valid() ? 'valid before positioning' : '')
    exercise(c, rnd, it, model, keySpace, 1500)
    it.close()
    it.close() // idempotent
    if (!arrays.every(a => a.closed) || !tableSets.every(s => s.liveCount === 0)) closedOk = false
  }
  c.done()
  t.ok(closedOk, 'close() closes every child')
  t.end()
})

test('merging iterator: equal (userKey, seq) in several children orders by child index', (t) => {
  const rnd = new Random(seed + 1)
  const c = new Checker(t, 'ties')
  for (let trial = 0; trial < 60; trial++) {
    const k = 2 + rnd.int(7)
    const keySpace = 1 + rnd.int(50)
    // One shared pool of (key, seq) pairs; each child gets a random subset, so
    // many entries appear in several children with child-specific values.
    const pool = randomEntries(rnd, 1 + rnd.int(400), keySpace)
    const parts: Placed[][] = Array.from({ length: k }, () => [])
    for (const e of pool) {
      for (let child = 0; child < k; child++) {
        if (rnd.int(3) === 0) parts[child].push({ ...e, child, value: Buffer.from(`v${e.seq}/${child}`) })
      }
    }
    const children = parts.map(part => {
      part.sort(comparePlaced)
      if (rnd.int(2) === 0) return new ArrayIterator(part)
      const mem = new MemTable()
      for (const e of part) mem.add(e.seq, e.kind, e.userKey, e.value)
      return mem.iterator()
    })
    const model = parts.flat().sort(comparePlaced)
    const it = new MergingIterator(children)
    exercise(c, rnd, it, model, keySpace, 800)
    it.close()
  }
  c.done()

  // The rule stated plainly: forward yields the earlier child first, reverse the exact reverse.
  const key = Buffer.from('k')
  const a = new ArrayIterator([{ userKey: key, seq: 5, kind: KIND_VALUE, value: Buffer.from('child0') }])
  const b = new ArrayIterator([{ userKey: key, seq: 5, kind: KIND_VALUE, value: Buffer.from('child1') }])
  const it = new MergingIterator([a, b])
  it.seekToFirst()
  t.equal(currentValue(it).toString(), 'child0', 'forward: earlier child first')
  it.next()
  t.equal(currentValue(it).toString(), 'child1', 'forward: then the later child')
  it.prev()
  t.equal(currentValue(it).toString(), 'child0', 'prev after next turns around correctly')
  it.seekToLast()
  t.equal(currentValue(it).toString(), 'child1', 'reverse: later child first')
  it.prev()
  t.equal(currentValue(it).toString(), 'child0', 'reverse: earlier child last')
  it.next()
  t.equal(currentValue(it).toString(), 'child1', 'next after prev turns around correctly')
  it.close()
  t.end()
})

test('merging iterator: no children, and memtable children receiving adds', (t) => {
  const empty = new MergingIterator([])
  empty.seekToFirst()
  t.notOk(empty.valid(), 'no children: seekToFirst is not valid')
  empty.seekForPrev(Buffer.from('x'), MAX_SEQ)
  t.notOk(empty.valid(), 'no children: seekForPrev is not valid')
  empty.close()

  // The DB keeps adding to the active memtable while an iterator over it exists.
  const mem = new MemTable()
  mem.add(1, KIND_VALUE, Buffer.from('b'), Buffer.from('1'))
  const older = new ArrayIterator([{ userKey: Buffer.from('c'), seq: 0, kind: KIND_VALUE, value: Buffer.from('0') }])
  const it = new MergingIterator([mem.iterator(), older])
  it.seekToFirst()
  t.equal(currentUserKey(it).toString(), 'b')
  mem.add(2, KIND_VALUE, Buffer.from('bb'), Buffer.from('2'))
  it.next()
  t.equal(currentUserKey(it).toString(), 'bb', 'an entry added after positioning is merged in')
  it.next()
  t.equal(currentUserKey(it).toString(), 'c')
  it.next()
  t.notOk(it.valid())
  it.close()
  t.end()
})

test('level iterator: many tables vs model, both directions, seeks between files', (t) => {
  const rnd = new Random(seed + 2)
  const c = new Checker(t, 'level')
  for (let trial = 0; trial < 80; trial++) {
    const keySpace = 1 + rnd.int(trial % 4 === 0 ? 30 : 3000)
    const model = randomEntries(rnd, 1 + rnd.int(3000), keySpace).sort(comparePlaced)
    const set = TableSet.split(rnd, model, 1, 1 + rnd.int(trial % 2 === 0 ? 5 : 300))
    const it = set.level()
    exercise(c, rnd, it, model, keySpace, 1500, () => set.liveCount <= 1 ? '' : `${set.liveCount} tables open at once`)
    it.close()
    c.check(set.liveCount === 0 ? '' : 'close() left a table open')
  }
  c.done()
  t.end()
})

test('level iterator: opens tables lazily and closes them', (t) => {
  // Ten tables of ten keys each: file n holds keys 10n .. 10n + 9 (even-numbered), seq 1.
  const set = new TableSet()
  const model: Entry[] = []
  for (let f = 0; f < 10; f++) {
    const entries: Entry[] = []
    for (let i = 0; i < 10; i++) entries.push({ userKey: evenKey(f * 10 + i), seq: 1, kind: KIND_VALUE, value: Buffer.from(`${f}/${i}`) })
    set.add(f + 100, entries)
    model.push(...entries)
  }
  const it = set.level()
  t.equal(set.opens, 0, 'constructing opens nothing')

  it.seek(evenKey(53), MAX_SEQ)
  t.deepEqual(set.opened, [105], 'a seek opens only the table holding the target')
  t.equal(currentUserKey(it).toString(), evenKey(53).toString())
  it.seek(evenKey(57), MAX_SEQ)
  it.seekForPrev(evenKey(51), 0)
  t.equal(set.opens, 1, 'seeks within the open table reuse it')

  it.seek(oddKey(59), MAX_SEQ) // past the end of table 105: lands on the first key of 106
  t.equal(currentUserKey(it).toString(), evenKey(60).toString(), 'a seek into the gap after a table lands in the next one')
  t.deepEqual(set.opened, [105, 106], 'no table but the one needed was opened')
  t.equal(set.liveCount, 1, 'the previous table was closed')

  it.seekForPrev(oddKey(59), MAX_SEQ) // gap between 105 and 106, backward: last key of 105
  t.equal(currentUserKey(it).toString(), evenKey(59).toString(), 'seekForPrev into a gap lands at the end of the previous table')

  it.seek(Buffer.from('a'), MAX_SEQ)
  t.equal(currentUserKey(it).toString(), evenKey(0).toString(), 'seek before the first key')
  it.prev()
  t.notOk(it.valid(), 'prev from the first entry ends the iteration')
  t.equal(set.liveCount, 0, 'and closes the table')

  it.seek(Buffer.from('z'), MAX_SEQ)
  t.notOk(it.valid(), 'seek after the last key is not valid')
  const opensBefore = set.opens
  t.equal(set.liveCount, 0, 'and leaves no table open')
  it.seekForPrev(Buffer.from('a'), MAX_SEQ)
  t.notOk(it.valid(), 'seekForPrev before the first key is not valid')
  t.equal(set.opens, opensBefore, 'seeks outside the level open nothing')

  set.opens = 0
  set.opened = []
  let n = 0
  let maxLive = 0
  for (it.seekToFirst(); it.valid(); it.next()) {
    n++
    maxLive = Math.max(maxLive, set.liveCount)
  }
  t.equal(n, model.length, 'a full scan sees every entry')
  t.deepEqual(set.opened, [100, 101, 102, 103, 104, 105, 106, 107, 108, 109], 'a full scan opens each table once, in order')
  t.equal(maxLive, 1, 'at most one table is open at a time')
  t.equal(set.liveCount, 0, 'running off the end closes the last table')

  it.seekToLast()
  t.deepEqual(set.opened.slice(-1), [109], 'seekToLast opens the last table')
  it.close()
  it.close()
  t.equal(set.liveCount, 0, 'close() closes the open table (and is idempotent)')

  const none = new LevelIterator([], set.open)
  none.seekToFirst()
  t.notOk(none.valid(), 'empty level: seekToFirst')
  none.seekToLast()
  t.notOk(none.valid(), 'empty level: seekToLast')
  none.seek(Buffer.from('k'), 1)
  t.notOk(none.valid(), 'empty level: seek')
  none.close()
  t.end()
})

test('level iterator: a key whose versions straddle two tables', (t) => {
  const key = Buffer.from('same')
  const set = new TableSet()
  set.add(1, [{ userKey: key, seq: 9, kind: KIND_VALUE, value: Buffer.from('9') }, { userKey: key, seq: 7, kind: KIND_VALUE, value: Buffer.from('7') }])
  set.add(2, [{ userKey: key, seq: 5, kind: KIND_DELETE, value: Buffer.alloc(0) }, { userKey: key, seq: 3, kind: KIND_VALUE, value: Buffer.from('3') }])
  const it = set.level()
  it.seek(key, 6)
  t.equal(it.seq(), 5, 'seek(key, 6) finds seq 5 in the second table')
  t.deepEqual(set.opened, [2], 'without opening the first')
  it.prev()
  t.equal(it.seq(), 7, 'prev crosses back into the first table')
  it.seekForPrev(key, 6)
  t.equal(it.seq(), 7, 'seekForPrev(key, 6) finds seq 7')
  it.seekForPrev(key, 5)
  t.equal(it.seq(), 5, 'seekForPrev(key, 5) is inclusive')
  t.ok(compareInternal(currentUserKey(it), it.seq(), key, 5) === 0)
  it.close()
  t.end()
})

test('db iterator: the user view over merged children that reuse their key and value memory on every move', (t) => {
  // ArrayIterator children overwrite the entry they handed out whenever they
  // move (the internal iterator contract allows it), so a DbIterator that held
  // a key or value past a move (the key whose older versions it skips, the
  // entry it is deciding in reverse) would return or compare garbage here.
  const rnd = new Random(seed)
  let wrong = 0
  let cases = 0
  let first = ''
  for (let trial = 0; trial < 200; trial++) {
    const keySpace = 1 + rnd.int(trial % 4 === 0 ? 5 : 300)
    const total = rnd.int(2000)
    const k = 1 + rnd.int(4)
    // Unique seqs across children: many versions per key, ~20% tombstones, values of varied length.
    const seqs = new Set<number>()
    const all: Placed[] = []
    while (all.length < total) {
      const seq = 1 + rnd.int(total * 10)
      if (seqs.has(seq)) continue
      seqs.add(seq)
      const kind = rnd.int(5) === 0 ? KIND_DELETE : KIND_VALUE
      const value = kind === KIND_DELETE ? Buffer.alloc(0) : Buffer.from(`v${seq}:` + 'x'.repeat(rnd.int(40)))
      all.push({ userKey: evenKey(rnd.int(keySpace)), seq, kind, value, child: rnd.int(k) })
    }
    const readSeq = rnd.int(3) === 0 ? MAX_SEQ : rnd.int(total * 10 + 2)
    const range: RangeOptions = { reverse: rnd.int(2) === 0 }
    const lo = rnd.int(4)
    if (lo === 1) range.gte = evenKey(rnd.int(keySpace))
    else if (lo === 2) range.gt = oddKey(rnd.int(keySpace))
    const hi = rnd.int(4)
    if (hi === 1) range.lte = evenKey(rnd.int(keySpace))
    else if (hi === 2) range.lt = evenKey(rnd.int(keySpace))
    // The model: per user key, the newest version at readSeq; values only; in bounds.
    const sorted = all.slice().sort(comparePlaced)
    const want: string[] = []
    for (let i = 0; i < sorted.length; i++) {
      const e = sorted[i]
      if (e.seq > readSeq || decided(sorted, i, readSeq)) continue
      if (e.kind !== KIND_VALUE) continue
      const key = e.userKey
      if (range.gte !== undefined && Buffer.compare(key, range.gte) < 0) continue
      if (range.gt !== undefined && Buffer.compare(key, range.gt) <= 0) continue
      if (range.lte !== undefined && Buffer.compare(key, range.lte) > 0) continue
      if (range.lt !== undefined && Buffer.compare(key, range.lt) >= 0) continue
      want.push(`${key.toString()}=${e.value.toString()}`)
    }
    if (range.reverse) want.reverse()
    const parts: Placed[][] = Array.from({ length: k }, () => [])
    for (const e of sorted) parts[e.child].push(e)
    const it = new DbIterator(new MergingIterator(parts.map((p) => new ArrayIterator(p))), readSeq, range)
    const got: string[] = []
    const budget = rnd.int(2) === 0 ? Infinity : 1 + rnd.int(5)
    for (;;) {
      const r = it.step(budget)
      if (r === PAUSED) continue
      if (r !== FOUND) break
      got.push(`${entryKey(it).toString()}=${entryValue(it).toString()}`)
    }
    it.close()
    cases++
    if (got.join(',') !== want.join(',')) {
      wrong++
      if (first === '') first = `trial ${trial}: got ${got.length} entries [${got.slice(0, 3).join(' ')}], want ${want.length} [${want.slice(0, 3).join(' ')}]`
    }
  }
  t.is(wrong, 0, `${cases} random ranges, snapshots and pause budgets match the model (SEED=${seed}) ${first}`)
  t.end()
})

/** True if an entry before sorted[i] with the same user key is visible at readSeq (so it decided the key). */
function decided (sorted: Placed[], i: number, readSeq: number): boolean {
  for (let j = i - 1; j >= 0 && sorted[j].userKey.equals(sorted[i].userKey); j--) if (sorted[j].seq <= readSeq) return true
  return false
}
