// The `lsm-level` command line tool (bin/lsm-level.js runs main()).
//
//   lsm-level <command> <dir> [args]
//
// Database commands open the database (never creating it) through LsmLevel;
// `dump` and `verify` read files directly and never take the database lock nor
// write anything, so they can be run against a live or damaged database.
//
// Exit codes: 0 success, 1 failure (missing key, damaged data, locked or
// missing database, I/O error), 2 bad usage.
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { nodeFileSystem } from './fs/node-fs'
import { CURRENT, parseFileName, tableName } from './filenames'
import { LogReader, type TailStatus } from './wal/log-reader'
import { decodeBatch, OP_RANGE_DELETE } from './wal/batch'
import { decodeVersionEdit, type VersionEdit } from './manifest/version-edit'
import { Table } from './sstable/table'
import { currentUserKey, currentValue } from './iterators/internal-iterator'
import { BlockCache } from './sstable/cache'
import { KIND_DELETE, KIND_VALUE, type InternalKey } from './keys'
import { formatStats } from './stats'

const USAGE = `Usage: lsm-level <command> <dir> [args]

Commands:
  stats <dir> [--json]          levels, amplification, counters
  get <dir> <key>               print the value of <key> (exit 1 if missing)
  put <dir> <key> <value>       write <key> = <value>
  del <dir> <key>               delete <key>
  scan <dir> [--gte k] [--gt k] [--lte k] [--lt k] [--reverse] [--limit n]
                                print key<TAB>value lines of a range
  dump <file>                   decode one table (*.sst), manifest (MANIFEST-*)
                                or log (*.log) for debugging
  verify <dir>                  check every checksum of every file (read-only,
                                takes no lock); exit 1 if anything is damaged
  compact <dir>                 compact the whole key range
  repair <dir>                  rebuild a damaged database and print the report
  help, --help                  print this text

Keys and values are utf8. Exit codes: 0 ok, 1 failure, 2 bad usage.
`

/** A failure with a message for the user and an exit code. */
class CliError extends Error {
  constructor (message: string, readonly exitCode: number = 1) {
    super(message)
  }
}

interface Parsed {
  positional: string[]
  flags: Map<string, string | true>
}

const VALUE_FLAGS = new Set(['gte', 'gt', 'lte', 'lt', 'limit'])
const BOOL_FLAGS = new Set(['json', 'reverse', 'help'])

function parseArgs (args: string[]): Parsed {
  const positional: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--') {
      positional.push(...args.slice(i + 1))
      break
    }
    if (a.startsWith('--') && a.length > 2) {
      let name = a.slice(2)
      let value: string | undefined
      const eq = name.indexOf('=')
      if (eq >= 0) {
        value = name.slice(eq + 1)
        name = name.slice(0, eq)
      }
      if (VALUE_FLAGS.has(name)) {
        if (value === undefined) {
          if (i + 1 >= args.length) throw new CliError(`option --${name} needs a value`, 2)
          value = args[++i]
        }
        flags.set(name, value)
      } else if (BOOL_FLAGS.has(name) && value === undefined) {
        flags.set(name, true)
      } else {
        throw new CliError(`unknown option: ${a}`, 2)
      }
      continue
    }
    if (a === '-h') {
      flags.set('help', true)
      continue
    }
    positional.push(a)
  }
  return { positional, flags }
}

function checkFlags (p: Parsed, command: string, allowed: string[]): void {
  for (const name of p.flags.keys()) {
    if (!allowed.includes(name)) throw new CliError(`option --${name} does not apply to '${command}'`, 2)
  }
}

function needArgs (p: Parsed, command: string, names: string[]): string[] {
  if (p.positional.length !== names.length) {
    throw new CliError(`usage: lsm-level ${command} ${names.map((n) => `<${n}>`).join(' ')}`, 2)
  }
  return p.positional
}

// ------------------------------------------------------------------- output

/** Buffered stdout that respects backpressure (a scan of millions of keys piped to `head`). */
class Out {
  private parts: string[] = []
  private size = 0

  async line (s: string): Promise<void> {
    this.parts.push(s, '\n')
    this.size += s.length + 1
    if (this.size >= 64 * 1024) await this.flush()
  }

  async flush (): Promise<void> {
    if (this.parts.length === 0) return
    const text = this.parts.join('')
    this.parts = []
    this.size = 0
    if (!process.stdout.write(text)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          process.stdout.off('drain', done)
          process.stdout.off('close', done)
          process.stdout.off('error', done)
          resolve()
        }
        process.stdout.on('drain', done)
        process.stdout.on('close', done)
        process.stdout.on('error', done)
      })
    }
  }
}

/** One-line progress on a terminal; silent when stdout is not a TTY. */
class Progress {
  private readonly tty = process.stdout.isTTY === true
  private timer: NodeJS.Timeout | undefined
  private shown = false

  set (text: string): void {
    if (!this.tty) return
    process.stdout.write(`\r\x1b[K${text}`)
    this.shown = true
  }

  /** Shows "<what>... <elapsed>s" until done() (for work with no countable steps). */
  elapsed (what: string): void {
    if (!this.tty) return
    const start = Date.now()
    const show = (): void => this.set(`${what}... ${((Date.now() - start) / 1000).toFixed(1)}s`)
    show()
    this.timer = setInterval(show, 200)
  }

  done (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (this.shown) process.stdout.write('\r\x1b[K')
    this.shown = false
  }
}

/** Bytes as utf8 text if they are printable, else as 0x-prefixed hex. */
export function printable (b: Uint8Array): string {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)
  const s = buf.toString('utf8')
  // eslint-disable-next-line no-control-regex
  if (Buffer.byteLength(s) === buf.length && !/[\u0000-\u001f\u007f-\u009f\ufffd]/.test(s)) return s
  return '0x' + buf.toString('hex')
}

function kindName (kind: number): string {
  return kind === KIND_VALUE ? 'put' : kind === KIND_DELETE ? 'del' : kind === OP_RANGE_DELETE ? 'delrange' : `kind${kind}`
}

function fmtKey (k: InternalKey): string {
  return `${printable(k.userKey)} @${k.seq} ${kindName(k.kind)}`
}

function describeTail (t: TailStatus): string {
  if (t.state === 'clean') return `tail: clean (${t.offset} bytes)`
  let s = `tail: ${t.state} at offset ${t.offset}, ${t.droppedBytes} bytes after it not readable`
  if (t.validRecordAfter) s += ` (a valid record follows at offset ${t.nextValidOffset}: records were lost)`
  return s
}

function errMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** The LEVEL_* code of an error or of the first error in its cause chain that has one. */
function levelCode (err: unknown, want?: string): string | undefined {
  let e: unknown = err
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('LEVEL_') && code !== 'LEVEL_DATABASE_NOT_OPEN') {
      if (want === undefined || code === want) return code
    }
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

/** The innermost error carrying `code`, for its message. */
function findCode (err: unknown, code: string): Error | undefined {
  let e: unknown = err
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if ((e as { code?: unknown }).code === code) return e
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

// --------------------------------------------------------------- database

function requireDatabase (dir: string): void {
  let st: nodeFs.Stats
  try {
    st = nodeFs.statSync(dir)
  } catch {
    throw new CliError(`no database at ${dir}`)
  }
  if (!st.isDirectory()) throw new CliError(`no database at ${dir} (not a directory)`)
  if (!nodeFs.existsSync(path.join(dir, CURRENT))) throw new CliError(`no database at ${dir}`)
}

/** Translates a failed open (or operation) into a message and exit code. */
function openFailure (dir: string, err: unknown): CliError {
  if (levelCode(err, 'LEVEL_LOCKED') !== undefined) return new CliError(`database is locked by another process: ${dir}`)
  const corrupt = findCode(err, 'LEVEL_CORRUPTION')
  if (corrupt !== undefined) return new CliError(`corruption: ${corrupt.message} (try: lsm-level repair ${dir})`)
  const inner = findCode(err, 'LEVEL_INVALID_OPTION')
  if (inner !== undefined && /does not exist/.test(inner.message)) return new CliError(`no database at ${dir}`)
  const io = findCode(err, 'LEVEL_IO_ERROR')
  if (io !== undefined) return new CliError(`I/O error: ${io.message}`)
  let e: unknown = err
  const parts: string[] = []
  while (e instanceof Error && parts.length < 4) {
    parts.push(e.message)
    e = (e as { cause?: unknown }).cause
  }
  return new CliError(parts.length > 0 ? parts.join(': ') : String(err))
}

async function withDb<T> (dir: string, fn: (db: LsmLevel) => Promise<T>): Promise<T> {
  requireDatabase(dir)
  const db = new LsmLevel(dir)
  try {
    await db.open({ createIfMissing: false })
  } catch (err) {
    throw openFailure(dir, err)
  }
  let result: T
  try {
    result = await fn(db)
  } catch (err) {
    await db.close().catch(() => {})
    if (err instanceof CliError) throw err
    throw openFailure(dir, err)
  }
  try {
    await db.close()
  } catch (err) {
    throw openFailure(dir, err)
  }
  return result
}

// --------------------------------------------------------------- commands

async function cmdStats (p: Parsed): Promise<number> {
  checkFlags(p, 'stats', ['json'])
  const [dir] = needArgs(p, 'stats', ['dir'])
  const stats = await withDb(dir, async (db) => db.stats())
  if (p.flags.has('json')) {
    process.stdout.write(JSON.stringify(stats, null, 2) + '\n')
  } else {
    process.stdout.write(`database ${dir}\n` + formatStats(stats))
  }
  return 0
}

async function cmdGet (p: Parsed): Promise<number> {
  checkFlags(p, 'get', [])
  const [dir, key] = needArgs(p, 'get', ['dir', 'key'])
  const value = await withDb(dir, async (db) => await db.get(key))
  if (value === undefined) {
    process.stderr.write(`key not found: ${key}\n`)
    return 1
  }
  process.stdout.write(value + '\n')
  return 0
}

async function cmdPut (p: Parsed): Promise<number> {
  checkFlags(p, 'put', [])
  const [dir, key, value] = needArgs(p, 'put', ['dir', 'key', 'value'])
  await withDb(dir, async (db) => { await db.put(key, value) })
  return 0
}

async function cmdDel (p: Parsed): Promise<number> {
  checkFlags(p, 'del', [])
  const [dir, key] = needArgs(p, 'del', ['dir', 'key'])
  await withDb(dir, async (db) => { await db.del(key) })
  return 0
}

async function cmdScan (p: Parsed): Promise<number> {
  checkFlags(p, 'scan', ['gte', 'gt', 'lte', 'lt', 'reverse', 'limit'])
  const [dir] = needArgs(p, 'scan', ['dir'])
  const options: Record<string, unknown> = { reverse: p.flags.has('reverse') }
  for (const k of ['gte', 'gt', 'lte', 'lt']) {
    const v = p.flags.get(k)
    if (typeof v === 'string') options[k] = v
  }
  const limit = p.flags.get('limit')
  if (typeof limit === 'string') {
    const n = Number(limit)
    if (!Number.isInteger(n) || n < 0) throw new CliError(`--limit must be a non-negative integer, got '${limit}'`, 2)
    options.limit = n
  }
  const out = new Out()
  await withDb(dir, async (db) => {
    const it = db.iterator(options)
    try {
      for (;;) {
        const entry = await it.next()
        if (entry === undefined) break
        await out.line(`${entry[0]}\t${entry[1]}`)
      }
    } finally {
      await it.close()
    }
  })
  await out.flush()
  return 0
}

async function cmdCompact (p: Parsed): Promise<number> {
  checkFlags(p, 'compact', [])
  const [dir] = needArgs(p, 'compact', ['dir'])
  const progress = new Progress()
  const t0 = Date.now()
  try {
    await withDb(dir, async (db) => {
      progress.elapsed('compacting')
      await db.compactRange()
      progress.done()
      const levels = db.stats().levels
      process.stdout.write(`compacted in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`)
      process.stdout.write(levels.filter((l) => l.files > 0).map((l) => `  level ${l.level}: ${l.files} files, ${l.bytes} bytes`).join('\n') + '\n')
    })
  } finally {
    progress.done()
  }
  return 0
}

async function cmdRepair (p: Parsed): Promise<number> {
  checkFlags(p, 'repair', [])
  const [dir] = needArgs(p, 'repair', ['dir'])
  let st: nodeFs.Stats | undefined
  try { st = nodeFs.statSync(dir) } catch {}
  if (st === undefined || !st.isDirectory()) throw new CliError(`no database at ${dir}`)
  const progress = new Progress()
  progress.elapsed('repairing')
  let report
  try {
    report = await LsmLevel.repair(dir)
  } catch (err) {
    progress.done()
    throw openFailure(dir, err)
  }
  progress.done()
  const list = (xs: string[]): string => xs.length === 0 ? '-' : xs.join(', ')
  const lines = [
    `repaired ${dir}`,
    `tables: kept ${list(report.tables.kept)}; salvaged ${list(report.tables.salvaged)}; dropped ${list(report.tables.dropped)}; data blocks lost ${report.tables.blocksLost}`,
    `logs: replayed ${list(report.logs.replayed)}; ${report.logs.records} records; ${report.logs.droppedBytes} bytes dropped`,
    `entries recovered ${report.entriesRecovered}, live keys ${report.keys}, last sequence ${report.lastSequence}`,
    `new tables ${list(report.newTables)}; manifest ${report.manifest}`,
    `archived to lost/: ${list(report.archived)}`,
    `removed: ${list(report.removed)}`
  ]
  if (report.problems.length === 0) lines.push('problems: none')
  else {
    lines.push(`problems (${report.problems.length}):`)
    for (const pr of report.problems) lines.push(`  ${pr.file}: ${pr.message}`)
  }
  process.stdout.write(lines.join('\n') + '\n')
  return 0
}

// ------------------------------------------------------------------- dump

/** Edit as plain JSON-able data (keys printable). */
function editToJson (e: VersionEdit): Record<string, unknown> {
  const o: Record<string, unknown> = {}
  if (e.formatVersion !== undefined) o.formatVersion = e.formatVersion
  if (e.logNumber !== undefined) o.logNumber = e.logNumber
  if (e.nextFileNumber !== undefined) o.nextFileNumber = e.nextFileNumber
  if (e.lastSequence !== undefined) o.lastSequence = e.lastSequence
  if (e.compactPointers?.length) o.compactPointers = e.compactPointers.map((c) => ({ level: c.level, key: fmtKey(c.key) }))
  if (e.deletedFiles?.length) o.deletedFiles = e.deletedFiles.map((d) => ({ level: d.level, file: tableName(d.number) }))
  if (e.newFiles?.length) {
    o.newFiles = e.newFiles.map((n) => ({
      level: n.level,
      file: tableName(n.meta.number),
      size: n.meta.size,
      entries: n.meta.entries,
      ...(n.meta.floor !== undefined ? { floor: n.meta.floor } : {}),
      smallest: fmtKey(n.meta.smallest),
      largest: fmtKey(n.meta.largest)
    }))
  }
  if (e.rangeTombstones?.length) {
    o.rangeTombstones = e.rangeTombstones.map((t) => ({ seq: t.seq, start: printable(t.start), end: t.end === undefined ? null : printable(t.end) }))
  }
  return o
}

async function dumpTable (file: string, name: string, out: Out): Promise<void> {
  const table = Table.open(nodeFileSystem, file, name, new BlockCache(256 * 1024))
  try {
    const pr = table.properties
    await out.line(`table ${name}`)
    await out.line(`  file size ${table.fileSize}, format version ${pr.formatVersion}`)
    await out.line(`  entries ${pr.entries}, data blocks ${pr.dataBlocks}, raw key bytes ${pr.rawKeyBytes}, raw value bytes ${pr.rawValueBytes}`)
    if (pr.entries > 0) {
      await out.line(`  smallest ${fmtKey(pr.smallest)}`)
      await out.line(`  largest  ${fmtKey(pr.largest)}`)
    }
    await out.line('entries:')
    const it = table.iterator()
    try {
      let n = 0
      for (it.seekToFirst(); it.valid(); it.next()) {
        const kind = it.kind()
        const v = kind === KIND_VALUE ? ' ' + printable(currentValue(it)) : ''
        await out.line(`${printable(currentUserKey(it))} @${it.seq()} ${kindName(kind)}${v}`)
        n++
      }
      await out.line(`(${n} entries)`)
    } finally {
      it.close()
    }
  } finally {
    table.unref()
  }
}

async function dumpManifest (file: string, name: string, out: Out): Promise<boolean> {
  const r = new LogReader(nodeFileSystem, file, name)
  let n = 0
  let ok = true
  try {
    await out.line(`manifest ${name}`)
    for (let rec = r.next(); rec !== undefined; rec = r.next()) {
      let line: string
      try {
        line = JSON.stringify(editToJson(decodeVersionEdit(rec, name)))
      } catch (err) {
        line = `undecodable edit (${rec.length} bytes): ${errMessage(err)}`
        ok = false
      }
      await out.line(`edit ${n++}: ${line}`)
    }
    await out.line(`(${n} edits) ${describeTail(r.tail)}`)
    return ok && r.tail.state !== 'corrupt'
  } finally {
    r.close()
  }
}

async function dumpLog (file: string, name: string, out: Out): Promise<boolean> {
  const r = new LogReader(nodeFileSystem, file, name)
  let n = 0
  let ok = true
  try {
    await out.line(`log ${name}`)
    for (let rec = r.next(); rec !== undefined; rec = r.next()) {
      try {
        const b = decodeBatch(rec, name)
        await out.line(`batch ${n}: first seq ${b.firstSeq}, ${b.ops.length} ops`)
        for (let i = 0; i < b.ops.length; i++) {
          const op = b.ops[i]
          const v = op.kind === KIND_VALUE && op.value !== undefined
            ? ' ' + printable(op.value)
            : op.kind === OP_RANGE_DELETE ? ' to ' + (op.end === undefined ? '(end)' : printable(op.end)) : ''
          await out.line(`  ${printable(op.key)} @${b.firstSeq + i} ${kindName(op.kind)}${v}`)
        }
      } catch (err) {
        await out.line(`batch ${n}: undecodable (${rec.length} bytes): ${errMessage(err)}`)
        ok = false
      }
      n++
    }
    await out.line(`(${n} batches) ${describeTail(r.tail)}`)
    return ok && r.tail.state !== 'corrupt'
  } finally {
    r.close()
  }
}

async function cmdDump (p: Parsed): Promise<number> {
  checkFlags(p, 'dump', [])
  const [file] = needArgs(p, 'dump', ['file'])
  let st: nodeFs.Stats
  try {
    st = nodeFs.statSync(file)
  } catch {
    throw new CliError(`no such file: ${file}`)
  }
  if (!st.isFile()) throw new CliError(`not a file: ${file}`)
  const name = path.basename(file)
  const type = parseFileName(name)?.type
  const out = new Out()
  let ok = true
  try {
    if (type === 'table') await dumpTable(file, name, out)
    else if (type === 'manifest') ok = await dumpManifest(file, name, out)
    else if (type === 'log') ok = await dumpLog(file, name, out)
    else if (type === 'current') await out.line(`CURRENT -> ${nodeFs.readFileSync(file, 'utf8').trim()}`)
    else throw new CliError(`cannot dump ${name}: not a table (*.sst), manifest (MANIFEST-*) or log (*.log)`)
  } catch (err) {
    await out.flush()
    if (err instanceof CliError) throw err
    throw new CliError(`${name}: ${errMessage(err)}`)
  }
  await out.flush()
  return ok ? 0 : 1
}

// ----------------------------------------------------------------- verify

interface Damage { file: string, message: string }

function verifyTable (dir: string, name: string, cache: BlockCache): number {
  const table = Table.open(nodeFileSystem, path.join(dir, name), name, cache, { verifyChecksums: true })
  try {
    const it = table.iterator()
    let n = 0
    try {
      for (it.seekToFirst(); it.valid(); it.next()) n++
    } finally {
      it.close()
    }
    if (n !== table.entries) throw new Error(`holds ${n} entries, properties say ${table.entries}`)
    return n
  } finally {
    table.unref()
  }
}

/** Reads every record of a log or manifest; returns the decoded records' count and the tail. */
function verifyLogFile (dir: string, name: string, decode: (b: Buffer) => unknown, onRecord?: (v: unknown) => void): { records: number, tail: TailStatus } {
  const r = new LogReader(nodeFileSystem, path.join(dir, name), name)
  let records = 0
  try {
    for (let rec = r.next(); rec !== undefined; rec = r.next()) {
      const v = decode(rec)
      onRecord?.(v)
      records++
    }
    return { records, tail: r.tail }
  } finally {
    r.close()
  }
}

async function cmdVerify (p: Parsed): Promise<number> {
  checkFlags(p, 'verify', [])
  const [dir] = needArgs(p, 'verify', ['dir'])
  requireDatabase(dir)
  const names = nodeFs.readdirSync(dir).filter((n) => {
    const t = parseFileName(n)?.type
    return t === 'table' || t === 'log' || t === 'manifest'
  }).sort()
  const damaged: Damage[] = []
  const notes: string[] = []
  const cache = new BlockCache(1024 * 1024)
  const progress = new Progress()

  // CURRENT and the live manifest: which tables the database needs.
  let currentManifest: string | undefined
  try {
    currentManifest = nodeFs.readFileSync(path.join(dir, CURRENT), 'utf8')
    if (!currentManifest.endsWith('\n') || parseFileName(currentManifest.trim())?.type !== 'manifest') {
      damaged.push({ file: CURRENT, message: `does not name a manifest: ${JSON.stringify(currentManifest)}` })
      currentManifest = undefined
    } else {
      currentManifest = currentManifest.trim()
      if (!names.includes(currentManifest)) {
        damaged.push({ file: CURRENT, message: `names ${currentManifest}, which does not exist` })
        currentManifest = undefined
      }
    }
  } catch (err) {
    damaged.push({ file: CURRENT, message: errMessage(err) })
  }
  const live = new Set<number>()

  let tables = 0
  let logs = 0
  let entries = 0
  let records = 0
  try {
    for (let i = 0; i < names.length; i++) {
      const name = names[i]
      progress.set(`verifying ${i + 1}/${names.length} files (${name})`)
      const type = parseFileName(name)?.type
      try {
        if (type === 'table') {
          tables++
          entries += verifyTable(dir, name, cache)
        } else {
          logs++
          const isCurrent = name === currentManifest
          const decode = type === 'manifest' ? (b: Buffer) => decodeVersionEdit(b, name) : (b: Buffer) => decodeBatch(b, name)
          const onRecord = isCurrent
            ? (v: unknown) => {
                const e = v as VersionEdit
                for (const d of e.deletedFiles ?? []) live.delete(d.number)
                for (const f of e.newFiles ?? []) live.add(f.meta.number)
              }
            : undefined
          const r = verifyLogFile(dir, name, decode, onRecord)
          records += r.records
          if (r.tail.state === 'corrupt') {
            damaged.push({ file: name, message: `damaged record at offset ${r.tail.offset}; ${describeTail(r.tail)}` })
          } else if (r.tail.state === 'torn') {
            // An interrupted last write: normal after a crash, dropped quietly at open.
            notes.push(`${name}: torn tail at offset ${r.tail.offset} (${r.tail.droppedBytes} bytes; an interrupted write, dropped at open)`)
          }
        }
      } catch (err) {
        damaged.push({ file: name, message: errMessage(err) })
      }
    }
  } finally {
    progress.done()
  }
  if (currentManifest !== undefined) {
    for (const n of [...live].sort((a, b) => a - b)) {
      const t = tableName(n)
      if (!names.includes(t)) damaged.push({ file: t, message: `missing: ${currentManifest} lists it as live` })
    }
  }

  const out = new Out()
  for (const n of notes) await out.line(`note: ${n}`)
  await out.line(`checked ${names.length} files: ${tables} tables (${entries} entries in intact tables), ${logs} logs and manifests (${records} records)`)
  if (damaged.length === 0) {
    await out.line('OK: no damage found')
    await out.flush()
    return 0
  }
  await out.line(`DAMAGED: ${damaged.length} problem${damaged.length === 1 ? '' : 's'}`)
  for (const d of damaged) await out.line(`  ${d.file}: ${d.message}`)
  await out.flush()
  return 1
}

// ------------------------------------------------------------------- main

const COMMANDS: Record<string, (p: Parsed) => Promise<number>> = {
  stats: cmdStats,
  get: cmdGet,
  put: cmdPut,
  del: cmdDel,
  scan: cmdScan,
  dump: cmdDump,
  verify: cmdVerify,
  compact: cmdCompact,
  repair: cmdRepair
}

/** Runs the command line `args`; returns the exit code (and sets process.exitCode). */
export async function main (args: string[]): Promise<number> {
  const code = await run(args)
  process.exitCode = code
  return code
}

async function run (args: string[]): Promise<number> {
  if (args.length === 0) {
    process.stderr.write(USAGE)
    return 2
  }
  const [command, ...rest] = args
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  const fn = Object.prototype.hasOwnProperty.call(COMMANDS, command) ? COMMANDS[command] : undefined
  if (fn === undefined) {
    process.stderr.write(`lsm-level: unknown command '${command}' (see lsm-level --help)\n`)
    return 2
  }
  try {
    const parsed = parseArgs(rest)
    if (parsed.flags.has('help')) {
      process.stdout.write(USAGE)
      return 0
    }
    return await fn(parsed)
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`lsm-level ${command}: ${err.message}\n`)
      return err.exitCode
    }
    const e = openFailure('', err)
    process.stderr.write(`lsm-level ${command}: ${e.message}\n`)
    return 1
  }
}
