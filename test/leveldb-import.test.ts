// Moving a classic-level database over: LsmLevel.importLevelDB and
// `lsm-level import` against LevelDB directories that classic-level writes here
// (random puts, deletes and batches over many flushes and compactions, keys of
// every byte value, values larger than a block, writes still only in the log,
// Snappy on and off); damaged sources; and opening a LevelDB directory, which
// must fail clearly and change nothing. The readers' formats are in lib/leveldb/.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import * as zlib from 'node:zlib'
import { ClassicLevel } from 'classic-level'
import { LsmLevel } from '../index'
import { main } from '../cli/main'
import { crc32c } from '../lib/leveldb/crc32c'
import { readLevelDBState } from '../lib/leveldb/manifest'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

type Entry = [Buffer, Buffer]
const BUFFERS = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const

/** Keys: every single byte value, every byte after 0x00 and before 0xff, and random ones; a small pool so writes overwrite and delete. */
function keyPool (rnd: Random): Buffer[] {
  const keys: Buffer[] = []
  for (let b = 0; b < 256; b++) keys.push(Buffer.from([b]), Buffer.from([0, b]), Buffer.from([0xff, b, 0xff]))
  for (let i = 0; i < 600; i++) keys.push(rnd.bytes(1 + rnd.int(24)))
  return keys
}

/** Mostly compressible text (so Snappy has work), sometimes random bytes, sometimes (if `big`) larger than a 4 KiB block. */
function value (rnd: Random, i: number, big = true): Buffer {
  const r = rnd.int(100)
  if (r < 4 && big) return Buffer.from(`{"big":${i},"text":"${'lorem ipsum dolor '.repeat(300 + rnd.int(600))}"}`)
  if (r < 20) return rnd.bytes(rnd.int(200))
  return Buffer.from(`{"id":${i},"name":"user-${rnd.int(1000)}","tags":["a","b","c"],"note":"${'x'.repeat(rnd.int(300))}"}`)
}

interface Source {
  dir: string
  /** What classic-level's own iterators returned before it closed. */
  forward: Entry[]
  backward: Entry[]
}

/**
 * Writes a LevelDB database with classic-level: `ops` random puts, deletes and
 * batches with a small write buffer (many flushes and compactions), a manual
 * compaction of part of the range midway, a value that fills the write buffer
 * (the next write starts a new memtable and log), then a last stretch of
 * writes, too few to fill the write buffer again, that is only in the log when
 * the database closes (LevelDB does not flush at close).
 */
async function writeSource (rnd: Random, compression: boolean, ops: number): Promise<Source> {
  const dir = path.join(tempDir('lsm-leveldb-import-'), 'leveldb')
  const db = new ClassicLevel<Buffer, Buffer>(dir, { ...BUFFERS, compression, writeBufferSize: 64 * 1024, blockSize: 4096 })
  await db.open()
  const keys = keyPool(rnd)
  const step = async (i: number, big = true): Promise<void> => {
    const r = rnd.int(100)
    if (r < 65) await db.put(rnd.pick(keys), value(rnd, i, big))
    else if (r < 85) await db.del(rnd.pick(keys))
    else {
      const batch = db.batch()
      for (let n = 1 + rnd.int(20); n > 0; n--) {
        if (rnd.int(4) === 0) batch.del(rnd.pick(keys))
        else batch.put(rnd.pick(keys), value(rnd, i, big))
      }
      await batch.write()
    }
  }
  for (let i = 0; i < ops; i++) {
    await step(i)
    if (i === Math.floor(ops / 2)) await db.compactRange(Buffer.from([0x40]), Buffer.from([0xc0]))
  }
  await db.put(Buffer.from('filler'), Buffer.alloc(70 * 1024, 'f'))
  // At most 50 x 21 small operations: less than the 64 KiB write buffer, no flush.
  for (let i = 0; i < 50; i++) await step(ops + i, false)
  const forward = (await db.iterator().all()) as Entry[]
  const backward = (await db.iterator({ reverse: true }).all()) as Entry[]
  await db.close()
  return { dir, forward, backward }
}

async function readAll (location: string): Promise<{ forward: Entry[], backward: Entry[] }> {
  const db = new LsmLevel<Buffer, Buffer>(location, BUFFERS)
  await db.open()
  try {
    const forward = (await db.iterator().all()) as Entry[]
    const backward = (await db.iterator({ reverse: true }).all()) as Entry[]
    return { forward, backward }
  } finally {
    await db.close()
  }
}

function sameEntries (t: test.Test, got: Entry[], want: Entry[], what: string): void {
  let firstDiff = -1
  for (let i = 0; i < Math.max(got.length, want.length) && firstDiff < 0; i++) {
    if (got[i] === undefined || want[i] === undefined || !got[i][0].equals(want[i][0]) || !got[i][1].equals(want[i][1])) firstDiff = i
  }
  t.equal(firstDiff, -1, `${what}: ${got.length} entries, classic-level's ${want.length}, the same in order${firstDiff < 0 ? '' : ` (first difference at ${firstDiff})`}`)
}

/** Names and bytes of every file in `dir`. */
function snapshotDir (dir: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of fs.readdirSync(dir).sort()) out.set(name, fs.readFileSync(path.join(dir, name)).toString('base64'))
  return out
}

function sameDir (t: test.Test, dir: string, before: Map<string, string>, what: string): void {
  const after = snapshotDir(dir)
  t.deepEqual([...after.keys()], [...before.keys()], `${what}: the same files`)
  t.ok([...before].every(([name, bytes]) => after.get(name) === bytes), `${what}: every file byte for byte`)
}

/** The error `p` rejects with (a test failure if it resolves). */
async function rejection (t: test.Test, p: Promise<unknown>): Promise<{ message: string, code?: string }> {
  try {
    await p
  } catch (err) {
    return err as Error
  }
  t.fail('expected a rejection')
  return { message: 'resolved' }
}

/** Runs the command line in this process, capturing what it prints. */
async function runCli (args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  const out = { stdout: '', stderr: '' }
  const writes = { stdout: process.stdout.write, stderr: process.stderr.write }
  process.stdout.write = ((s: string) => { out.stdout += s; return true }) as typeof process.stdout.write
  process.stderr.write = ((s: string) => { out.stderr += s; return true }) as typeof process.stderr.write
  try {
    return { code: await main(args), ...out }
  } finally {
    process.stdout.write = writes.stdout
    process.stderr.write = writes.stderr
    process.exitCode = 0
  }
}

function sizeOfTables (dir: string): number {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.ldb')).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)
}

function logs (dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.log')).sort()
}

test('CRC-32C: the Castagnoli check value, not zlib\'s CRC-32', (t) => {
  const data = Buffer.from('123456789')
  t.equal(crc32c(data), 0xe3069283)
  t.notEqual(crc32c(data), (zlib as unknown as { crc32 (d: Uint8Array): number }).crc32(data))
  t.equal(crc32c(data, 4, 9, crc32c(data, 0, 4)), 0xe3069283, 'continues from an initial CRC')
  const long = new Random(seed).bytes(1000)
  let bitwise = ~0
  for (const byte of long) {
    bitwise ^= byte
    for (let k = 0; k < 8; k++) bitwise = (bitwise & 1) !== 0 ? (bitwise >>> 1) ^ 0x82f63b78 : bitwise >>> 1
  }
  t.equal(crc32c(long), ~bitwise >>> 0, 'slicing-by-8 equals the bit-by-bit definition')
  t.end()
})

const sizes: Record<string, number> = {}
for (const compression of [false, true]) {
  test(`import: random writes, flushes, compactions, data only in the log; compression ${compression ? 'on (Snappy)' : 'off'}`, async (t) => {
    const src = await writeSource(new Random(seed), compression, 2500)
    sizes[String(compression)] = sizeOfTables(src.dir)
    t.ok(logs(src.dir).some((n) => fs.statSync(path.join(src.dir, n)).size > 0), 'the source has writes only in its log')
    t.ok(fs.readdirSync(src.dir).filter((n) => n.endsWith('.ldb')).length >= 2, 'and several tables')
    const before = snapshotDir(src.dir)
    const dest = path.join(tempDir('lsm-leveldb-import-dest-'), 'db')
    // With Snappy, also a replay memory bound so small that the log's deletions
    // reach the merge through spilled tables, hiding older versions in the source's tables.
    const report = await LsmLevel.importLevelDB(src.dir, dest, compression ? { writeBufferSize: 1024 } : {})
    if (compression) t.ok(report.spilledTables >= 1, `the log replay spilled ${report.spilledTables} tables`)
    const got = await readAll(dest)
    sameEntries(t, got.forward, src.forward, 'forward')
    sameEntries(t, got.backward, src.backward, 'backward')
    t.equal(report.keys, src.forward.length, 'the report counts the live keys')
    t.ok(report.tables >= 2 && report.logs >= 1 && report.entries >= report.keys, `the report: ${report.tables} tables, ${report.logs} logs, ${report.entries} entries`)
    t.ok(report.bytesRead > 0 && report.ms >= 0, `${report.bytesRead} bytes read in ${report.ms} ms`)
    sameDir(t, src.dir, before, 'the source after the import')
    t.deepEqual(fs.readdirSync(path.dirname(dest)), ['db'], 'nothing but the destination beside it')
    if (compression) t.ok(sizes.true < sizes.false, `the same writes take fewer table bytes with Snappy (${sizes.true} < ${sizes.false}): compressed blocks were read`)
  })
}

test('import: a log larger than writeBufferSize is spilled to tables, memory stays bounded', async (t) => {
  const dir = path.join(tempDir('lsm-leveldb-import-'), 'leveldb')
  const db = new ClassicLevel<Buffer, Buffer>(dir, { ...BUFFERS, writeBufferSize: 8 * 1024 * 1024 })
  await db.open()
  const rnd = new Random(seed + 1)
  const keys = keyPool(rnd)
  // Log records of more than one 32 KiB block: first, middle and last fragments.
  await db.put(Buffer.from('huge'), rnd.bytes(100 * 1024))
  await db.batch(Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`batch-${i}`), value: rnd.bytes(300) })))
  for (let i = 0; i < 3000; i++) {
    if (rnd.int(5) === 0) await db.del(rnd.pick(keys))
    else await db.put(rnd.pick(keys), value(rnd, i))
  }
  const forward = (await db.iterator().all()) as Entry[]
  await db.close()
  t.equal(fs.readdirSync(dir).filter((n) => n.endsWith('.ldb')).length, 0, 'every write is still in the log')
  const dest = path.join(tempDir('lsm-leveldb-import-dest-'), 'db')
  const report = await LsmLevel.importLevelDB(dir, dest, { writeBufferSize: 64 * 1024 })
  t.ok(report.spilledTables >= 3, `the replay spilled ${report.spilledTables} tables`)
  const got = await readAll(dest)
  sameEntries(t, got.forward, forward, 'forward')
  t.deepEqual(fs.readdirSync(dest).filter((n) => n.endsWith('.sst')).sort(), report.newTables.slice().sort(), 'the spills are gone, the new tables remain')
})

test('import: tables named .sst (LevelDB before 1.14), a torn last log record, the CLI', async (t) => {
  const src = await writeSource(new Random(seed + 2), false, 800)
  for (const name of fs.readdirSync(src.dir)) {
    if (name.endsWith('.ldb')) fs.renameSync(path.join(src.dir, name), path.join(src.dir, name.replace(/\.ldb$/, '.sst')))
  }
  const log = path.join(src.dir, logs(src.dir).pop() as string)
  fs.truncateSync(log, fs.statSync(log).size - 3)
  const dest = path.join(tempDir('lsm-leveldb-import-dest-'), 'db')
  const { code, stdout: out } = await runCli(['import', src.dir, dest])
  t.equal(code, 0, 'lsm-level import exits 0')
  t.match(out, /read: \d+ tables, \d+ logs, \d+ entries, \d+ bytes/, 'and prints what it read')
  t.match(out, /dropped: \d+ bytes of a log record cut off/, 'and the cut-off record')
  // classic-level, opening the same files, drops the same cut-off record.
  const db = new ClassicLevel<Buffer, Buffer>(src.dir, BUFFERS)
  const want = (await db.iterator().all()) as Entry[]
  await db.close()
  sameEntries(t, (await readAll(dest)).forward, want, 'what classic-level reads of the damaged log')
})

for (const target of ['table', 'log', 'manifest'] as const) {
  test(`import: a damaged source ${target} is LEVEL_CORRUPTION naming it; nothing is left behind`, async (t) => {
    const src = await writeSource(new Random(seed + 3), false, 600)
    // A live table (a table LevelDB was writing as it closed can be left unnamed
    // by the manifest: no import reads it), the newest log, the live manifest.
    const state = readLevelDBState(nodeFileSystem, src.dir)
    const live = state.levels.flat()[0]
    const name = target === 'table'
      ? `${String(live.number).padStart(6, '0')}.ldb`
      : target === 'log' ? logs(src.dir).pop() as string : state.manifest
    const file = path.join(src.dir, name)
    const bytes = fs.readFileSync(file)
    // A byte of the first block's or record's contents (a damaged length field
    // near the end of a file reads as a record cut off by the end, which is no damage).
    bytes[12] ^= 0x10
    fs.writeFileSync(file, bytes)
    const parent = tempDir('lsm-leveldb-import-dest-')
    const dest = path.join(parent, 'db')
    try {
      await LsmLevel.importLevelDB(src.dir, dest)
      t.fail('the import succeeded')
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_CORRUPTION', (err as Error).message)
      t.ok((err as Error).message.includes(name), `the message names ${name}`)
    }
    t.deepEqual(fs.readdirSync(parent), [], 'no destination and no temporary directory left')
    const cli = await runCli(['import', src.dir, dest])
    t.equal(cli.code, 1, 'lsm-level import exits 1')
    t.match(cli.stderr, new RegExp(`the source is damaged: Corruption in ${name}.*nothing was written`), 'and says which file is damaged')
  })
}

test('import: refuses a source that is not LevelDB and a destination that is not empty', async (t) => {
  const src = await writeSource(new Random(seed + 4), false, 10)
  const full = tempDir('lsm-leveldb-import-full-')
  fs.writeFileSync(path.join(full, 'keep'), 'mine')
  t.match((await rejection(t, LsmLevel.importLevelDB(src.dir, full))).message, /not an empty directory/, 'a non-empty destination')
  t.deepEqual(fs.readdirSync(full), ['keep'], 'which is left alone')
  t.match((await rejection(t, LsmLevel.importLevelDB(src.dir, path.join(full, 'keep')))).message, /not an empty directory/, 'a file')
  const lsm = path.join(tempDir('lsm-leveldb-import-lsm-'), 'db')
  const db = new LsmLevel(lsm)
  await db.open()
  await db.put('a', 'b')
  await db.close()
  t.match((await rejection(t, LsmLevel.importLevelDB(lsm, path.join(full, 'x')))).message, /does not hold a LevelDB database/, 'an lsm-level source')
})

test('opening a LevelDB directory: a clear error naming the import, and the directory unchanged', async (t) => {
  // Never written: a manifest and an empty log, no table (told by the manifest's framing).
  const empty = path.join(tempDir('lsm-leveldb-import-'), 'leveldb')
  const fresh = new ClassicLevel(empty)
  await fresh.open()
  await fresh.close()
  const shapes = { empty, written: (await writeSource(new Random(seed + 6), true, 400)).dir }
  t.equal(fs.readdirSync(empty).filter((n) => n.endsWith('.ldb')).length, 0, 'empty: no table')
  for (const [shape, dir] of Object.entries(shapes)) {
    t.ok(fs.existsSync(path.join(dir, 'LOCK')), `${shape}: LevelDB leaves its LOCK file`)
    const before = snapshotDir(dir)
    const db = new LsmLevel(dir)
    try {
      await db.open()
      t.fail('it opened')
    } catch (err) {
      const cause = (err as { cause?: { code?: string, message: string } }).cause
      t.equal((err as { code?: string }).code, 'LEVEL_DATABASE_NOT_OPEN', `${shape}: abstract-level's open error`)
      t.equal(cause?.code, 'LEVEL_NOT_SUPPORTED', `${shape}: its cause says what: ${cause?.message}`)
      t.match(cause?.message ?? '', /LevelDB database.*npx lsm-level import /, `${shape}: and names the command`)
    }
    sameDir(t, dir, before, `${shape}: the LevelDB directory after the failed open`)
    for (const [action, run] of [['repair', LsmLevel.repair], ['destroy', LsmLevel.destroy]] as const) {
      const err = await rejection(t, run(dir))
      t.equal(err.code, 'LEVEL_NOT_SUPPORTED', `${shape}: ${action} is refused: ${err.message.slice(0, 60)}...`)
      sameDir(t, dir, before, `${shape}: the LevelDB directory after the refused ${action}`)
    }
  }
})

test('a failed open leaves the directory as it found it: a stale LOCK taken over is put back', async (t) => {
  const dir = tempDir('lsm-failed-open-')
  fs.writeFileSync(path.join(dir, 'LOCK'), '') // as another engine leaves it: empty, no holder to check
  fs.writeFileSync(path.join(dir, 'CURRENT'), 'MANIFEST-000009\n') // names a manifest that is not there
  const before = snapshotDir(dir)
  const db = new LsmLevel(dir)
  t.equal((await rejection(t, db.open())).code, 'LEVEL_DATABASE_NOT_OPEN', 'the open fails')
  sameDir(t, dir, before, 'after the failed open')
})
