// Recovery: what open() does between taking the lock and taking writes.
//
//   1. Read the manifest named by CURRENT (or start a new database).
//   2. Replay the logs not yet in tables (number >= the manifest's logNumber),
//      in order, one memtable per log.
//   3. Create the new log (or take over the newest log if it held no record
//      and no damage: a database opened and closed again and again, each
//      time before its replayed memtables were flushed, does not pile up
//      empty logs; and the empty live log a clean close leaves); record the
//      log it starts from (the oldest replayed log that stays live, else the
//      new one) and the newest sequence number: one edit appended to the
//      manifest read in 1 (VersionSet.resumeManifest), or a fresh manifest
//      holding the state read in 1 and them. A directory sync first makes the
//      new log's entry durable too.
//   4. Remove orphans: files no version or live log refers to (left by a crash).
//
// What open waits for, and what it leaves to the background. A clean replay
// (every log's records valid to its end, or to the zeros written ahead of
// them) writes no table: the replayed memtables become frozen memtables, each
// with the log that holds its writes, and the engine flushes them after open
// resolves, as it flushes any frozen memtable; each flush's edit retires its
// log. Until then the replayed logs stay live, so a crash before the flush
// replays them again. Before new writes may go to the new log, the replayed
// logs are synced (the writer that was killed may have left them in the page
// cache only): a power loss must not keep new writes and lose older ones.
// A replay that dropped damage, or whose memtable grew too large in the middle
// of a log (isFull: a log far larger than this open's writeBufferSize), writes its
// memtables to level-0 tables before open resolves instead, and the edit of
// step 3 is followed by a version edit that adds those tables and retires
// every replayed log at once: the damaged tail must not stay in a live log
// that newer logs follow (see recover()).
//
// Damaged logs (option walRecovery, lib/options.ts): by default ('torn-tail')
// replay drops the damage a crash can leave, only at the end of the newest log
// holding records, and fails the open with LEVEL_CORRUPTION naming the log and
// the offset for damage a crash cannot leave: a flipped bit with valid records
// after it, a damaged log followed by newer ones, a missing live log, a gap in
// the sequence numbers from record to record and from log to log. What was
// dropped is in the report (db.stats().recovery).
//
// A clean close records in the manifest the logs still needed, synced, with
// where their records end, and the newest sequence number (LogsAtClose). While
// that record is the manifest's last edit (the open writes a new manifest
// without it), 'torn-tail' and 'absolute' refuse any of those logs that is
// missing, shorter, damaged before that end, or holds records after it: no
// crash explains damage to a closed database's files.
import { createWhenRoom, fileSize, type FileSystem } from './fs/fs'
import type { VersionSet } from './manifest/version-set'
import type { LogsAtClose } from './manifest/version-edit'
import type { FileMeta } from './manifest/file-meta'
import { MemTable } from './memtable/memtable'
import { LogReader, tailIsZeros, type TailStatus } from './wal/log-reader'
import { batchSequence, checkBatch } from './wal/batch'
import type { RangeTombstone } from './range-tombstones'
import { join, logName, logNumbers, manifestName, parseFileName, tableName } from './filenames'
import { corruption, levelError } from './errors'
import type { WalRecovery } from './options'

/** A stretch of a log that recovery did not replay. */
export interface DroppedLogData {
  file: string
  offset: number
  bytes: number
  /**
   * torn: a damaged record with nothing valid after it (an interrupted write);
   * damaged: a damaged stretch with valid records after it; missing: the live
   * log is gone; sequence-gap: records continue after missing sequence numbers;
   * after-damage: a newer log, not replayed because an older one was cut.
   */
  reason: 'torn' | 'damaged' | 'missing' | 'sequence-gap' | 'after-damage'
}

/** What recovery found and did, for users (db.stats().recovery) and tests. */
export interface RecoveryReport {
  walRecovery: WalRecovery
  logsReplayed: number
  recordsReplayed: number
  /**
   * Records not read at all: a multiProcess client that took over had
   * replayed them already, tailing the logs for its own reads (ReplayedPrefix).
   */
  recordsAdopted: number
  /** What of the logs was not replayed, in log order (zeros written ahead of a log's records are not counted). */
  dropped: DroppedLogData[]
  orphansRemoved: string[]
}

export function emptyRecoveryReport (walRecovery: WalRecovery): RecoveryReport {
  return { walRecovery, logsReplayed: 0, recordsReplayed: 0, recordsAdopted: 0, dropped: [], orphansRemoved: [] }
}

export interface RecoveryContext {
  fs: FileSystem
  dir: string
  versions: VersionSet
  createIfMissing: boolean
  errorIfExists: boolean
  walRecovery: WalRecovery
  /** Creates log `number` as the log new writes go to; recovery makes its directory entry durable. */
  createLog (number: number): void
  /** True once a replayed memtable is too large to wait for a flush after open: it is written out during the open. */
  isFull (mem: MemTable): boolean
  /** Writes a replayed memtable to level-0 tables (not yet in the manifest); `lastSeq` is the newest sequence number replayed. */
  writeLevel0 (mem: MemTable, lastSeq: number): Promise<FileMeta[]>
  /**
   * Logs already replayed in part by a read-only open of this database in
   * this process (lib/follower.ts, Follower.handOver), asked for once the
   * lock is held: the replay continues each after the records it holds.
   */
  replayedPrefixes?: () => ReplayedPrefix[]
}

/**
 * The first records of a log, valid and in sequence, already in a memtable
 * (a read-only open tailed them): the replay of that log starts at `offset`
 * with that memtable. A log is only ever appended to, so those records are
 * the ones the replay would read; they are used only where the replay would
 * start that log with an empty memtable and their first sequence number
 * continues the logs before.
 */
export interface ReplayedPrefix {
  logNumber: number
  mem: MemTable
  /** Where the records after them start. */
  offset: number
  /** How many records, the sequence number of the first, and that of the record after them. */
  records: number
  firstSeq: number
  nextSeq: number
}

/** A memtable replayed from one log, not yet in tables. */
export interface ReplayedMemTable {
  mem: MemTable
  /** The log that holds its writes (live until the memtable is flushed). */
  logNumber: number
  /** Where that log's records end. */
  logEnd: number
}

export interface Recovered {
  report: RecoveryReport
  /** The newest sequence number in the database. */
  lastSequence: number
  /** The log new writes go to (created; the manifest names it, or the oldest of `unflushed`'s logs). */
  logNumber: number
  /** The replayed memtables to flush in the background, oldest first (see the top of this file). */
  unflushed: ReplayedMemTable[]
}

/** Steps 1 to 3 above. The directory exists and is locked. */
export async function recover (ctx: RecoveryContext): Promise<Recovered> {
  const { fs, dir, versions } = ctx
  const created = !versions.exists()
  if (!created) {
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

  // Nothing is written until the replay succeeded but the tables it fills: a
  // failed open removes them and leaves the directory as it found it.
  const report = emptyRecoveryReport(ctx.walRecovery)
  const replayed: Replayed = { flushed: false, tables: [], tombstones: [], unflushed: [], lastSequence: versions.lastSequence }
  try {
    await replayLogs(ctx, report, replayed)
  } catch (err) {
    for (const t of replayed.tables) fs.remove(join(dir, tableName(t.number)))
    throw err
  }
  // Logs that stay live are durable before any newer log takes records (see the
  // top of this file); the manifest's directory syncs make their names durable too.
  for (const u of replayed.unflushed) fs.syncFile(join(dir, logName(u.logNumber)))
  // A file system that makes files ahead of use makes the new manifest,
  // CURRENT's temporary file and the new log first.
  await createWhenRoom(fs, dir, 3, () => {})
  if (!replayed.flushed && !created) {
    const logNumber = replayed.emptyNewestLog ?? versions.newFileNumber()
    // Nothing to add to the version (no table, no range tombstone): one edit
    // records the rest, appended to the manifest or in a new one
    // (VersionSet.resumeManifest), after a directory sync that covers the new
    // log and the replayed logs' names. Not needed when the new log is the
    // empty live log the manifest names, nothing replayed (a clean close's):
    // its entry was durable before an edit named it. (Not for a new database:
    // a log without CURRENT would make a crash before CURRENT look like a
    // database that lost it.)
    // When that log is also the one the manifest names, the edit records
    // nothing new: it is owed until the first write (VersionSet.deferResume).
    const entriesKnownDurable = replayed.unflushed.length === 0 && logNumber === versions.logNumber
    ctx.createLog(logNumber)
    const resumed = {
      logNumber: replayed.unflushed.length > 0 ? replayed.unflushed[0].logNumber : logNumber,
      lastSequence: replayed.lastSequence
    }
    if (entriesKnownDurable) versions.deferResume(resumed)
    else versions.resumeManifest(resumed, true)
    return { report, lastSequence: replayed.lastSequence, logNumber, unflushed: replayed.unflushed }
  }
  versions.writeNewManifest()
  const logNumber = replayed.emptyNewestLog ?? versions.newFileNumber()

  // The edit that retires the replayed logs is made durable BEFORE new writes
  // go to the new log: a crash in between must not leave a replayed log
  // (possibly with a torn tail) followed by a newer log holding records, which
  // the next open would take for mid-history damage. The new log exists before
  // the edit names it, so a live log that is missing is always damage. The
  // tables the replay wrote join the version in this same edit: were they
  // recorded first, a crash before the logs' retirement would make the next
  // open replay those logs again into NEWER-numbered level-0 tables holding
  // OLDER data (and, if a log lost its unsynced tail meanwhile, less of it),
  // which reads would then wrongly prefer.
  ctx.createLog(logNumber)
  fs.syncDir(dir)
  await versions.logAndApply({
    newFiles: replayed.tables.map((meta) => ({ level: 0, meta })),
    rangeTombstones: replayed.tombstones,
    logNumber,
    lastSequence: replayed.lastSequence
  })
  return { report, lastSequence: replayed.lastSequence, logNumber, unflushed: [] }
}

/**
 * Step 4: removes the files no version uses, but for the logs in `keepLogs`
 * (the live log, retired logs kept for the change feed); adds them to the report.
 */
export function removeOrphans (fs: FileSystem, dir: string, versions: VersionSet, keepLogs: Set<number>, report: RecoveryReport): void {
  for (const name of versions.orphanFiles(keepLogs)) {
    fs.remove(join(dir, name))
    report.orphansRemoved.push(name)
  }
}

interface Replayed {
  /** True if the replay wrote memtables out (damage dropped, or a memtable filled up): to the tables below and the tombstones. */
  flushed: boolean
  /** Level-0 tables written by the replay (none if range tombstones covered every entry). */
  tables: FileMeta[]
  tombstones: RangeTombstone[]
  /** Otherwise: the memtable of each log that held records, oldest first. */
  unflushed: ReplayedMemTable[]
  lastSequence: number
  /** The newest log, if it held no record and no damage (zeros aside): it becomes the new log. */
  emptyNewestLog?: number
}

/** Step 2 above. */
async function replayLogs (ctx: RecoveryContext, report: RecoveryReport, out: Replayed): Promise<void> {
  const { fs, dir, versions, walRecovery: mode } = ctx
  const flush = async (mem: MemTable): Promise<void> => {
    out.flushed = true
    out.tables.push(...await ctx.writeLevel0(mem, out.lastSequence))
    out.tombstones.push(...mem.rangeTombstones())
  }
  // Once one table is written, every replayed memtable is (in log order, so that
  // newer data gets newer table numbers), and the memtable runs on across logs.
  let writeTables = false
  const flushUnflushed = async (): Promise<void> => {
    writeTables = true
    for (const u of out.unflushed) await flush(u.mem)
    out.unflushed.length = 0
  }
  const logs = logNumbers(fs, dir, versions.logNumber)
  const size = (number: number): number => fileSize(fs, join(dir, logName(number)))
  // The live log is created before the manifest names it (recover(), and a
  // rotation long before the flush that names the next log), so its absence is
  // damage: its writes are gone. (A missing live log followed by newer logs
  // fails earlier, in VersionSet.recover.)
  if (versions.logNumber > 0 && logs[0] !== versions.logNumber) {
    const name = logName(versions.logNumber)
    if (mode === 'torn-tail' || mode === 'absolute') {
      throw corruption(name, `missing, but the manifest names it as the live log: the writes it held are lost (walRecovery 'point-in-time' opens the database without them)`)
    }
    report.dropped.push({ file: name, offset: 0, bytes: 0, reason: 'missing' })
  }
  const atClose = mode === 'torn-tail' || mode === 'absolute' ? versions.logsAtClose : undefined
  // Named in every refusal the record leads to: a manifest cut back to that
  // record (its later edits lost) is the other explanation of such a refusal.
  const closedIn = ` (the record of the clean close in ${manifestName(versions.manifestNumber)})`
  if (atClose !== undefined) checkLogsAtClose(fs, dir, atClose, logs, closedIn)
  const prefixes = new Map((ctx.replayedPrefixes?.() ?? []).map((p) => [p.logNumber, p]))
  let mem = new MemTable()
  // Sequence numbers run on without a gap from record to record and from log to
  // log (the first record may repeat numbers the manifest already counts): a gap
  // means records were lost, e.g. an older log cut at a record boundary or removed.
  let nextSeq = -1
  let stopped = false
  for (let i = 0; i < logs.length; i++) {
    const name = logName(logs[i])
    /** Where its records ended at a clean close, if the database was closed cleanly. */
    const recordedEnd = atClose?.logs.find((l) => l.number === logs[i])?.size
    if (stopped) {
      // Point-in-time: nothing after the damage is replayed.
      const bytes = size(logs[i])
      if (bytes > 0) report.dropped.push({ file: name, offset: 0, bytes, reason: 'after-damage' })
      continue
    }
    // A prefix this process replayed already (a client taking over): the
    // replay goes on after it, if it continues the logs before.
    const prefix = prefixes.get(logs[i])
    const continues = prefix !== undefined && prefix.records > 0 && mem.isEmpty() &&
      (mode === 'skip-damaged' || (nextSeq < 0 ? prefix.firstSeq <= versions.lastSequence + 1 : prefix.firstSeq === nextSeq))
    let first = true
    let offset = 0
    if (continues) {
      mem = prefix.mem
      first = false
      offset = prefix.offset
      nextSeq = prefix.nextSeq
      if (nextSeq - 1 > out.lastSequence) out.lastSequence = nextSeq - 1
      report.recordsAdopted += prefix.records
      if (ctx.isFull(mem)) {
        await flushUnflushed()
        await flush(mem)
        mem = new MemTable()
      }
    }
    const reader = new LogReader(fs, join(dir, name), name, offset)
    const droppedBefore = report.dropped.length
    try {
      for (;;) {
        for (let rec = reader.nextView(); rec !== undefined; rec = reader.nextView()) {
          const count = checkBatch(rec, name)
          const firstSeq = batchSequence(rec)
          if (mode !== 'skip-damaged' && (nextSeq < 0 ? firstSeq > versions.lastSequence + 1 : firstSeq !== nextSeq)) {
            const at = first && i > 0 ? logName(logs[i - 1]) : name
            const expected = nextSeq < 0 ? `at most ${versions.lastSequence + 1}` : String(nextSeq)
            if (mode !== 'point-in-time') throw corruption(at, `records are missing: ${name} continues at sequence number ${firstSeq}, expected ${expected}`)
            report.dropped.push({ file: name, offset, bytes: size(logs[i]) - offset, reason: 'sequence-gap' })
            stopped = true
            break
          }
          nextSeq = firstSeq + count
          first = false
          offset = reader.offset
          // A view of the reader's window (copied into the memtable's arena), or
          // a large record's own buffer (which becomes part of the arena).
          mem.addBatch(rec, firstSeq)
          if (nextSeq - 1 > out.lastSequence) out.lastSequence = nextSeq - 1
          report.recordsReplayed++
          if (ctx.isFull(mem)) {
            await flushUnflushed()
            await flush(mem)
            mem = new MemTable()
          }
        }
        if (stopped) break
        const tail = reader.tail
        // A log may end in zeros: the space written ahead of its records
        // (hosts/node/node-fs.ts, preallocation), still there when the process
        // stopped or a retired log's trim had not reached the disk. That is no
        // damage (a write whose size reached the disk and data did not leaves
        // the same; such a write was never synced).
        if (recordedEnd !== undefined && tail.offset < recordedEnd) {
          throw corruption(name, `damaged record at offset ${tail.offset}, in the first ${recordedEnd} bytes, which the database synced and recorded in its manifest when it was closed cleanly: nothing a crash does explains it (walRecovery 'point-in-time' opens the database as it was before it; repair() keeps the valid records after it too)`)
        }
        if (tail.state === 'clean' || (tail.state === 'torn' && tailIsZeros(fs, join(dir, name), tail.offset))) break
        const crashCannotExplain = whyNotACrash(tail, logs.slice(i + 1).some((n) => size(n) > 0))
        if (mode === 'skip-damaged' && tail.validRecordAfter) {
          report.dropped.push({ file: name, offset: tail.offset, bytes: tail.nextValidOffset - tail.offset, reason: 'damaged' })
          reader.skipDamage()
          offset = tail.nextValidOffset
          continue
        }
        if (mode === 'absolute') throw corruption(name, `damaged record at offset ${tail.offset}${crashCannotExplain ?? ''} (walRecovery is 'absolute')`)
        if (mode === 'torn-tail' && crashCannotExplain !== undefined) {
          throw corruption(name, `damaged record at offset ${tail.offset}${crashCannotExplain}; a crash cannot leave this (walRecovery 'point-in-time' opens the database as it was before it; repair() keeps the valid records after it too)`)
        }
        report.dropped.push({ file: name, offset: tail.offset, bytes: tail.droppedBytes, reason: tail.state === 'torn' ? 'torn' : 'damaged' })
        stopped = mode !== 'skip-damaged'
        break
      }
    } finally {
      reader.close()
    }
    report.logsReplayed++
    const empty = first && report.dropped.length === droppedBefore
    out.emptyNewestLog = empty && i === logs.length - 1 ? logs[i] : undefined
    if (recordedEnd !== undefined) checkLogEnd(name, offset, recordedEnd, closedIn)
    if (!writeTables && !mem.isEmpty()) {
      out.unflushed.push({ mem, logNumber: logs[i], logEnd: offset })
      mem = new MemTable()
    }
  }
  if (atClose !== undefined && out.lastSequence !== atClose.lastSequence) {
    throw corruption(logs.length > 0 ? logName(logs[logs.length - 1]) : logName(versions.logNumber), `the logs end at sequence number ${out.lastSequence}, but the database was closed cleanly at ${atClose.lastSequence}${closedIn}`)
  }
  if (report.dropped.length > 0) await flushUnflushed()
  if (!mem.isEmpty()) await flush(mem)
}

/**
 * A database closed cleanly recorded the logs it still needed and their sizes
 * (LogsAtClose): after it, no crash can have torn or lost any of them. The logs
 * found must be exactly those, each at least that large (what lies beyond is
 * zeros the replay accepts or records it refuses, checkLogEnd).
 */
function checkLogsAtClose (fs: FileSystem, dir: string, atClose: LogsAtClose, found: number[], closedIn: string): void {
  for (const l of atClose.logs) {
    const name = logName(l.number)
    if (!found.includes(l.number)) throw corruption(name, `missing, but the database was closed cleanly${closedIn} with ${l.size} bytes of records in it: the writes it held are lost (walRecovery 'point-in-time' opens the database without them)`)
    const size = fileSize(fs, join(dir, name))
    if (size < l.size) throw corruption(name, `${size} bytes, but the database was closed cleanly${closedIn} with ${l.size} bytes of records in it: the writes at its end are lost (walRecovery 'point-in-time' opens the database without them)`)
  }
  for (const n of found) {
    if (!atClose.logs.some((l) => l.number === n) && fileSize(fs, join(dir, logName(n))) > 0) {
      throw corruption(logName(n), `not among the logs the database named when it was closed cleanly${closedIn}`)
    }
  }
}

/** The records of a log replayed to its end must end where they ended at a clean close. */
function checkLogEnd (name: string, end: number, recordedEnd: number, closedIn: string): void {
  if (end < recordedEnd) throw corruption(name, `its records end at offset ${end}, but at ${recordedEnd} when the database was closed cleanly${closedIn}: the writes after it are lost (walRecovery 'point-in-time' opens the database without them)`)
  if (end > recordedEnd) throw corruption(name, `holds records after offset ${recordedEnd}, where they ended when the database was closed cleanly${closedIn}`)
}

/**
 * Undefined if a crash can have left a log's damaged tail (see walRecovery in
 * lib/options.ts); otherwise why not, as the rest of an error message.
 */
function whyNotACrash (tail: TailStatus, newerLogsHoldRecords: boolean): string | undefined {
  // A log takes records only once the logs before it are synced (lib/wal/
  // log-manager.ts): a crash leaves damage in the newest log holding records
  // only. (A torn retired log with empty newer ones: a crash right after a rotation.)
  if (newerLogsHoldRecords) return ' in a log followed by newer logs'
  if (tail.state === 'torn') return undefined
  // Valid records follow the damage. A crash can leave that (pages written
  // back out of order: what was lost reads as zeros), but it only ever loses
  // bytes: one flipped bit whose byte is not zero now is damage.
  const flip = tail.bitFlip
  if (flip !== undefined && flip.byte !== 0) {
    return `: one flipped bit (bit ${flip.bit} of the byte at offset ${flip.offset}), and valid records follow it`
  }
  if (!tail.validRecordAfter) return ': too much damaged data to search for valid records after it'
  return undefined
}
