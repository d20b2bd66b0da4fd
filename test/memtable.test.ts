// MemTable (and its SkipList) against a sorted-array model: random adds with
// many versions per key and tombstones, snapshot reads, both iteration
// directions, seeks, iteration while adds continue, and a speed report.
import test from 'tape'
import { MemTable } from '../lib/memtable/memtable'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, compareInternal } from '../lib/keys'
import { currentUserKey } from '../lib/iterators/internal-iterator'
import { Random, seedFromEnv } from './util/random'
import { type Entry, compareEntries, diffAt, lowerBound, upperBound } from './util/array-iterator'

const seed = seedFromEnv()
const EMPTY = Buffer.alloc(0)

/** Keys of mixed shapes: short ones over a tiny alphabet (shared prefixes, prefixes of each other, the empty key; up to 15 bytes, past the skiplist's 12 prefix bytes), 16 random bytes, and 'user%06d'. */
function keyPool (rnd: Random, n: number): Buffer[] {
  const seen = new Set<string>()
  const pool: Buffer[] = []
  while (pool.length < n) {
    let key: Buffer
    const shape = rnd.int(3)
    if (shape === 0) {
      key = Buffer.allocUnsafe(rnd.int(16))
      for (let i = 0; i < key.length; i++) key[i] = rnd.pick([0, 1, 0x61, 0x62, 0xff])
    } else if (shape === 1) {
      key = rnd.bytes(16)
    } else {
      key = Buffer.from('user' + String(rnd.int(1000000)).padStart(6, '0'))
    }
    const hex = key.toString('hex')
    if (seen.has(hex)) continue
    seen.add(hex)
    pool.push(key)
  }
  return pool
}

function randomEntry (rnd: Random, pool: Buffer[], seq: number): Entry {
  const kind = rnd.int(10) === 0 ? KIND_DELETE : KIND_VALUE
  return { userKey: rnd.pick(pool), seq, kind, value: kind === KIND_DELETE ? EMPTY : rnd.bytes(rnd.int(20)) }
}

/** A lookup target: usually a pooled key, sometimes one that is absent. */
function randomTarget (rnd: Random, pool: Buffer[], maxSeq: number): { key: Buffer, seq: number } {
  const key = rnd.int(4) === 0 ? rnd.bytes(rnd.int(17)) : rnd.pick(pool)
  const r = rnd.int(10)
  const seq = r === 0 ? MAX_SEQ : r === 1 ? 0 : rnd.int(maxSeq + 2)
  return { key, seq }
}

/** Collects failures without one TAP line per check. */
class Failures {
  count = 0
  constructor (private readonly t: test.Test, private readonly what: string) {}
  check (message: string): void {
    if (message === '') return
    if (++this.count <= 5) this.t.fail(`${this.what}: ${message}`)
  }

  done (checks: number): void {
    if (this.count === 0) this.t.pass(`${this.what}: ${checks} checks`)
    else this.t.fail(`${this.what}: ${this.count} failures`)
  }
}

function build (rnd: Random, pool: Buffer[], n: number): { mem: MemTable, model: Entry[] } {
  const mem = new MemTable()
  const model: Entry[] = []
  for (let seq = 1; seq <= n; seq++) {
    const e = randomEntry(rnd, pool, seq)
    mem.add(e.seq, e.kind, e.userKey, e.value)
    model.push(e)
  }
  model.sort(compareEntries)
  return { mem, model }
}

test('memtable: 100k random adds vs model (get, iterate, seek)', (t) => {
  const rnd = new Random(seed)
  const pool = keyPool(rnd, 8000)
  const N = 100000
  const { mem, model } = build(rnd, pool, N)

  t.equal(mem.entryCount(), N, 'entryCount')
  t.equal(mem.firstSeq, 1, 'firstSeq')
  t.equal(mem.lastSeq, N, 'lastSeq')
  const bytes = model.reduce((sum, e) => sum + e.userKey.length + e.value.length + 48, 0)
  t.equal(mem.approximateBytes(), bytes, 'approximateBytes = keys + values + 48 per entry')
  t.ok(mem.smallestKey!.equals(model[0].userKey), 'smallestKey')
  t.ok(mem.largestKey!.equals(model[model.length - 1].userKey), 'largestKey')

  // get at random snapshots
  let f = new Failures(t, 'get')
  const GETS = 100000
  for (let i = 0; i < GETS; i++) {
    const { key, seq } = randomTarget(rnd, pool, N)
    const idx = lowerBound(model, key, seq)
    const want = idx < model.length && model[idx].userKey.equals(key) ? model[idx] : undefined
    const got = mem.get(key, seq)
    if (want === undefined) {
      if (got !== undefined) f.check(`get(${key.toString('hex')}, ${seq}) found seq ${got.seq}, want none`)
    } else if (got === undefined || got.seq !== want.seq || got.kind !== want.kind || !got.value.equals(want.value)) {
      f.check(`get(${key.toString('hex')}, ${seq}) = ${got === undefined ? 'none' : got.seq}, want seq ${want.seq}`)
    }
  }
  f.done(GETS)

  // full scans
  f = new Failures(t, 'forward scan')
  const it = mem.iterator()
  t.notOk(it.valid(), 'a new iterator is not positioned')
  let pos = 0
  for (it.seekToFirst(); it.valid(); it.next()) f.check(diffAt(it, model, pos++))
  f.check(pos === model.length ? '' : `saw ${pos} entries, want ${model.length}`)
  f.done(model.length)

  f = new Failures(t, 'reverse scan')
  pos = model.length - 1
  for (it.seekToLast(); it.valid(); it.prev()) f.check(diffAt(it, model, pos--))
  f.check(pos === -1 ? '' : `stopped at model position ${pos}`)
  f.done(model.length)

  // seeks with short walks in random directions
  f = new Failures(t, 'seek/seekForPrev + random walk')
  let checks = 0
  for (let i = 0; i < 20000; i++) {
    const { key, seq } = randomTarget(rnd, pool, N)
    if (rnd.int(2) === 0) {
      it.seek(key, seq)
      pos = lowerBound(model, key, seq)
    } else {
      it.seekForPrev(key, seq)
      pos = upperBound(model, key, seq) - 1
    }
    f.check(diffAt(it, model, pos))
    checks++
    for (let steps = rnd.int(8); steps > 0 && it.valid(); steps--) {
      if (rnd.int(2) === 0) {
        it.next()
        pos++
      } else {
        it.prev()
        pos--
      }
      f.check(diffAt(it, model, pos))
      checks++
    }
  }
  f.done(checks)
  it.close()
  t.notOk(it.valid(), 'closed iterator is not valid')
  t.end()
})

test('memtable: seqs added out of order, keys added in ascending order', (t) => {
  const rnd = new Random(seed + 1)
  // Shuffled seqs exercise inserts that land before existing versions of a key.
  const mem = new MemTable()
  const model: Entry[] = []
  const pool = keyPool(rnd, 300)
  const seqs = Array.from({ length: 5000 }, (_, i) => i + 1)
  for (let i = seqs.length - 1; i > 0; i--) {
    const j = rnd.int(i + 1);
    [seqs[i], seqs[j]] = [seqs[j], seqs[i]]
  }
  for (const seq of seqs) {
    const e = randomEntry(rnd, pool, seq)
    mem.add(e.seq, e.kind, e.userKey, e.value)
    model.push(e)
  }
  model.sort(compareEntries)
  t.equal(mem.firstSeq, 1, 'firstSeq with shuffled seqs')
  t.equal(mem.lastSeq, 5000, 'lastSeq with shuffled seqs')
  let f = new Failures(t, 'shuffled seqs: scan')
  const it = mem.iterator()
  let pos = 0
  for (it.seekToFirst(); it.valid(); it.next()) f.check(diffAt(it, model, pos++))
  f.check(pos === model.length ? '' : `saw ${pos} entries`)
  f.done(pos)

  // Ascending keys (the append fast path), with a few out-of-order ones mixed in.
  const seqMem = new MemTable()
  const seqModel: Entry[] = []
  for (let i = 0; i < 20000; i++) {
    const n = rnd.int(50) === 0 ? rnd.int(20000) : i
    const e: Entry = { userKey: Buffer.from('k' + String(n).padStart(8, '0')), seq: i + 1, kind: KIND_VALUE, value: rnd.bytes(4) }
    seqMem.add(e.seq, e.kind, e.userKey, e.value)
    seqModel.push(e)
  }
  seqModel.sort(compareEntries)
  f = new Failures(t, 'ascending keys: scan both ways')
  const sit = seqMem.iterator()
  pos = 0
  for (sit.seekToFirst(); sit.valid(); sit.next()) f.check(diffAt(sit, seqModel, pos++))
  f.check(pos === seqModel.length ? '' : `saw ${pos} entries`)
  pos = seqModel.length - 1
  for (sit.seekToLast(); sit.valid(); sit.prev()) f.check(diffAt(sit, seqModel, pos--))
  f.check(pos === -1 ? '' : `reverse stopped at ${pos}`)
  for (let i = 0; i < 5000; i++) {
    const key = Buffer.from('k' + String(rnd.int(20000)).padStart(8, '0'))
    const got = seqMem.get(key, MAX_SEQ)
    const idx = lowerBound(seqModel, key, MAX_SEQ)
    const want = idx < seqModel.length && seqModel[idx].userKey.equals(key) ? seqModel[idx] : undefined
    f.check((got?.seq ?? -1) === (want?.seq ?? -1) ? '' : `get ${key.toString()}: ${got?.seq} want ${want?.seq}`)
  }
  f.done(seqModel.length * 2 + 5000)
  t.end()
})

test('memtable: empty', (t) => {
  const mem = new MemTable()
  t.equal(mem.entryCount(), 0)
  t.equal(mem.approximateBytes(), 0)
  t.equal(mem.smallestKey, undefined)
  t.equal(mem.largestKey, undefined)
  t.equal(mem.get(Buffer.from('a'), MAX_SEQ), undefined)
  const it = mem.iterator()
  it.seekToFirst()
  t.notOk(it.valid(), 'seekToFirst on empty')
  it.seekToLast()
  t.notOk(it.valid(), 'seekToLast on empty')
  it.seek(Buffer.from('a'), MAX_SEQ)
  t.notOk(it.valid(), 'seek on empty')
  it.seekForPrev(Buffer.from('a'), MAX_SEQ)
  t.notOk(it.valid(), 'seekForPrev on empty')
  // An iterator created before the first add sees later adds.
  mem.add(7, KIND_VALUE, Buffer.from('b'), Buffer.from('v'))
  it.seekToFirst()
  t.ok(it.valid() && currentUserKey(it).toString() === 'b' && it.seq() === 7, 'sees an entry added after creation')
  t.equal(mem.get(Buffer.from('b'), 6), undefined, 'snapshot before the entry')
  t.equal(mem.get(Buffer.from('b'), 7)?.value.toString(), 'v', 'snapshot at the entry')
  t.end()
})

test('memtable: iterators stay valid while adds continue', (t) => {
  const rnd = new Random(seed + 2)
  const pool = keyPool(rnd, 3000)
  const N = 10000
  const { mem, model } = build(rnd, pool, N)
  let seq = N
  for (const reverse of [false, true]) {
    const f = new Failures(t, reverse ? 'reverse while adding' : 'forward while adding')
    const it = mem.iterator()
    if (reverse) it.seekToLast()
    else it.seekToFirst()
    const seen = new Set<string>()
    let prevKey: Buffer | undefined
    let prevSeq = 0
    let steps = 0
    while (it.valid()) {
      const key = currentUserKey(it)
      if (prevKey !== undefined) {
        const c = compareInternal(key, it.seq(), prevKey, prevSeq)
        if (reverse ? c >= 0 : c <= 0) f.check(`out of order at step ${steps}`)
      }
      seen.add(key.toString('hex') + '/' + it.seq())
      prevKey = key
      prevSeq = it.seq()
      for (let n = rnd.int(3); n > 0; n--) {
        const e = randomEntry(rnd, pool, ++seq)
        mem.add(e.seq, e.kind, e.userKey, e.value)
      }
      if (reverse) it.prev()
      else it.next()
      steps++
    }
    // Entries present when the scan started are never removed, so all were seen.
    let missing = 0
    for (const e of model) if (!seen.has(e.userKey.toString('hex') + '/' + e.seq)) missing++
    f.check(missing === 0 ? '' : `${missing} original entries not seen`)
    f.done(steps)
  }
  t.equal(mem.entryCount(), seq, 'every add counted')
  t.end()
})

test('memtable: speed (16-byte keys, 100-byte values)', (t) => {
  const rnd = new Random(seed + 3)
  const value = rnd.bytes(100)
  const rate = (n: number, start: bigint): string =>
    Math.round(n / (Number(process.hrtime.bigint() - start) / 1e9)).toLocaleString('en')
  // 25,000 entries is about a full 4 MiB write buffer; 200,000 shows the cost of a large one.
  for (const N of [25000, 200000]) {
    const keys = Array.from({ length: N }, () => rnd.bytes(16))
    const mem = new MemTable()
    let start = process.hrtime.bigint()
    for (let i = 0; i < N; i++) mem.add(i + 1, KIND_VALUE, keys[i], value)
    t.comment(`${N} entries: random put ${rate(N, start)} ops/s`)

    const LOOKUPS = 300000
    const order = Array.from({ length: LOOKUPS }, () => keys[rnd.int(N)])
    let found = 0
    const gets: string[] = []
    for (let round = 0; round < 3; round++) {
      found = 0
      start = process.hrtime.bigint()
      for (let i = 0; i < LOOKUPS; i++) if (mem.get(order[i], MAX_SEQ) !== undefined) found++
      gets.push(rate(LOOKUPS, start))
    }
    t.comment(`${N} entries: random get ${gets.join(', ')} ops/s (3 rounds)`)
    t.equal(found, LOOKUPS, 'every get found its key')

    const it = mem.iterator()
    let n = 0
    start = process.hrtime.bigint()
    for (it.seekToFirst(); it.valid(); it.next()) n++
    t.comment(`${N} entries: forward scan ${rate(n, start)} entries/s`)
    t.equal(n, N, 'scan saw every entry')

    const seqMem = new MemTable()
    const seqKeys = keys.map((_, i) => {
      const k = Buffer.alloc(16)
      k.writeUInt32BE(i, 12)
      return k
    })
    start = process.hrtime.bigint()
    for (let i = 0; i < N; i++) seqMem.add(i + 1, KIND_VALUE, seqKeys[i], value)
    t.comment(`${N} entries: sequential put ${rate(N, start)} ops/s`)
  }
  t.end()
})
