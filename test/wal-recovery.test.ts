// Damaged write-ahead logs at open (lib/recovery.ts, option walRecovery), end to
// end through LsmLevel on real files: damage a crash can leave is dropped and
// reported; damage it cannot leave fails the open with LEVEL_CORRUPTION naming
// the log and the offset; each mode does what lib/options.ts says; repair()
// keeps the records after the damage. Also the single-bit search itself
// (lib/wal/bit-flip.ts). Replay a run with SEED=<n>.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { isLevelError } from '../lib/errors'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { LogReader } from '../lib/wal/log-reader'
import { encodeRecord, HEADER_SIZE } from '../lib/wal/log-format'
import { findBitFlip } from '../lib/wal/bit-flip'
import { parseFileName } from '../lib/filenames'
import { Engine, encodeBatch } from '../hosts/node/index'
import { KIND_VALUE } from '../lib/keys'
import { MemFileSystem } from './fs/mem-fs'
import { killedProcessImage } from './fs/crash-images'
import { abandon } from './util/crash-model'
import { openEngine } from './util/open-engine'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const N = 300
const key = (i: number): string => 'k' + String(i).padStart(4, '0')
const value = (i: number): string => `value ${i} `.repeat(3)

interface Image {
  dir: string
  log: string
  /** Offset of record i (one put each) in the log, and the end of the last one. */
  offsets: number[]
}

let image: Image | undefined

/** A database whose N puts are all in one log, copied while it is open (as a crash leaves it). */
async function getImage (): Promise<Image> {
  if (image) return image
  const live = path.join(tempDir('lsm-walrec-live-'), 'db')
  const db = new LsmLevel(live)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  const dir = path.join(tempDir('lsm-walrec-image-'), 'db')
  fs.mkdirSync(dir)
  for (const n of fs.readdirSync(live)) if (n !== 'LOCK') fs.copyFileSync(path.join(live, n), path.join(dir, n))
  await db.close()
  const logs = fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === 'log')
  if (logs.length !== 1) throw new Error(`expected one log, found ${logs.join(', ')}`)
  const log = logs[0]
  // The copy ends in the log's preallocated zeros: the records end earlier.
  const reader = new LogReader(nodeFileSystem, path.join(dir, log), log)
  const offsets = [0]
  while (reader.next() !== undefined) offsets.push(reader.offset)
  reader.close()
  if (offsets.length !== N + 1) throw new Error(`expected ${N} records, read ${offsets.length - 1}`)
  image = { dir, log, offsets }
  return image
}

/** A fresh copy of the image with `damage` applied to its log's bytes (undefined: the log is deleted). */
async function damagedCopy (damage: (log: Buffer, img: Image) => Buffer | undefined): Promise<{ dir: string, img: Image }> {
  const img = await getImage()
  const dir = path.join(tempDir('lsm-walrec-case-'), 'db')
  fs.mkdirSync(dir)
  for (const n of fs.readdirSync(img.dir)) fs.copyFileSync(path.join(img.dir, n), path.join(dir, n))
  const out = damage(fs.readFileSync(path.join(dir, img.log)), img)
  if (out === undefined) fs.rmSync(path.join(dir, img.log))
  else fs.writeFileSync(path.join(dir, img.log), out)
  return { dir, img }
}

function flipBit (offset: number, bit: number) {
  return (log: Buffer): Buffer => {
    log[offset] ^= 1 << bit
    return log
  }
}

/** The keys present, in order, read with get (every key ever written). */
async function presentKeys (db: LsmLevel): Promise<number[]> {
  const values = await db.getMany(Array.from({ length: N }, (_, i) => key(i)))
  const out: number[] = []
  values.forEach((v, i) => {
    if (v !== undefined) {
      if (v !== value(i)) throw new Error(`wrong value for ${key(i)}: ${v}`)
      out.push(i)
    }
  })
  return out
}

const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i)

/** Opens `dir`; returns the open error's cause (LEVEL_CORRUPTION expected) or the open db. */
async function tryOpen (dir: string, walRecovery?: string): Promise<{ db?: LsmLevel, error?: any }> {
  const db = new LsmLevel(dir, walRecovery === undefined ? {} : { walRecovery } as any)
  try {
    await db.open()
    return { db }
  } catch (err: any) {
    return { error: err.cause ?? err }
  }
}

// A payload byte in the middle of record 150, whose flipped bit leaves it non-zero.
function middleFlip (img: Image, log: Buffer): { offset: number, bit: number } {
  for (let offset = img.offsets[150] + HEADER_SIZE + 20; ; offset++) {
    for (let bit = 0; bit < 8; bit++) if ((log[offset] ^ (1 << bit)) !== 0) return { offset, bit }
  }
}

test('a flipped bit in the middle of the newest log, valid records after it: the open fails naming the log and the offset', async (t) => {
  const img = await getImage()
  const at = middleFlip(img, fs.readFileSync(path.join(img.dir, img.log)))
  const { dir } = await damagedCopy(flipBit(at.offset, at.bit))
  const { db, error } = await tryOpen(dir)
  await db?.close()
  t.ok(db === undefined, 'the default (torn-tail) refuses to open')
  t.ok(isLevelError(error, 'LEVEL_CORRUPTION'), `LEVEL_CORRUPTION: ${error?.message}`)
  t.is(error?.file, img.log, 'the error names the log')
  t.ok(String(error?.message).includes(`offset ${img.offsets[150]}`), 'the message gives the damaged record\'s offset')
  t.ok(String(error?.message).includes(`offset ${at.offset}`), 'and the flipped bit\'s offset')
  t.deepEqual(fs.readdirSync(dir).sort(), fs.readdirSync(img.dir).sort(), 'the failed open left the directory\'s files as they were')

  const pit = await tryOpen(dir, 'point-in-time')
  t.ok(pit.db, 'point-in-time opens')
  if (pit.db) {
    t.deepEqual(await presentKeys(pit.db), range(0, 150), 'point-in-time: exactly the 150 writes before the damage')
    const r = pit.db.stats().recovery
    t.is(r.walRecovery, 'point-in-time', 'the report names the mode')
    t.deepEqual(r.dropped, [{ file: img.log, offset: img.offsets[150], bytes: fs.statSync(path.join(img.dir, img.log)).size - img.offsets[150], reason: 'damaged' }], 'stats().recovery says what was dropped and where')
    t.is(r.recordsReplayed, 150, '150 records replayed')
    t.ok(pit.db.getProperty('lsm.stats').includes('damaged'), 'the text stats show it too')
    await pit.db.close()
  }
})

test('walRecovery: skip-damaged keeps every valid record; absolute refuses; an invalid mode is a clear error', async (t) => {
  const img = await getImage()
  const at = middleFlip(img, fs.readFileSync(path.join(img.dir, img.log)))
  const { dir } = await damagedCopy(flipBit(at.offset, at.bit))
  const abs = await tryOpen(dir, 'absolute')
  await abs.db?.close()
  t.ok(abs.db === undefined && isLevelError(abs.error, 'LEVEL_CORRUPTION'), 'absolute refuses')
  const skip = await tryOpen(dir, 'skip-damaged')
  t.ok(skip.db, 'skip-damaged opens')
  if (skip.db) {
    t.deepEqual(await presentKeys(skip.db), range(0, N).filter((i) => i !== 150), 'every record but the damaged one')
    t.deepEqual(skip.db.stats().recovery.dropped, [{ file: img.log, offset: img.offsets[150], bytes: img.offsets[151] - img.offsets[150], reason: 'damaged' }], 'the one damaged record is reported')
    await skip.db.close()
  }
  t.throws(() => new LsmLevel(dir, { walRecovery: 'lenient' } as any), (err: any) =>
    err.code === 'LEVEL_INVALID_OPTION' && /walRecovery/.test(err.message) && /'point-in-time'/.test(err.message), 'an unknown mode: LEVEL_INVALID_OPTION listing the modes')
})

test('damage a crash can leave: a torn last record, lost pages (zeros) with records after them, a zeroed byte', async (t) => {
  const img = await getImage()
  const end = img.offsets[N]
  // A torn last record: the write was cut.
  {
    const { dir } = await damagedCopy((log) => log.subarray(0, end - 7))
    const abs = await tryOpen(dir, 'absolute')
    await abs.db?.close()
    t.ok(abs.db === undefined && isLevelError(abs.error, 'LEVEL_CORRUPTION'), 'absolute refuses even a torn tail')
    const { db, error } = await tryOpen(dir)
    t.ok(db, `torn tail: opens (${error?.message ?? ''})`)
    if (db) {
      t.deepEqual(await presentKeys(db), range(0, N - 1), 'the last write is lost, nothing else')
      t.deepEqual(db.stats().recovery.dropped.map((d) => d.reason), ['torn'], 'reported as torn')
      await db.close()
    }
  }
  // A lost page: unsynced writes written back out of order read as zeros there.
  {
    const from = img.offsets[100] + 5
    const { dir } = await damagedCopy((log) => log.fill(0, from, from + 512))
    const { db, error } = await tryOpen(dir)
    t.ok(db, `zeros with valid records after them: opens at the point before them (${error?.message ?? ''})`)
    if (db) {
      const lost = img.offsets.findIndex((o) => o > from) - 1
      t.deepEqual(await presentKeys(db), range(0, lost), `the ${lost} writes before the lost bytes`)
      t.deepEqual(db.stats().recovery.dropped.map((d) => d.reason), ['damaged'], 'reported')
      await db.close()
    }
  }
  // A single bit lost to zero (the byte reads 0 now): a crash could leave that too.
  {
    const log = fs.readFileSync(path.join(img.dir, img.log))
    let offset = img.offsets[150] + HEADER_SIZE
    while ((log[offset] & (log[offset] - 1)) !== 0 || log[offset] === 0) offset++ // a byte with one bit set
    const bit = 31 - Math.clz32(log[offset])
    const { dir } = await damagedCopy(flipBit(offset, bit))
    const { db, error } = await tryOpen(dir)
    t.ok(db, `a one-bit byte lost to zero: opens (${error?.message ?? ''})`)
    if (db) {
      const lost = img.offsets.findIndex((o) => o > offset) - 1
      t.deepEqual(await presentKeys(db), range(0, lost), 'at the point before it')
      await db.close()
    }
  }
})

test('a live log that is missing fails the open; point-in-time opens without it', async (t) => {
  const img = await getImage()
  const { dir } = await damagedCopy(() => undefined)
  const { db, error } = await tryOpen(dir)
  await db?.close()
  t.ok(db === undefined && isLevelError(error, 'LEVEL_CORRUPTION'), `refused: ${error?.message}`)
  t.is(error?.file, img.log, 'naming the log')
  const pit = await tryOpen(dir, 'point-in-time')
  t.ok(pit.db, 'point-in-time opens')
  if (pit.db) {
    t.deepEqual(await presentKeys(pit.db), [], 'without the log\'s writes')
    t.deepEqual(pit.db.stats().recovery.dropped, [{ file: img.log, offset: 0, bytes: 0, reason: 'missing' }], 'reported missing')
    await pit.db.close()
    const again = await tryOpen(dir)
    t.ok(again.db, 'and opens by default from then on')
    await again.db?.close()
  }
})

test('repair() keeps the records after a damaged stretch', async (t) => {
  const img = await getImage()
  const at = middleFlip(img, fs.readFileSync(path.join(img.dir, img.log)))
  const { dir } = await damagedCopy(flipBit(at.offset, at.bit))
  const report = await LsmLevel.repair(dir)
  t.is(report.logs.droppedBytes, img.offsets[151] - img.offsets[150], 'only the damaged record\'s bytes are dropped')
  const db = new LsmLevel(dir)
  await db.open()
  t.deepEqual(await presentKeys(db), range(0, N).filter((i) => i !== 150), 'every write but the damaged one')
  t.deepEqual(db.stats().recovery.dropped, [], 'the repaired database opens with nothing dropped')
  await db.close()
})

test('findBitFlip: every single flipped bit of a record is found where it is; other damage is not taken for one', async (t) => {
  const rnd = new Random(seed)
  t.comment(`SEED=${seed}`)
  let wrong = 0
  let cases = 0
  for (const len of [0, 1, 7, 100, 3000]) {
    const payload = Buffer.alloc(len)
    for (let i = 0; i < len; i++) payload[i] = rnd.int(256)
    const record = encodeRecord(payload)
    t.is(findBitFlip(record), undefined, `an intact record of ${len} bytes: no flip`)
    for (let at = 0; at < record.length; at++) {
      for (let bit = 0; bit < 8; bit++) {
        if (len > 100 && rnd.int(16) !== 0) continue
        const damaged = Buffer.from(record)
        damaged[at] ^= 1 << bit
        const f = findBitFlip(damaged)
        cases++
        if (f === undefined || f.at !== at || f.bit !== bit || f.byte !== damaged[at]) {
          if (wrong++ < 5) t.comment(`len ${len}, byte ${at} bit ${bit}: ${JSON.stringify(f)}`)
        }
      }
    }
  }
  t.is(wrong, 0, `${cases} single flips, each found at its byte and bit`)
  let taken = 0
  const trials = 2000
  for (let i = 0; i < trials; i++) {
    const payload = Buffer.alloc(200 + rnd.int(2000))
    for (let j = 0; j < payload.length; j++) payload[j] = rnd.int(256)
    const damaged = encodeRecord(payload)
    // Two flipped bits, or a stretch of zeros (what a crash leaves).
    if (rnd.int(2) === 0) {
      const a = HEADER_SIZE + rnd.int(payload.length)
      let b = HEADER_SIZE + rnd.int(payload.length)
      if (b === a) b = a === HEADER_SIZE ? a + 1 : a - 1
      damaged[a] ^= 1 << rnd.int(8)
      damaged[b] ^= 1 << rnd.int(8)
    } else {
      const from = HEADER_SIZE + rnd.int(payload.length - 64)
      damaged.fill(0, from, from + 64)
    }
    if (findBitFlip(damaged) !== undefined) taken++
  }
  t.is(taken, 0, `${trials} records with two flipped bits or 64 zeroed bytes: none taken for a single flip`)
})

// A flush writes no table when its memtable holds only a range tombstone
// (clear()), so it syncs no directory: the manifest edit naming the next live
// log must still wait for that log's own directory fsync. Otherwise a power
// loss right after the edit can keep the edit and lose the log's entry, and the
// next open finds the live log missing (found by the crash sweep).
test('a manifest edit names a new live log only once its directory entry is durable', async (t) => {
  for (const worker of [false, true]) {
    const fs = new MemFileSystem()
    const engine = worker ? await openEngine('/db', {}, fs) : await Engine.open('/db', { compactionWorker: false }, fs)
    await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('a'), value: Buffer.from('1') }]), false)
    await engine.flushMemTable()
    await engine.clear({ gte: Buffer.from('a'), lt: Buffer.from('b') })
    const trace: string[] = []
    fs.faults.trace = trace
    await engine.flushMemTable()
    fs.faults.trace = undefined
    await engine.close()
    const created = trace.findIndex((op) => /^openWrite \d+\.log$/.test(op))
    const entrySynced = trace.findIndex((op, i) => i > created && op.startsWith('syncDirDone'))
    const edit = trace.findIndex((op, i) => i > created && /^append MANIFEST/.test(op))
    t.ok(created >= 0 && edit > created, `${worker ? 'worker' : 'event loop'}: the flush created a log and then wrote a manifest edit (${trace.join(', ')})`)
    t.ok(entrySynced >= 0 && entrySynced < edit, 'the directory fsync covering the new log returned before the edit was written')
  }
})

// Open after a crash (lib/recovery.ts): a clean replay leaves its memtable to
// a background flush and its log live until then; a replay that dropped damage
// writes its tables before open resolves. A table write that fails tells which:
// in the background it cannot fail the open.
test('a clean log replay is flushed after open resolves, its log kept until then; a torn one is written during the open', async (t) => {
  const writer = new MemFileSystem()
  const engine = await openEngine('/db', {}, writer)
  for (let i = 0; i < N; i++) await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from(key(i)), value: Buffer.from(value(i)) }]), false)
  const crashed = killedProcessImage(writer)
  writer.faults.crashed = true // the writer is gone
  abandon(engine)
  const logs = crashed.list('/db').filter((n) => parseFileName(n)?.type === 'log')
  t.is(logs.length, 1, 'the killed writer left one log')
  const readAll = (e: Engine): number => Array.from({ length: N }, (_, i) => e.get(Buffer.from(key(i)))?.toString() === value(i) ? 1 : 0).reduce((a: number, b: number) => a + b, 0)

  // Clean: the open resolves although writing the table fails.
  const clean = killedProcessImage(crashed)
  clean.faults.inject({ op: 'openWrite', path: /\.sst$/, times: Infinity })
  const reopened = await openEngine('/db', {}, clean)
  t.is(readAll(reopened), N, 'the open resolved with every write readable (from the replayed memtable)')
  await reopened.close().catch(() => {})
  t.ok(clean.list('/db').includes(logs[0]), 'the flush failed: the replayed log is still there')
  const after = killedProcessImage(clean)
  const again = await openEngine('/db', {}, after)
  t.is(readAll(again), N, 'and the next open replays it: every write')
  t.deepEqual(again.recovery.dropped, [], 'nothing dropped')
  await again.waitForIdle()
  t.notOk(after.list('/db').includes(logs[0]), 'once the background flush is done, the log is retired')
  await again.close()

  // Torn: the last record cut; the table is written during the open, so its failure fails the open.
  const torn = killedProcessImage(crashed)
  const file = torn.openRead(`/db/${logs[0]}`)
  const bytes = Buffer.alloc(file.size())
  file.read(bytes, 0, bytes.length, 0)
  file.close()
  let end = bytes.length
  while (end > 0 && bytes[end - 1] === 0) end-- // the zeros written ahead of the records
  const out = torn.openWrite(`/db/${logs[0]}`)
  out.append(bytes.subarray(0, end - 3))
  out.sync()
  out.close()
  torn.faults.inject({ op: 'openWrite', path: /\.sst$/ })
  const failed = await openEngine('/db', {}, torn).then((e) => e.close().then(() => undefined), (err: unknown) => err)
  t.ok(failed !== undefined, `a torn log's table is written during the open: its failure fails the open (${(failed as Error | undefined)?.message})`)
  torn.faults.clear()
  const tornOpen = await openEngine('/db', {}, torn)
  t.is(readAll(tornOpen), N - 1, 'without the fault: every write but the torn last one')
  t.deepEqual(tornOpen.recovery.dropped.map((d) => d.reason), ['torn'], 'reported as torn')
  t.notOk(torn.list('/db').includes(logs[0]), 'and the log is retired by the open itself')
  await tornOpen.close()
})

test('opened and closed again and again before the replayed memtable is flushed, a database keeps one log besides the replayed one', async (t) => {
  const { dir } = await damagedCopy((log) => log)
  const logs = (): string[] => fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === 'log')
  for (let round = 0; round < 5; round++) {
    const db = new LsmLevel(dir)
    await db.open()
    await db.close()
  }
  t.ok(logs().length <= 2, `logs after 5 opens: ${logs().join(', ')}`)
  const db = new LsmLevel(dir)
  await db.open()
  t.deepEqual(await presentKeys(db), range(0, N), 'every write is there')
  await db.close()
})

test('a torn log whose records are only a range delete: the delete survives the open (found by the crash sweep)', async (t) => {
  const live = path.join(tempDir('lsm-walrec-rd-'), 'db')
  const db = new LsmLevel(live)
  await db.open()
  await db.put('a', '1')
  await db.put('b', '2')
  await db.engine.flushMemTable()
  await db.clear({ gte: 'a', lt: 'c' })
  // A copy while open (a crash), its log ending in a torn record.
  const dir = path.join(tempDir('lsm-walrec-rd-copy-'), 'db')
  fs.mkdirSync(dir)
  for (const n of fs.readdirSync(live)) if (n !== 'LOCK') fs.copyFileSync(path.join(live, n), path.join(dir, n))
  await db.close()
  const log = fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === 'log').sort().pop()!
  const bytes = fs.readFileSync(path.join(dir, log))
  let end = bytes.length
  while (end > 0 && bytes[end - 1] === 0) end--
  fs.writeFileSync(path.join(dir, log), Buffer.concat([bytes.subarray(0, end), Buffer.from([1, 2, 3, 4, 5, 6, 7])]))
  const reopened = new LsmLevel(dir)
  await reopened.open()
  t.deepEqual(reopened.stats().recovery.dropped.map((d) => d.reason), ['torn'], 'the torn record was dropped')
  t.deepEqual(await reopened.keys().all(), [], 'the range delete in the log still hides both keys')
  await reopened.close()
})

test('a replay continues the prefix of a log a read-only open replayed (a multiProcess takeover); a prefix that does not continue the logs is not used', async (t) => {
  const half = N / 2
  // A read-only open of a copy holding the first half of the log: its prefix, handed over.
  const { dir: halfDir, img } = await damagedCopy((log, i) => log.subarray(0, i.offsets[half]))
  const reader = await Engine.open(halfDir, { readOnly: true, refreshIntervalMs: 0 })
  const prefixes = reader.handOver()
  t.same(prefixes.map((p) => [p.records, p.offset, p.firstSeq, p.nextSeq]), [[half, img.offsets[half], 1, half + 1]], 'the first half, handed over')

  const { dir } = await damagedCopy((log) => log)
  const db = await Engine.open(dir, {}, undefined, undefined, () => prefixes)
  const { recordsAdopted, recordsReplayed } = db.recovery
  t.same({ recordsAdopted, recordsReplayed }, { recordsAdopted: half, recordsReplayed: N - half }, 'the replay read only the second half of the whole log')
  let same = true
  for (let i = 0; i < N; i++) if (db.get(Buffer.from(key(i)))?.toString() !== value(i)) same = false
  t.ok(same, `all ${N} records readable`)
  t.is(db.lastSequence, N, 'the sequence runs on')
  await db.close()
  await reader.close()

  // The same prefix, claiming to start after a record the manifest never counted: read from the log's start instead.
  const again = await Engine.open(halfDir, { readOnly: true, refreshIntervalMs: 0 })
  const [p] = again.handOver()
  const { dir: other } = await damagedCopy((log) => log)
  const db2 = await Engine.open(other, {}, undefined, undefined, () => [{ ...p, firstSeq: p.firstSeq + 1 }])
  t.same({ recordsAdopted: db2.recovery.recordsAdopted, recordsReplayed: db2.recovery.recordsReplayed }, { recordsAdopted: 0, recordsReplayed: N }, 'not used: every record read from the log')
  t.is(db2.get(Buffer.from(key(0)))?.toString(), value(0), 'the first record once')
  t.is(db2.lastSequence, N)
  await db2.close()
  await again.close()
})
