// SSTables end to end through the real NodeFileSystem: build tables from a
// seeded random model (many versions per key, tombstones, awkward keys), then
// check get at many snapshots, both iteration directions, seeks, the Bloom
// filter's false-positive rate, the block and table caches, and that damaged
// files fail as LEVEL_CORRUPTION naming the file (never a RangeError, and with
// checksums on never a wrong answer). Replay a run with SEED=<n>.
import test from 'tape'
import { compareEntries, lowerBound, upperBound, type Entry } from './util/array-iterator'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { NodeFileSystem } from '../hosts/node/node-fs'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, encodeInternalKey } from '../lib/keys'
import { currentUserKey, currentValue } from '../lib/iterators/internal-iterator'
import { TableBuilder } from '../lib/sstable/table-builder'
import { Table } from '../lib/sstable/table'
import { TableCache } from '../lib/sstable/table-cache'
import { BlockCache } from '../lib/sstable/cache'
import { bloomHash, murmur3, BloomBuilder, BloomFilter } from '../lib/sstable/bloom'
import { BlockBuilder } from '../lib/sstable/block-builder'
import { BlockIterator, decodeBlock } from '../lib/sstable/decoded-block'
import { parseRawBlock, rawSeekOut } from '../lib/sstable/raw-block'
import { seekRawBlock } from '../lib/sstable/block-reader'
import { checks } from '../lib/invariants'
import { ByteWriter, compareBytes, compareRange } from '../lib/util/coding'
import { FOOTER_SIZE } from '../lib/sstable/format'
import { tableName } from '../lib/filenames'
import { Random, seedFromEnv } from './util/random'
import { buildTable, collectEntries, currentEntry, diffEntries, isCorruptionNaming, thrown } from './util/tables'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

// ---------------------------------------------------------------------------
// Model and helpers.

// The sorted-array model's helpers are shared with the iterator tests.
const cmpEntry = compareEntries

function modelGet (model: Entry[], userKey: Buffer, seq: number): Entry | undefined {
  const i = lowerBound(model, userKey, seq)
  return i < model.length && model[i].userKey.equals(userKey) ? model[i] : undefined
}

/** Keys of mixed shapes: tiny alphabet with 0x00/0xff (prefixes of each other), shared prefixes, random bytes. */
function makeKey (rng: Random, prefixes: Buffer[]): Buffer {
  switch (rng.int(3)) {
    case 0: {
      const k = Buffer.allocUnsafe(rng.int(7))
      for (let i = 0; i < k.length; i++) k[i] = [0x00, 0x01, 0x61, 0xfe, 0xff][rng.int(5)]
      return k
    }
    case 1:
      return Buffer.concat([prefixes[rng.int(prefixes.length)], rng.bytes(rng.int(10))])
    default:
      return rng.bytes(1 + rng.int(24))
  }
}

/** A sorted model of about `nKeys` user keys with 1..3 versions each, ~20% tombstones. */
/** `model` with each value replaced by text of the same length that compresses well (deletes keep empty values). */
function compressibleValues (model: Entry[]): Entry[] {
  return model.map((e, i) => ({ ...e, value: Buffer.from(`{"n":${i % 97},"s":"open"}`.repeat(Math.ceil(e.value.length / 20)).slice(0, e.value.length)) }))
}

function makeModel (rng: Random, nKeys: number): { model: Entry[], keys: Buffer[] } {
  const prefixes: Buffer[] = []
  for (let i = 0; i < 40; i++) prefixes.push(rng.bytes(2 + rng.int(10)))
  const seen = new Set<string>()
  const keys: Buffer[] = []
  while (keys.length < nKeys) {
    const k = makeKey(rng, prefixes)
    const h = k.toString('hex')
    if (seen.has(h)) continue
    seen.add(h)
    keys.push(k)
  }
  const model: Entry[] = []
  for (const k of keys) {
    const versions = 1 + rng.int(3)
    const seqs = new Set<number>()
    while (seqs.size < versions) seqs.add(rng.int(3) === 0 ? 1 + rng.int(50) : 1 + rng.int(2 ** 40))
    if (rng.int(500) === 0) seqs.add(MAX_SEQ)
    for (const seq of seqs) {
      const del = rng.int(5) === 0
      const vlen = rng.int(40) === 0 ? 300 + rng.int(700) : rng.int(60)
      model.push({ userKey: k, seq, kind: del ? KIND_DELETE : KIND_VALUE, value: del ? Buffer.alloc(0) : rng.bytes(vlen) })
    }
  }
  model.sort(cmpEntry)
  keys.sort(Buffer.compare)
  return { model, keys }
}

const nfs = new NodeFileSystem()
const tmp = tempDir('lsm-sstable-test-')

// ---------------------------------------------------------------------------

for (const version of [1, 2]) test(`block (format v${version}): build, decode, search, iterate`, (t) => {
  const rng = new Random(seed ^ 0x1111 ^ version)
  const { model } = makeModel(rng, 300)
  for (const interval of [1, 3, 16]) {
    const bb = new BlockBuilder(interval, version)
    for (const e of model) bb.add(e.userKey, e.seq, e.kind, e.value)
    const w = bb.finish()
    const block = decodeBlock('x.sst', Buffer.from(w.buf.subarray(0, w.pos)), version)
    t.is(block.length, model.length, `interval ${interval}: all entries decoded`)
    const it = new BlockIterator(block)
    t.is(diffEntries(collectEntries(it), model), null, 'forward matches')
    t.is(diffEntries(collectEntries(it, true), model.slice().reverse()), null, 'backward matches')
    let ok = true
    for (let i = 0; i < 500; i++) {
      const e = model[rng.int(model.length)]
      const seq = rng.int(2 ** 41)
      if (block.lowerBound(e.userKey, seq) !== lowerBound(model, e.userKey, seq)) ok = false
      if (block.upperBound(e.userKey, seq) !== upperBound(model, e.userKey, seq)) ok = false
    }
    t.ok(ok, 'lowerBound/upperBound match the model')
    // The raw (cached) form answers point lookups in place like the model.
    const raw = parseRawBlock('x.sst', Buffer.from(w.buf.subarray(0, w.pos)), version)
    let rawWrong = 0
    for (let i = 0; i < 2000; i++) {
      const e = model[rng.int(model.length)]
      const r = rng.int(4)
      const key = r === 0 ? rng.bytes(1 + rng.int(12)) : r === 1 ? Buffer.concat([e.userKey, Buffer.from([rng.int(256)])]) : e.userKey
      const seq = rng.int(3) === 0 ? e.seq : rng.int(2) === 0 ? MAX_SEQ : rng.int(2 ** 41)
      const pos = lowerBound(model, key, seq)
      const want = pos < model.length && model[pos].userKey.equals(key) ? model[pos] : undefined
      const found = seekRawBlock('x.sst', raw, key, seq)
      if (want === undefined
        ? found
        : (!found || rawSeekOut.seq !== want.seq || rawSeekOut.kind !== want.kind ||
        !raw.contents.subarray(rawSeekOut.valueStart, rawSeekOut.valueEnd).equals(want.value))) rawWrong++
    }
    t.is(rawWrong, 0, `interval ${interval}: raw-block point lookups match the model`)
  }
  const emptyRaw = new BlockBuilder(16, version).finish()
  t.notOk(seekRawBlock('x.sst', parseRawBlock('x.sst', Buffer.from(emptyRaw.buf.subarray(0, emptyRaw.pos)), version), Buffer.from('a'), MAX_SEQ), 'empty raw block finds nothing')
  const empty = new BlockBuilder(16, version).finish()
  t.is(decodeBlock('x.sst', Buffer.from(empty.buf.subarray(0, empty.pos)), version).length, 0, 'empty block decodes')
  // Every truncation and every single-byte flip of a small block: corruption or a decode, never another error.
  const bb = new BlockBuilder(2, version)
  for (const e of model.slice(0, 12)) bb.add(e.userKey, e.seq, e.kind, e.value)
  const w = bb.finish()
  const good = Buffer.from(w.buf.subarray(0, w.pos))
  let bad = 0
  for (let len = 0; len < good.length; len++) {
    const err = thrown(() => decodeBlock('x.sst', Buffer.from(good.subarray(0, len)), version))
    if (err !== undefined && !isCorruptionNaming(err, 'x.sst')) bad++
  }
  for (let i = 0; i < good.length; i++) {
    for (const x of [0x01, 0x80, 0xff]) {
      const b = Buffer.from(good)
      b[i] ^= x
      const err = thrown(() => decodeBlock('x.sst', b, version))
      if (err !== undefined && !isCorruptionNaming(err, 'x.sst')) bad++
    }
  }
  t.is(bad, 0, 'damaged blocks fail only with LEVEL_CORRUPTION')
  // The same damage seen through the raw form: parsing and every lookup either
  // answer or fail with LEVEL_CORRUPTION, never another error.
  const probes = model.slice(0, 14).map((e) => e.userKey)
  let rawBad = 0
  let rawCaught = 0
  const tryRaw = (b: Buffer): void => {
    const err = thrown(() => {
      const raw = parseRawBlock('x.sst', b, version)
      for (const k of probes) for (const seq of [MAX_SEQ, 1]) seekRawBlock('x.sst', raw, k, seq)
    })
    if (err !== undefined) {
      rawCaught++
      if (!isCorruptionNaming(err, 'x.sst')) rawBad++
    }
  }
  for (let len = 0; len < good.length; len++) tryRaw(Buffer.from(good.subarray(0, len)))
  for (let i = 0; i < good.length; i++) {
    for (const x of [0x01, 0x80, 0xff]) {
      const b = Buffer.from(good)
      b[i] ^= x
      tryRaw(b)
    }
  }
  t.ok(rawCaught > good.length, `damage caught in the raw form (${rawCaught} cases)`)
  t.is(rawBad, 0, 'damaged raw blocks fail only with LEVEL_CORRUPTION')
  t.end()
})

test('raw blocks: the cache charge matches live memory after GC (needs --expose-gc)', (t) => {
  // Bun: Bun.gc(true), and heapUsed already counts array buffers. Deno: counts
  // them in `external` (arrayBuffers is 0). See the memory check in engine.test.ts.
  const bun = (globalThis as { Bun?: { gc: (force: boolean) => void } }).Bun
  const deno = (globalThis as { Deno?: unknown }).Deno !== undefined
  const gc = bun !== undefined ? () => bun.gc(true) : (globalThis as { gc?: () => void }).gc
  if (gc === undefined) {
    t.skip('run with --expose-gc')
    t.end()
    return
  }
  const live = (): number => {
    gc()
    gc()
    const m = process.memoryUsage()
    return bun !== undefined ? m.heapUsed : m.heapUsed + (deno ? m.external : m.arrayBuffers)
  }
  const rng = new Random(seed ^ 0x9999)
  // Entry-dominated, byte-dominated and block-dominated shapes; ~5-20 MB each.
  const shapes = [
    { keyLen: 16, valueLen: 100, blockSize: 4096, n: 100000 },
    { keyLen: 8, valueLen: 8, blockSize: 4096, n: 300000 },
    { keyLen: 16, valueLen: 100, blockSize: 256, n: 40000 }
  ]
  for (const { keyLen, valueLen, blockSize, n } of shapes) {
    const model: Entry[] = []
    for (let i = 0; i < n; i++) {
      const k = rng.bytes(keyLen)
      k.writeUInt32BE(i, 0) // sorted and unique
      model.push({ userKey: k, seq: 1 + rng.int(2 ** 40), kind: KIND_VALUE, value: rng.bytes(valueLen) })
    }
    const built = buildTable(tmp, model, { blockSize, bloomBitsPerKey: 10 })
    const cache = new BlockCache(1 << 30)
    const table = Table.open(nfs, built.path, built.name, cache)
    const before = live()
    for (let i = 0; i < table.dataBlockCount; i++) table.rawBlock(i)
    const grown = live() - before
    const charged = cache.usedBytes()
    const ratio = grown / charged
    const what = `${keyLen} B keys, ${valueLen} B values, ${table.dataBlockCount} blocks of ~${blockSize} B`
    console.log(`# ${what}: live ${(grown / 1e6).toFixed(2)} MB, charged ${(charged / 1e6).toFixed(2)} MB (ratio ${ratio.toFixed(3)})`)
    t.ok(ratio > 0.75 && ratio < 1.25, `${what}: live memory within 25% of the charge (${ratio.toFixed(3)})`)
    // Every entry still reads back (the blocks are intact after GC).
    let wrong = 0
    for (let i = 0; i < n; i += 97) {
      const got = table.get(model[i].userKey, MAX_SEQ)
      if (got === undefined || got.seq !== model[i].seq || !got.value.equals(model[i].value)) wrong++
    }
    t.is(wrong, 0, `${what}: gets after GC are right`)
    table.unref()
    t.is(cache.usedBytes(), 0, 'closing the table releases the charge')
  }
  t.end()
})

test('decoded blocks: range compare, views outlive eviction, paranoid order check', (t) => {
  const rng = new Random(seed ^ 0xaaaa)
  // compareRange agrees with compareBytes on sub-ranges (signs only).
  let wrong = 0
  for (let i = 0; i < 2000; i++) {
    const a = rng.bytes(rng.int(12))
    const b = rng.int(3) === 0 ? Buffer.concat([a.subarray(0, rng.int(a.length + 1)), rng.bytes(rng.int(4))]) : rng.bytes(rng.int(12))
    const pa = rng.bytes(rng.int(5))
    const pb = rng.bytes(rng.int(5))
    const wa = Buffer.concat([pa, a, rng.bytes(3)])
    const wb = Buffer.concat([pb, b])
    const got = Math.sign(compareRange(wa, pa.length, pa.length + a.length, wb, pb.length, pb.length + b.length))
    if (got !== Math.sign(compareBytes(a, b))) wrong++
  }
  t.is(wrong, 0, 'compareRange orders ranges like compareBytes')

  // The entry an iterator is on stays intact while the cache evicts its block
  // and recycles memory for other reads (the block is pinned); the blocks it has
  // moved off are recycled, so a scan does not allocate a buffer per block.
  const { model } = makeModel(rng, 3000)
  const built = buildTable(tmp, model, { blockSize: 512, bloomBitsPerKey: 10 })
  const cache = new BlockCache(4096)
  const table = Table.open(nfs, built.path, built.name, cache)
  const it = table.iterator()
  const buffers = new Set<ArrayBufferLike>()
  let i = 0
  let checked = 0
  let intact = 0
  for (it.seekToFirst(); it.valid(); it.next(), i++) {
    buffers.add(it.valueSource().buffer)
    if (i % 50 !== 0) continue
    const key = currentUserKey(it)
    const value = currentValue(it)
    for (let j = i % 7; j < model.length; j += 97) table.get(model[j].userKey, MAX_SEQ) // churn the tiny cache
    checked++
    if (key.equals(model[i].userKey) && value.equals(model[i].value) && currentUserKey(it).equals(model[i].userKey)) intact++
  }
  it.close()
  t.ok(checked > 10 && intact === checked, `${intact} of ${checked} current entries intact while the cache churned`)
  t.ok(buffers.size < table.dataBlockCount / 4, `a scan of ${table.dataBlockCount} blocks read them into ${buffers.size} buffers`)
  // Values returned by get() are held: evicted unpinned blocks' memory is recycled for later reads.
  const got: Array<{ e: Entry, value: Buffer }> = []
  for (let j = 0; j < model.length; j += 101) {
    const r = table.get(model[j].userKey, MAX_SEQ)
    if (r !== undefined && r.seq === model[j].seq) got.push({ e: model[j], value: r.value })
  }
  for (let j = 0; j < model.length; j += 7) table.get(model[j].userKey, MAX_SEQ) // churn the tiny cache
  t.ok(got.length > 10 && got.every((g) => g.value.equals(g.e.value)), `${got.length} values from get() unchanged after eviction and recycling`)
  table.unref()

  // An out-of-order block (valid framing) is corruption in paranoid mode, in both entry layouts.
  for (const version of [1, 2]) {
    const entries: Array<[string, number]> = [['b', 5], ['a', 9]]
    const w = new ByteWriter()
    const restarts: number[] = []
    for (const [k, seq] of entries) {
      restarts.push(w.pos)
      const ik = version === 1 ? encodeInternalKey(Buffer.from(k), seq, KIND_VALUE) : Buffer.from(k)
      w.varint(0)
      w.varint(ik.length)
      w.varint(1)
      if (version === 2) w.varint(seq * 2 + KIND_VALUE)
      w.bytes(ik)
      w.byte(0x76)
    }
    for (const r of restarts) w.fixed32(r)
    w.fixed32(restarts.length)
    const raw = Buffer.from(w.view())
    const saved = checks.paranoid
    try {
      checks.paranoid = true
      t.ok(isCorruptionNaming(thrown(() => decodeBlock('order.sst', raw, version)), 'order.sst'), `v${version} paranoid: out-of-order entries are LEVEL_CORRUPTION`)
      checks.paranoid = false
      t.is(decodeBlock('order.sst', raw, version).length, 2, `v${version}: without paranoid checks the block decodes`)
    } finally {
      checks.paranoid = saved
    }
  }
  t.end()
})

test('bloom: hash is stable, no false negatives, ~1% false positives at 10 bits/key', (t) => {
  // bloomHash is part of the on-disk format: pin a few values.
  t.is(bloomHash(Buffer.alloc(0)), bloomHash(Buffer.alloc(0)), 'deterministic')
  const pinned = [bloomHash(Buffer.from('')), bloomHash(Buffer.from('a')), bloomHash(Buffer.from('abcd')), bloomHash(Buffer.from('hello world'))]
  t.deepEqual(pinned, [3651860435, 3348447516, 986616637, 3637465228], 'hash values are pinned (format)')
  // murmur3 agrees with the reference implementation's published vectors (all tail lengths).
  const m = (s: string, seed: number): number => murmur3(Buffer.from(s), seed)
  t.deepEqual(
    [m('', 0), m('', 1), m('test', 0), m('Hello, world!', 0), m('Hello, world!', 1234), m('a', 0x9747b28c), m('ab', 0x9747b28c), m('aaa', 0x9747b28c)],
    [0, 0x514e28b7, 0xba6bd213, 0xc0363e43, 0xfaf6cdb3, 0x7fa09ea6, 0x74875592, 0x283e0130],
    'murmur3 reference vectors')
  for (const version of [1, 2]) {
    const rng = new Random(seed ^ 0x2222)
    const n = 20000
    const bb = new BloomBuilder(10, version)
    const keys: Buffer[] = []
    for (let i = 0; i < n; i++) {
      const k = Buffer.from(`key-${i}-${rng.next()}`)
      keys.push(k)
      bb.addKey(k)
    }
    const f = new BloomFilter('f.sst', bb.finish(), version)
    t.ok(keys.every((k) => f.mayContain(k)), `v${version}: no false negatives`)
    let fp = 0
    const probes = 20000
    for (let i = 0; i < probes; i++) if (f.mayContain(Buffer.from(`absent-${i}-${rng.next()}`))) fp++
    const rate = fp / probes
    console.log(`# bloom (table format ${version}) false positive rate at 10 bits/key: ${(rate * 100).toFixed(2)}%`)
    t.ok(rate < 0.03, `v${version}: false positive rate ${(rate * 100).toFixed(2)}% < 3%`)
  }
  // Format 2 is cache-local: every bit of a key in one 64-byte line.
  const spread: number[] = []
  for (let i = 0; i < 200; i++) {
    const one = new BloomBuilder(10, 2)
    for (let j = 0; j < 1000; j++) one.addKey(Buffer.from(`filler-${j}`)) // 10,000 bits: 20 lines
    const before = one.finish()
    one.addKey(Buffer.from(`probe-${i}`))
    const after = one.finish()
    const changed: number[] = []
    for (let b = 0; b < after.length - 1; b++) if (after[b] !== before[b]) changed.push(b)
    spread.push(changed.length === 0 ? 0 : Math.floor(changed[changed.length - 1] / 64) - Math.floor(changed[0] / 64))
  }
  t.ok(spread.every((d) => d === 0), 'v2: the bits a key sets lie in one 64-byte line')
  const pinnedFilter = new BloomBuilder(10, 2)
  for (const k of ['a', 'b', 'hello', 'world', '']) pinnedFilter.addKey(Buffer.from(k))
  const layout = pinnedFilter.finish()
  t.is(layout.length, 64 + 1, 'v2: array rounded up to whole lines')
  t.is(layout.toString('hex'), PINNED_V2_FILTER, 'v2: filter bytes are pinned (format)')
  t.throws(() => new BloomFilter('f.sst', Buffer.alloc(65 + 8, 1), 2), /not made of 64-byte lines/, 'v2: a bit array that is not whole lines is corruption')
  t.end()
})

for (const [blockSize, formatVersion] of [[256, 3], [4096, 3], [256, 2], [4096, 2], [256, 1], [4096, 1]]) {
  test(`table round trip, blockSize ${blockSize}, format v${formatVersion}${formatVersion === 3 ? ', compressible values' : ''}`, (t) => {
    const rng = new Random(seed ^ blockSize ^ (formatVersion << 16))
    const made = makeModel(rng, 10000)
    const keys = made.keys
    const model = formatVersion === 3 ? compressibleValues(made.model) : made.model
    const built = buildTable(tmp, model, { blockSize, bloomBitsPerKey: 10, formatVersion })
    if (formatVersion === 3) {
      const plain = buildTable(tmp, model, { blockSize, bloomBitsPerKey: 10, formatVersion, compression: false })
      t.ok(built.size < plain.size * 0.8, `compressed: ${built.size} bytes, uncompressed ${plain.size}`)
    }
    const cache = new BlockCache(8 << 20)
    const table = Table.open(nfs, built.path, built.name, cache)
    t.is(table.formatVersion, formatVersion, `format version ${formatVersion}`)
    t.is(table.properties.formatVersion, formatVersion, 'properties carry the format version')
    t.is(table.entries, model.length, `entries (${model.length})`)
    t.is(table.fileSize, built.size, 'file size')
    t.ok(table.smallest.userKey.equals(model[0].userKey) && table.smallest.seq === model[0].seq, 'smallest')
    const last = model[model.length - 1]
    t.ok(table.largest.userKey.equals(last.userKey) && table.largest.seq === last.seq, 'largest')
    console.log(`# blockSize ${blockSize}, v${formatVersion}: ${model.length} entries, ${table.dataBlockCount} data blocks, ${built.size} bytes`)

    // get() of every key at various snapshots.
    let getMismatch = 0
    let gets = 0
    for (let i = 0; i < model.length; i++) {
      const e = model[i]
      for (const seq of [MAX_SEQ, e.seq, e.seq + 1, e.seq - 1, 0, rng.int(2 ** 41)]) {
        if (seq < 0) continue
        gets++
        const want = modelGet(model, e.userKey, seq)
        const got = table.get(e.userKey, seq)
        if (want === undefined ? got !== undefined : (got === undefined || got.seq !== want.seq || got.kind !== want.kind || !got.value.equals(want.value))) {
          if (getMismatch++ < 5) t.fail(`get ${e.userKey.toString('hex')}@${seq}: want ${want?.seq}, got ${got?.seq}`)
        }
      }
    }
    t.is(getMismatch, 0, `${gets} gets match the model`)

    // Absent keys (including ones next to present keys).
    let absentWrong = 0
    for (let i = 0; i < 5000; i++) {
      const base = keys[rng.int(keys.length)]
      const k = rng.int(2) === 0 ? rng.bytes(1 + rng.int(20)) : Buffer.concat([base, Buffer.from([rng.int(256)])])
      const want = modelGet(model, k, MAX_SEQ)
      const got = table.get(k, MAX_SEQ)
      if ((want === undefined) !== (got === undefined)) absentWrong++
    }
    t.is(absentWrong, 0, 'absent keys are absent')

    // Full iteration in both directions.
    const it = table.iterator()
    t.is(diffEntries(collectEntries(it), model), null, 'forward iteration equals the model')
    t.is(diffEntries(collectEntries(it, true), model.slice().reverse()), null, 'reverse iteration equals the model')

    // Seeks to random targets, then a few steps either way.
    let seekWrong = 0
    for (let i = 0; i < 3000; i++) {
      const e = model[rng.int(model.length)]
      const r = rng.int(4)
      const target = r === 0 ? rng.bytes(rng.int(12)) : r === 1 ? Buffer.concat([e.userKey, Buffer.from([rng.int(256)])]) : e.userKey
      const seq = rng.int(3) === 0 ? e.seq : rng.int(2) === 0 ? MAX_SEQ : rng.int(2 ** 41)
      let pos = lowerBound(model, target, seq)
      it.seek(target, seq)
      for (let step = 0; step < 4; step++) {
        const ok = pos < model.length ? it.valid() && cmpEntry(currentEntry(it), model[pos]) === 0 && currentValue(it).equals(model[pos].value) : !it.valid()
        if (!ok) seekWrong++
        if (!it.valid()) break
        if (step % 2 === 0) { it.next(); pos++ } else { it.prev(); pos-- }
        if (step === 1) { it.next(); pos++ }
      }
      pos = upperBound(model, target, seq) - 1
      it.seekForPrev(target, seq)
      for (let step = 0; step < 4; step++) {
        const ok = pos >= 0 ? it.valid() && cmpEntry(currentEntry(it), model[pos]) === 0 : !it.valid()
        if (!ok) seekWrong++
        if (!it.valid()) break
        if (step < 2) { it.prev(); pos-- } else { it.next(); pos++ }
      }
    }
    t.is(seekWrong, 0, 'seek / seekForPrev / next / prev match the model')
    it.seek(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), 0)
    t.notOk(it.valid(), 'seek past the end is invalid')
    it.seekForPrev(Buffer.alloc(0), MAX_SEQ)
    t.is(it.valid(), model[0].userKey.length === 0 && model[0].seq === MAX_SEQ, 'seekForPrev before the start is invalid')
    it.close()
    it.close()

    // approximateOffsetOf is monotonic and within the file.
    let prevOff = 0
    let mono = true
    for (const k of keys) {
      const off = table.approximateOffsetOf(k)
      if (off < prevOff || off > table.fileSize) mono = false
      prevOff = off
    }
    t.ok(mono, 'approximateOffsetOf is monotonic and inside the file')

    t.ok(table.bloomChecked > 0, `bloom checked ${table.bloomChecked}, useful ${table.bloomUseful}`)
    table.unref()
    t.end()
  })
}

test('table: bloom gating, no-filter tables, empty tables, order assertion', (t) => {
  const rng = new Random(seed ^ 0x3333)
  const { model } = makeModel(rng, 10000)
  const withBloom = buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10 })
  const noBloom = buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 0 })
  const cache = new BlockCache(1 << 20)
  const a = Table.open(nfs, withBloom.path, withBloom.name, cache)
  const b = Table.open(nfs, noBloom.path, noBloom.name, cache)
  let fp = 0
  let noFilterSaidNo = 0
  const n = 10000
  for (let i = 0; i < n; i++) {
    const k = Buffer.from(`absent/${i}/${rng.next()}`)
    if (a.mayContain(k)) fp++
    if (!b.mayContain(k)) noFilterSaidNo++
  }
  t.is(noFilterSaidNo, 0, 'a table without a filter always says maybe')
  const before = a.bloomUseful
  for (let i = 0; i < 1000; i++) a.get(Buffer.from(`nope/${i}`), MAX_SEQ)
  t.ok(a.bloomUseful - before > 950, 'get() is bloom-gated and counts useful checks')
  console.log(`# table bloom false positive rate: ${(fp / n * 100).toFixed(2)}% (${withBloom.size - noBloom.size} filter bytes)`)
  t.ok(fp / n < 0.03, 'table filter false positive rate < 3%')
  a.unref()
  b.unref()

  const empty = buildTable(tmp, [], { blockSize: 4096, bloomBitsPerKey: 10 })
  const e = Table.open(nfs, empty.path, empty.name, cache)
  t.is(e.entries, 0, 'empty table opens')
  t.is(e.get(Buffer.from('x'), MAX_SEQ), undefined, 'empty get')
  const it = e.iterator()
  it.seekToFirst()
  t.notOk(it.valid(), 'empty seekToFirst')
  it.seekToLast()
  t.notOk(it.valid(), 'empty seekToLast')
  it.seek(Buffer.from('a'), 1)
  t.notOk(it.valid(), 'empty seek')
  it.seekForPrev(Buffer.from('a'), 1)
  t.notOk(it.valid(), 'empty seekForPrev')
  it.close()
  e.unref()

  const w = nfs.openWrite(path.join(tmp, 'order.sst'))
  const tb = new TableBuilder(w, { blockSize: 4096, bloomBitsPerKey: 10 })
  tb.add(Buffer.from('b'), 5, KIND_VALUE, Buffer.from('v'))
  t.throws(() => tb.add(Buffer.from('a'), 9, KIND_VALUE, Buffer.alloc(0)), /increasing internal order/, 'smaller user key rejected')
  t.throws(() => tb.add(Buffer.from('b'), 5, KIND_VALUE, Buffer.alloc(0)), /increasing internal order/, 'same internal key rejected')
  t.throws(() => tb.add(Buffer.from('b'), 6, KIND_VALUE, Buffer.alloc(0)), /increasing internal order/, 'higher seq for same key rejected')
  tb.add(Buffer.from('b'), 4, KIND_DELETE, Buffer.alloc(0))
  t.is(tb.entryCount(), 2, 'entryCount')
  t.ok(tb.estimatedSize() > 0, 'estimatedSize')
  tb.finish()
  w.close()
  t.end()
})

// The filter of format 2 for the keys 'a', 'b', 'hello', 'world' and '' at 10 bits per key (7 probes, one line).
const PINNED_V2_FILTER = '8000800410240000010000100000080000001004001500000500000080a20000000401000001000210000040040000a00180010000008008000000080000000007'

test('block cache: stays under capacity, counts hits, LRU', (t) => {
  const rng = new Random(seed ^ 0x4444)
  const { model } = makeModel(rng, 5000)
  const built = buildTable(tmp, model, { blockSize: 1024, bloomBitsPerKey: 10 })
  const capacity = 32 * 1024
  const cache = new BlockCache(capacity)
  const table = Table.open(nfs, built.path, built.name, cache)
  let over = 0
  for (let i = 0; i < 20000; i++) {
    const e = model[rng.int(model.length)]
    table.get(e.userKey, MAX_SEQ)
    if (cache.usedBytes() > capacity) over++
  }
  t.is(over, 0, `usedBytes never above capacity (now ${cache.usedBytes()})`)
  t.ok(cache.usedBytes() > capacity / 2, 'cache is used')
  t.ok(cache.hits > 0 && cache.misses > 0, `hits ${cache.hits}, misses ${cache.misses}`)
  // A hot key keeps hitting.
  const hot = model[0]
  table.get(hot.userKey, MAX_SEQ)
  const h0 = cache.hits
  for (let i = 0; i < 100; i++) table.get(hot.userKey, MAX_SEQ)
  t.is(cache.hits - h0, 100, 'repeated gets of one block hit')
  // Second chance (CLOCK): a block read between every miss stays cached while
  // the other blocks churn through the cache many times over (a FIFO would drop it).
  const h1 = cache.hits
  const m1 = cache.misses
  let hotHits = 0
  for (let i = 0; i < 2000; i++) {
    const before = cache.hits
    table.get(hot.userKey, MAX_SEQ)
    if (cache.hits === before + 1) hotHits++
    table.get(model[rng.int(model.length)].userKey, MAX_SEQ)
  }
  t.ok(cache.misses - m1 > 500, `the other blocks churned (${cache.misses - m1} misses, ${cache.hits - h1} hits)`)
  t.is(hotHits, 2000, 'the block read between the misses hit every time')
  table.unref()
  t.is(cache.usedBytes(), 0, 'closing the table drops its blocks')

  const none = new BlockCache(0)
  const t2 = Table.open(nfs, built.path, built.name, none)
  t.ok(t2.get(hot.userKey, MAX_SEQ) !== undefined, 'works without a cache')
  t.is(none.usedBytes(), 0, 'capacity 0 caches nothing')
  t2.unref()
  t.end()
})

function openFdCount (): number {
  try {
    return nodeFs.readdirSync('/proc/self/fd').length
  } catch {
    return -1
  }
}

test('table iterators: one opened and closed next to another never disturbs it (block columns are reused)', (t) => {
  const rng = new Random(seed ^ 0x5151)
  const a = makeModel(rng, 2000).model
  const b = makeModel(rng, 2000).model
  const ta = Table.open(nfs, buildTable(tmp, a, { blockSize: 512, bloomBitsPerKey: 10 }).path, 'a.sst', new BlockCache(1 << 20))
  const tb = Table.open(nfs, buildTable(tmp, b, { blockSize: 512, bloomBitsPerKey: 10 }).path, 'b.sst', new BlockCache(1 << 20))
  const it = ta.iterator()
  let i = 0
  let wrong = 0
  let others = 0
  for (it.seekToFirst(); it.valid(); it.next(), i++) {
    if (i % 97 === 0) {
      // Iterators over the other table, opened, moved over several blocks and closed.
      for (let k = 0; k < 3; k++) {
        const other = tb.iterator()
        const target = b[rng.int(b.length)]
        other.seek(target.userKey, target.seq)
        for (let n = 0; n < 60 && other.valid(); n++) other.next()
        other.close()
        others++
      }
    }
    if (!currentUserKey(it).equals(a[i].userKey) || it.seq() !== a[i].seq || !currentValue(it).equals(a[i].value)) wrong++
  }
  it.close()
  t.is(i, a.length, 'the iterator saw every entry')
  t.is(wrong, 0, `every entry intact with ${others} iterators over another table opened and closed along the way`)
  ta.unref()
  tb.unref()
  t.end()
})

test('table iterators read ahead while they walk the blocks in order: far fewer reads, the same entries, damage still caught', (t) => {
  const rng = new Random(seed ^ 0x2ead)
  const random = makeModel(rng, 3000).model
  // The same keys with values that compress: format 3 stores those blocks Snappy-compressed.
  const compressible = random.map((e) => ({ ...e, value: Buffer.alloc(e.value.length, e.value[0] ?? 0) }))
  let reads = 0
  const counting = Object.create(nfs) as typeof nfs
  counting.openRead = (p: string) => {
    const f = nfs.openRead(p)
    return { read: (buf, off, len, pos) => { reads++; return f.read(buf, off, len, pos) }, size: () => f.size(), close: () => f.close() }
  }
  for (const [what, model] of [['random values', random], ['compressible values', compressible]] as const) {
    const built = buildTable(tmp, model, { blockSize: 512, bloomBitsPerKey: 10 })
    const table = Table.open(counting, built.path, built.name, new BlockCache(1 << 20))
    const blocks = table.dataBlockCount
    reads = 0
    t.is(diffEntries(collectEntries(table.iterator()), model), null, `${what}: a forward scan sees every entry`)
    t.ok(reads * 4 < blocks, `${what}: a cold forward scan of ${blocks} blocks read the file ${reads} times`)
    // A second scan finds the blocks cached; a backward one and seeks read block by block.
    const cold = Table.open(counting, built.path, built.name, new BlockCache(1 << 20))
    t.is(diffEntries(collectEntries(cold.iterator(), true), [...model].reverse()), null, `${what}: a backward scan sees every entry`)
    const seeks = Table.open(counting, built.path, built.name, new BlockCache(1 << 20))
    let wrong = 0
    const it = seeks.iterator()
    for (let i = 0; i < 300; i++) {
      const at = rng.int(model.length)
      it.seek(model[at].userKey, model[at].seq)
      for (let n = 0; n < 5 && at + n < model.length; n++, it.next()) if (!currentUserKey(it).equals(model[at + n].userKey) || it.seq() !== model[at + n].seq) wrong++
    }
    it.close()
    t.is(wrong, 0, `${what}: seeks, each followed by a few entries, see the right entries`)
    // A damaged block in the middle of the data, read through a readahead window: corruption naming the table.
    const bytes = nodeFs.readFileSync(built.path)
    const damaged = path.join(tmp, `damaged-${built.name}`)
    const at = Math.floor(bytes.length * 0.4)
    bytes[at] ^= 0x40
    nodeFs.writeFileSync(damaged, bytes)
    const bad = Table.open(counting, damaged, 'damaged.sst', new BlockCache(1 << 20))
    t.ok(isCorruptionNaming(thrown(() => collectEntries(bad.iterator())), 'damaged.sst'), `${what}: a flipped byte in a block read ahead is LEVEL_CORRUPTION naming the table`)
    for (const x of [table, cold, seeks, bad]) x.unref()
  }
  t.end()
})

test('table iterators and the block cache (fillCache): a long scan keeps its run out of the cache by default, true caches every block, false none; the same entries and damage caught either way', (t) => {
  const rng = new Random(seed ^ 0xf111)
  const random = makeModel(rng, 3000).model
  // Values that compress: format 3 stores those blocks Snappy-compressed, decompressed into the iterator's own memory.
  const compressible = random.map((e) => ({ ...e, value: Buffer.alloc(e.value.length, e.value[0] ?? 0) }))
  for (const [what, model] of [['random values', random], ['compressible values', compressible]] as const) {
    const built = buildTable(tmp, model, { blockSize: 512, bloomBitsPerKey: 10 })
    const used: Record<string, number> = {}
    for (const fill of [undefined, true, false]) {
      const cache = new BlockCache(1 << 22)
      const table = Table.open(nfs, built.path, built.name, cache)
      const mode = `fillCache ${String(fill)}`
      t.is(diffEntries(collectEntries(table.iterator(fill)), model), null, `${what}, ${mode}: a forward scan sees every entry`)
      used[mode] = cache.usedBytes()
      t.is(diffEntries(collectEntries(table.iterator(fill), true), [...model].reverse()), null, `${what}, ${mode}: a backward scan sees every entry`)
      // Two iterators walking the same blocks side by side, each in its own memory, and gets between their steps.
      const a = table.iterator(fill)
      const b = table.iterator(fill)
      let wrong = 0
      a.seekToFirst()
      b.seek(model[100].userKey, model[100].seq)
      for (let i = 0; a.valid(); i++, a.next()) {
        if (!currentUserKey(a).equals(model[i].userKey) || !currentValue(a).equals(model[i].value)) wrong++
        const j = 100 + i
        if (j < model.length) {
          if (!b.valid() || !currentUserKey(b).equals(model[j].userKey) || !currentValue(b).equals(model[j].value)) wrong++
          b.next()
        }
        const e = model[rng.int(model.length)]
        const got = table.get(e.userKey, e.seq)
        if (got === undefined || !got.value.equals(e.value)) wrong++
      }
      a.close()
      b.close()
      t.is(wrong, 0, `${what}, ${mode}: two iterators side by side and gets in between see the right entries`)
      table.unref()
    }
    t.ok(used['fillCache true'] >= table512Blocks(model) * 512, `${what}: fillCache true caches every block a scan reads (${used['fillCache true']} bytes)`)
    t.ok(used['fillCache undefined'] > 0 && used['fillCache undefined'] * 10 < used['fillCache true'], `${what}: by default a scan caches only the first blocks of its run (${used['fillCache undefined']} bytes)`)
    t.is(used['fillCache false'], 0, `${what}: fillCache false caches nothing`)
    // A damaged block in the middle of the data: corruption naming the table, whether the block is cached or not.
    const bytes = nodeFs.readFileSync(built.path)
    const damaged = path.join(tmp, `damaged-fill-${built.name}`)
    bytes[Math.floor(bytes.length * 0.4)] ^= 0x40
    nodeFs.writeFileSync(damaged, bytes)
    for (const fill of [undefined, true, false]) {
      const bad = Table.open(nfs, damaged, 'damaged.sst', new BlockCache(1 << 20))
      t.ok(isCorruptionNaming(thrown(() => collectEntries(bad.iterator(fill))), 'damaged.sst'), `${what}, fillCache ${String(fill)}: a flipped byte is LEVEL_CORRUPTION naming the table`)
      t.ok(isCorruptionNaming(thrown(() => collectEntries(bad.iterator(fill), true)), 'damaged.sst'), `${what}, fillCache ${String(fill)}: also backward (blocks read alone)`)
      bad.unref()
    }
  }
  t.end()
})

/** A lower bound on the data blocks of 512 bytes a table of `model` has (its keys and values alone). */
function table512Blocks (model: readonly Entry[]): number {
  let bytes = 0
  for (const e of model) bytes += e.userKey.length + e.value.length
  return Math.floor(bytes / 512 / 2)
}

test('table cache: respects maxOpenFiles, pins tables with iterators', (t) => {
  const rng = new Random(seed ^ 0x5555)
  const dir = tempDir('lsm-sstable-test-tc-')
  const models: Entry[][] = []
  for (let n = 1; n <= 8; n++) {
    const { model } = makeModel(rng, 200)
    models.push(model)
    buildTable(dir, model, { blockSize: 512, bloomBitsPerKey: 10 }, tableName(n))
  }
  const fds0 = openFdCount()
  const tc = new TableCache(nfs, dir, 3, new BlockCache(1 << 20))
  let wrong = 0
  let maxFds = 0
  let maxSize = 0
  for (let round = 0; round < 3; round++) {
    for (let n = 1; n <= 8; n++) {
      const table = tc.get(n)
      maxSize = Math.max(maxSize, tc.size())
      const e = models[n - 1][rng.int(200)]
      const got = table.get(e.userKey, e.seq)
      if (got === undefined || !got.value.equals(e.value)) wrong++
      if (fds0 >= 0) maxFds = Math.max(maxFds, openFdCount() - fds0)
    }
  }
  t.is(wrong, 0, 'tables read correctly through the cache')
  t.is(maxSize, 3, 'the cache never holds more than maxOpenFiles tables')
  if (fds0 >= 0) t.ok(maxFds <= 3, `at most 3 table fds open (max seen ${maxFds})`)
  t.is(tc.opens, 24, 'cyclic access over 8 tables with room for 3 reopens every time')
  tc.get(8)
  t.is(tc.opens, 24, 'a cached table is not reopened')

  // An iterator keeps an evicted table readable.
  const pinned = tc.get(1)
  const it = pinned.iterator()
  for (let n = 2; n <= 5; n++) tc.get(n)
  t.is(diffEntries(collectEntries(it), models[0]), null, 'iterator over an evicted table still works')
  it.close()
  t.throws(() => pinned.get(models[0][0].userKey, MAX_SEQ), /after close/, 'table closed when the last ref goes')

  tc.evict(5)
  t.is(tc.size(), 2, 'evict drops a table')
  t.ok(tc.bloomChecked > 0, `bloom stats ${tc.bloomUseful}/${tc.bloomChecked}`)
  const missing = thrown(() => tc.get(99))
  t.ok(isCorruptionNaming(missing, tableName(99)), 'a missing table file is LEVEL_CORRUPTION naming it')
  tc.close()
  t.is(tc.size(), 0, 'close empties the cache')
  if (fds0 >= 0) t.is(openFdCount() - fds0, 0, 'no fds leaked')
  t.end()
})

test('corruption: flipped data byte, zeroed footer, truncation', (t) => {
  const rng = new Random(seed ^ 0x6666)
  const { model } = makeModel(rng, 2000)
  const built = buildTable(tmp, model, { blockSize: 1024, bloomBitsPerKey: 10 })
  const good = nodeFs.readFileSync(built.path)
  const name = '000777.sst'
  const p = path.join(tmp, name)

  // Flip a byte inside data block 0.
  const flipped = Buffer.from(good)
  flipped[20] ^= 0x40
  nodeFs.writeFileSync(p, flipped)
  const tbl = Table.open(nfs, p, name, new BlockCache(1 << 20))
  const first = model[0]
  let err = thrown(() => tbl.get(first.userKey, MAX_SEQ))
  t.ok(isCorruptionNaming(err, name), `get throws LEVEL_CORRUPTION naming the file: ${(err as Error)?.message}`)
  const it = tbl.iterator()
  err = thrown(() => collectEntries(it))
  t.ok(isCorruptionNaming(err, name), 'iteration throws LEVEL_CORRUPTION')
  t.notOk(it.valid(), 'iterator is invalid after the error')
  it.close()
  tbl.unref()

  // Zeroed footer.
  const zeroed = Buffer.from(good)
  zeroed.fill(0, zeroed.length - FOOTER_SIZE)
  nodeFs.writeFileSync(p, zeroed)
  err = thrown(() => Table.open(nfs, p, name, new BlockCache(0)))
  t.ok(isCorruptionNaming(err, name), `zeroed footer: ${(err as Error)?.message}`)

  // Truncations.
  for (const len of [0, 10, FOOTER_SIZE - 1, FOOTER_SIZE, good.length >> 1, good.length - 1]) {
    nodeFs.writeFileSync(p, good.subarray(0, len))
    err = thrown(() => Table.open(nfs, p, name, new BlockCache(0)))
    t.ok(isCorruptionNaming(err, name), `truncated to ${len}: ${(err as Error)?.message}`)
  }
  t.end()
})

for (const formatVersion of [3, 2, 1]) test(`corruption fuzz (format v${formatVersion}): any damage is LEVEL_CORRUPTION; with checksums, never a wrong answer`, (t) => {
  const rng = new Random(seed ^ 0x7777 ^ (formatVersion << 16))
  const made = makeModel(rng, 400)
  // Version 3: values that compress, so that most blocks are stored compressed.
  const model = formatVersion === 3 ? compressibleValues(made.model) : made.model
  const built = buildTable(tmp, model, { blockSize: 256, bloomBitsPerKey: 10, formatVersion })
  const good = nodeFs.readFileSync(built.path)
  const name = '000888.sst'
  const p = path.join(tmp, name)
  let otherErrors = 0
  let wrongAnswers = 0
  let undetected = 0
  const trials = 400
  for (let trial = 0; trial < trials; trial++) {
    const verify = trial % 2 === 0
    const damaged = Buffer.from(good)
    // Bias toward the metadata at the end of the file, where lengths and offsets live.
    const pos = rng.int(3) === 0 ? damaged.length - 1 - rng.int(Math.min(600, damaged.length)) : rng.int(damaged.length)
    damaged[pos] ^= 1 << rng.int(8)
    nodeFs.writeFileSync(p, damaged)
    let table: Table | undefined
    const err = thrown(() => {
      table = Table.open(nfs, p, name, new BlockCache(1 << 20), { verifyChecksums: verify })
      const it = table.iterator()
      try {
        const fwd = collectEntries(it)
        if (verify && diffEntries(fwd, model) !== null) wrongAnswers++
        for (let i = 0; i < model.length; i += 7) {
          const e = model[i]
          const got = table.get(e.userKey, e.seq)
          if (verify && (got === undefined || got.seq !== e.seq || !got.value.equals(e.value))) wrongAnswers++
        }
      } finally {
        it.close()
      }
    })
    table?.unref()
    if (err === undefined) {
      if (verify) undetected++
    } else if (!isCorruptionNaming(err, name)) {
      otherErrors++
      if (otherErrors < 4) t.fail(`non-corruption error: ${(err as Error)?.stack}`)
    }
  }
  t.is(otherErrors, 0, `${trials} damaged files: every error is LEVEL_CORRUPTION naming the file`)
  t.is(wrongAnswers, 0, 'with checksums on, never a wrong answer')
  t.is(undetected, 0, 'with checksums on, every flipped bit is detected')
  t.end()
})

test('perf sanity: get() on a cached table', (t) => {
  const rng = new Random(seed ^ 0x8888)
  const { model } = makeModel(rng, 20000)
  const t0 = process.hrtime.bigint()
  const built = buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10 })
  const buildMs = Number(process.hrtime.bigint() - t0) / 1e6
  const cache = new BlockCache(64 << 20)
  const table = Table.open(nfs, built.path, built.name, cache)
  for (const e of model) table.get(e.userKey, MAX_SEQ) // warm the cache
  const ops = 300000
  const probes = model.map((e) => e.userKey)
  let found = 0
  const t1 = process.hrtime.bigint()
  for (let i = 0; i < ops; i++) if (table.get(probes[i % probes.length], MAX_SEQ) !== undefined) found++
  const sec = Number(process.hrtime.bigint() - t1) / 1e9
  const it = table.iterator()
  const t2 = process.hrtime.bigint()
  let n = 0
  for (it.seekToFirst(); it.valid(); it.next()) n++
  const scanMs = Number(process.hrtime.bigint() - t2) / 1e6
  it.close()
  console.log(`# build ${model.length} entries: ${buildMs.toFixed(1)} ms; cached get: ${Math.round(ops / sec).toLocaleString('en-US')} ops/s; scan ${n} entries: ${scanMs.toFixed(1)} ms`)
  t.is(found, ops, 'all probes found')
  table.unref()
  t.end()
})
