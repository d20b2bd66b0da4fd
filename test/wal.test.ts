// The log format (writer, streaming reader, recovery semantics on damaged tails
// and middles) and the write-batch payload, on the real file system.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { nodeFileSystem } from '../hosts/node/node-fs'
import type { WritableFile } from '../lib/fs/fs'
import { LogWriter } from '../lib/wal/log-writer'
import { LogReader, readRecordFrom, type TailStatus } from '../lib/wal/log-reader'
import { HEADER_SIZE, RECORD_FULL, encodeRecord, readRecordAt, recordChecksum, type RecordFault, walkRecords } from '../lib/wal/log-format'
import { type DecodedOp, decodeBatch, encodeBatch, setBatchSequence } from '../lib/wal/batch'
import { putFixed32 } from '../lib/util/coding'
import { crc, maskCrc } from '../lib/util/crc'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../lib/keys'
import { isLevelError } from '../lib/errors'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()
const tmpRoot = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-wal-test-'))
let fileCounter = 0

function tmpFile (): string {
  return path.join(tmpRoot, `${++fileCounter}.log`)
}

test.onFinish(() => nodeFs.rmSync(tmpRoot, { recursive: true, force: true }))

function writeLog (file: string, payloads: Buffer[]): number[] {
  const w = new LogWriter(nodeFileSystem.openWrite(file))
  const starts: number[] = []
  for (const p of payloads) {
    starts.push(w.size())
    w.addRecord(p)
  }
  w.sync()
  w.close()
  return starts
}

function readAll (file: string): { records: Buffer[], tail: TailStatus } {
  const r = new LogReader(nodeFileSystem, file, path.basename(file))
  const records: Buffer[] = []
  for (let rec = r.next(); rec !== undefined; rec = r.next()) records.push(rec)
  return { records, tail: r.tail }
}

function sameRecords (actual: Buffer[], expected: Buffer[]): boolean {
  if (actual.length !== expected.length) return false
  for (let i = 0; i < actual.length; i++) if (!actual[i].equals(expected[i])) return false
  return true
}

function randomOps (rnd: Random, maxOps: number, big = false): DecodedOp[] {
  const n = rnd.int(maxOps) + 1
  const ops: DecodedOp[] = []
  for (let i = 0; i < n; i++) {
    const key = rnd.bytes(rnd.int(rnd.int(10) === 0 ? 300 : 24))
    if (rnd.int(5) === 0) {
      ops.push({ kind: KIND_DELETE, key })
    } else {
      const vlen = big && i === 0 ? 65536 + rnd.int(200000) : rnd.int(rnd.int(10) === 0 ? 2000 : 100)
      ops.push({ kind: KIND_VALUE, key, value: rnd.bytes(vlen) })
    }
  }
  return ops
}

/** A batch's payload with its sequence number set. */
function encodeAt (firstSeq: number, ops: DecodedOp[]): Buffer {
  const payload = encodeBatch(ops)
  setBatchSequence(payload, firstSeq)
  return payload
}

function opsEqual (a: DecodedOp[], b: DecodedOp[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (a[i].kind !== b[i].kind || !a[i].key.equals(b[i].key)) return false
    if (a[i].kind === KIND_VALUE && !(a[i].value as Buffer).equals(b[i].value as Buffer)) return false
    if (a[i].kind === KIND_DELETE && b[i].value !== undefined) return false
  }
  return true
}

test('zero-filled header never checks out (masked CRC)', (t) => {
  // The all-zero header claims CRC 0 for type 0 with an empty payload.
  t.notEqual(recordChecksum(0, Buffer.alloc(0)), 0, 'masked CRC of type 0 + empty payload is not 0')
  t.equal(recordChecksum(0, Buffer.alloc(0)), maskCrc(crc(Uint8Array.of(0))), 'checksum is maskCrc(crc32([type] ++ payload))')
  t.notEqual(recordChecksum(RECORD_FULL, Buffer.alloc(0)), 0, 'masked CRC of an empty FULL record is not 0')
  for (const n of [1, HEADER_SIZE - 1, HEADER_SIZE, 64, 65536 + 17]) {
    const file = tmpFile()
    nodeFs.writeFileSync(file, Buffer.alloc(n))
    const { records, tail } = readAll(file)
    t.equal(records.length, 0, `${n} zero bytes: no records`)
    t.deepEqual(tail, { state: 'torn', offset: 0, droppedBytes: n, validRecordAfter: false, nextValidOffset: -1 }, `${n} zero bytes: torn`)
  }
  // Even a zero "record" with the FULL type byte set fails its CRC.
  const file = tmpFile()
  const hdr = Buffer.alloc(HEADER_SIZE)
  hdr[8] = RECORD_FULL
  nodeFs.writeFileSync(file, hdr)
  t.equal(readAll(file).tail.state, 'torn', 'zero CRC + zero length + FULL type is torn')
  t.end()
})

test('empty log is clean', (t) => {
  const file = tmpFile()
  writeLog(file, [])
  const { records, tail } = readAll(file)
  t.equal(records.length, 0)
  t.deepEqual(tail, { state: 'clean', offset: 0, droppedBytes: 0, validRecordAfter: false, nextValidOffset: -1 })
  t.end()
})

test('round-trip 10,000 random batches (records of every size, streaming reads)', (t) => {
  const rnd = new Random(seed)
  const file = tmpFile()
  const w = new LogWriter(nodeFileSystem.openWrite(file))
  const expected: Array<{ firstSeq: number, ops: DecodedOp[] }> = []
  let seq = 1
  let bigOnes = 0
  while (expected.length < 10000) {
    const group = rnd.int(4) === 0 ? rnd.int(8) + 1 : 1
    const payloads: Buffer[] = []
    for (let g = 0; g < group && expected.length < 10000; g++) {
      const big = rnd.int(400) === 0
      if (big) bigOnes++
      const ops = randomOps(rnd, rnd.int(8) === 0 ? 60 : 4, big)
      const payload = encodeAt(seq, ops)
      expected.push({ firstSeq: seq, ops })
      payloads.push(payload)
      seq += ops.length
    }
    if (payloads.length === 1 && rnd.int(2) === 0) w.addRecord(payloads[0])
    else w.addRecords(payloads)
  }
  w.sync()
  const size = w.size()
  w.close()
  t.equal(nodeFs.statSync(file).size, size, 'size() matches the file')
  t.comment(`log of ${size} bytes, ${bigOnes} records over 64 KiB`)

  const r = new LogReader(nodeFileSystem, file, path.basename(file))
  let i = 0
  let bad = 0
  for (let rec = r.next(); rec !== undefined; rec = r.next(), i++) {
    const got = decodeBatch(rec, path.basename(file))
    const want = expected[i]
    if (want === undefined || got.firstSeq !== want.firstSeq || !opsEqual(got.ops, want.ops)) bad++
  }
  t.equal(i, expected.length, 'every batch read back')
  t.equal(bad, 0, 'every batch equal')
  t.deepEqual(r.tail, { state: 'clean', offset: size, droppedBytes: 0, validRecordAfter: false, nextValidOffset: -1 })
  t.end()
})

test('group append: addRecords is one append, records read back in order', (t) => {
  const rnd = new Random(seed + 1)
  const file = tmpFile()
  const inner = nodeFileSystem.openWrite(file)
  const appends: number[] = []
  const spy: WritableFile = {
    append: (data) => { appends.push(data.length); inner.append(data) },
    sync: () => inner.sync(),
    syncAsync: () => inner.syncAsync(),
    size: () => inner.size(),
    close: () => inner.close()
  }
  const w = new LogWriter(spy)
  const all: Buffer[] = []
  const groups = [1, 5, 40, 3, 100]
  for (const n of groups) {
    const payloads: Buffer[] = []
    for (let i = 0; i < n; i++) payloads.push(rnd.bytes(rnd.int(i === 0 && n === 3 ? 100000 : 300)))
    w.addRecords(payloads)
    all.push(...payloads)
  }
  w.addRecords([])
  w.addRecord(Buffer.alloc(0))
  all.push(Buffer.alloc(0))
  t.equal(appends.length, groups.length + 1, 'one append per addRecords / addRecord call (none for an empty group)')
  const encodedTotal = all.reduce((n, p) => n + encodeRecord(p).length, 0)
  t.equal(appends.reduce((a, b) => a + b, 0), encodedTotal, 'appended bytes are exactly the framed records')
  return w.syncAsync().then(() => {
    w.close()
    const { records, tail } = readAll(file)
    t.ok(sameRecords(records, all), `all ${all.length} records in order`)
    t.equal(tail.state, 'clean')
    t.end()
  })
})

test('a failed append poisons the writer', (t) => {
  const boom = new Error('ENOSPC')
  let calls = 0
  const failing: WritableFile = {
    append: () => { calls++; throw boom },
    sync: () => {},
    syncAsync: async () => {},
    size: () => 0,
    close: () => {}
  }
  const w = new LogWriter(failing)
  t.throws(() => w.addRecord(Buffer.from('a')), /ENOSPC/)
  t.throws(() => w.addRecords([Buffer.from('b')]), /ENOSPC/, 'later writes rethrow')
  t.throws(() => w.sync(), /ENOSPC/, 'sync rethrows')
  t.equal(calls, 1, 'nothing more reached the file')
  w.close()
  t.end()
})

test('torn tail at every byte offset of the last record', (t) => {
  const rnd = new Random(seed + 2)
  for (const lastSize of [0, 1, 200, 70000]) {
    const payloads: Buffer[] = []
    for (let i = 0; i < 20; i++) payloads.push(rnd.bytes(rnd.int(500)))
    payloads.push(rnd.bytes(lastSize))
    const full = tmpFile()
    const starts = writeLog(full, payloads)
    const bytes = nodeFs.readFileSync(full)
    const lastStart = starts[starts.length - 1]
    const prefix = payloads.slice(0, -1)

    // Every cut inside a small record; for the 70 KB record, every header byte and a sample of the rest.
    const cuts: number[] = []
    for (let c = lastStart + 1; c < bytes.length; c++) {
      if (lastSize < 1000 || c <= lastStart + 2 * HEADER_SIZE || rnd.int(500) === 0 || c === bytes.length - 1) cuts.push(c)
    }
    const file = tmpFile()
    let ok = 0
    for (const cut of cuts) {
      nodeFs.writeFileSync(file, bytes.subarray(0, cut))
      const { records, tail } = readAll(file)
      if (sameRecords(records, prefix) && tail.state === 'torn' && tail.offset === lastStart &&
          tail.droppedBytes === cut - lastStart && !tail.validRecordAfter) ok++
      else t.fail(`cut at ${cut}: ${records.length} records, tail ${JSON.stringify(tail)}`)
    }
    t.equal(ok, cuts.length, `last record of ${lastSize} B: ${cuts.length} cuts all torn with the ${prefix.length} earlier records`)

    nodeFs.writeFileSync(file, bytes.subarray(0, lastStart))
    const atBoundary = readAll(file)
    t.ok(sameRecords(atBoundary.records, prefix) && atBoundary.tail.state === 'clean', 'a cut on the record boundary is clean')
    const whole = readAll(full)
    t.ok(sameRecords(whole.records, payloads) && whole.tail.state === 'clean', 'the uncut file is clean')
  }
  t.end()
})

test('zero-filled and garbage tails are torn', (t) => {
  const rnd = new Random(seed + 3)
  const payloads: Buffer[] = []
  for (let i = 0; i < 50; i++) payloads.push(rnd.bytes(rnd.int(300)))
  const base = tmpFile()
  writeLog(base, payloads)
  const bytes = nodeFs.readFileSync(base)
  const file = tmpFile()
  for (const n of [1, 4, 8, 9, 10, 100, 4096, 70000]) {
    for (const kind of ['zero', 'garbage']) {
      const tailBytes = kind === 'zero' ? Buffer.alloc(n) : rnd.bytes(n)
      nodeFs.writeFileSync(file, Buffer.concat([bytes, tailBytes]))
      const { records, tail } = readAll(file)
      t.ok(sameRecords(records, payloads), `${n} ${kind} bytes: all records returned`)
      t.deepEqual(tail, { state: 'torn', offset: bytes.length, droppedBytes: n, validRecordAfter: false, nextValidOffset: -1 }, `${n} ${kind} bytes: torn`)
    }
  }
  t.end()
})

test('preallocated log: zeros ahead of the appends, read as a torn tail while open, trimmed on close', (t) => {
  const rnd = new Random(seed + 11)
  const file = tmpFile()
  const w = new LogWriter(nodeFileSystem.openWrite(file, { preallocate: true }))
  const payloads: Buffer[] = []
  let expectedSize = 0
  let sawZeroTail = false
  // Past two 256 KiB steps, with records of every size (some larger than a step).
  while (expectedSize < 700 * 1024) {
    const p = rnd.bytes(rnd.int(20) === 0 ? 300000 : rnd.int(400))
    payloads.push(p)
    w.addRecord(p)
    expectedSize += HEADER_SIZE + p.length
    if (rnd.int(50) === 0) w.sync()
    if (w.size() !== expectedSize) { t.fail(`size() counts appended bytes only: ${w.size()} vs ${expectedSize}`); break }
    // What a crash of the process would leave: the file as the OS holds it now.
    const onDisk = nodeFs.statSync(file).size
    if (onDisk > expectedSize) sawZeroTail = true
    if (onDisk < expectedSize) { t.fail(`file shorter (${onDisk}) than the appended bytes (${expectedSize})`); break }
  }
  t.is(w.size(), expectedSize, `size() is the appended bytes (${expectedSize})`)
  const onDisk = nodeFs.statSync(file).size
  t.ok(sawZeroTail && onDisk > expectedSize && onDisk % (256 * 1024) === 0, `while open the file is preallocated to a 256 KiB multiple (${onDisk} bytes)`)
  const bytes = nodeFs.readFileSync(file)
  t.ok(bytes.subarray(expectedSize).every((b) => b === 0), 'the bytes past the last record are zeros')
  const open = readAll(file)
  t.ok(sameRecords(open.records, payloads), `a reader of the open (crashed) log gets every record (${payloads.length})`)
  t.is(open.tail.state, 'torn', 'the zero tail reads as torn')
  t.is(open.tail.offset, expectedSize, 'the valid prefix ends at the last record')
  w.close()
  t.is(nodeFs.statSync(file).size, expectedSize, 'close() trims the zeros')
  const closed = readAll(file)
  t.ok(sameRecords(closed.records, payloads), 'every record after close')
  t.is(closed.tail.state, 'clean', 'a closed log has a clean tail')
  t.end()
})

test('a damaged record in the middle followed by valid records is corrupt', (t) => {
  const rnd = new Random(seed + 4)
  const payloads: Buffer[] = []
  for (let i = 0; i < 30; i++) payloads.push(rnd.bytes(rnd.int(200) + 1))
  const base = tmpFile()
  const starts = writeLog(base, payloads)
  const bytes = nodeFs.readFileSync(base)
  const victim = 12
  const from = starts[victim]
  const to = starts[victim + 1]
  const file = tmpFile()
  let ok = 0
  for (let at = from; at < to; at++) {
    const damaged = Buffer.from(bytes)
    damaged[at] ^= 1 << rnd.int(8)
    nodeFs.writeFileSync(file, damaged)
    const { records, tail } = readAll(file)
    if (sameRecords(records, payloads.slice(0, victim)) && tail.state === 'corrupt' && tail.validRecordAfter &&
        tail.offset === from && tail.droppedBytes === bytes.length - from && tail.nextValidOffset === to) ok++
    else t.fail(`flip at ${at}: ${records.length} records, tail ${JSON.stringify(tail)}`)
  }
  t.equal(ok, to - from, `every one of ${to - from} flipped bytes: ${victim} records, then 'corrupt' with a valid record after`)

  // Damage in the very last record is torn, not corrupt.
  const last = Buffer.from(bytes)
  last[bytes.length - 1] ^= 0x80
  nodeFs.writeFileSync(file, last)
  const r = readAll(file)
  t.equal(r.records.length, payloads.length - 1)
  t.equal(r.tail.state, 'torn', 'damaged last record is torn')
  t.end()
})

test('large records after damage are found; a large garbage tail is torn, quickly', (t) => {
  const rnd = new Random(seed + 7)
  const first = [rnd.bytes(100), rnd.bytes(100)]
  const big = rnd.bytes(150000)
  const good = Buffer.concat(first.map(encodeRecord))
  const damage = rnd.bytes(37)
  const file = tmpFile()
  const cases: Array<[string, Buffer]> = [
    ['big record at EOF', encodeRecord(big)],
    ['big record, then a partial header', Buffer.concat([encodeRecord(big), encodeRecord(Buffer.from('x')).subarray(0, 5)])],
    ['big record, then a torn record', Buffer.concat([encodeRecord(big), encodeRecord(rnd.bytes(1000)).subarray(0, 500)])],
    ['big record, then a small one', Buffer.concat([encodeRecord(big), encodeRecord(Buffer.from('y'))])]
  ]
  for (const [what, after] of cases) {
    nodeFs.writeFileSync(file, Buffer.concat([good, damage, after]))
    const { records, tail } = readAll(file)
    t.ok(sameRecords(records, first) && tail.state === 'corrupt' && tail.validRecordAfter &&
      tail.nextValidOffset === good.length + damage.length, `${what}: corrupt, valid record found`)
  }
  for (const mib of [4, 16]) {
    nodeFs.writeFileSync(file, Buffer.concat([good, rnd.bytes(mib << 20)]))
    const t0 = Date.now()
    const { records, tail } = readAll(file)
    const ms = Date.now() - t0
    t.ok(sameRecords(records, first) && tail.state === 'torn', `${mib} MiB garbage tail: torn (${ms} ms)`)
  }
  t.end()
})

test('a length field of 4 GiB does not crash the reader', (t) => {
  const rnd = new Random(seed + 5)
  const payloads = [rnd.bytes(50), rnd.bytes(60)]
  const good = Buffer.concat(payloads.map(encodeRecord))
  for (const len of [0xffffffff, 0x80000000, 0x7fffffff, good.length + 1]) {
    const bogus = Buffer.alloc(HEADER_SIZE + 16)
    putFixed32(bogus, 0, 0x12345678)
    putFixed32(bogus, 4, len)
    bogus[8] = RECORD_FULL
    const file = tmpFile()
    nodeFs.writeFileSync(file, Buffer.concat([good, bogus]))
    let res = readAll(file)
    t.ok(sameRecords(res.records, payloads) && res.tail.state === 'torn' && res.tail.offset === good.length,
      `length ${len} at the end: torn after the valid records`)

    nodeFs.writeFileSync(file, Buffer.concat([good, bogus, good]))
    res = readAll(file)
    t.ok(sameRecords(res.records, payloads) && res.tail.state === 'corrupt' &&
      res.tail.nextValidOffset === good.length + bogus.length, `length ${len} in the middle: corrupt`)
  }
  t.end()
})

test('a record with a reserved type stops the reader', (t) => {
  const payload = Buffer.from('future record')
  const rec = encodeRecord(payload)
  rec[8] = 2
  putFixed32(rec, 0, recordChecksum(2, payload)) // a valid checksum for the reserved type
  const file = tmpFile()
  nodeFs.writeFileSync(file, Buffer.concat([encodeRecord(Buffer.from('a')), rec]))
  const res = readAll(file)
  t.equal(res.records.length, 1)
  t.equal(res.tail.state, 'torn')
  t.end()
})

test('one parser: walkRecords, readRecordAt and readRecordFrom accept what LogReader accepts, at every cut and every damaged byte', (t) => {
  const payloads = [Buffer.from('first record'), Buffer.alloc(0), Buffer.from('third and last record')]
  const whole = Buffer.concat(payloads.map((p) => encodeRecord(p)))
  const starts = [0, HEADER_SIZE + 12, 2 * HEADER_SIZE + 12]
  const file = tmpFile()
  const cases: Array<{ bytes: Buffer, what: string, faults: Array<RecordFault | undefined> }> = []
  for (let cut = 0; cut <= whole.length; cut++) {
    const inRecord = cut - starts.filter((s) => s <= cut).pop()!
    const fault = inRecord === 0 || cut === whole.length ? undefined : inRecord < HEADER_SIZE ? 'cut-header' : 'past-end'
    cases.push({ bytes: whole.subarray(0, cut), what: `cut at ${cut}`, faults: [fault] })
  }
  for (let at = 0; at < whole.length; at++) {
    const bytes = Buffer.from(whole)
    bytes[at] ^= 0x10
    const inRecord = at - starts.filter((s) => s <= at).pop()!
    // A flipped length bit makes the payload run past the end or be checked over the wrong range.
    const faults: RecordFault[] = inRecord === 8 ? ['bad-type'] : inRecord >= 4 && inRecord < 8 ? ['past-end', 'checksum'] : ['checksum']
    cases.push({ bytes, what: `byte ${at} flipped`, faults })
  }
  let failures = 0
  for (const c of cases) {
    nodeFs.writeFileSync(file, c.bytes)
    const expected = readAll(file).records
    const walked: Buffer[] = []
    const walk = walkRecords(c.bytes, (p) => { walked.push(Buffer.from(p)) })
    const byRecord: Buffer[] = []
    for (let pos = 0; pos < c.bytes.length;) {
      const rec = readRecordAt(c.bytes, pos)
      if (typeof rec === 'string') break
      byRecord.push(rec.payload)
      pos = rec.next
    }
    const fromFile: Buffer[] = []
    const f = nodeFileSystem.openRead(file)
    for (let rec = readRecordFrom(f, 0); rec !== undefined; rec = readRecordFrom(f, rec.next)) fromFile.push(rec.payload)
    f.close()
    const end = expected.reduce((n, p) => n + HEADER_SIZE + p.length, 0)
    if (!sameRecords(walked, expected) || !sameRecords(byRecord, expected) || !sameRecords(fromFile, expected) || walk.end !== end || !c.faults.includes(walk.fault)) {
      if (failures++ < 5) t.fail(`${c.what}: LogReader ${expected.length} records, walk ${walked.length} (end ${walk.end}, ${String(walk.fault)}), readRecordAt ${byRecord.length}, readRecordFrom ${fromFile.length}`)
    }
  }
  t.equal(failures, 0, `${cases.length} damaged copies: the four readers agree on the valid records, and the walk names the fault`)
  const stopped = walkRecords(whole, (_p, at) => at < starts[1])
  t.same([stopped.end, stopped.stopped, stopped.fault], [starts[1], true, undefined], 'a visit that returns false stops the walk before that record')
  t.end()
})

test('LogReader: tail before the end is a bug; missing file is LEVEL_IO_ERROR', (t) => {
  const file = tmpFile()
  writeLog(file, [Buffer.from('x')])
  const r = new LogReader(nodeFileSystem, file, 'x.log')
  t.throws(() => r.tail, /invariant/)
  r.close()
  try {
    // eslint-disable-next-line no-new
    new LogReader(nodeFileSystem, path.join(tmpRoot, 'missing.log'), 'missing.log')
    t.fail('expected an error')
  } catch (err) {
    t.ok(isLevelError(err, 'LEVEL_IO_ERROR'), 'LEVEL_IO_ERROR')
    t.equal((err as { file?: string }).file, 'missing.log')
  }
  t.end()
})

function expectCorruption (t: test.Test, fn: () => unknown, what: string): boolean {
  try {
    fn()
  } catch (err) {
    if (isLevelError(err, 'LEVEL_CORRUPTION') && (err as { file?: string }).file === '000007.log') return true
    t.fail(`${what}: wrong error ${(err as Error).stack}`)
    return false
  }
  t.fail(`${what}: decoded without error`)
  return false
}

test('decodeBatch: every truncation and random flips are LEVEL_CORRUPTION, never a RangeError', (t) => {
  const rnd = new Random(seed + 6)
  const name = '000007.log'
  let truncations = 0
  let flips = 0
  let flipErrors = 0
  let wrongErrors = 0
  for (let round = 0; round < 200; round++) {
    const ops = randomOps(rnd, 6)
    const firstSeq = 1 + rnd.int(2 ** 40)
    const payload = encodeAt(firstSeq, ops)
    const back = decodeBatch(payload, name)
    if (back.firstSeq !== firstSeq || !opsEqual(back.ops, ops)) t.fail('round trip')
    for (let cut = 0; cut < payload.length; cut++) {
      if (expectCorruption(t, () => decodeBatch(payload.subarray(0, cut), name), `cut ${cut}`)) truncations++
    }
    for (let f = 0; f < 50; f++) {
      const damaged = Buffer.from(payload)
      const nflips = 1 + rnd.int(3)
      for (let k = 0; k < nflips; k++) damaged[rnd.int(damaged.length)] = rnd.next() & 0xff
      flips++
      try {
        decodeBatch(damaged, name)
      } catch (err) {
        if (isLevelError(err, 'LEVEL_CORRUPTION')) flipErrors++
        else {
          wrongErrors++
          t.comment(`flip: wrong error ${(err as Error).stack}`)
        }
      }
    }
    // Trailing garbage.
    expectCorruption(t, () => decodeBatch(Buffer.concat([payload, Buffer.from([0])]), name), 'trailing byte')
  }
  t.ok(truncations > 0, `${truncations} truncations, all LEVEL_CORRUPTION (each checked above)`)
  // A changed byte inside a key or a value still decodes (the record's checksum
  // catches it in a log); a changed count, kind or length mostly cannot.
  t.is(wrongErrors, 0, `${flips} damaged payloads: none threw anything but LEVEL_CORRUPTION`)
  t.ok(flipErrors >= flips / 10, `${flips} damaged payloads: ${flipErrors} detected by the decoder alone`)

  const header = (seq: number, count: number): Buffer => {
    const b = Buffer.alloc(12)
    b.writeUIntLE(seq % 2 ** 48, 0, 6)
    b.writeUInt16LE(Math.floor(seq / 2 ** 48), 6)
    b.writeUInt32LE(count, 8)
    return b
  }
  expectCorruption(t, () => decodeBatch(header(1, 0xffffffff), name), 'huge count')
  expectCorruption(t, () => decodeBatch(header(0, 0), name), 'sequence 0')
  expectCorruption(t, () => decodeBatch(header(MAX_SEQ + 1, 0), name), 'sequence above MAX_SEQ')
  expectCorruption(t, () => decodeBatch(header(MAX_SEQ, 2), name), 'sequence range above MAX_SEQ')
  expectCorruption(t, () => decodeBatch(Buffer.concat([header(1, 1), Buffer.from([7, 0])]), name), 'unknown kind')
  expectCorruption(t, () => decodeBatch(Buffer.concat([header(1, 1), Buffer.from([KIND_VALUE, 0xff, 0xff, 0xff, 0xff, 0x0f])]), name), 'key length 4 GiB')
  expectCorruption(t, () => decodeBatch(Buffer.concat([header(1, 1), Buffer.from([KIND_VALUE, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80])]), name), 'overlong varint')
  t.deepEqual(decodeBatch(header(5, 0), name), { firstSeq: 5, ops: [] }, 'an empty batch decodes')
  t.end()
})

test('preallocated log: closeAsync() trims and closes off the event loop, like close()', async (t) => {
  const rnd = new Random(seed + 9)
  for (const records of [0, 1, 2000]) {
    const file = tmpFile()
    const w = new LogWriter(nodeFileSystem.openWrite(file, { preallocate: true }))
    const payloads: Buffer[] = []
    let expectedSize = 0
    for (let i = 0; i < records; i++) {
      const p = rnd.bytes(rnd.int(300))
      payloads.push(p)
      w.addRecord(p)
      expectedSize += HEADER_SIZE + p.length
    }
    const closing = w.closeAsync()
    t.throws(() => w.addRecord(Buffer.from('x')), /after close/, `${records} records: the writer refuses records once closing`)
    await closing
    t.is(nodeFs.statSync(file).size, expectedSize, `${records} records: closeAsync() trims the zeros (${expectedSize} bytes)`)
    const closed = readAll(file)
    t.ok(sameRecords(closed.records, payloads) && closed.tail.state === 'clean', `${records} records: every record, clean tail`)
    await w.closeAsync() // idempotent
  }
  t.end()
})
