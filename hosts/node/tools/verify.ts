// Checks every file of a database without opening it (`lsm-level verify`):
// every block checksum of every table and that its entry count matches its
// properties, every record of every log and manifest, that CURRENT names a
// manifest that exists, and that every table the live manifest lists exists.
// It takes no lock and writes nothing, so it can run against a live or a
// damaged database; a file a live database removes meanwhile shows up as a
// problem.
import type { FileSystem } from '../../../lib/fs/fs'
import { nodeFileSystem } from '../node-fs'
import { CURRENT, join, parseFileName, tableName } from '../../../lib/filenames'
import { isLevelError, type LevelErrorCode } from '../../../lib/errors'
import { Table } from '../../../lib/sstable/table'
import { BlockCache } from '../../../lib/sstable/cache'
import type { VersionEdit } from '../../../lib/manifest/version-edit'
import { describeTail, dumpLog, dumpManifest, type LogDump } from './dump'

/** One block cache for all the tables checked: each block is read once, in file order. */
const VERIFY_CACHE_BYTES = 1024 * 1024

export interface VerifyProblem {
  /** The damaged or missing file: a name in the database directory. */
  file: string
  /**
   * LEVEL_CORRUPTION: damaged or missing data. LEVEL_IO_ERROR: the file could
   * not be read. Another LEVEL_* code: the error reading the file had it (a
   * manifest of a newer format: LEVEL_NOT_SUPPORTED).
   */
  code: LevelErrorCode
  message: string
}

/** Something worth knowing that is not damage. */
export interface VerifyNote {
  file: string
  message: string
}

export interface VerifyReport {
  /** The tables, logs and manifests checked, in name order. */
  files: string[]
  tables: number
  /** Entries in the tables found intact. */
  entries: number
  /** Logs and manifests. */
  logs: number
  /** Records in the logs and manifests found intact. */
  records: number
  /** In the order found: CURRENT, then file by file, then the live tables that are missing. Empty: no damage. */
  problems: VerifyProblem[]
  /** Torn tails: a last write interrupted by a crash, which the next open drops. */
  notes: VerifyNote[]
}

export interface VerifyOptions {
  fs?: FileSystem
  /** Called before each file is checked (`index` of `total`), for progress. */
  onFile?: (index: number, total: number, name: string) => void
}

/** Checks the database in `location` (see the top of this file). Throws only if the directory cannot be listed. */
export function verifyDatabase (location: string, options: VerifyOptions = {}): VerifyReport {
  const fs = options.fs ?? nodeFileSystem
  const files = fs.list(location).filter((n) => {
    const t = parseFileName(n)?.type
    return t === 'table' || t === 'log' || t === 'manifest'
  }).sort()
  const report: VerifyReport = { files, tables: 0, entries: 0, logs: 0, records: 0, problems: [], notes: [] }
  const manifest = liveManifest(fs, location, files, report.problems)
  /** The tables the live manifest lists (its edits applied in order). */
  const live = new Set<number>()
  const cache = new BlockCache(VERIFY_CACHE_BYTES)

  for (let i = 0; i < files.length; i++) {
    const name = files[i]
    options.onFile?.(i, files.length, name)
    const file = join(location, name)
    const type = parseFileName(name)?.type
    try {
      if (type === 'table') {
        report.tables++
        checkTable(fs, file, name, cache, report)
      } else if (type === 'manifest') {
        report.logs++
        const onEdit = name === manifest
          ? (e: VersionEdit) => {
              for (const d of e.deletedFiles ?? []) live.delete(d.number)
              for (const f of e.newFiles ?? []) live.add(f.meta.number)
            }
          : undefined
        checkRecords(dumpManifest(file, fs), report, onEdit)
      } else {
        report.logs++
        checkRecords(dumpLog(file, fs), report)
      }
    } catch (err) {
      report.problems.push(problem(name, err))
    }
  }

  if (manifest !== undefined) {
    for (const n of [...live].sort((a, b) => a - b)) {
      const t = tableName(n)
      if (!files.includes(t)) report.problems.push({ file: t, code: 'LEVEL_CORRUPTION', message: `missing: ${manifest} lists it as live` })
    }
  }
  return report
}

/** The manifest CURRENT names, if CURRENT is sound and the manifest exists; else a problem is added. */
function liveManifest (fs: FileSystem, location: string, files: string[], problems: VerifyProblem[]): string | undefined {
  let text: string
  try {
    text = fs.readSmallFile(join(location, CURRENT)).toString('utf8')
  } catch (err) {
    problems.push(problem(CURRENT, err))
    return undefined
  }
  const name = text.trim()
  if (!text.endsWith('\n') || parseFileName(name)?.type !== 'manifest') {
    problems.push({ file: CURRENT, code: 'LEVEL_CORRUPTION', message: `does not name a manifest: ${JSON.stringify(text)}` })
    return undefined
  }
  if (!files.includes(name)) {
    problems.push({ file: CURRENT, code: 'LEVEL_CORRUPTION', message: `names ${name}, which does not exist` })
    return undefined
  }
  return name
}

/** Reads every entry of a table, verifying every block; counts them if they match the properties. */
function checkTable (fs: FileSystem, file: string, name: string, cache: BlockCache, report: VerifyReport): void {
  const table = Table.open(fs, file, name, cache, { verifyChecksums: true })
  try {
    const it = table.iterator()
    let n = 0
    try {
      for (it.seekToFirst(); it.valid(); it.next()) n++
    } finally {
      it.close()
    }
    if (n !== table.entries) {
      report.problems.push({ file: name, code: 'LEVEL_CORRUPTION', message: `holds ${n} entries, properties say ${table.entries}` })
      return
    }
    report.entries += n
  } finally {
    table.unref()
  }
}

/**
 * Decodes every record of a log or manifest; counts them if all decode. A
 * corrupt tail is a problem, a torn one a note.
 */
function checkRecords<T> (dump: LogDump<T>, report: VerifyReport, onRecord?: (decoded: T) => void): void {
  const name = dump.name
  let records = 0
  try {
    for (const r of dump.records()) {
      if ('error' in r) {
        report.problems.push(problem(name, r.error))
        return
      }
      onRecord?.(r.decoded)
      records++
    }
  } finally {
    dump.close()
  }
  report.records += records
  const tail = dump.tail
  if (tail.state === 'corrupt') {
    report.problems.push({ file: name, code: 'LEVEL_CORRUPTION', message: `damaged record at offset ${tail.offset}; ${describeTail(tail)}` })
  } else if (tail.state === 'torn') {
    report.notes.push({ file: name, message: `torn tail at offset ${tail.offset} (${tail.droppedBytes} bytes; an interrupted write, dropped at open)` })
  }
}

/**
 * The problem an error reading `file` makes: its LEVEL_* code; an errno-coded
 * error (ENOENT, EIO) is LEVEL_IO_ERROR; any other error, raised by what was
 * read, is LEVEL_CORRUPTION.
 */
function problem (file: string, err: unknown): VerifyProblem {
  const message = err instanceof Error ? err.message : String(err)
  if (isLevelError(err)) return { file, code: err.code, message }
  const errno = (err as NodeJS.ErrnoException | undefined)?.code
  return { file, code: typeof errno === 'string' ? 'LEVEL_IO_ERROR' : 'LEVEL_CORRUPTION', message }
}
