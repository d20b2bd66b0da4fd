// Damaged database files, end to end through LsmLevel and the real file system.
//
// A small database is built (compression on, the default, with values that
// compress: most table blocks are stored Snappy-compressed) with tables on
// several levels, a manifest, CURRENT and two logs (a frozen one awaiting flush and the active one: the directory is
// copied while the engine runs, as a crash would leave it). Then, on a fresh copy
// for every case, one file is damaged (a bit flipped at every byte offset of the
// small files, a zeroed block, a truncation, a deletion) and the database is
// opened and read in full: by get for every key ever written, and by forward and
// reverse iteration. Allowed outcomes:
//   ok        opened, and every read returned exactly the model's value
//   detected  opened; some reads failed with LEVEL_CORRUPTION naming the damaged
//             file, every value returned was right
//   refused   open failed: LEVEL_DATABASE_NOT_OPEN whose cause is
//             LEVEL_CORRUPTION naming the damaged file
//   pitr      opened at an earlier point in time: the last log was cut at the
//             damage (point-in-time recovery) and the database holds exactly the
//             writes before it
// Anything else (a wrong value, a key missing or resurrected, an error other than
// LEVEL_CORRUPTION naming the file, a crash) fails the test.
//
// Also here: LsmLevel.repair (rebuilding a database from damaged files) and
// LsmLevel.destroy. Replay a run with SEED=<n>.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Engine, encodeBatch } from '../hosts/node/index'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { isLevelError } from '../lib/errors'
import { parseFileName, type FileType } from '../lib/filenames'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { Table } from '../lib/sstable/table'
import { BlockCache } from '../lib/sstable/cache'
import { BlockIterator } from '../lib/sstable/decoded-block'
import { currentUserKey } from '../lib/iterators/internal-iterator'
import { LogReader } from '../lib/wal/log-reader'
import { HEADER_SIZE as LOG_HEADER_SIZE } from '../lib/wal/log-format'
import { BLOCK_TYPE_SNAPPY } from '../lib/sstable/format'
import { dataBlocks } from './util/tables'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

// Durability is not under test here and every case's directory is thrown away:
// fsync is skipped (it would make the thousands of opens below take minutes).
// Everything else is the real NodeFileSystem on real files.
{
  const realFs = nodeFileSystem as unknown as Record<string, (...args: any[]) => any>
  const openWrite = realFs.openWrite.bind(nodeFileSystem)
  realFs.openWrite = (p: string) => {
    const file = openWrite(p)
    file.sync = () => {}
    file.syncAsync = async () => {}
    return file
  }
  realFs.syncDir = () => {}
  realFs.syncDirAsync = async () => {}
  realFs.createExclusive = (p: string, data: Uint8Array) => fs.writeFileSync(p, data, { flag: 'wx' })
}

// Compactions run on the main thread (deterministic, and the worker thread's
// fsyncs are not skipped); one test below runs them on the worker.
const OPTS = {
  writeBufferSize: 2048,
  blockSize: 256,
  targetFileSize: 2048,
  maxBytesForLevelBase: 4096,
  level0CompactionTrigger: 4,
  compactionWorker: false
}

const NUM_KEYS = 300

function keyOf (i: number): string {
  return 'k' + String(i).padStart(4, '0')
}

/** One write: a batch; value undefined is a delete. */
type Write = Array<{ key: string, value?: string }>

function applyWrite (state: Map<string, string>, w: Write): void {
  for (const op of w) {
    if (op.value === undefined) state.delete(op.key)
    else state.set(op.key, op.value)
  }
}

function stateAfter (writes: Write[], n: number): Map<string, string> {
  const state = new Map<string, string>()
  for (let i = 0; i < n; i++) applyWrite(state, writes[i])
  return state
}

async function engineWrite (engine: Engine, w: Write): Promise<void> {
  await engine.write(encodeBatch(w.map((op) => op.value === undefined
    ? { kind: KIND_DELETE, key: Buffer.from(op.key) }
    : { kind: KIND_VALUE, key: Buffer.from(op.key), value: Buffer.from(op.value) })), false)
}

function copyDir (from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true })
  for (const name of fs.readdirSync(from)) {
    if (name === 'LOCK') continue
    fs.copyFileSync(path.join(from, name), path.join(to, name))
  }
}

// File-system metadata operations dominate the cost of a case (thousands of
// them), so a case directory is reused: emptied by unlinking, then filled with
// hard links to the pristine image (logs and tables are written once, CURRENT
// is replaced by rename), a copy of the manifest (an open appends its edit to
// the manifest it read) and a fresh copy of the damaged file.
function prepareCase (dir: string, image: string, names: string[], damagedName: string, damaged: Buffer | undefined): void {
  for (const name of fs.readdirSync(dir)) fs.unlinkSync(path.join(dir, name))
  for (const name of names) {
    if (name !== damagedName && parseFileName(name)?.type === 'manifest') fs.copyFileSync(path.join(image, name), path.join(dir, name))
    else if (name !== damagedName) fs.linkSync(path.join(image, name), path.join(dir, name))
    else if (damaged !== undefined) fs.writeFileSync(path.join(dir, name), damaged)
  }
}

function listOf (dir: string, type: FileType): string[] {
  return fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === type).sort()
}

interface Image {
  dir: string
  writes: Write[]
  /** Writes whose records are in the logs (the last ones), and the number before them. */
  logRecords: number
  base: number
  /** Every key ever written, plus a few never written. */
  probeKeys: string[]
  levels: Array<{ level: number, files: number, bytes: number }>
}

/**
 * Builds the pristine image: tables on two or more levels, a manifest with
 * edits after its snapshot, a frozen log (the manifest's log number) and an
 * active log.
 */
async function buildImage (rnd: Random): Promise<Image> {
  const live = tempDir('lsm-corruption-live-')
  const writes: Write[] = []
  let n = 0
  // Values that compress (a repeated JSON-ish record), with a random tail.
  const value = (): string => `v${n++}-` + '{"state":"open","owner":"alice"}'.repeat(1 + rnd.int(3)) + rnd.bytes(2 + rnd.int(6)).toString('hex')
  let engine = await Engine.open(live, OPTS)
  const put = async (w: Write): Promise<void> => {
    writes.push(w)
    await engineWrite(engine, w)
  }
  const randomWrite = (): Write => {
    const w: Write = []
    const size = 1 + rnd.int(3)
    for (let j = 0; j < size; j++) {
      const k = keyOf(rnd.int(NUM_KEYS))
      if (w.some((op) => op.key === k)) continue
      w.push(rnd.int(4) === 0 ? { key: k } : { key: k, value: value() })
    }
    return w
  }

  // Session 1: fill, overwrite, delete; flushes and compactions build the levels.
  for (let i = 0; i < NUM_KEYS;) {
    const size = 1 + rnd.int(4)
    const w: Write = []
    for (let j = 0; j < size && i < NUM_KEYS; j++, i++) w.push({ key: keyOf(i), value: value() })
    await put(w)
  }
  for (let i = 0; i < 150; i++) await put(randomWrite())
  await engine.waitForIdle()
  await engine.close()

  // Session 2: its open replays session 1's log into level 0; then one memtable
  // is filled and frozen, and a few writes go to the active log. Flushes and
  // compactions are held meanwhile (the engine's background scheduler is
  // stubbed on this instance), so the copy is taken while the frozen memtable
  // waits for its flush: racing a flush on a loaded machine once made this
  // step miss its window 20 times in a row.
  engine = await Engine.open(live, OPTS)
  await engine.waitForIdle()
  const held = (engine as unknown as { scheduler: { start: () => void } }).scheduler
  const start = held.start
  held.start = () => {}
  const dir = tempDir('lsm-corruption-image-')
  try {
    while (engine.frozenMemTables === 0) await put(randomWrite())
    for (let i = 0; i < 3; i++) await put(randomWrite()) // a few hundred bytes: no second rotation
    // An unlink of an older flushed log may still be in flight: let it finish.
    for (let i = 0; i < 200 && engine.pendingRemovalCount !== 0; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    const logs = listOf(live, 'log').length
    if (logs !== 2 || engine.frozenMemTables !== 1 || engine.pendingRemovalCount !== 0) {
      throw new Error(`could not hold the database with two logs (${logs} logs, ${engine.frozenMemTables} frozen memtables, ${engine.pendingRemovalCount} unlinks in flight)`)
    }
    fs.rmSync(dir, { recursive: true })
    copyDir(live, dir)
  } finally {
    held.start = start
  }
  await engine.close()

  const probeKeys = [...new Set(writes.flatMap((w) => w.map((op) => op.key)))].sort()
  probeKeys.push('a-never-written', 'k0000a', 'zzz')
  return { dir, writes, logRecords: 0, base: 0, probeKeys, levels: [] }
}

type Outcome = 'ok' | 'detected' | 'refused' | 'pitr'

interface CaseResult {
  outcome?: Outcome
  /** Why the case failed (wrong value, wrong error). */
  failures: string[]
}

function namesFile (err: unknown, name: string): boolean {
  if (!isLevelError(err, 'LEVEL_CORRUPTION')) return false
  return err.file === name || err.message.includes(name)
}

function describe (err: unknown): string {
  const e = err as { code?: string, message?: string, cause?: { code?: string, message?: string } } | undefined
  const cause = e?.cause ? ` (cause ${e.cause.code}: ${e.cause.message})` : ''
  return `${e?.code ?? (err as Error)?.constructor?.name}: ${e?.message}${cause}`
}

/**
 * Opens the database in `dir` (one file, `damaged`, is damaged) and reads all of
 * it; classifies what happened. `img.logRecords` records are in the logs.
 */
async function openAndRead (dir: string, damaged: string, img: Image, opts: Record<string, unknown> = OPTS, idle = false): Promise<CaseResult> {
  const failures: string[] = []
  const fail = (msg: string): void => { if (failures.length < 5) failures.push(msg) }
  const db = new LsmLevel(dir, opts)
  try {
    await db.open()
  } catch (err: any) {
    if (err?.code === 'LEVEL_DATABASE_NOT_OPEN' && namesFile(err.cause, damaged)) return { outcome: 'refused', failures }
    fail(`open failed with something other than LEVEL_CORRUPTION naming ${damaged}: ${describe(err)}`)
    return { failures }
  }
  let detected = 0
  const onError = (err: unknown, what: string): void => {
    if (namesFile(err, damaged)) detected++
    else fail(`${what}: ${describe(err)}${(err as Error)?.stack ? '\n' + (err as Error).stack : ''}`)
  }
  try {
    if (idle) {
      // Let the compactions the open scheduled run (or fail) before reading.
      try {
        await db.engine.waitForIdle()
      } catch (err) {
        onError(err, 'background work')
      }
    }
    const replayed = db.engine.recovery.recordsReplayed
    if (replayed > img.logRecords) fail(`replayed ${replayed} records, the logs held ${img.logRecords}`)
    const expected = stateAfter(img.writes, img.base + replayed)
    const pitr = replayed < img.logRecords
    for (const k of img.probeKeys) {
      let v: string | undefined
      try {
        v = await db.get(k)
      } catch (err) {
        onError(err, `get ${k}`)
        continue
      }
      if (v !== expected.get(k)) fail(`get ${k}: ${v} but expected ${expected.get(k)}`)
    }
    const sorted = [...expected.entries()].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
    for (const reverse of [false, true]) {
      const want = reverse ? sorted.slice().reverse() : sorted
      let it: ReturnType<typeof db.iterator> | undefined
      let i = 0
      try {
        it = db.iterator({ reverse })
        for (;;) {
          const entry = await it.next()
          if (entry === undefined) break
          const [k, v] = entry
          if (i >= want.length || k !== want[i][0] || v !== want[i][1]) {
            fail(`${reverse ? 'reverse ' : ''}iteration entry ${i}: ${k}=${v}, expected ${want[i]?.join('=')}`)
            break
          }
          i++
        }
        if (i < want.length && failures.length === 0) fail(`${reverse ? 'reverse ' : ''}iteration ended after ${i} of ${want.length} entries`)
      } catch (err) {
        onError(err, `${reverse ? 'reverse ' : ''}iteration at entry ${i}`)
      } finally {
        await it?.close()
      }
    }
    // Background work that hit the damage must have failed as corruption, not as a bug.
    const bg = db.engine.backgroundError
    if (bg !== undefined && !namesFile(bg, damaged)) fail(`background error: ${describe(bg)}`)
    if (failures.length > 0) return { failures }
    if (pitr) return { outcome: 'pitr', failures }
    return { outcome: detected > 0 ? 'detected' : 'ok', failures }
  } finally {
    try {
      await db.close()
    } catch (err) {
      if (!namesFile(err, damaged)) fail(`close: ${describe(err)}`)
    }
  }
}

type Damage = { kind: 'flip', offset: number, bit: number } | { kind: 'zero', offset: number, length: number }
| { kind: 'truncate', length: number } | { kind: 'delete' }

/** The damaged contents of a file (undefined: the file is deleted). */
function damaged (data: Buffer, d: Damage): Buffer | undefined {
  if (d.kind === 'delete') return undefined
  if (d.kind === 'truncate') return Buffer.from(data.subarray(0, d.length))
  const buf = Buffer.from(data)
  if (d.kind === 'flip') buf[d.offset] ^= 1 << d.bit
  else buf.fill(0, d.offset, d.offset + d.length)
  return buf
}

/** The damage cases for one file: every offset for small files, a sample for the others. */
function damagesFor (size: number, everyByte: boolean, rnd: Random): Damage[] {
  const out: Damage[] = []
  if (everyByte) {
    for (let off = 0; off < size; off++) out.push({ kind: 'flip', offset: off, bit: (off * 3 + rnd.int(8)) % 8 })
  } else {
    for (let i = 0; i < 12; i++) out.push({ kind: 'flip', offset: rnd.int(size), bit: rnd.int(8) })
  }
  const BLOCK = 256
  for (let off = 0; off < size; off += BLOCK) out.push({ kind: 'zero', offset: off, length: Math.min(BLOCK, size - off) })
  const cuts = new Set<number>([0, 1, size - 1, Math.floor(size / 2)])
  if (everyByte) {
    // Every truncation of tiny files, a stride through the others (test/wal.test.ts
    // cuts logs at every offset).
    const step = size <= 64 ? 1 : 29
    for (let len = 0; len < size; len += step) cuts.add(len)
  } else {
    for (let i = 0; i < 6; i++) cuts.add(rnd.int(size))
    for (const tail of [5, 9, 60, 61, 65]) if (size > tail) cuts.add(size - tail)
  }
  for (const len of cuts) if (len >= 0 && len < size) out.push({ kind: 'truncate', length: len })
  out.push({ kind: 'delete' })
  return out
}

function damageLabel (d: Damage): string {
  switch (d.kind) {
    case 'flip': return `flip bit ${d.bit} at ${d.offset}`
    case 'zero': return `zero [${d.offset}, ${d.offset + d.length})`
    case 'truncate': return `truncate to ${d.length}`
    case 'delete': return 'delete'
  }
}

// An uncaught error during a case fails that case; elsewhere, the process.
let uncaught: unknown[] | undefined
const onUncaught = (err: unknown): void => {
  if (uncaught !== undefined) { uncaught.push(err); return }
  console.error('uncaught:', err)
  process.exitCode = 1
}
process.on('uncaughtException', onUncaught)
process.on('unhandledRejection', onUncaught)

let shared: Image | undefined

/** The pristine image (built once), with its log records counted by opening a copy. */
async function getImage (): Promise<Image> {
  if (shared) return shared
  const img = await buildImage(new Random(seed))
  const check = path.join(tempDir('lsm-corruption-check-'), 'db')
  copyDir(img.dir, check)
  const db = new LsmLevel(check, OPTS)
  await db.open()
  img.logRecords = db.engine.recovery.recordsReplayed
  img.base = img.writes.length - img.logRecords
  // Levels as the image's manifest has them, plus L0 tables of the replayed logs.
  img.levels = db.levels().filter((l) => l.files > 0)
  await db.close()
  shared = img
  return img
}

const kinds = ['CURRENT', 'manifest', 'log', 'table'] as const

/**
 * Log damage a crash cannot leave (lib/recovery.ts), which must fail the open:
 * any damage to the older log (the newer one holds records; a deleted older
 * log is the live log the manifest names), and a flipped bit in a record of
 * the newest log that valid records follow, unless its byte is zero now (a
 * crash loses bytes as zeros).
 */
function mustRefuse (img: Image, name: string, d: Damage, pristine: Buffer): boolean {
  const logs = listOf(img.dir, 'log')
  if (!logs.includes(name) || d.kind === 'zero' || d.kind === 'truncate') return false
  if (name !== logs[logs.length - 1]) return true
  if (d.kind !== 'flip' || (pristine[d.offset] ^ (1 << d.bit)) === 0) return false
  const reader = new LogReader(nodeFileSystem, path.join(img.dir, name), name)
  const ends: number[] = []
  while (reader.next() !== undefined) ends.push(reader.offset)
  reader.close()
  // In a record, and not in the last one.
  return d.offset < ends[ends.length - 2]
}

interface CaseSpec { name: string, kind: string, d: Damage }

/** Runs each damage case on a fresh copy of the image; counts outcomes per kind of file. */
async function runCases (t: test.Test, img: Image, specs: CaseSpec[], opts: Record<string, unknown> = OPTS, idle = false) {
  const files = fs.readdirSync(img.dir).sort()
  const dir = tempDir('lsm-corruption-case-')
  const counts: Record<string, Record<string, number>> = {}
  const pristine = new Map(files.map((n) => [n, fs.readFileSync(path.join(img.dir, n))]))
  let cases = 0
  let failed = 0
  for (const { name, kind, d } of specs) {
    const tally = counts[kind] ??= { ok: 0, detected: 0, refused: 0, pitr: 0, failed: 0, cases: 0 }
    cases++
    prepareCase(dir, img.dir, files, name, damaged(pristine.get(name) as Buffer, d))
    uncaught = []
    let r: CaseResult
    try {
      r = await openAndRead(dir, name, img, opts, idle)
    } catch (err) {
      r = { failures: [`threw: ${describe(err)}\n${(err as Error)?.stack}`] }
    }
    // (A turn of the event loop, for errors of work the case left behind.)
    await new Promise((resolve) => setImmediate(resolve))
    if (uncaught.length > 0) r.failures.push(...uncaught.map((e) => `uncaught: ${describe(e)}`))
    uncaught = undefined
    tally.cases++
    if (r.outcome !== undefined && r.outcome !== 'refused' && mustRefuse(img, name, d, pristine.get(name) as Buffer)) {
      r.failures.push(`opened (${r.outcome}), but a crash cannot leave this damage: the open must fail`)
    }
    if (r.failures.length > 0 || r.outcome === undefined) {
      tally.failed++
      if (failed++ < 12) t.fail(`${name}, ${damageLabel(d)}: ${r.failures.join('; ')}`)
    } else {
      tally[r.outcome]++
    }
  }
  // The hard-linked image was never written through.
  t.ok(files.every((n) => fs.readFileSync(path.join(img.dir, n)).equals(pristine.get(n) as Buffer)), 'the pristine image is unchanged')
  // Every file of every case was closed again, also on the error paths.
  if (fs.existsSync('/proc/self/fd')) {
    const open = fs.readdirSync('/proc/self/fd').filter((fd) => {
      try { return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir) } catch { return false }
    })
    t.is(open.length, 0, 'no file descriptor left open in the case directory')
  }
  return { counts, cases, failed }
}

test('damaged files: correct values or LEVEL_CORRUPTION naming the file, never a wrong value', async (t) => {
  const started = Date.now()
  const rnd = new Random(seed + 1)
  const img = await getImage()
  t.ok(img.levels.filter((l) => l.level > 0).length >= 1 && img.levels.length >= 2, `tables on ${img.levels.length} levels: ${JSON.stringify(img.levels)}`)
  const blocks = listOf(img.dir, 'table').flatMap((f) => dataBlocks(path.join(img.dir, f)))
  const compressed = blocks.filter((b) => b.type === BLOCK_TYPE_SNAPPY).length
  t.ok(compressed > blocks.length / 2, `${compressed} of ${blocks.length} data blocks are stored compressed`)
  const fresh = path.join(tempDir('lsm-corruption-check-'), 'db')
  copyDir(img.dir, fresh)
  const pristine = await openAndRead(fresh, '-', img)
  t.deepEqual(pristine, { outcome: 'ok', failures: [] }, 'the pristine image opens and reads back exactly the model')
  const files = fs.readdirSync(img.dir).sort()
  const logs = listOf(img.dir, 'log')
  t.is(logs.length, 2, `two logs (frozen and active): ${logs.join(', ')}`)
  t.ok(img.logRecords > 0, `${img.logRecords} records in the logs, ${img.base} writes before them`)
  const tables = listOf(img.dir, 'table')
  const sizes = new Map(files.map((n) => [n, fs.statSync(path.join(img.dir, n)).size]))
  // Every byte of the smallest table; a sample of the others.
  const smallTable = tables.slice().sort((a, b) => (sizes.get(a) ?? 0) - (sizes.get(b) ?? 0))[0]
  t.comment(`image: ${files.map((n) => `${n} (${sizes.get(n)} B)`).join(', ')}`)

  const specs: CaseSpec[] = []
  for (const name of files) {
    const type = parseFileName(name)?.type
    const kind = type === 'current' ? 'CURRENT' : type
    if (kind === undefined || !(kinds as readonly string[]).includes(kind)) continue
    const everyByte = kind !== 'table' || name === smallTable
    for (const d of damagesFor(sizes.get(name) as number, everyByte, rnd)) specs.push({ name, kind, d })
  }
  const { counts, cases, failed } = await runCases(t, img, specs)
  for (const kind of kinds) {
    const c = counts[kind]
    t.comment(`${kind.padEnd(8)}: ${c.cases} cases: ${c.ok} opened-and-correct, ${c.detected} corruption-detected-on-read, ` +
      `${c.refused} open-refused, ${c.pitr} values-lost-by-point-in-time-recovery-of-last-log, ${c.failed} FAILED`)
  }
  t.is(failed, 0, `${cases} damaged images: no wrong value, no error other than LEVEL_CORRUPTION naming the file ` +
    `(${((Date.now() - started) / 1000).toFixed(1)} s)`)
  // Damage to CURRENT or the manifest must never go unnoticed.
  t.is(counts.CURRENT.ok + counts.CURRENT.pitr, 0, 'every damaged CURRENT refuses to open')
})

test('damaged tables read by compactions (main thread and worker thread)', async (t) => {
  const rnd = new Random(seed + 2)
  const img = await getImage()
  const tables = listOf(img.dir, 'table')
  for (const worker of [false, true]) {
    const specs: CaseSpec[] = []
    for (const name of tables) {
      const size = fs.statSync(path.join(img.dir, name)).size
      for (let i = 0; i < 3; i++) specs.push({ name, kind: 'table', d: { kind: 'flip', offset: rnd.int(size), bit: rnd.int(8) } })
    }
    // A level-0 trigger of 1 makes the open compact level 0 and then the levels below.
    const opts = { ...OPTS, compactionWorker: worker, level0CompactionTrigger: 1 }
    const { counts, cases, failed } = await runCases(t, img, specs, opts, true)
    const c = counts.table
    t.is(failed, 0, `${cases} damaged tables, compactions on the ${worker ? 'worker' : 'main'} thread: ${c.ok} opened-and-correct, ` +
      `${c.detected} corruption-detected (by reads or by the compaction), ${c.refused} open-refused`)
  }
})

// ---------------------------------------------------------------------------
// Repair

/** User keys of each data block of a (pristine) table. */
function blockKeys (file: string): string[][] {
  const table = Table.open(nodeFileSystem, file, path.basename(file), new BlockCache(0))
  try {
    const out: string[][] = []
    for (let b = 0; b < table.dataBlockCount; b++) {
      const keys: string[] = []
      const it = new BlockIterator(table.dataBlock(b))
      for (it.seekToFirst(); it.valid(); it.next()) keys.push(currentUserKey(it).toString())
      out.push(keys)
    }
    return out
  } finally {
    table.unref()
  }
}

/** Indexes of the data blocks of `file` that fail to read (-1: the table does not open). */
function damagedBlocks (file: string): number[] {
  let table: Table
  try {
    table = Table.open(nodeFileSystem, file, path.basename(file), new BlockCache(0))
  } catch {
    return [-1]
  }
  const bad: number[] = []
  for (let b = 0; b < table.dataBlockCount; b++) {
    try { table.dataBlock(b) } catch { bad.push(b) }
  }
  table.unref()
  return bad
}

function countRecords (file: string): number {
  const r = new LogReader(nodeFileSystem, file, path.basename(file))
  let n = 0
  while (r.next() !== undefined) n++
  return n
}

function flipByte (file: string, offset: number): void {
  const buf = fs.readFileSync(file)
  buf[offset] ^= 0x40
  fs.writeFileSync(file, buf)
}

/**
 * Reads the whole database: keys in `affected` may hold any value ever written
 * for them (or none): their newest version was lost with the damage. Every
 * other key must hold exactly its model value. Returns the number of mismatches.
 */
async function checkAfterRepair (t: test.Test, db: LsmLevel, img: Image, expected: Map<string, string>, affected: Set<string>): Promise<void> {
  const written = new Map<string, Set<string>>()
  for (const w of img.writes) for (const op of w) if (op.value !== undefined) (written.get(op.key) ?? written.set(op.key, new Set()).get(op.key)!).add(op.value)
  const ok = (k: string, v: string | undefined): boolean =>
    affected.has(k) ? v === undefined || (written.get(k)?.has(v) ?? false) : v === expected.get(k)
  let wrong = 0
  for (const k of img.probeKeys) {
    const v = await db.get(k)
    if (!ok(k, v) && wrong++ < 5) t.comment(`get ${k}: ${v}, expected ${expected.get(k)}${affected.has(k) ? ' (affected)' : ''}`)
  }
  t.is(wrong, 0, `get: every key outside the damage (${img.probeKeys.length - affected.size} keys) reads back exactly; the ${affected.size} affected keys hold values once written or none`)
  let seen = 0
  let badIter = 0
  let prev = ''
  for await (const [k, v] of db.iterator()) {
    if (k <= prev || !ok(k, v)) badIter++
    if (!affected.has(k)) seen++
    prev = k
  }
  const unaffectedLive = [...expected.keys()].filter((k) => !affected.has(k)).length
  t.is(badIter, 0, 'iteration: ordered, and the same values')
  t.is(seen, unaffectedLive, `iteration: all ${unaffectedLive} live keys outside the damage`)
}

test('repair: a damaged table block, a damaged manifest and no CURRENT', async (t) => {
  const img = await getImage()
  const dir = path.join(tempDir('lsm-repair-'), 'db')
  copyDir(img.dir, dir)
  const tables = listOf(dir, 'table')
  const blocks = new Map(tables.map((n) => [n, blockKeys(path.join(dir, n))]))
  const victim = tables.slice().sort((a, b) => blocks.get(b)!.length - blocks.get(a)!.length)[0]
  const vb = blocks.get(victim)!
  t.ok(vb.length >= 3, `${victim} has ${vb.length} data blocks`)
  // Flip a byte of the middle data block (found by trying: only public APIs).
  const mid = Math.floor(vb.length / 2)
  const victimPath = path.join(dir, victim)
  const pristine = fs.readFileSync(victimPath)
  let damagedAt = -1
  for (let off = 0; off < pristine.length && damagedAt < 0; off += 7) {
    flipByte(victimPath, off)
    const bad = damagedBlocks(victimPath)
    if (bad.length === 1 && bad[0] === mid) damagedAt = off
    else fs.writeFileSync(victimPath, pristine)
  }
  t.ok(damagedAt >= 0, `flipped a byte at ${damagedAt} of ${victim}: data block ${mid} of ${vb.length} is damaged`)
  const manifest = listOf(dir, 'manifest')[0]
  flipByte(path.join(dir, manifest), Math.floor(fs.statSync(path.join(dir, manifest)).size / 2))
  fs.rmSync(path.join(dir, 'CURRENT'))

  const before = new LsmLevel(dir, OPTS)
  try {
    await before.open()
    t.fail('a database without CURRENT must not open')
  } catch (err: any) {
    t.is(err.cause?.code, 'LEVEL_CORRUPTION', `open fails first: ${err.cause?.message}`)
  }

  const started = Date.now()
  const report = await LsmLevel.repair(dir, { blockSize: OPTS.blockSize, targetFileSize: OPTS.targetFileSize })
  t.comment(`repair took ${Date.now() - started} ms: ${JSON.stringify({ ...report, removed: report.removed.length })}`)
  t.deepEqual(report.tables.salvaged, [victim], 'the damaged table is salvaged')
  t.is(report.tables.blocksLost, 1, 'one data block lost')
  t.deepEqual(report.tables.dropped, [], 'no table dropped')
  t.deepEqual(report.tables.kept, tables.filter((n) => n !== victim), 'every other table kept')
  t.deepEqual(report.logs.replayed, listOf(img.dir, 'log'), 'both logs replayed')
  t.is(report.logs.records, img.logRecords, `all ${img.logRecords} log records replayed`)
  t.is(report.logs.droppedBytes, 0, 'no log bytes dropped')
  t.ok(report.entriesRecovered > 0 && report.keys > 0, `${report.entriesRecovered} entries recovered, ${report.keys} live keys`)
  t.ok(fs.existsSync(path.join(dir, 'lost', victim)), 'the damaged table is kept in lost/')
  t.deepEqual(listOf(dir, 'manifest'), [report.manifest], 'only the new manifest remains')
  t.deepEqual(listOf(dir, 'log').filter((n) => !report.logs.replayed.includes(n)).length, 1, 'the replayed logs are gone; the new live log is there')
  t.ok(listOf(dir, 'log').every((n) => !report.logs.replayed.includes(n) && fs.statSync(path.join(dir, n)).size === 0), 'the new live log is empty')

  const expected = stateAfter(img.writes, img.writes.length)
  const db = new LsmLevel(dir, OPTS)
  await db.open()
  await checkAfterRepair(t, db, img, expected, new Set(vb[mid]))

  try {
    await LsmLevel.repair(dir)
    t.fail('repair of an open database must fail')
  } catch (err: any) {
    t.is(err.code, 'LEVEL_LOCKED', 'repair of an open database: LEVEL_LOCKED')
  }

  // New writes continue after the highest sequence number recovered: they win.
  const k = vb[mid][0]
  await db.put(k, 'after-repair')
  await db.put('k0001', 'after-repair-1')
  await db.del('k0002')
  await db.close()
  const again = new LsmLevel(dir, OPTS)
  await again.open()
  t.deepEqual([await again.get(k), await again.get('k0001'), await again.get('k0002')], ['after-repair', 'after-repair-1', undefined],
    'writes after the repair win over repaired data, across a reopen')
  await again.close()
})

test('repair: a damaged older log and an unreadable table', async (t) => {
  const img = await getImage()
  const dir = path.join(tempDir('lsm-repair-'), 'db')
  copyDir(img.dir, dir)
  const [older, newer] = listOf(dir, 'log')
  const olderRecords = countRecords(path.join(dir, older))
  const size = fs.statSync(path.join(dir, older)).size
  flipByte(path.join(dir, older), Math.floor(size / 2))
  const kept = countRecords(path.join(dir, older))
  t.ok(kept < olderRecords, `${older}: ${kept} of ${olderRecords} records before the damage`)
  // The older log's records are the first ones replayed.
  const affected = new Set<string>()
  for (const w of img.writes.slice(img.base + kept, img.base + olderRecords)) for (const op of w) affected.add(op.key)

  const tables = listOf(dir, 'table')
  const victim = tables[Math.floor(tables.length / 2)]
  for (const keys of blockKeys(path.join(dir, victim))) for (const k of keys) affected.add(k)
  const vpath = path.join(dir, victim)
  const vsize = fs.statSync(vpath).size
  fs.truncateSync(vpath, vsize - 20) // the footer is gone

  const before = new LsmLevel(dir, OPTS)
  try {
    await before.open()
    t.fail('damage in an older log must fail the open')
  } catch (err: any) {
    t.is(err.cause?.code, 'LEVEL_CORRUPTION', `open fails first: ${err.cause?.message}`)
  }

  const report = await LsmLevel.repair(dir, { blockSize: OPTS.blockSize, targetFileSize: OPTS.targetFileSize })
  t.comment(JSON.stringify(report.problems))
  t.deepEqual(report.tables.dropped, [victim], 'the unreadable table is dropped')
  t.deepEqual(report.tables.salvaged, [], 'nothing to salvage')
  t.deepEqual(report.logs.replayed, [older, newer], 'both logs replayed')
  t.ok(report.logs.droppedBytes > 0 && report.logs.droppedBytes < size, `${report.logs.droppedBytes} bytes of ${older} dropped`)
  t.deepEqual(report.archived.sort(), [path.join('lost', older), path.join('lost', victim)].sort(), 'damaged files moved to lost/')
  t.ok(report.problems.some((p) => p.file === older) && report.problems.some((p) => p.file === victim), 'both problems reported')

  const db = new LsmLevel(dir, OPTS)
  await db.open()
  await checkAfterRepair(t, db, img, stateAfter(img.writes, img.writes.length), affected)
  await db.close()
})

test('repair of an undamaged database keeps everything', async (t) => {
  const img = await getImage()
  const dir = path.join(tempDir('lsm-repair-'), 'db')
  copyDir(img.dir, dir)
  const report = await LsmLevel.repair(dir)
  t.deepEqual([report.tables.salvaged, report.tables.dropped, report.problems, report.archived], [[], [], [], []], 'nothing damaged, nothing archived')
  t.is(report.tables.kept.length, listOf(img.dir, 'table').length, 'every table kept')
  t.notOk(fs.existsSync(path.join(dir, 'lost')), 'no lost/ directory')
  const db = new LsmLevel(dir, OPTS)
  await db.open()
  const r = await openAndReadOpen(db, img)
  t.deepEqual(r, [], 'every key reads back exactly, by get and by iteration')
  await db.close()
  // And repairing again changes nothing.
  const second = await LsmLevel.repair(dir)
  t.deepEqual([second.problems, second.keys], [[], report.keys], 'a second repair finds the same keys')
})

/** Exact comparison of an open database with the full model. */
async function openAndReadOpen (db: LsmLevel, img: Image): Promise<string[]> {
  const expected = stateAfter(img.writes, img.writes.length)
  const out: string[] = []
  for (const k of img.probeKeys) {
    const v = await db.get(k)
    if (v !== expected.get(k)) out.push(`get ${k}: ${v}`)
  }
  const entries = await db.iterator().all()
  const want = [...expected.entries()].sort((a, b) => a[0] < b[0] ? -1 : 1)
  if (JSON.stringify(entries) !== JSON.stringify(want)) out.push(`iteration: ${entries.length} entries, expected ${want.length}`)
  return out
}

// ---------------------------------------------------------------------------
// Destroy

test('destroy removes the database files and the directory, and refuses an open database', async (t) => {
  const root = tempDir('lsm-destroy-')
  const dir = path.join(root, 'db')
  let db = new LsmLevel(dir, OPTS)
  await db.open()
  for (let i = 0; i < 400; i++) await db.put(keyOf(i), 'value-' + i)
  await db.flush()
  await db.put('in-the-log', 'x')
  try {
    await LsmLevel.destroy(dir)
    t.fail('destroy of an open database must fail')
  } catch (err: any) {
    t.is(err.code, 'LEVEL_LOCKED', 'an open database: LEVEL_LOCKED')
  }
  t.is(await db.get(keyOf(7)), 'value-7', 'and the database is untouched')
  await db.close()

  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not ours')
  fs.writeFileSync(path.join(dir, '000999.tmp'), 'a leftover temp file')
  t.ok(listOf(dir, 'table').length > 0 && listOf(dir, 'log').length > 0, 'tables and a log exist')
  await LsmLevel.destroy(dir)
  t.deepEqual(fs.readdirSync(dir), ['notes.txt'], 'only the foreign file is left, and so the directory')

  fs.rmSync(path.join(dir, 'notes.txt'))
  db = new LsmLevel(dir, OPTS)
  await db.open()
  t.is(await db.get(keyOf(7)), undefined, 'a new database in the same place is empty')
  await db.put('a', 'b')
  await db.close()
  await LsmLevel.destroy(dir)
  t.notOk(fs.existsSync(dir), 'the directory is removed once empty')
  await LsmLevel.destroy(dir)
  t.pass('destroying a missing database is a no-op')
  t.ok(fs.existsSync(root), 'the parent directory is left alone')
})

test('an older log that ends in zeros (its preallocated space, never trimmed) reopens with every write; garbage there is still corruption', async (t) => {
  const img = await getImage()
  for (const tail of ['zeros', 'garbage', 'zeros-and-a-gap'] as const) {
    const dir = path.join(tempDir('lsm-zero-tail-'), 'db')
    copyDir(img.dir, dir)
    const [older, newer] = listOf(dir, 'log')
    t.ok(older !== undefined && newer !== undefined && countRecords(path.join(dir, newer)) > 0, `${tail}: an older log, and a newer one holding records`)
    const olderPath = path.join(dir, older)
    if (tail === 'zeros-and-a-gap') {
      // The older log's last record lost (zeroed, as an unsynced page reads after
      // a power loss): the newer log's first record no longer continues it.
      const bytes = fs.readFileSync(olderPath)
      let last = 0
      for (let pos = 0; pos + LOG_HEADER_SIZE <= bytes.length; pos += LOG_HEADER_SIZE + bytes.readUInt32LE(pos + 4)) last = pos
      bytes.fill(0, last)
      fs.writeFileSync(olderPath, bytes)
    }
    if (tail === 'garbage') fs.appendFileSync(olderPath, Buffer.alloc(4096, 0x5a))
    else fs.appendFileSync(olderPath, Buffer.alloc(256 * 1024))
    const db = new LsmLevel(dir, OPTS)
    let opened = false
    try {
      await db.open()
      opened = true
    } catch (err: any) {
      if (tail === 'zeros') t.fail(`a zero tail must not fail the open: ${describe(err)}`)
      else t.is(err.cause?.code, 'LEVEL_CORRUPTION', `${tail}: the open fails with LEVEL_CORRUPTION (${err.cause?.message})`)
    }
    if (opened) {
      if (tail !== 'zeros') t.fail(`${tail}: the open must fail`)
      else t.deepEqual(await openAndReadOpen(db, img), [], 'zeros: every write is there, nothing else')
      await db.close()
    }
  }
  t.end()
})
