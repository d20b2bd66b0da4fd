// The Node host's tools (hosts/node/tools/): the data that dump, verify, openExisting and scan return, on
// databases written by the engine, intact and damaged (the command line's
// printing of it is test/cli.test.ts).
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { Engine, encodeBatch } from '../hosts/node/index'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { OP_RANGE_DELETE } from '../lib/wal/batch'
import { HEADER_SIZE } from '../lib/wal/log-format'
import { CURRENT, parseFileName } from '../lib/filenames'
import { describeTail, dumpLog, dumpManifest, dumpTable, type LogDump, type LogRecord, type TableEntry } from '../hosts/node/tools/dump'
import { verifyDatabase } from '../hosts/node/tools/verify'
import { openExisting, scan } from '../hosts/node/tools/database'
import { FORMAT_VERSION } from '../lib/sstable/format'
import { tempDir } from './util/temp'

const b = (s: string): Buffer => Buffer.from(s)
const key = (i: number): string => `key${String(i).padStart(2, '0')}`

/**
 * A closed database: one table, in small data blocks, with key00..key19 (key10
 * deleted after a snapshot was taken, so the table holds both its tombstone and
 * its value), and a log holding three batches: a put, a range delete [key15,
 * key17), a put.
 */
async function makeDb (): Promise<string> {
  const dir = path.join(tempDir('lsm-tools-test-'), 'db')
  const engine = await Engine.open(dir, { blockSize: 64, flushOnClose: false }) // a data block every few entries; the last writes stay in the log at close
  for (let i = 0; i < 20; i++) await engine.write(encodeBatch([{ kind: KIND_VALUE, key: b(key(i)), value: b(`value${i}`) }]), false)
  const snapshot = engine.snapshot()
  await engine.write(encodeBatch([{ kind: KIND_DELETE, key: b(key(10)) }]), false)
  await engine.flushMemTable()
  engine.releaseSnapshot(snapshot)
  await engine.write(encodeBatch([{ kind: KIND_VALUE, key: b('inlog'), value: b('logged') }]), false)
  await engine.write(encodeBatch([{ kind: OP_RANGE_DELETE, key: b(key(15)), end: b(key(17)) }]), false)
  await engine.write(encodeBatch([{ kind: KIND_VALUE, key: b('last'), value: Buffer.from([0, 255]) }]), false)
  await engine.close()
  return dir
}

function filesOf (dir: string, type: string): string[] {
  return fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === type).sort()
}

/** The log holding the three batches written after the flush (the newest). */
function dataLog (dir: string): string {
  return filesOf(dir, 'log').pop() as string
}

function flipByte (file: string, offset: number): void {
  const bytes = fs.readFileSync(file)
  bytes[offset] ^= 0xff
  fs.writeFileSync(file, bytes)
}

function readAll<T> (dump: LogDump<T>): Array<LogRecord<T>> {
  try {
    return [...dump.records()]
  } finally {
    dump.close()
  }
}

function decoded<T> (records: Array<LogRecord<T>>): T[] {
  return records.map((r) => {
    if ('error' in r) throw r.error
    return r.decoded
  })
}

test('dumpTable: properties, and entries in internal order', async (t) => {
  const dir = await makeDb()
  const name = filesOf(dir, 'table')[0]
  const table = dumpTable(path.join(dir, name))
  let entries: TableEntry[]
  try {
    t.is(table.name, name, 'named by its basename')
    t.is(table.fileSize, fs.statSync(path.join(dir, name)).size, 'file size')
    t.is(table.properties.formatVersion, FORMAT_VERSION, 'format version')
    entries = [...table.entries()]
  } finally {
    table.close()
  }
  t.is(entries.length, table.properties.entries, 'as many entries as the properties say')
  t.is(entries.length, 21, '20 values and a tombstone')
  t.deepEqual(entries.slice(0, 2).map((e) => [e.userKey.toString(), e.kind, e.value?.toString()]), [[key(0), KIND_VALUE, 'value0'], [key(1), KIND_VALUE, 'value1']], 'values in key order')
  const ten = entries.filter((e) => e.userKey.toString() === key(10))
  t.deepEqual(ten.map((e) => [e.kind, e.value]), [[KIND_DELETE, undefined], [KIND_VALUE, b('value10')]], 'a deleted key: its tombstone, then the older value')
  t.ok(ten[0].seq > ten[1].seq, 'newest first within a key')
  t.ok(entries.every((e, i) => i === 0 || Buffer.compare(entries[i - 1].userKey, e.userKey) <= 0), 'user keys ascending')
  const wrong = entries.filter((e) => e.kind === KIND_VALUE && e.value?.toString() !== `value${Number(e.userKey.toString().slice(3))}`)
  t.deepEqual(wrong, [], 'every value with its key')
})

test('dumpTable: entries stay intact while the table\'s blocks are evicted and their memory reused', async (t) => {
  // A table larger than the dump's block cache: blocks read early are evicted
  // (and their buffers recycled) while later ones are read.
  const dir = path.join(tempDir('lsm-tools-test-'), 'db')
  const engine = await Engine.open(dir)
  const N = 6000
  const value = (i: number): Buffer => Buffer.alloc(100, `value${i}.`)
  for (let i = 0; i < N; i += 500) {
    const ops = []
    for (let j = i; j < i + 500; j++) ops.push({ kind: KIND_VALUE, key: b(`k${String(j).padStart(5, '0')}`), value: value(j) })
    await engine.write(encodeBatch(ops), false)
  }
  await engine.flushMemTable()
  await engine.close()
  const name = filesOf(dir, 'table')[0]
  const table = dumpTable(path.join(dir, name))
  // Its blocks are compressed on disk; the cache holds them decompressed.
  t.ok(table.properties.rawKeyBytes + table.properties.rawValueBytes > 2 * 256 * 1024, 'the table\'s blocks, decompressed, are larger than the cache')
  let entries: TableEntry[]
  try {
    entries = [...table.entries()]
  } finally {
    table.close()
  }
  t.is(entries.length, N, 'every entry')
  const wrong = entries.filter((e, i) => e.userKey.toString() !== `k${String(i).padStart(5, '0')}` || !value(i).equals(e.value as Buffer))
  t.is(wrong.length, 0, 'every key and value as written (copies)')
})

test('dumpTable: a damaged data block is LEVEL_CORRUPTION naming the file', async (t) => {
  const dir = await makeDb()
  const name = filesOf(dir, 'table')[0]
  flipByte(path.join(dir, name), 40) // inside the first data block
  const table = dumpTable(path.join(dir, name))
  try {
    t.throws(() => [...table.entries()], (err: any) => err.code === 'LEVEL_CORRUPTION' && err.file === name, 'LEVEL_CORRUPTION with the file name')
  } finally {
    table.close()
  }
})

test('dumpManifest: version edits and a clean tail', async (t) => {
  const dir = await makeDb()
  const name = filesOf(dir, 'manifest').pop() as string
  const manifest = dumpManifest(path.join(dir, name))
  const edits = decoded(readAll(manifest))
  t.is(manifest.name, name, 'named by its basename')
  t.ok(edits.length >= 2, `${edits.length} edits`)
  t.is(edits[0].formatVersion, 3, 'the first edit carries the format version')
  const added = edits.flatMap((e) => (e.newFiles ?? []).map((f) => f.meta.number))
  const table = filesOf(dir, 'table')[0]
  t.ok(added.includes(parseFileName(table)?.number as number), 'an edit adds the table')
  t.is(manifest.tail.state, 'clean', 'clean tail')
})

test('dumpLog: write batches with their sequence numbers, and the tail', async (t) => {
  const dir = await makeDb()
  const log = dumpLog(path.join(dir, dataLog(dir)))
  const batches = decoded(readAll(log))
  t.is(batches.length, 3, 'three batches')
  t.deepEqual(batches.map((x) => x.ops.map((op) => [op.kind, op.key.toString()])), [[[KIND_VALUE, 'inlog']], [[OP_RANGE_DELETE, key(15)]], [[KIND_VALUE, 'last']]], 'their operations')
  t.is(batches[1].ops[0].end?.toString(), key(17), 'range delete end')
  t.deepEqual(batches[2].ops[0].value, Buffer.from([0, 255]), 'binary value')
  t.is(batches[1].firstSeq, batches[0].firstSeq + 1, 'consecutive sequence numbers')
  t.is(log.tail.state, 'clean', 'clean tail')
  t.is(describeTail(log.tail), `tail: clean (${log.tail.offset} bytes)`, 'described')
})

test('dumpLog: a damaged record in the middle: a corrupt tail after the records before it', async (t) => {
  const dir = await makeDb()
  const file = path.join(dir, dataLog(dir))
  const first = decoded(readAll(dumpLog(file)))
  t.is(first.length, 3, 'three batches before the damage')
  const firstRecordBytes = readAll(dumpLog(file))[0].bytes
  flipByte(file, HEADER_SIZE + firstRecordBytes + HEADER_SIZE + 2) // the second record's payload
  const log = dumpLog(file)
  const records = readAll(log)
  t.is(records.length, 1, 'the record before the damage')
  t.is(log.tail.state, 'corrupt', 'corrupt tail')
  t.ok(log.tail.validRecordAfter, 'a valid record follows the damage')
  t.match(describeTail(log.tail), /^tail: corrupt at offset \d+, \d+ bytes after it not readable \(a valid record follows/, 'described')
})

test('verifyDatabase: an intact database', async (t) => {
  const dir = await makeDb()
  const seen: string[] = []
  const report = verifyDatabase(dir, { onFile: (i, total, name) => seen.push(`${i}/${total} ${name}`) })
  const files = fs.readdirSync(dir).filter((n) => ['table', 'log', 'manifest'].includes(parseFileName(n)?.type as string)).sort()
  t.deepEqual(report.files, files, 'every table, log and manifest, in name order')
  t.deepEqual(seen, files.map((n, i) => `${i}/${files.length} ${n}`), 'onFile before each')
  t.is(report.tables, 1, 'one table')
  t.is(report.entries, 21, 'its entries')
  t.is(report.logs, files.length - 1, 'the logs and manifests')
  t.ok(report.records >= 3 + 2, `${report.records} records`)
  t.deepEqual(report.problems, [], 'no problems')
  t.deepEqual(report.notes, [], 'no notes')
})

test('verifyDatabase: a damaged table is a LEVEL_CORRUPTION problem naming it', async (t) => {
  const dir = await makeDb()
  const name = filesOf(dir, 'table')[0]
  flipByte(path.join(dir, name), 40)
  const before = fs.readdirSync(dir).sort()
  const report = verifyDatabase(dir)
  t.deepEqual(report.problems.map((p) => [p.file, p.code]), [[name, 'LEVEL_CORRUPTION']], 'one problem, naming the table')
  t.match(report.problems[0].message, /checksum mismatch/, 'says what is wrong')
  t.is(report.tables, 1, 'the table was checked')
  t.is(report.entries, 0, 'its entries are not counted')
  t.deepEqual(fs.readdirSync(dir).sort(), before, 'nothing written')
})

test('verifyDatabase: a damaged log record is a problem, a torn tail a note', async (t) => {
  const dir = await makeDb()
  const name = dataLog(dir)
  const file = path.join(dir, name)
  const firstRecordBytes = readAll(dumpLog(file))[0].bytes
  flipByte(file, HEADER_SIZE + firstRecordBytes + HEADER_SIZE + 2)
  let report = verifyDatabase(dir)
  t.deepEqual(report.problems.map((p) => [p.file, p.code]), [[name, 'LEVEL_CORRUPTION']], 'damage in the middle: a problem naming the log')
  t.match(report.problems[0].message, /^damaged record at offset \d+; tail: corrupt/, 'where')

  const dir2 = await makeDb()
  const file2 = path.join(dir2, dataLog(dir2))
  fs.truncateSync(file2, fs.statSync(file2).size - 3)
  report = verifyDatabase(dir2)
  t.deepEqual(report.problems, [], 'a torn tail is no problem')
  t.deepEqual(report.notes.map((n) => n.file), [dataLog(dir2)], 'but a note naming the log')
  t.match(report.notes[0].message, /^torn tail at offset \d+/, 'saying so')
})

test('verifyDatabase: a missing live table, and CURRENT naming a missing manifest', async (t) => {
  const dir = await makeDb()
  const table = filesOf(dir, 'table')[0]
  const manifest = filesOf(dir, 'manifest').pop() as string
  fs.unlinkSync(path.join(dir, table))
  let report = verifyDatabase(dir)
  t.deepEqual(report.problems, [{ file: table, code: 'LEVEL_CORRUPTION', message: `missing: ${manifest} lists it as live` }], 'the missing table')

  fs.writeFileSync(path.join(dir, CURRENT), 'MANIFEST-999999\n')
  report = verifyDatabase(dir)
  t.deepEqual(report.problems, [{ file: CURRENT, code: 'LEVEL_CORRUPTION', message: 'names MANIFEST-999999, which does not exist' }], 'CURRENT (the live tables then unknown)')
})

test('openExisting never creates; scan reads a range as copies', async (t) => {
  const missing = path.join(tempDir('lsm-tools-test-'), 'nope')
  try {
    await openExisting(missing)
    t.fail('opened a missing database')
  } catch (err: any) {
    t.is(err.code, 'LEVEL_INVALID_OPTION', 'a missing database: LEVEL_INVALID_OPTION')
  }
  t.notOk(fs.existsSync(missing), 'nothing created')

  const engine = await openExisting(await makeDb())
  try {
    const text = (entries: Iterable<[Buffer, Buffer]>): string[] => [...entries].map(([k, v]) => `${k.toString()}=${v.toString('hex')}`)
    t.deepEqual(text(scan(engine, { gte: b(key(8)), lt: b(key(19)) })), [8, 9, 11, 12, 13, 14, 17, 18].map((i) => `${key(i)}=${b(`value${i}`).toString('hex')}`), 'deleted and range-deleted keys skipped')
    t.deepEqual(text(scan(engine, { gt: b('key'), reverse: true }, 2)), ['last=00ff', `${key(19)}=${b('value19').toString('hex')}`], 'reverse, limit')
    t.deepEqual(text(scan(engine, {}, 0)), [], 'limit 0')
    const all = [...scan(engine, {})]
    t.is(all.length, 20 - 1 - 2 + 2, 'everything live')
    t.is(all[0][1].toString(), 'logged', 'the first entry intact after the scan moved on (copies)')
  } finally {
    await engine.close()
  }
})
