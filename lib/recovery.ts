// Recovery: what open() does between taking the lock and taking writes.
//
//   1. Read the manifest named by CURRENT (or start a new database), then write
//      a fresh manifest holding that state.
//   2. Replay the logs not yet in tables (number >= the manifest's logNumber),
//      in order, into memtables; each full one is written to level-0 tables.
//   3. One version edit adds those tables, retires the replayed logs and names
//      the new log (which the engine then creates), so that the tables and
//      the retirement of the logs they came from become durable together.
//   4. Remove orphans: files no version or live log refers to (left by a crash).
//
// Point-in-time recovery: replay stops at the first damaged record of the
// newest log (an interrupted write: a torn tail), reported in
// RecoveryReport.droppedTail. Damage in an older log, which was synced before
// the next one took any record, is corruption and fails the open, as is a gap
// in the sequence numbers from record to record and from log to log.
import { fileSize, type FileSystem } from './fs/fs'
import type { VersionSet } from './manifest/version-set'
import type { FileMeta } from './manifest/file-meta'
import { MemTable } from './memtable/memtable'
import { LogReader } from './wal/log-reader'
import { decodeBatch, OP_RANGE_DELETE } from './wal/batch'
import type { RangeTombstone } from './range-tombstones'
import { join, logName, parseFileName } from './filenames'
import { corruption, levelError } from './errors'

/** What recovery found and did, for users (db.recovery) and tests. */
export interface RecoveryReport {
  logsReplayed: number
  recordsReplayed: number
  /** A damaged or torn tail of the last log that was cut off (point-in-time recovery). */
  droppedTail?: { file: string, offset: number, bytes: number, state: 'torn' | 'corrupt' }
  orphansRemoved: string[]
}

export interface RecoveryContext {
  fs: FileSystem
  dir: string
  versions: VersionSet
  createIfMissing: boolean
  errorIfExists: boolean
  /** True once a replayed memtable is full and must be written out. */
  isFull (mem: MemTable): boolean
  /** Writes a replayed memtable to level-0 tables (not yet in the manifest); `lastSeq` is the newest sequence number replayed. */
  writeLevel0 (mem: MemTable, lastSeq: number): Promise<FileMeta[]>
}

export interface Recovered {
  report: RecoveryReport
  /** The newest sequence number in the database. */
  lastSequence: number
  /** The log new writes go to: recorded in the manifest, not created yet. */
  logNumber: number
}

/** Steps 1 to 3 above. The directory exists and is locked. */
export async function recover (ctx: RecoveryContext): Promise<Recovered> {
  const { fs, dir, versions } = ctx
  if (versions.exists()) {
    if (ctx.errorIfExists) throw levelError('LEVEL_INVALID_OPTION', `Database already exists and errorIfExists is true: ${dir}`)
    versions.recover()
  } else {
    // A manifest without CURRENT (and no log or table) is a creation that crashed
    // before CURRENT was written: it holds no data, so the database is created anew
    // (the stray manifest is overwritten or removed as an orphan).
    const ours = fs.list(dir).filter((n) => {
      const p = parseFileName(n)
      return p !== undefined && (p.type === 'table' || p.type === 'log')
    })
    if (ours.length > 0) throw corruption('CURRENT', `missing, but the directory holds database files (${ours.slice(0, 3).join(', ')})`)
    if (!ctx.createIfMissing) throw levelError('LEVEL_INVALID_OPTION', `Database does not exist and createIfMissing is false: ${dir}`)
  }
  versions.writeNewManifest()

  const report: RecoveryReport = { logsReplayed: 0, recordsReplayed: 0, orphansRemoved: [] }
  const replayed = await replayLogs(ctx, report)

  // The edit that retires the replayed logs is made durable BEFORE the new log
  // exists: a crash in between must not leave a replayed log (possibly with a
  // torn tail) followed by a newer log, which the next open would take for
  // mid-history damage. A logNumber naming a log that was never created is
  // harmless. The tables the replay wrote join the version in this same edit:
  // were they recorded first, a crash before the logs' retirement would make
  // the next open replay those logs again into NEWER-numbered level-0 tables
  // holding OLDER data (and, if a log lost its unsynced tail meanwhile, less of
  // it), which reads would then wrongly prefer.
  const logNumber = versions.newFileNumber()
  await versions.logAndApply({
    newFiles: replayed.tables.map((meta) => ({ level: 0, meta })),
    rangeTombstones: replayed.tombstones,
    logNumber,
    lastSequence: replayed.lastSequence
  })
  return { report, lastSequence: replayed.lastSequence, logNumber }
}

/** Step 4: removes the files no version uses, but for log `liveLog`; adds them to the report. */
export function removeOrphans (fs: FileSystem, dir: string, versions: VersionSet, liveLog: number, report: RecoveryReport): void {
  for (const name of versions.orphanFiles(new Set([liveLog]))) {
    fs.remove(join(dir, name))
    report.orphansRemoved.push(name)
  }
}

interface Replayed {
  tables: FileMeta[]
  tombstones: RangeTombstone[]
  lastSequence: number
}

/** Step 2 above. */
async function replayLogs (ctx: RecoveryContext, report: RecoveryReport): Promise<Replayed> {
  const { fs, dir, versions } = ctx
  const out: Replayed = { tables: [], tombstones: [], lastSequence: versions.lastSequence }
  const flush = async (mem: MemTable): Promise<void> => {
    out.tables.push(...await ctx.writeLevel0(mem, out.lastSequence))
    out.tombstones.push(...mem.rangeTombstones())
  }
  const logs = fs.list(dir)
    .map((n) => parseFileName(n))
    .filter((p): p is { type: 'log', number: number } => p !== undefined && p.type === 'log' && p.number >= versions.logNumber)
    .map((p) => p.number)
    .sort((a, b) => a - b)
  let mem = new MemTable()
  // Sequence numbers run on without a gap from record to record and from log to
  // log (the first record may repeat numbers the manifest already counts): a gap
  // means records were lost, e.g. an older log cut at a record boundary or removed.
  let nextSeq = -1
  for (let i = 0; i < logs.length; i++) {
    const name = logName(logs[i])
    const reader = new LogReader(fs, join(dir, name), name)
    let first = true
    try {
      for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
        const batch = decodeBatch(rec, name)
        if (nextSeq < 0 ? batch.firstSeq > versions.lastSequence + 1 : batch.firstSeq !== nextSeq) {
          const at = first && i > 0 ? logName(logs[i - 1]) : name
          throw corruption(at, `records are missing: ${name} continues at sequence number ${batch.firstSeq}, expected ${nextSeq < 0 ? `at most ${versions.lastSequence + 1}` : nextSeq}`)
        }
        nextSeq = batch.firstSeq + batch.ops.length
        first = false
        let seq = batch.firstSeq
        // The record's buffer is reused by the reader: range bounds are copied
        // (add copies keys and values into the memtable's arena).
        for (const op of batch.ops) {
          if (op.kind === OP_RANGE_DELETE) mem.addRangeTombstone(seq++, Buffer.from(op.key), op.end && Buffer.from(op.end))
          else mem.add(seq++, op.kind, op.key, op.value ?? EMPTY)
        }
        if (seq - 1 > out.lastSequence) out.lastSequence = seq - 1
        report.recordsReplayed++
        if (ctx.isFull(mem)) {
          await flush(mem)
          mem = new MemTable()
        }
      }
    } finally {
      reader.close?.()
    }
    report.logsReplayed++
    const tail = reader.tail
    // A retired log may end in zeros: the space written ahead of its records
    // (lib/fs/node-fs.ts, preallocation), still there when its trim had not
    // run or had not reached the disk at the crash. Nothing is missing behind
    // it: a log's records are all synced before the next log takes any
    // (lib/wal/log-manager.ts), and the next log's first record must continue
    // its sequence numbers (checked above), so lost records would still be caught.
    if (tail.state === 'torn' && i < logs.length - 1 && tailIsZeros(fs, join(dir, name), tail.offset)) continue
    if (tail.state !== 'clean') {
      // Newer logs that are empty hold nothing that could follow the damage (a log
      // takes records only once the logs before it are synced: a crash right after
      // a rotation can leave a torn retired log and an empty new one).
      if (i < logs.length - 1 && !logs.slice(i + 1).every((n) => fileSize(fs, join(dir, logName(n))) === 0)) {
        throw corruption(name, `damaged record at offset ${tail.offset} in a log followed by newer logs`)
      }
      report.droppedTail = { file: name, offset: tail.offset, bytes: tail.droppedBytes, state: tail.state }
      break
    }
  }
  if (!mem.isEmpty()) await flush(mem)
  return out
}

const EMPTY = Buffer.alloc(0)

/** True if the file holds only zero bytes from `offset` to its end. */
function tailIsZeros (fs: FileSystem, file: string, offset: number): boolean {
  const f = fs.openRead(file)
  try {
    const size = f.size()
    const buf = Buffer.allocUnsafe(64 * 1024)
    for (let pos = offset; pos < size;) {
      const n = f.read(buf, 0, Math.min(buf.length, size - pos), pos)
      if (n <= 0) return false
      for (let j = 0; j < n; j++) if (buf[j] !== 0) return false
      pos += n
    }
    return true
  } finally {
    f.close()
  }
}
