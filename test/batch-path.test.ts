// The batch write path: abstract-level operations are encoded straight into the
// log record payload (lib/wal/batch.ts encodeBatch, from strings or bytes), the
// memtable copies keys and values out of that payload (MemTable.addBatch), and
// a frozen memtable is flushed on a worker thread from its shared arena
// (lib/compaction/job.ts runFlushJob). Each is checked against a model and
// against the paths it replaces.
import test from 'tape'
import { LsmLevel } from '../index'
import { MemTable } from '../lib/memtable/memtable'
import { SkipList } from '../lib/memtable/skiplist'
import { decodeBatch, encodeBatch, setBatchSequence, OP_RANGE_DELETE, type BatchOp, type DecodedOp } from '../lib/wal/batch'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { writeTables } from '../lib/compaction/table-writer'
import { runFlushJob } from '../lib/compaction/job'
import { NodeFileSystem, nodeFileSystem } from '../hosts/node/node-fs'
import type { WritableFile } from '../lib/fs/fs'
import { Table } from '../lib/sstable/table'
import { BlockCache } from '../lib/sstable/cache'
import { type InternalIterator, currentUserKey, currentValue } from '../lib/iterators/internal-iterator'
import { join, tableName } from '../lib/filenames'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

/** A value of a random size: often empty, sometimes short, sometimes long, now and then bigger than an arena chunk. */
function randomValue (rnd: Random): Buffer {
  const r = rnd.next() % 100
  const size = r < 10 ? 0 : r < 60 ? rnd.next() % 16 : r < 97 ? 16 + rnd.next() % 300 : r < 99 ? 1000 + rnd.next() % 70000 : 300 * 1024 + rnd.next() % 1024
  return rnd.bytes(size)
}

function randomKey (rnd: Random): Buffer {
  const r = rnd.next() % 10
  // Empty keys, short keys sharing prefixes, and longer random ones.
  const size = r === 0 ? 0 : r < 6 ? 1 + rnd.next() % 6 : 8 + rnd.next() % 40
  const k = rnd.bytes(size)
  if (r < 6) for (let i = 0; i < k.length; i++) k[i] = k[i] % 4
  return k
}

/** Compares two long lists, reporting only the first difference. */
function sameList (t: test.Test, a: string[], b: string[], msg: string): void {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  if (i === a.length && i === b.length) t.pass(`${msg} (${a.length})`)
  else t.fail(`${msg}: first difference at ${i} of ${a.length}/${b.length}: ${String(a[i]).slice(0, 80)} vs ${String(b[i]).slice(0, 80)}`)
}

function entries (it: InternalIterator): string[] {
  const out: string[] = []
  it.seekToFirst()
  while (it.valid()) {
    out.push(`${currentUserKey(it).toString('hex')}@${it.seq()}:${it.kind()}=${currentValue(it).toString('hex')}`)
    it.next()
  }
  it.close()
  return out
}

test('encodeBatch: keys and values given as strings or views encode as their bytes (strings as UTF-8)', (t) => {
  const rnd = new Random(seed)
  for (let round = 0; round < 200; round++) {
    const n = 1 + rnd.next() % 50
    const given: BatchOp[] = []
    const ops: DecodedOp[] = []
    for (let i = 0; i < n; i++) {
      const asString = rnd.next() % 3 === 0
      const key = asString ? 'ké€' + rnd.bytes(rnd.next() % 5).toString('hex') + '😀' : randomKey(rnd)
      // A plain Uint8Array (the 'view' encoding) as well as Buffers.
      const keyIn = !asString && rnd.next() % 2 === 0 ? new Uint8Array(key as Buffer) : key
      const keyBytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key
      if (rnd.next() % 4 === 0) {
        given.push({ kind: KIND_DELETE, key: keyIn })
        ops.push({ kind: KIND_DELETE, key: keyBytes })
      } else {
        const value = asString ? 'v' + 'ü'.repeat(rnd.next() % 200) : randomValue(rnd)
        given.push({ kind: KIND_VALUE, key: keyIn, value })
        ops.push({ kind: KIND_VALUE, key: keyBytes, value: typeof value === 'string' ? Buffer.from(value, 'utf8') : value })
      }
    }
    const a = encodeBatch(given)
    const b = encodeBatch(ops)
    if (!a.equals(b)) { t.fail(`round ${round}: payloads differ`); return }
    if (!encodeBatch([given[0]]).equals(encodeBatch([ops[0]]))) { t.fail(`round ${round}: single-op payloads differ`); return }
    setBatchSequence(a, 1 + round)
    const decoded = decodeBatch(a, 'test')
    if (decoded.firstSeq !== 1 + round || decoded.ops.length !== n) { t.fail(`round ${round}: decodes wrong`); return }
    for (let i = 0; i < n; i++) {
      if (!decoded.ops[i].key.equals(ops[i].key) || !(decoded.ops[i].value ?? Buffer.alloc(0)).equals(ops[i].value ?? Buffer.alloc(0))) {
        t.fail(`round ${round}: op ${i} decodes wrong`)
        return
      }
    }
  }
  t.pass('200 random batches encode identically and decode')
  t.throws(() => encodeBatch([{ kind: 7, key: 'a' }]), /unknown kind/, 'an unknown operation kind is refused')
  t.end()
})

test('MemTable.addBatch: the same entries as one add() per operation, range deletes included', (t) => {
  const rnd = new Random(seed + 1)
  let seq = 1
  const a = new MemTable()
  const b = new MemTable()
  // The first entry of a memtable with an empty key and an empty value.
  const first = encodeBatch([{ kind: KIND_VALUE, key: Buffer.alloc(0), value: Buffer.alloc(0) }])
  setBatchSequence(first, seq)
  a.addBatch(first, seq)
  b.add(seq, KIND_VALUE, Buffer.alloc(0), Buffer.alloc(0))
  seq++
  let tombstones = 0
  for (let round = 0; round < 60; round++) {
    const n = 1 + rnd.next() % 300
    const ops: DecodedOp[] = []
    for (let i = 0; i < n; i++) {
      const r = rnd.next() % 20
      if (r === 0) {
        ops.push({ kind: OP_RANGE_DELETE, key: randomKey(rnd), end: rnd.next() % 2 === 0 ? undefined : randomKey(rnd) })
      } else if (r < 5) {
        ops.push({ kind: KIND_DELETE, key: randomKey(rnd) })
      } else {
        ops.push({ kind: KIND_VALUE, key: randomKey(rnd), value: randomValue(rnd) })
      }
    }
    const payload = encodeBatch(ops)
    setBatchSequence(payload, seq)
    let expectBytes = 0
    for (let i = 0; i < n; i++) {
      const op = ops[i]
      if (op.kind === OP_RANGE_DELETE) {
        b.addRangeTombstone(seq + i, op.key, op.end)
        tombstones++
      } else {
        b.add(seq + i, op.kind, op.key, op.value ?? Buffer.alloc(0))
      }
      expectBytes += op.key.length + (op.value?.length ?? 0) + (op.end?.length ?? 0)
    }
    const bytes = a.addBatch(payload, seq)
    if (bytes !== expectBytes) { t.fail(`round ${round}: addBatch reported ${bytes} user bytes, expected ${expectBytes}`); return }
    seq += n
  }
  sameList(t, entries(a.iterator()), entries(b.iterator()), 'same entries in the same order')
  // Searches use every level of the list (iteration only level 0): batches of
  // 32 operations or more are inserted in key order, each insert searching on
  // from the last one (MemTable.addBatchSorted, SkipList.findSpliceFrom).
  let wrongGets = 0
  const it = b.iterator()
  for (it.seekToFirst(); it.valid(); it.next()) {
    const key = Buffer.from(currentUserKey(it))
    for (const at of [it.seq(), it.seq() - 1, seq]) {
      const x = a.get(key, at)
      const y = b.get(key, at)
      if (x?.seq !== y?.seq || x?.kind !== y?.kind || !(x === undefined || x.value.equals(y!.value))) wrongGets++
    }
  }
  it.close()
  t.equal(wrongGets, 0, 'get finds the same version of every key at every snapshot')
  t.equal(a.approximateBytes(), b.approximateBytes(), 'same memory accounting')
  t.equal(a.firstSeq, b.firstSeq, 'same first seq')
  t.equal(a.lastSeq, b.lastSeq, 'same last seq')
  t.equal(a.rangeTombstoneCount(), tombstones, 'range deletes became range tombstones')
  t.deepEqual(a.rangeTombstones().map((r) => [r.seq, r.start.toString('hex'), r.end?.toString('hex')]),
    b.rangeTombstones().map((r) => [r.seq, r.start.toString('hex'), r.end?.toString('hex')]), 'same range tombstones')
  // Reads through the shared-state copy (what a flush on the worker sees).
  const state = a.entriesState()
  sameList(t, entries(MemTable.iteratorOf(state)), entries(a.iterator()), 'entriesState() reads back the same entries')
  t.throws(() => SkipList.fromState(state).insert(Buffer.from('x'), 1e9, KIND_VALUE, Buffer.alloc(0)), /read-only/, 'a list rebuilt from a state takes no inserts')
  t.end()
})

test('writeTables stopping to await (slices, new outputs, splits, incremental syncs) keeps what the drop rules keep, each key in one table', async (t) => {
  const rnd = new Random(seed + 5)
  const dir = tempDir()
  nodeFileSystem.mkdirp(dir)
  const mem = new MemTable()
  let seq = 1
  // Many versions of few keys, values of up to 6 KiB: megabytes of output (incremental syncs every MiB), split at 256 KiB.
  for (let i = 0; i < 6000; i++) {
    const key = Buffer.from('k' + String(rnd.next() % 900).padStart(4, '0'))
    if (rnd.next() % 6 === 0) mem.add(seq++, KIND_DELETE, key, Buffer.alloc(0))
    else mem.add(seq++, KIND_VALUE, key, rnd.bytes(rnd.next() % 6000))
  }
  const smallestSnapshot = Math.floor(seq / 2)
  // The model: in key order, newest first; a version is dropped when the newer one before it is visible to every snapshot.
  const expected: string[] = []
  let lastKey = ''
  let lastSeq = Infinity
  for (const e of entries(mem.iterator())) {
    const key = e.slice(0, e.indexOf('@'))
    const eseq = Number(e.slice(e.indexOf('@') + 1, e.indexOf(':')))
    if (key !== lastKey) { lastKey = key; lastSeq = Infinity }
    if (!(lastSeq <= smallestSnapshot)) expected.push(e)
    lastSeq = eseq
  }
  let next = 1
  const result = await writeTables(mem.iterator(), {
    fs: nodeFileSystem,
    dir,
    table: { blockSize: 4096, blockRestartInterval: 16, bloomBitsPerKey: 10, compression: false },
    targetFileSize: 256 * 1024,
    smallestSnapshot,
    isBaseLevelForKey: () => false,
    newFileNumber: () => next++,
    shouldAbort: () => false
  })
  t.ok(result.outputs.length >= 8, `split into ${result.outputs.length} tables`)
  t.ok(result.bytesWritten > 2 * 1024 * 1024, `${result.bytesWritten} bytes written: incremental syncs ran`)
  t.equal(result.entriesIn, 6000, 'every entry was taken once')
  const got: string[] = []
  const keysPerTable: Array<Set<string>> = []
  for (const meta of result.outputs) {
    const table = Table.open(nodeFileSystem, join(dir, tableName(meta.number)), tableName(meta.number), new BlockCache(1 << 20))
    const list = entries(table.iterator())
    got.push(...list)
    keysPerTable.push(new Set(list.map((e) => e.slice(0, e.indexOf('@')))))
  }
  sameList(t, got, expected, 'the entries the drop rules keep, in order')
  t.equal(result.entriesDropped, 6000 - expected.length, 'the rest counted as dropped')
  let shared = 0
  for (let i = 1; i < keysPerTable.length; i++) for (const k of keysPerTable[i]) if (keysPerTable[i - 1].has(k)) shared++
  t.equal(shared, 0, 'no user key in two tables')
  t.end()
})

test('runFlushJob (the worker flush) writes the same table as writeTables over the memtable', async (t) => {
  const rnd = new Random(seed + 2)
  const dir = tempDir()
  nodeFileSystem.mkdirp(dir)
  const mem = new MemTable()
  let seq = 1
  for (let round = 0; round < 40; round++) {
    const ops: DecodedOp[] = []
    for (let i = 0; i < 200; i++) {
      // Few distinct keys: many versions of each, some hidden from every snapshot.
      const key = Buffer.from('k' + (rnd.next() % 500))
      ops.push(rnd.next() % 5 === 0 ? { kind: KIND_DELETE, key } : { kind: KIND_VALUE, key, value: randomValue(rnd) })
    }
    const payload = encodeBatch(ops)
    setBatchSequence(payload, seq)
    mem.addBatch(payload, seq)
    seq += ops.length
  }
  const smallestSnapshot = Math.floor(seq / 2)
  const params = { table: { blockSize: 4096, blockRestartInterval: 16, bloomBitsPerKey: 10, compression: true }, smallestSnapshot }
  const viaWorkerCode = await runFlushJob({ dir, entries: mem.entriesState(), ...params, rangeTombstones: [], floorBase: 0, fileNumber: 1 }, nodeFileSystem)
  const viaMain = await writeTables(mem.iterator(), {
    fs: nodeFileSystem,
    dir,
    ...params,
    targetFileSize: Infinity,
    isBaseLevelForKey: () => false,
    newFileNumber: () => 2,
    shouldAbort: () => false
  })
  t.equal(viaWorkerCode.outputs.length, 1, 'one table')
  t.equal(viaMain.outputs.length, 1, 'one table')
  t.ok(viaWorkerCode.entriesDropped > 0, 'versions hidden from every snapshot were dropped')
  t.equal(viaWorkerCode.entriesDropped, viaMain.entriesDropped, 'the same entries dropped')
  const read = (n: number): string[] => {
    const table = Table.open(nodeFileSystem, join(dir, tableName(n)), tableName(n), new BlockCache(1 << 20))
    return entries(table.iterator())
  }
  sameList(t, read(1), read(2), 'the same entries in both tables')
  t.end()
})

test('batches of puts and dels of mixed sizes, strings, views and sublevels read back before and after reopen', async (t) => {
  const rnd = new Random(seed + 3)
  const dir = tempDir()
  // A small write buffer: many memtable flushes (on the worker) along the way.
  const options = { writeBufferSize: 256 * 1024, keyEncoding: 'buffer', valueEncoding: 'buffer' }
  let db = new LsmLevel<Buffer, Buffer>(dir, options)
  await db.open()
  const model = new Map<string, Buffer>()
  const subModel = new Map<string, string>()
  let sub = db.sublevel<string, string>('sub', { keyEncoding: 'utf8', valueEncoding: 'utf8' })
  for (let round = 0; round < 120; round++) {
    const n = 1 + rnd.next() % 400
    const ops: Array<{ type: 'put', key: Buffer | Uint8Array, value: Buffer | Uint8Array } | { type: 'del', key: Buffer | Uint8Array }> = []
    const reused: Buffer[] = []
    for (let i = 0; i < n; i++) {
      const key = Buffer.from('key' + (rnd.next() % 3000))
      if (rnd.next() % 5 === 0) {
        ops.push({ type: 'del', key })
        model.delete(key.toString('hex'))
      } else {
        const value = randomValue(rnd)
        // Plain Uint8Arrays too (abstract-level passes them through as buffers).
        ops.push({ type: 'put', key, value: rnd.next() % 2 === 0 ? new Uint8Array(value) : value })
        model.set(key.toString('hex'), Buffer.from(value))
        reused.push(value)
      }
    }
    await db.batch(ops as any)
    // The caller reuses its buffers after the write resolved: the database kept copies.
    for (const b of reused) b.fill(0xaa)
    if (round % 10 === 0) {
      const subOps = Array.from({ length: 50 }, (_, i) => ({ type: 'put' as const, key: `ß${round}-${i}`, value: 'wert-€'.repeat(i % 7) }))
      await sub.batch(subOps)
      for (const o of subOps) subModel.set(o.key, o.value)
      await sub.batch([{ type: 'del', key: `ß${round}-3` }])
      subModel.delete(`ß${round}-3`)
    }
    if (round % 7 === 0) await db.put(Buffer.from('single' + round), Buffer.alloc(round % 3 === 0 ? 0 : 200, round))
    if (round % 7 === 0) model.set(Buffer.from('single' + round).toString('hex'), Buffer.alloc(round % 3 === 0 ? 0 : 200, round))
  }
  const check = async (when: string): Promise<void> => {
    let bad = 0
    for (const [k, v] of model) {
      const got = await db.get(Buffer.from(k, 'hex'))
      if (got === undefined || !Buffer.from(got).equals(v)) bad++
    }
    t.equal(bad, 0, `${when}: every live key reads back its last value`)
    const all = await db.iterator({ lt: Buffer.from('key9999z') }).all()
    const live = [...model.keys()].filter((k) => Buffer.from(k, 'hex').toString().startsWith('key')).length
    t.equal(all.filter(([k]) => k.toString().startsWith('key')).length, live, `${when}: deleted keys stay deleted`)
    t.deepEqual(Object.fromEntries(await sub.iterator().all()), Object.fromEntries(subModel), `${when}: the sublevel holds its own entries`)
  }
  await check('before reopen')
  await db.engine.waitForIdle()
  t.ok(db.stats().flushes > 3, 'memtables were flushed along the way')
  await db.close()
  db = new LsmLevel<Buffer, Buffer>(dir, options)
  await db.open()
  sub = db.sublevel<string, string>('sub', { keyEncoding: 'utf8', valueEncoding: 'utf8' })
  await check('after reopen')
  await db.close()
  t.end()
})

test('an empty key with an empty value as a memtable\'s first entry iterates, flushes and reopens', async (t) => {
  const dir = tempDir()
  let db = new LsmLevel(dir)
  await db.open()
  await db.put('', '')
  await db.batch([{ type: 'put', key: 'a', value: 'b' }, { type: 'put', key: 'c', value: '' }])
  t.deepEqual(await db.iterator().all(), [['', ''], ['a', 'b'], ['c', '']], 'iterates from the memtable')
  await db.flush()
  await db.batch([{ type: 'put', key: '', value: '' }, { type: 'del', key: 'a' }])
  t.deepEqual(await db.iterator().all(), [['', ''], ['c', '']], 'iterates over memtable and table')
  await db.close()
  db = new LsmLevel(dir)
  await db.open()
  t.deepEqual(await db.iterator().all(), [['', ''], ['c', '']], 'the same after reopen')
  t.is(await db.get(''), '', 'get of the empty key')
  await db.close()
  t.end()
})

test('writeTables syncs an output each MiB while writing it; a failed sync fails the job and leaves no table', async (t) => {
  // The file system, as the table writer sees it: counts each output's syncs and
  // the size it had at each; `failAt` makes that sync (1-based, all files) fail.
  class SyncCountingFs extends NodeFileSystem {
    sizesAtSync: number[] = []
    failAt = 0
    override openWrite (path: string, options?: { preallocate?: boolean }): WritableFile {
      const f = super.openWrite(path, options)
      return {
        append: (d) => f.append(d),
        sync: () => f.sync(),
        syncAsync: async () => {
          this.sizesAtSync.push(f.size())
          if (this.sizesAtSync.length === this.failAt) throw new Error('injected fdatasync failure')
          return await f.syncAsync()
        },
        size: () => f.size(),
        close: () => f.close()
      }
    }
  }
  const mem = new MemTable()
  const rnd = new Random(seed + 4)
  for (let i = 0; i < 30000; i++) mem.add(i + 1, KIND_VALUE, rnd.bytes(16), rnd.bytes(100))
  const run = async (fs: SyncCountingFs, dir: string, fileNumber: number) => await writeTables(mem.iterator(), {
    fs,
    dir,
    table: { blockSize: 4096, blockRestartInterval: 16, bloomBitsPerKey: 10, compression: true },
    smallestSnapshot: 30000,
    targetFileSize: Infinity,
    isBaseLevelForKey: () => false,
    newFileNumber: () => fileNumber,
    shouldAbort: () => false
  })

  const fs = new SyncCountingFs()
  const dir = tempDir()
  fs.mkdirp(dir)
  const result = await run(fs, dir, 1)
  const size = result.outputs[0].size
  t.ok(size > 3 * 1024 * 1024, `one table of ${size} bytes`)
  const sizes = fs.sizesAtSync
  t.ok(sizes.length >= 4, `${sizes.length} syncs: one per MiB written, then the last`)
  t.is(sizes[sizes.length - 1], size, 'the last sync covers the whole table')
  t.ok(sizes.every((s, i) => i === 0 || s > sizes[i - 1]), 'each sync covers more of the table')
  t.ok(sizes[0] <= 1.25 * 1024 * 1024, `the first sync comes after about a MiB (${sizes[0]} bytes)`)

  const failing = new SyncCountingFs()
  failing.failAt = 2 // an incremental sync
  const dir2 = tempDir()
  failing.mkdirp(dir2)
  const err = await run(failing, dir2, 7).then(() => undefined, (e: Error) => e)
  t.ok(err !== undefined && /injected fdatasync failure/.test(err.message), 'the job fails with the sync error')
  t.notOk(failing.exists(join(dir2, tableName(7))), 'the partial table is removed')
  t.end()
})
