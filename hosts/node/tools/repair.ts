// Repair: rebuilds a usable database from whatever tables and logs survive, for
// when open() fails with LEVEL_CORRUPTION (a damaged manifest or CURRENT, a
// damaged older log, a table the manifest names that is gone) or reads keep
// failing on a damaged table. The manifest is not trusted at all: the directory
// is the only input.
//
//   1. Take the lock (a repair never runs on an open database).
//   2. Tables: open each one and read every data block (checksums verified).
//      An intact table is "kept": all its entries carry over. A table with
//      damaged data blocks is "salvaged": the entries of every readable block
//      carry over, those of the damaged blocks are lost. A table that cannot be
//      opened at all (damaged footer, index or properties) is "dropped".
//   3. Logs: each log's valid records are replayed, those after a damaged
//      stretch too (LogReader.skipDamage); the damaged bytes are reported as
//      dropped.
//   4. Everything that survived is merged by internal key (user key ascending,
//      newest sequence number first) into fresh, non-overlapping tables holding
//      the newest version of each key, less those the logs' range tombstones hide
//      (tombstones and older versions are dropped:
//      no snapshot outlives a repair, and nothing else remains below). They go
//      to the deepest level (a bulk load, hosts/node/tools/bulk-load.ts, as steps 4 and 5).
//   5. A fresh manifest names them, with lastSequence the highest sequence
//      number seen and nextFileNumber and logNumber past every file number in the
//      directory (so no old log is ever replayed on top of the result); CURRENT
//      is pointed at it.
//   6. Only then is the old state removed: the old manifests, temp files, and
//      the tables and logs that were carried over whole. Damaged tables and logs
//      (salvaged, dropped, or cut short) are moved to `lost/` for inspection,
//      never deleted.
//
// Why merge instead of keeping intact tables as they are (each in level 0,
// ordered by their largest sequence number)? Level 0 is searched table by table
// and the first table holding a key decides, so table order must put the newest
// version of EVERY key first. Largest sequence number does not ensure that: a
// level-1 table's version of a key is newer than a level-2 table's, but the
// level-2 table can have the larger maximum sequence number (from other keys).
// The merge orders versions by their own sequence numbers, so newer data wins
// key by key. It costs a rewrite of the data (and room for a second copy while
// it runs), which is acceptable for an offline repair.
//
// Limit: range tombstones that had been flushed live only in the manifest
// (lib/range-tombstones.ts), which repair does not trust; data they hid and no
// compaction had dropped yet comes back.
//
// A crash during repair is safe to repeat: until the new manifest is in place
// the old files are untouched, and the new tables are orphans the next open or
// repair ignores; after it, the old files are orphans.
import * as path from 'node:path'
import { fileSize, type FileSystem } from '../../../lib/fs/fs'
import { nodeFileSystem } from '../node-fs'
import { acquireLock } from '../lock'
import { OWNER_SOCKET } from '../owner-socket'
import { CURRENT, join, logName, parseFileName, tableName } from '../../../lib/filenames'
import { isLevelError, levelError } from '../../../lib/errors'
import { compareInternal } from '../../../lib/keys'
import { resolveOptions, type EngineOptions } from '../../../lib/options'
import { Table } from '../../../lib/sstable/table'
import { BlockCache } from '../../../lib/sstable/cache'
import { BlockIterator } from '../../../lib/sstable/decoded-block'
import { LogReader, tailIsZeros } from '../../../lib/wal/log-reader'
import { decodeBatch, OP_RANGE_DELETE } from '../../../lib/wal/batch'
import { RangeTombstoneIndex, type RangeTombstone } from '../../../lib/range-tombstones'
import { MemTable } from '../../../lib/memtable/memtable'
import { MergingIterator } from '../../../lib/iterators/merging-iterator'
import { type InternalIterator, currentUserKey, currentValue } from '../../../lib/iterators/internal-iterator'
import { bulkLoad } from './bulk-load'
import { refuseLevelDB } from '../../../lib/leveldb/detect'

/** Table-building options of the rebuilt tables (defaults as for open). */
export type RepairOptions = Partial<Pick<EngineOptions, 'blockSize' | 'blockRestartInterval' | 'bloomBitsPerKey' | 'compression' | 'targetFileSize' | 'writeBufferSize'>>

export interface RepairProblem {
  /** The damaged file (basename). */
  file: string
  /** What was wrong, and what was lost. */
  message: string
}

export interface RepairReport {
  tables: {
    /** Intact tables: every entry carried over. */
    kept: string[]
    /** Tables with damaged data blocks: the entries of the readable blocks carried over. */
    salvaged: string[]
    /** Tables that could not be read at all. */
    dropped: string[]
    /** Data blocks lost in salvaged tables. */
    blocksLost: number
  }
  logs: {
    /** Logs whose valid records were replayed (all logs found). */
    replayed: string[]
    /** Records replayed from them. */
    records: number
    /** Bytes after the first damaged record of each log, summed. */
    droppedBytes: number
  }
  /** Entries (versions of keys, tombstones included) read from the surviving tables and logs. */
  entriesRecovered: number
  /** Live keys in the rebuilt database (the newest version of each key, if a value). */
  keys: number
  /** The tables of the rebuilt database, and its manifest. */
  newTables: string[]
  manifest: string
  /** The sequence number the rebuilt database continues from. */
  lastSequence: number
  /** Damaged files moved to `lost/` (relative to the database directory). */
  archived: string[]
  /** Old files removed after the rebuilt state was durable. */
  removed: string[]
  /** Every damage found, one entry per file. */
  problems: RepairProblem[]
}

/** The subdirectory damaged files are moved to. */
export const LOST_DIR = 'lost'

function message (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * Rebuilds the database in `location` as described at the top of this file.
 * Fails with LEVEL_LOCKED if the database is open, and changes nothing unless
 * the rebuilt state could be written; LEVEL_NOT_SUPPORTED, changing nothing, if
 * the directory holds a LevelDB database. Table-building options as for open.
 */
export async function repair (location: string, options: RepairOptions = {}, fs: FileSystem = nodeFileSystem): Promise<RepairReport> {
  const opts = resolveOptions(options as Partial<Record<keyof EngineOptions, unknown>>)
  const dir = path.resolve(location)
  if (!fs.exists(dir)) throw levelError('LEVEL_INVALID_OPTION', `Cannot repair: the database directory does not exist: ${dir}`)
  refuseLevelDB(fs, dir, 'repair') // it would take LevelDB's files for damaged ones of its own
  const lock = acquireLock(fs, dir)
  try {
    return await repairLocked(fs, dir, opts)
  } finally {
    lock.release()
  }
}

interface Source {
  iterator: () => InternalIterator
  close: () => void
}

async function repairLocked (fs: FileSystem, dir: string, opts: EngineOptions): Promise<RepairReport> {
  const report: RepairReport = {
    tables: { kept: [], salvaged: [], dropped: [], blocksLost: 0 },
    logs: { replayed: [], records: 0, droppedBytes: 0 },
    entriesRecovered: 0,
    keys: 0,
    newTables: [],
    manifest: '',
    lastSequence: 0,
    archived: [],
    removed: [],
    problems: []
  }
  const names = fs.list(dir).sort()
  const tables: number[] = []
  const logs: number[] = []
  let nextNumber = 1
  for (const name of names) {
    const p = parseFileName(name)
    if (p === undefined) continue
    if (p.number >= nextNumber) nextNumber = p.number + 1
    if (p.type === 'table') tables.push(p.number)
    else if (p.type === 'log') logs.push(p.number)
  }
  tables.sort((a, b) => a - b)
  logs.sort((a, b) => a - b)

  const cache = new BlockCache(0)
  const sources: Source[] = []
  const toArchive: string[] = []
  const toRemove: string[] = []
  let maxSeq = 0
  /** Range tombstones replayed from the logs: applied by the merge (those only in the old manifest are lost). */
  const rangeTombstones: RangeTombstone[] = []
  const problem = (file: string, msg: string): void => { report.problems.push({ file, message: msg }) }

  try {
    // ---- tables
    for (const number of tables) {
      const name = tableName(number)
      let table: Table
      try {
        table = Table.open(fs, join(dir, name), name, cache)
      } catch (err) {
        if (!isLevelError(err, 'LEVEL_CORRUPTION')) throw err
        report.tables.dropped.push(name)
        toArchive.push(name)
        problem(name, `dropped, unreadable: ${message(err)}`)
        continue
      }
      let scan = scanTable(table, undefined)
      if (scan.error !== undefined) scan = scanTable(table, new MemTable()) // again, collecting what is readable
      if (scan.seq > maxSeq) maxSeq = scan.seq
      report.entriesRecovered += scan.entries
      if (scan.salvage === undefined) {
        report.tables.kept.push(name)
        toRemove.push(name)
        sources.push({ iterator: () => table.iterator(), close: () => table.unref() })
      } else {
        table.unref()
        const mem = scan.salvage
        report.tables.salvaged.push(name)
        report.tables.blocksLost += scan.blocksLost
        toArchive.push(name)
        problem(name, `salvaged ${mem.entryCount()} entries; ${scan.blocksLost} of ${scan.blocks} data blocks lost: ${scan.error}`)
        sources.push({ iterator: () => mem.iterator(), close: () => {} })
      }
    }

    // ---- logs
    for (const number of logs) {
      const name = logName(number)
      const mem = new MemTable()
      const reader = new LogReader(fs, join(dir, name), name)
      let dropped = 0
      const why: string[] = []
      let records = 0
      let undecodable = false
      try {
        while (!undecodable) {
          let at = reader.offset
          for (let rec = reader.next(); rec !== undefined; at = reader.offset, rec = reader.next()) {
            let batch
            try {
              batch = decodeBatch(rec, name)
            } catch (err) {
              if (!isLevelError(err, 'LEVEL_CORRUPTION')) throw err
              // A record whose checksum holds but whose batch does not decode: the
              // log's writer was broken, and nothing after it can be trusted.
              why.push(`record at offset ${at}: ${message(err)}`)
              dropped += fileSize(fs, join(dir, name)) - at
              undecodable = true
              break
            }
            let s = batch.firstSeq
            for (const op of batch.ops) {
              if (op.kind === OP_RANGE_DELETE) rangeTombstones.push({ start: Buffer.from(op.key), end: op.end === undefined ? undefined : Buffer.from(op.end), seq: s++ })
              else mem.add(s++, op.kind, Buffer.from(op.key), op.value ? Buffer.from(op.value) : Buffer.alloc(0))
            }
            if (s - 1 > maxSeq) maxSeq = s - 1
            records++
          }
          if (undecodable) break
          const tail = reader.tail
          if (tail.state === 'clean' || (tail.state === 'torn' && tailIsZeros(fs, join(dir, name), tail.offset))) break
          // Damage with valid records after it: those are kept too.
          if (reader.skipDamage()) {
            dropped += tail.nextValidOffset - tail.offset
            why.push(`${tail.nextValidOffset - tail.offset} damaged bytes at offset ${tail.offset}`)
            continue
          }
          dropped += tail.droppedBytes
          why.push(`${tail.state} record at offset ${tail.offset}`)
          break
        }
      } finally {
        reader.close()
      }
      report.logs.replayed.push(name)
      report.logs.records += records
      report.entriesRecovered += mem.entryCount()
      if (dropped > 0) {
        report.logs.droppedBytes += dropped
        toArchive.push(name)
        problem(name, `replayed ${records} records; ${dropped} bytes dropped: ${why.join('; ')}`)
      } else {
        toRemove.push(name)
      }
      if (mem.entryCount() > 0) sources.push({ iterator: () => mem.iterator(), close: () => {} })
    }

    // ---- merge into fresh tables (newest version of each key; no tombstones), a manifest naming them
    const loaded = await bulkLoad({
      fs,
      dir,
      options: opts,
      input: new MergingIterator(sources.map((s) => s.iterator())),
      firstFileNumber: nextNumber,
      lastSequence: maxSeq,
      rangeTombstones: RangeTombstoneIndex.build(rangeTombstones)
    })
    for (const meta of loaded.tables) {
      report.keys += meta.entries
      report.newTables.push(tableName(meta.number))
    }
    report.lastSequence = maxSeq
    report.manifest = loaded.manifest
  } finally {
    for (const s of sources) s.close()
  }

  // ---- retire the old state (now orphans of the new manifest)
  for (const name of fs.list(dir)) {
    const p = parseFileName(name)
    if (p === undefined) continue
    if ((p.type === 'manifest' && name !== report.manifest) || p.type === 'temp') toRemove.push(name)
  }
  if (toArchive.length > 0) fs.mkdirp(join(dir, LOST_DIR))
  for (const name of toArchive) {
    // Never over an earlier repair's archive (file numbers are reused after a repair).
    let target = path.join(LOST_DIR, name)
    for (let i = 1; fs.exists(join(dir, target)); i++) target = path.join(LOST_DIR, `${name}.${i}`)
    fs.rename(join(dir, name), join(dir, target))
    report.archived.push(target)
  }
  for (const name of toRemove) {
    fs.remove(join(dir, name))
    report.removed.push(name)
  }
  fs.syncDir(dir)
  return report
}

interface TableScan {
  /** Entries read (all of them if intact; those of the readable blocks if salvaged). */
  entries: number
  /** Highest sequence number read. */
  seq: number
  blocks: number
  blocksLost: number
  /** Set if the table is damaged: the entries of its readable blocks. */
  salvage?: MemTable
  error?: string
}

/**
 * Reads every data block of `table`. Intact: every block readable, entries in
 * strictly increasing internal order, count and bounds as the properties say.
 * Otherwise `error` says why, and the entries of the readable blocks (in order)
 * are in `salvage` if `mem` was given to collect them.
 */
function scanTable (table: Table, mem: MemTable | undefined): TableScan {
  const blocks = table.dataBlockCount
  const scan: TableScan = { entries: 0, seq: 0, blocks, blocksLost: 0 }
  let prevKey: Buffer | undefined
  let prevSeq = 0
  let first: { key: Buffer, seq: number } | undefined
  let outOfOrder = 0
  for (let b = 0; b < blocks; b++) {
    let it: BlockIterator
    try {
      it = new BlockIterator(table.dataBlock(b))
    } catch (err) {
      if (!isLevelError(err, 'LEVEL_CORRUPTION')) throw err
      scan.blocksLost++
      scan.error ??= message(err)
      continue
    }
    for (it.seekToFirst(); it.valid(); it.next()) {
      const key = currentUserKey(it)
      const seq = it.seq()
      if (prevKey !== undefined && compareInternal(prevKey, prevSeq, key, seq) >= 0) {
        outOfOrder++
        scan.error ??= `entries out of order in data block ${b}`
        continue
      }
      prevKey = Buffer.from(key)
      prevSeq = seq
      first ??= { key: prevKey, seq }
      mem?.add(seq, it.kind(), prevKey, Buffer.from(currentValue(it)))
      scan.entries++
      if (seq > scan.seq) scan.seq = seq
    }
  }
  const p = table.properties
  const boundsAgree = scan.entries === 0 ||
    (first !== undefined && prevKey !== undefined &&
      compareInternal(first.key, first.seq, p.smallest.userKey, p.smallest.seq) === 0 &&
      compareInternal(prevKey, prevSeq, p.largest.userKey, p.largest.seq) === 0)
  if (scan.blocksLost > 0 || outOfOrder > 0 || scan.entries !== p.entries || !boundsAgree) {
    scan.error ??= `holds ${scan.entries} readable entries, its properties say ${p.entries}`
    scan.salvage = mem
  }
  return scan
}

/**
 * Deletes the database in `location`: its own files (CURRENT, LOCK, MANIFEST-*,
 * *.log, *.sst, *.tmp), then the directory if nothing else is left in it. Other
 * files (and `lost/` from a repair) are left alone. Fails with LEVEL_LOCKED if
 * the database is open, LEVEL_NOT_SUPPORTED if it is a LevelDB database. A
 * missing directory is not an error.
 */
export async function destroy (location: string, fs: FileSystem = nodeFileSystem): Promise<void> {
  const dir = path.resolve(location)
  if (!fs.exists(dir)) return
  refuseLevelDB(fs, dir, 'destroy') // it would remove some of LevelDB's files, not its tables
  const lock = acquireLock(fs, dir)
  try {
    // CURRENT first: should this be interrupted, what is left is not a database
    // that opens with files missing (open refuses a directory with tables or logs
    // but no CURRENT).
    const names = fs.list(dir).sort((a, b) => (a === CURRENT ? -1 : b === CURRENT ? 1 : 0))
    for (const name of names) {
      const p = parseFileName(name)
      // A multiProcess owner's socket, left by one that died (we hold the LOCK: nobody listens there).
      if (name === OWNER_SOCKET) fs.remove(join(dir, name))
      if (p === undefined || p.type === 'lock') continue
      fs.remove(join(dir, name))
    }
  } finally {
    lock.release() // removes LOCK
  }
  fs.removeDirIfEmpty(dir)
}
