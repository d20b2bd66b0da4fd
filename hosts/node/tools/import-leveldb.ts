// The import of a LevelDB database (as classic-level 1 to 3 writes it) into a
// new lsm-level database with the same contents: what classic-level itself
// would show, the newest version of each key, deleted keys gone.
//
//   1. The source's CURRENT and manifest give the live tables per level and the
//      oldest log not yet in tables (lib/leveldb/manifest.ts).
//   2. Those logs (number >= the manifest's log number, and the previous log if
//      named) are replayed in order into a memtable. Memory stays bounded: each
//      time the memtable reaches `writeBufferSize` it is written out as a
//      "spill" table in the destination (every version and deletion kept) and
//      a new one begun; spills are merge sources like the source's tables.
//   3. The merge (lib/iterators/merging-iterator.ts) of the memtable, the
//      spills, each level-0 table and each deeper level (its tables read one
//      after the other, they are disjoint: lib/leveldb/table.ts) is bulk-loaded
//      (hosts/node/tools/bulk-load.ts): only the newest version of each key, only values,
//      into tables at the deepest level, and a fresh manifest names them. Reads
//      hold one index block and one data block per merge source, so memory is
//      bounded by the options and the source's number of levels and level-0
//      tables, not by its size. The spills are then removed.
//
// The source is only read: no file in it is written, created, renamed or
// locked. LevelDB's lock cannot be seen from here, so the source must be
// closed (a database being written meanwhile would be read half-changed).
//
// The destination is built in a temporary directory next to it and renamed into
// place only once complete, so a failure (a damaged source file is
// LEVEL_CORRUPTION naming it) leaves no half-built database behind.
import * as path from 'node:path'
import { nodeCrypto } from '../lazy-modules'
import type { FileSystem } from '../../../lib/fs/fs'
import { fileSize } from '../../../lib/fs/fs'
import { nodeFileSystem } from '../node-fs'
import { levelError } from '../../../lib/errors'
import { join, tableName } from '../../../lib/filenames'
import { MAX_SEQ } from '../../../lib/keys'
import { resolveOptions, type EngineOptions } from '../../../lib/options'
import { MemTable } from '../../../lib/memtable/memtable'
import { MergingIterator } from '../../../lib/iterators/merging-iterator'
import type { InternalIterator } from '../../../lib/iterators/internal-iterator'
import { writeTables } from '../../../lib/compaction/table-writer'
import { Table } from '../../../lib/sstable/table'
import { BlockCache } from '../../../lib/sstable/cache'
import { bulkLoad } from './bulk-load'
import { levelDBSigns } from '../../../lib/leveldb/detect'
import { readLevelDBState, type LevelDBFile, type LevelDBState } from '../../../lib/leveldb/manifest'
import { LevelDBLogReader } from '../../../lib/leveldb/log-reader'
import { decodeLevelDBBatch } from '../../../lib/leveldb/write-batch'
import { LevelDBTable, LevelDBTablesIterator, type ReadCounter } from '../../../lib/leveldb/table'
import { tableOptionsOf } from '../../../lib/sstable/table-builder'

/**
 * Table-building options of the new database (defaults as for open), and the
 * memory bound of the log replay, `writeBufferSize` (default 4 MiB; unlike at
 * open, it does not change the default `targetFileSize`).
 */
export interface ImportOptions extends Partial<Pick<EngineOptions, 'blockSize' | 'blockRestartInterval' | 'bloomBitsPerKey' | 'compression' | 'targetFileSize' | 'writeBufferSize'>> {
  /** Called about every PROGRESS_MS while the import runs: source bytes read so far, and in all. */
  onProgress?: (bytesRead: number, bytesTotal: number) => void
}

export interface ImportReport {
  /** Source tables read, and logs replayed. */
  tables: number
  logs: number
  /** Entries read from them: every version of every key, deletions included. */
  entries: number
  /** Bytes of a record cut off at the end of a log (an interrupted write LevelDB also drops). */
  logBytesDropped: number
  /** Tables the log replay spilled to stay within `writeBufferSize` (removed once merged). */
  spilledTables: number
  /** Live keys in the new database. */
  keys: number
  /** Source bytes read (manifest, tables, logs). */
  bytesRead: number
  /** The new database's tables, and its sequence number. */
  newTables: string[]
  lastSequence: number
  ms: number
}

const PROGRESS_MS = 200

/** Imports the LevelDB database in `source` into a new lsm-level database at `location` (see the top of this file). */
export async function importLevelDB (source: string, location: string, options: ImportOptions = {}, fs: FileSystem = nodeFileSystem): Promise<ImportReport> {
  const started = Date.now()
  const { onProgress, ...tableOptions } = options
  const opts = resolveOptions({ targetFileSize: resolveOptions().targetFileSize, ...tableOptions } as Partial<Record<keyof EngineOptions, unknown>>)
  const src = path.resolve(source)
  const dest = path.resolve(location)
  if (!fs.exists(src)) throw levelError('LEVEL_INVALID_OPTION', `Cannot import: the source directory does not exist: ${src}`)
  if (levelDBSigns(fs, src) === undefined) throw levelError('LEVEL_INVALID_OPTION', `Cannot import: ${src} does not hold a LevelDB database (no LevelDB manifest or tables)`)
  if (fs.exists(dest) && !isEmptyDir(fs, dest)) throw levelError('LEVEL_INVALID_OPTION', `Cannot import: the destination exists and is not an empty directory: ${dest}`)
  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.import-${nodeCrypto().randomBytes(6).toString('hex')}`)
  fs.mkdirp(tmp)
  const counter: ReadCounter = { bytes: 0 }
  let bytesTotal = 0
  const timer = onProgress === undefined ? undefined : setInterval(() => onProgress(counter.bytes, bytesTotal), PROGRESS_MS)
  try {
    const state = readLevelDBState(fs, src)
    counter.bytes = state.manifestBytes
    const logs = liveLogs(fs, src, state)
    bytesTotal = state.manifestBytes + logs.reduce((n, l) => n + l.size, 0) + state.levels.flat().reduce((n, f) => n + f.size, 0)
    const report = await importInto(fs, src, tmp, opts, state, logs, counter)
    if (fs.exists(dest)) fs.removeDirIfEmpty(dest)
    fs.rename(tmp, dest)
    fs.syncDir(path.dirname(dest))
    onProgress?.(counter.bytes, bytesTotal)
    report.ms = Date.now() - started
    return report
  } catch (err) {
    removeDir(fs, tmp)
    throw err
  } finally {
    if (timer !== undefined) clearInterval(timer)
  }
}

interface SourceLog {
  number: number
  name: string
  size: number
}

/** The logs whose writes may not be in tables yet, oldest first. */
function liveLogs (fs: FileSystem, src: string, state: LevelDBState): SourceLog[] {
  const logs: SourceLog[] = []
  for (const name of fs.list(src)) {
    const m = /^(\d+)\.log$/.exec(name)
    if (m === null) continue
    const number = Number(m[1])
    if (number >= state.logNumber || (state.prevLogNumber !== 0 && number === state.prevLogNumber)) {
      logs.push({ number, name, size: fileSize(fs, join(src, name)) })
    }
  }
  return logs.sort((a, b) => a.number - b.number)
}

async function importInto (fs: FileSystem, src: string, dir: string, opts: EngineOptions, state: LevelDBState, logs: SourceLog[], counter: ReadCounter): Promise<ImportReport> {
  const report: ImportReport = { tables: 0, logs: logs.length, entries: 0, logBytesDropped: 0, spilledTables: 0, keys: 0, bytesRead: 0, newTables: [], lastSequence: 0, ms: 0 }
  let nextNumber = 1
  const newFileNumber = (): number => nextNumber++

  // ---- logs, into a memtable and spills
  const spills: Table[] = []
  const cache = new BlockCache(0)
  let mem = new MemTable()
  let lastSeq = state.lastSequence
  const spill = async (): Promise<void> => {
    const written = await writeTables(mem.iterator(), {
      fs,
      dir,
      // Read back once, soon: no filter, no compression.
      table: { ...tableOptionsOf(opts), bloomBitsPerKey: 0, compression: false },
      targetFileSize: Infinity,
      smallestSnapshot: MAX_SEQ,
      isBaseLevelForKey: () => false, // keep deletions: they hide the tables' older versions
      newFileNumber,
      shouldAbort: () => false
    })
    report.spilledTables += written.outputs.length
    for (const meta of written.outputs) spills.push(Table.open(fs, join(dir, tableName(meta.number)), tableName(meta.number), cache))
    mem = new MemTable()
  }
  const sinkEntry = (seq: number, kind: number, buf: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number): void => {
    mem.addFrom(seq, kind, buf, keyStart, keyLength, valueStart, valueLength)
    report.entries++
  }
  try {
    for (const log of logs) {
      const base = counter.bytes
      const reader = new LevelDBLogReader(fs, join(src, log.name), log.name)
      try {
        for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
          const seq = decodeLevelDBBatch(rec, log.name, sinkEntry)
          if (seq > lastSeq) lastSeq = seq
          counter.bytes = base + reader.bytesRead
          if (mem.approximateBytes() >= opts.writeBufferSize) await spill()
        }
        counter.bytes = base + reader.bytesRead
        report.logBytesDropped += reader.tornBytes
      } finally {
        reader.close()
      }
    }

    // ---- the merge sources, newest first
    const sources: InternalIterator[] = []
    if (!mem.isEmpty()) sources.push(mem.iterator())
    for (let i = spills.length - 1; i >= 0; i--) sources.push(spills[i].iterator())
    const tableIterators: LevelDBTablesIterator[] = []
    const openTable = (f: LevelDBFile): LevelDBTable => {
      report.tables++
      const name = tableFileName(fs, src, f.number)
      return new LevelDBTable(fs, join(src, name), name, f.size, counter)
    }
    const level0 = state.levels[0].slice().reverse()
    for (const f of level0) tableIterators.push(new LevelDBTablesIterator(1, () => openTable(f)))
    for (const files of state.levels.slice(1)) {
      if (files.length > 0) tableIterators.push(new LevelDBTablesIterator(files.length, (i) => openTable(files[i])))
    }
    sources.push(...tableIterators)

    const loaded = await bulkLoad({ fs, dir, options: opts, input: new MergingIterator(sources), firstFileNumber: nextNumber, lastSequence: lastSeq })
    for (const it of tableIterators) report.entries += it.entries
    for (const meta of loaded.tables) {
      report.keys += meta.entries
      report.newTables.push(tableName(meta.number))
    }
  } finally {
    for (const t of spills) t.unref()
  }
  for (const t of spills) fs.remove(join(dir, t.name))
  fs.syncDir(dir)
  report.bytesRead = counter.bytes
  report.lastSequence = lastSeq
  return report
}

/** A table's file name: <n>.ldb, or <n>.sst as LevelDB before 1.14 named them. */
function tableFileName (fs: FileSystem, src: string, number: number): string {
  const ldb = `${String(number).padStart(6, '0')}.ldb`
  if (fs.exists(join(src, ldb))) return ldb
  return `${String(number).padStart(6, '0')}.sst`
}

function isEmptyDir (fs: FileSystem, dir: string): boolean {
  try {
    return fs.list(dir).length === 0
  } catch {
    return false // not a directory
  }
}

/** Removes a directory this import created, and the files in it. */
function removeDir (fs: FileSystem, dir: string): void {
  try {
    for (const name of fs.list(dir)) fs.remove(join(dir, name))
    fs.removeDirIfEmpty(dir)
  } catch {}
}
