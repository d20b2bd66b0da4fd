// The engine: open and recovery, the write path (group commit into the
// write-ahead log, then the memtable), reads through memtables and levels,
// snapshots, and the scheduling of flushes and compactions. It knows nothing of
// abstract-level; index.ts translates.
//
// Write path
//   write(ops) --queue--> commit (one microtask per tick: all writes issued in
//   the same tick) --> one write(2) of their log records --> [fsync if any asked
//   for sync, shared by everything waiting] --> memtable, in log order --> resolve
//
//   Default writes resolve once write(2) returned (they survive a killed
//   process); sync writes once an fdatasync covering them returned (they survive
//   power loss). A write queued behind a sync write is applied after it, so
//   readers see writes in log order. A failed write(2) or fsync fails the writes
//   it covered and stops all further writes until the database is reopened.
//
// Read path
//   memtable -> frozen memtables (newest first) -> L0 tables (newest first) ->
//   L1..L6 (one table per level, found by binary search), each table Bloom-gated.
//   The first version visible at the read's sequence number decides.
//
// Background work
//   A full memtable is frozen and a new log started; a flush writes the frozen
//   memtable to an L0 table; the leveled picker then chooses compactions. One
//   flush and one compaction may run at a time, each on a worker thread of its
//   own (node file system), or else interleaved on the event loop in slices of a
//   few thousand entries.
import * as path from 'node:path'
import type { FileSystem } from './fs/fs'
import { nodeFileSystem } from './fs/node-fs'
import { resolveOptions, NUM_LEVELS, type EngineOptions } from './options'
import { VersionSet } from './manifest/version-set'
import type { Version } from './manifest/version'
import type { FileMeta } from './manifest/file-meta'
import type { VersionEdit } from './manifest/version-edit'
import { MemTable } from './memtable/memtable'
import { LogWriter } from './wal/log-writer'
import { LogReader } from './wal/log-reader'
import { decodeBatch, encodeBatchPayload, setBatchSequence, batchCount, OP_RANGE_DELETE, type BatchOp } from './wal/batch'
import { RangeTombstoneView, type RangeTombstone, type RangeTombstoneIndex } from './range-tombstones'
import { BlockCache } from './sstable/cache'
import { TableCache } from './sstable/table-cache'
import { MergingIterator } from './iterators/merging-iterator'
import { LevelIterator } from './iterators/level-iterator'
import type { InternalIterator } from './iterators/internal-iterator'
import { DbIterator, type RangeOptions } from './iterators/db-iterator'
import { pickLeveledCompaction, type CompactionTask } from './compaction/leveled-picker'
import { pickTieredCompaction } from './compaction/tiered-picker'
import { pickRangeTombstoneCompaction } from './compaction/range-tombstone-picker'
import { writeTables } from './compaction/table-writer'
import { runCompactionJob, type CompactionJob, type FlushJob } from './compaction/job'
import { sharedCompactionWorker, sharedFlushWorker, type CompactionWorker } from './compaction/worker'
import { SnapshotList, Snapshot } from './snapshots'
import { acquireLock, type LockHandle } from './lock'
import { join, logName, parseFileName, tableName } from './filenames'
import { KIND_VALUE } from './keys'
import { compareBytes } from './util/coding'
import { corruption, ioError, levelError, type LevelError } from './errors'
import type { LsmStats } from './stats'
import { TurnBudget } from './util/turn'
import { removeAsync, syncDirAsync } from './fs/fs'

export { Snapshot } from './snapshots'
export type { BatchOp } from './wal/batch'
export type { RangeOptions } from './iterators/db-iterator'

interface Writer {
  /** The encoded batch (lib/wal/batch.ts): the log record's payload; its sequence number is set at commit. */
  payload: Buffer
  count: number
  sync: boolean
  firstSeq: number
  resolve: () => void
  reject: (err: Error) => void
}

interface Group {
  writers: Writer[]
  /** The memtable of the log the group was written to (frozen if a rotation came since). */
  mem: MemTable
  lastSeq: number
  needsSync: boolean
  synced: boolean
}

interface FrozenMemTable {
  mem: MemTable
  logNumber: number
  /** Groups written to its log but not yet applied (waiting for a sync); it is flushed only at 0. */
  pendingGroups: number
}

/** What recovery found and did, for users and tests. */
export interface RecoveryReport {
  logsReplayed: number
  recordsReplayed: number
  /** A damaged or torn tail of the last log that was cut off (point-in-time recovery). */
  droppedTail?: { file: string, offset: number, bytes: number, state: 'torn' | 'corrupt' }
  orphansRemoved: string[]
}

export interface LevelInfo {
  level: number
  files: number
  bytes: number
}

const EMPTY = Buffer.alloc(0)

/**
 * A memtable is frozen once it holds this many range tombstones, however few its
 * bytes: reads rebuild its tombstone index after each one is added.
 */
const MAX_MEMTABLE_RANGE_TOMBSTONES = 1000
/** An inline fdatasync slower than this (the turn budget, ms) moves syncs to the thread pool for a while. */
const INLINE_SYNC_MAX_MS = 1
/** How many syncs then run on the thread pool before inline syncs are tried again. */
const INLINE_SYNC_BACKOFF = 256

/**
 * Adds a committed batch operation to a memtable (which copies keys and values
 * into its arena). A range tombstone's bounds are kept as given: `copy` when
 * they are views of a buffer that will be reused (log replay).
 */
function applyOp (mem: MemTable, seq: number, op: BatchOp, copy: boolean): void {
  if (op.kind === OP_RANGE_DELETE) {
    mem.addRangeTombstone(seq, copy ? Buffer.from(op.key) : op.key, op.end !== undefined && copy ? Buffer.from(op.end) : op.end)
  } else {
    mem.add(seq, op.kind, op.key, op.value ?? EMPTY)
  }
}

/** Totals over every engine in this process (tests use them to show background work happened). */
export const processCounters = { flushes: 0, compactions: 0, trivialMoves: 0 }

export class Engine {
  readonly location: string
  readonly options: EngineOptions
  readonly fs: FileSystem
  recovery: RecoveryReport = { logsReplayed: 0, recordsReplayed: 0, orphansRemoved: [] }

  private readonly versions: VersionSet
  private readonly blockCache: BlockCache
  private readonly tableCache: TableCache
  private readonly snapshots = new SnapshotList()
  private lock: LockHandle | undefined

  private mem = new MemTable()
  /** Level-0 tables written by log replay during open, not yet in the manifest. */
  private recoveredTables: FileMeta[] = []
  /** Range tombstones replayed from the logs, recorded with recoveredTables. */
  private recoveredTombstones: RangeTombstone[] = []
  private imms: FrozenMemTable[] = []
  private log: LogWriter | undefined
  private logNumber = 0

  /** Highest sequence number applied to the memtable (what reads see). */
  private visibleSeq = 0
  /** Highest sequence number handed out to a write. */
  private allocatedSeq = 0

  private pending: Writer[] = []
  private commitScheduled = false
  private unapplied: Group[] = []
  private syncInFlight: Promise<void> | undefined
  /** Log bytes written since the last background fdatasync of the log started. */
  private logUnsyncedBytes = 0
  /** The background fdatasync of the current log in progress (see logSyncStep). */
  private backgroundLogSync: Promise<void> | undefined
  /** The current log had its background fdatasync. */
  private logSyncedOnce = false
  private readonly logsToCloseAfterSync: LogWriter[] = []
  /** Resolves when every retired log's closing fsync has completed. */
  private retiredLogsSynced: Promise<void> = Promise.resolve()
  /** Rotations whose retired-log fsync (and new log's directory entry) is not done yet. */
  private retiredSyncsPending = 0
  /** Syncs left to run on the thread pool after a slow inline fdatasync. */
  private inlineSyncBackoff = 0
  /** Set after a failed write or fsync: all further writes fail until reopen. */
  private writeError: LevelError | undefined
  /** Set after a failed flush or compaction. */
  private backgroundError: LevelError | undefined

  private flushJob: Promise<void> | undefined
  private compactionJob: Promise<void> | undefined
  private backgroundScheduled = false
  private closing = false
  private closed = false
  private readonly idleWaiters: Array<() => void> = []

  /** Counters (extended by the compaction issue's stats). */
  readonly counters = {
    flushes: 0,
    compactions: 0,
    trivialMoves: 0,
    bytesFlushed: 0,
    bytesCompacted: 0,
    userBytes: 0,
    walBytes: 0,
    tableGets: 0,
    tableGetMisses: 0,
    slowdowns: 0,
    stallMs: 0
  }

  private stallStartedAt = 0
  /** Shared by writes and reads so that a loop of awaited operations lets the event loop turn. */
  readonly turn = new TurnBudget()
  private closeRequested = false
  private slowedDown = false
  /** Runs compactions on a worker thread (node file system only); undefined: on the main thread. */
  private readonly worker: CompactionWorker | undefined
  /** Runs memtable flushes on a worker thread of their own (node file system only). */
  private readonly flushWorker: CompactionWorker | undefined
  private cancelCompaction: (() => void) | undefined
  /** Obsolete files being deleted off the event loop. */
  private readonly pendingRemovals = new Set<Promise<void>>()

  private constructor (location: string, options: EngineOptions, fs: FileSystem) {
    this.location = location
    this.options = options
    this.fs = fs
    this.versions = new VersionSet(fs, location)
    this.blockCache = new BlockCache(options.cacheSize)
    this.tableCache = new TableCache(fs, location, options.maxOpenFiles, this.blockCache)
    this.versions.onObsoleteTable = (n) => this.removeTable(n)
    this.worker = options.compactionWorker && fs === nodeFileSystem ? sharedCompactionWorker() : undefined
    this.flushWorker = options.compactionWorker && fs === nodeFileSystem ? sharedFlushWorker() : undefined
  }

  /** Opens (or creates) the database in `location`. Options are validated first. */
  static async open (location: string, options: Partial<Record<keyof EngineOptions, unknown>> = {}, fs: FileSystem = nodeFileSystem): Promise<Engine> {
    const resolved = resolveOptions(options)
    const engine = new Engine(path.resolve(location), resolved, fs)
    try {
      await engine.recover()
    } catch (err) {
      engine.abortOpen()
      // A file-system error (errno-coded) is an I/O error to the caller; LEVEL_*
      // errors and broken invariants (plain Errors) pass through unchanged.
      const code = (err as NodeJS.ErrnoException | undefined)?.code
      if (typeof code === 'string' && !code.startsWith('LEVEL_')) {
        throw ioError(`Cannot open the database: ${(err as Error).message}`, err)
      }
      throw err
    }
    return engine
  }

  private abortOpen (): void {
    this.closed = true
    try { this.log?.close() } catch {}
    try { this.versions.close() } catch {}
    try { this.tableCache.close() } catch {}
    // The error that failed the open matters more than one releasing the lock.
    try { this.lock?.release() } catch {}
    this.lock = undefined
  }

  // ---------------------------------------------------------------- recovery

  private async recover (): Promise<void> {
    const { fs, location: dir, options } = this
    if (!fs.exists(dir)) {
      if (!options.createIfMissing) throw levelError('LEVEL_INVALID_OPTION', `Database does not exist and createIfMissing is false: ${dir}`)
      fs.mkdirp(dir)
    }
    this.lock = acquireLock(fs, dir)
    if (this.versions.exists()) {
      if (options.errorIfExists) throw levelError('LEVEL_INVALID_OPTION', `Database already exists and errorIfExists is true: ${dir}`)
      this.versions.recover()
    } else {
      // A manifest without CURRENT (and no log or table) is a creation that crashed
      // before CURRENT was written: it holds no data, so the database is created anew
      // (the stray manifest is overwritten or removed as an orphan).
      const ours = fs.list(dir).filter((n) => {
        const p = parseFileName(n)
        return p !== undefined && (p.type === 'table' || p.type === 'log')
      })
      if (ours.length > 0) throw corruption('CURRENT', `missing, but the directory holds database files (${ours.slice(0, 3).join(', ')})`)
      if (!options.createIfMissing) throw levelError('LEVEL_INVALID_OPTION', `Database does not exist and createIfMissing is false: ${dir}`)
    }
    this.versions.writeNewManifest()

    await this.replayLogs()

    // A fresh log for new writes; the replayed logs are now in tables. The edit
    // that retires the replayed logs is made durable BEFORE the new log exists: a
    // crash in between must not leave a replayed log (possibly with a torn tail)
    // followed by a newer log, which the next open would take for mid-history
    // damage. A logNumber naming a log that was never created is harmless.
    // The tables the replay wrote join the version in this same edit, so that they
    // and the retirement of the logs they came from become durable together: were
    // the tables recorded first, a crash before the logs' retirement would make
    // the next open replay those logs again into NEWER-numbered level-0 tables
    // holding OLDER data (and, if a log lost its unsynced tail meanwhile, less of
    // it), which reads would then wrongly prefer.
    this.logNumber = this.versions.newFileNumber()
    await this.versions.logAndApply({
      newFiles: this.recoveredTables.map((meta) => ({ level: 0, meta })),
      rangeTombstones: this.recoveredTombstones,
      logNumber: this.logNumber,
      lastSequence: this.visibleSeq
    })
    this.recoveredTables = []
    this.recoveredTombstones = []
    this.log = new LogWriter(fs.openWrite(join(dir, logName(this.logNumber)), { preallocate: true }))
    fs.syncDir(dir)

    for (const name of this.versions.orphanFiles(new Set([this.logNumber]))) {
      fs.remove(join(dir, name))
      this.recovery.orphansRemoved.push(name)
    }
    this.scheduleBackground()
  }

  /**
   * Replays the logs not yet in tables into memtables, flushing each full one to
   * level 0. Recovery is point-in-time: it stops at the first damaged record of
   * the last log (an interrupted write); damage in an earlier log, which was
   * synced when the next one started, is corruption and fails the open.
   */
  private async replayLogs (): Promise<void> {
    const { fs, location: dir } = this
    let seq = this.versions.lastSequence
    const logs = fs.list(dir)
      .map((n) => parseFileName(n))
      .filter((p): p is { type: 'log', number: number } => p !== undefined && p.type === 'log' && p.number >= this.versions.logNumber)
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
          if (nextSeq < 0 ? batch.firstSeq > this.versions.lastSequence + 1 : batch.firstSeq !== nextSeq) {
            const at = first && i > 0 ? logName(logs[i - 1]) : name
            throw corruption(at, `records are missing: ${name} continues at sequence number ${batch.firstSeq}, expected ${nextSeq < 0 ? `at most ${this.versions.lastSequence + 1}` : nextSeq}`)
          }
          nextSeq = batch.firstSeq + batch.ops.length
          first = false
          let s = batch.firstSeq
          for (const op of batch.ops) applyOp(mem, s++, op, true)
          if (s - 1 > seq) seq = s - 1
          this.recovery.recordsReplayed++
          if (this.memTableFull(mem)) {
            this.visibleSeq = seq
            await this.flushRecovered(mem)
            mem = new MemTable()
          }
        }
      } finally {
        reader.close?.()
      }
      this.recovery.logsReplayed++
      const tail = reader.tail
      // A retired log may end in zeros: the space written ahead of its records
      // (lib/fs/node-fs.ts, preallocation), still there when its trim had not
      // run or had not reached the disk at the crash. Nothing is missing behind
      // it: a log's records are all synced before the next log takes any (see
      // commit), and the next log's first record must continue its sequence
      // numbers (checked above), so lost records would still be caught.
      if (tail.state === 'torn' && i < logs.length - 1 && this.tailIsZeros(name, tail.offset)) continue
      if (tail.state !== 'clean') {
        // Newer logs that are empty hold nothing that could follow the damage (a log
        // takes records only once the logs before it are synced: a crash right after
        // a rotation can leave a torn retired log and an empty new one).
        if (i < logs.length - 1 && !logs.slice(i + 1).every((n) => this.logIsEmpty(n))) {
          throw corruption(name, `damaged record at offset ${tail.offset} in a log followed by newer logs`)
        }
        this.recovery.droppedTail = { file: name, offset: tail.offset, bytes: tail.droppedBytes, state: tail.state }
        break
      }
    }
    this.visibleSeq = this.allocatedSeq = seq
    if (!mem.isEmpty()) await this.flushRecovered(mem)
  }

  /** True if the log `name` holds only zero bytes from `offset` to its end. */
  private tailIsZeros (name: string, offset: number): boolean {
    const file = this.fs.openRead(join(this.location, name))
    try {
      const size = file.size()
      const buf = Buffer.allocUnsafe(64 * 1024)
      for (let pos = offset; pos < size;) {
        const n = file.read(buf, 0, Math.min(buf.length, size - pos), pos)
        if (n <= 0) return false
        for (let j = 0; j < n; j++) if (buf[j] !== 0) return false
        pos += n
      }
      return true
    } finally {
      file.close()
    }
  }

  private logIsEmpty (number: number): boolean {
    const file = this.fs.openRead(join(this.location, logName(number)))
    try {
      return file.size() === 0
    } finally {
      file.close()
    }
  }

  /** Writes a replayed memtable to level-0 table(s), recorded by recover()'s final edit. */
  private async flushRecovered (mem: MemTable): Promise<void> {
    const result = await writeTables(mem.iterator(), { ...this.tableWriterParams(Infinity, () => false), ...this.flushTombstones(mem) })
    this.recoveredTables.push(...result.outputs)
    this.recoveredTombstones.push(...mem.rangeTombstones())
  }

  // ---------------------------------------------------------------- writes

  /** Applies `ops` atomically. Resolves once durable per `sync` (see the top of this file). */
  write (ops: BatchOp[], sync: boolean): Promise<void> {
    if (this.writeError) return Promise.reject(this.writeError)
    if (this.closing) return Promise.reject(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closing'))
    return this.writeEncoded(encodeBatchPayload(ops), sync)
  }

  /**
   * write() of a batch already encoded by encodeBatchPayload or encodeLevelBatch
   * (lib/wal/batch.ts), its sequence number not set. The engine takes the
   * payload over: it becomes the log record, then the memtable's source.
   */
  writeEncoded (payload: Buffer, sync: boolean): Promise<void> {
    if (this.writeError) return Promise.reject(this.writeError)
    if (this.closing) return Promise.reject(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closing'))
    const count = batchCount(payload)
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ payload, count, sync, firstSeq: 0, resolve, reject })
      if (!this.commitScheduled) {
        this.commitScheduled = true
        queueMicrotask(() => this.commit())
      }
    })
  }

  private commit (): void {
    if (this.pending.length === 0) { this.commitScheduled = false; return }
    if (!this.closeRequested && this.turn.exhausted()) {
      // Let the event loop turn (timers, I/O, flush slices) before committing more.
      setImmediate(() => this.commit())
      return
    }
    if (!this.closeRequested && !this.slowedDown && this.versions.current.levels[0].length >= this.options.level0SlowdownWritesTrigger) {
      // Level 0 is filling faster than compaction drains it: delay this group by
      // a millisecond (LevelDB's slowdown), handing compaction time before
      // writes would have to stop altogether.
      this.slowedDown = true
      this.counters.slowdowns++
      const t0 = Date.now()
      setTimeout(() => { this.counters.stallMs += Date.now() - t0; this.commit() }, 1)
      return
    }
    this.slowedDown = false
    this.commitScheduled = false
    if (this.writeError) return this.failPending(this.writeError)
    if (!this.makeRoomForWrite()) {
      if (this.stallStartedAt === 0) this.stallStartedAt = Date.now()
      return // retried when background work makes room
    }
    // No record goes into a new log before the logs it follows are durable (and
    // its own directory entry): otherwise a power loss could keep a later log's
    // records while tearing an earlier log, a hole in the history that recovery
    // cannot replay past. Retried when the retired logs' fsync completes.
    if (this.retiredSyncsPending > 0) return
    if (this.stallStartedAt !== 0) {
      this.counters.stallMs += Date.now() - this.stallStartedAt
      this.stallStartedAt = 0
    }
    const writers = this.pending
    this.pending = []
    let seq = this.allocatedSeq + 1
    let needsSync = false
    const payloads: Buffer[] = new Array(writers.length)
    for (let i = 0; i < writers.length; i++) {
      const w = writers[i]
      w.firstSeq = seq
      setBatchSequence(w.payload, seq)
      payloads[i] = w.payload
      seq += w.count
      if (w.sync) needsSync = true
    }
    const logSizeBefore = this.log!.size()
    try {
      this.log!.addRecords(payloads)
    } catch (err) {
      const e = ioError('Write to the log failed; the database takes no more writes until reopened', err, logName(this.logNumber))
      this.stopWrites(e)
      for (const w of writers) w.reject(e)
      return
    }
    this.allocatedSeq = seq - 1
    const logBytes = this.log!.size() - logSizeBefore
    this.counters.walBytes += logBytes
    this.logUnsyncedBytes += logBytes
    if (this.logUnsyncedBytes >= this.logSyncStep() && this.backgroundLogSync === undefined && !this.logSyncedOnce) this.startBackgroundLogSync()
    this.unapplied.push({ writers, mem: this.mem, lastSeq: seq - 1, needsSync, synced: false })
    if (needsSync) this.requestSync()
    this.drainApplied()
  }

  /** Applies committed groups to the memtable in log order, as far as their sync allows. */
  private drainApplied (): void {
    while (this.unapplied.length > 0) {
      const g = this.unapplied[0]
      if (g.needsSync && !g.synced) break
      this.unapplied.shift()
      const mem = g.mem
      let userBytes = 0
      for (const w of g.writers) userBytes += mem.addBatch(w.payload, w.firstSeq)
      this.counters.userBytes += userBytes
      this.visibleSeq = g.lastSeq
      if (mem !== this.mem) {
        const frozen = this.imms.find((f) => f.mem === mem)
        if (frozen && --frozen.pendingGroups === 0) this.scheduleBackground()
      }
      for (const w of g.writers) w.resolve()
    }
    if (this.unapplied.length === 0 && this.closing) this.notifyIdle()
  }

  /**
   * Log bytes after which the log is fdatasynced once in the background (off
   * the event loop): about halfway to the memtable's rotation, so that when the
   * log is retired, the fsync that writes to the new log wait for (see commit)
   * has only the second half left to do. Once per log: a sync running under the
   * writes makes some write(2) calls wait on the file system's journal.
   */
  private logSyncStep (): number {
    return Math.max(4096, this.options.writeBufferSize >>> 1)
  }

  /**
   * Starts an fdatasync of the current log off the event loop. It acknowledges
   * nothing (sync writes have requestSync); it only leaves less for the fsync
   * that retiring the log waits for (rotate). A failure stops writes, as a
   * failed fsync of a retired log does.
   */
  private startBackgroundLogSync (): void {
    this.logUnsyncedBytes = 0
    this.logSyncedOnce = true
    const number = this.logNumber
    const p: Promise<void> = this.log!.syncAsync().then(() => {}, (err) => {
      this.stopWrites(this.logSyncError(err, number))
    }).finally(() => {
      if (this.backgroundLogSync === p) this.backgroundLogSync = undefined
    })
    this.backgroundLogSync = p
  }

  /** Group commit: one fdatasync at a time covers every group written before it started. */
  private requestSync (): void {
    if (this.syncInFlight) return
    const log = this.log!
    const covered = this.unapplied.filter((g) => g.needsSync && !g.synced)
    if (covered.length === 0) return
    if (this.inlineSyncAllowed()) {
      const t0 = performance.now()
      try {
        log.sync()
      } catch (err) {
        this.stopWrites(this.logSyncError(err, this.logNumber))
        return
      }
      this.noteInlineSync(performance.now() - t0)
      this.syncDone(covered)
      return
    }
    // Earlier logs' syncs (started at rotation) must be done too: a sync write is
    // acknowledged only when everything before it in the write order is durable.
    this.syncInFlight = Promise.all([this.retiredLogsSynced, log.syncAsync()]).then(() => {
      this.syncInFlight = undefined
      this.syncDone(covered)
      if (this.unapplied.some((g) => g.needsSync && !g.synced)) this.requestSync()
    }, (err) => {
      this.syncInFlight = undefined
      this.closeRetiredLogs()
      this.stopWrites(this.logSyncError(err, this.logNumber))
    })
  }

  /** An fdatasync covering `covered` returned: they, and the writes behind them, apply. */
  private syncDone (covered: Group[]): void {
    for (const g of covered) g.synced = true
    this.closeRetiredLogs()
    this.drainApplied()
  }

  private logSyncError (err: unknown, number: number): LevelError {
    return ioError('fsync of the log failed; the database takes no more writes until reopened', err, logName(number))
  }

  /**
   * Whether the log's fdatasync may run on the event loop (a sync write then
   * resolves without the thread-pool round trip, ~100 µs here). Only while this
   * disk's fdatasync is fast: one that took longer than the turn budget sends
   * the next INLINE_SYNC_BACKOFF syncs to the thread pool.
   */
  private inlineSyncAllowed (): boolean {
    if (!this.options.inlineSync || this.retiredSyncsPending > 0) return false
    if (this.inlineSyncBackoff > 0) { this.inlineSyncBackoff--; return false }
    return true
  }

  private noteInlineSync (ms: number): void {
    if (ms > INLINE_SYNC_MAX_MS) this.inlineSyncBackoff = INLINE_SYNC_BACKOFF
  }

  private closeRetiredLogs (): void {
    while (this.logsToCloseAfterSync.length > 0) {
      try { this.logsToCloseAfterSync.pop()!.close() } catch {}
    }
  }

  /** Fails every queued and unapplied write and refuses new ones. */
  private stopWrites (err: LevelError): void {
    if (!this.writeError) this.writeError = err
    const groups = this.unapplied
    this.unapplied = []
    for (const g of groups) for (const w of g.writers) w.reject(err)
    this.failPending(err)
    this.notifyIdle()
  }

  private failPending (err: Error): void {
    const writers = this.pending
    this.pending = []
    for (const w of writers) w.reject(err)
  }

  /**
   * Freezes a full memtable and starts a new log, or reports that writes must
   * wait (too many frozen memtables or level-0 tables: a write stall).
   */
  private makeRoomForWrite (): boolean {
    if (!this.memTableFull(this.mem)) return true
    if (this.imms.length >= this.options.maxImmutableMemtables) { this.scheduleBackground(); return false }
    if (this.versions.current.levels[0].length >= this.options.level0StopWritesTrigger) { this.scheduleBackground(); return false }
    try {
      this.rotate()
    } catch (err) {
      const e = ioError('Cannot start a new log; the database takes no more writes until reopened', err)
      this.stopWrites(e)
      return false
    }
    return true
  }

  private memTableFull (mem: MemTable): boolean {
    return mem.approximateBytes() >= this.options.writeBufferSize || mem.rangeTombstoneCount() >= MAX_MEMTABLE_RANGE_TOMBSTONES
  }

  private rotate (): void {
    const { fs, location: dir } = this
    const old = this.log!
    const number = this.versions.newFileNumber()
    const file = fs.openWrite(join(dir, logName(number)), { preallocate: true })
    // The old log and the new log's directory entry are synced off the event
    // loop; every later sync write waits for both (requestSync), so a power loss
    // can never keep a later log's synced writes while losing an earlier log's,
    // nor lose the new log itself.
    // The old log is closed only after its background fdatasync, if one is running, is over.
    const synced = Promise.all([this.backgroundLogSync, old.syncAsync(), syncDirAsync(fs, dir)])
    // Then the old log is closed, which trims its preallocated zeros, before the
    // new log takes a record, so that a retired log normally ends at its last
    // record (recovery also accepts an untrimmed zero tail: replayLogs). The
    // trim runs on the thread pool (it can wait on the file system's journal:
    // 66 ms measured on the event loop); the writes held back wait for it as
    // for the sync.
    const retired = synced.then(async () => {
      if (this.syncInFlight) this.logsToCloseAfterSync.push(old)
      else await old.closeAsync().catch(() => {})
    })
    this.backgroundLogSync = undefined
    this.logUnsyncedBytes = 0
    this.logSyncedOnce = false
    this.retiredLogsSynced = Promise.all([this.retiredLogsSynced, retired]).then(() => {})
    this.retiredLogsSynced.catch(() => {}) // reported below, once
    this.retiredSyncsPending++
    retired.then(() => {
      this.retiredSyncsPending--
      // Writes held back until the retired logs were durable (see commit).
      if (this.pending.length > 0 && !this.commitScheduled) {
        this.commitScheduled = true
        queueMicrotask(() => this.commit())
      }
    }, (err) => {
      this.retiredSyncsPending--
      this.logsToCloseAfterSync.push(old)
      this.stopWrites(ioError('fsync of a retired log failed; the database takes no more writes until reopened', err))
    })
    const pendingGroups = this.unapplied.filter((g) => g.mem === this.mem).length
    this.imms.push({ mem: this.mem, logNumber: this.logNumber, pendingGroups })
    this.mem = new MemTable()
    this.log = new LogWriter(file)
    this.logNumber = number
    this.scheduleBackground()
  }

  // ---------------------------------------------------------------- reads

  /** The value of `key` visible at `snapshot` (default: latest), or undefined. The value is a copy the caller owns. */
  get (key: Uint8Array, snapshot?: Snapshot): Buffer | undefined {
    const seq = snapshot ? snapshot.seq : this.visibleSeq
    let r: { kind: number, value: Buffer, seq: number } | undefined = this.mem.get(key, seq)
    if (r === undefined) {
      for (let i = this.imms.length - 1; i >= 0 && r === undefined; i--) r = this.imms[i].mem.get(key, seq)
      if (r === undefined) r = this.getFromTables(this.versions.current, key, seq)
    }
    if (r === undefined || r.kind !== KIND_VALUE) return undefined
    if (this.hiddenByRangeTombstone(key, r.seq, seq)) return undefined
    return r.value
  }

  /** True if a range tombstone a reader at `readSeq` sees hides version `seq` of `key`. */
  private hiddenByRangeTombstone (key: Uint8Array, seq: number, readSeq: number): boolean {
    if (this.mem.rangeTombstoneCount() > 0 && this.mem.rangeTombstoneIndex().covers(key, seq, readSeq)) return true
    for (let i = 0; i < this.imms.length; i++) {
      const m = this.imms[i].mem
      if (m.rangeTombstoneCount() > 0 && m.rangeTombstoneIndex().covers(key, seq, readSeq)) return true
    }
    const v = this.versions.current
    return v.rangeTombstones.length > 0 && v.rangeTombstoneIndex().covers(key, seq, readSeq)
  }

  /** The range tombstones a new iterator consults (undefined: none). */
  private rangeTombstoneView (v: Version): RangeTombstoneView | undefined {
    const indexes: RangeTombstoneIndex[] = []
    if (this.mem.rangeTombstoneCount() > 0) indexes.push(this.mem.rangeTombstoneIndex())
    for (const imm of this.imms) if (imm.mem.rangeTombstoneCount() > 0) indexes.push(imm.mem.rangeTombstoneIndex())
    if (v.rangeTombstones.length > 0) indexes.push(v.rangeTombstoneIndex())
    return RangeTombstoneView.of(indexes)
  }

  /** Range tombstones written (memtables) or live (version). */
  rangeTombstoneCount (): number {
    let n = this.mem.rangeTombstoneCount() + this.versions.current.rangeTombstones.length
    for (const imm of this.imms) n += imm.mem.rangeTombstoneCount()
    return n
  }

  private getFromTables (v: Version, key: Uint8Array, seq: number): { kind: number, value: Buffer, seq: number } | undefined {
    const l0 = v.levels[0]
    for (let i = 0; i < l0.length; i++) {
      const f = l0[i]
      if (compareBytes(key, f.smallest.userKey) < 0 || compareBytes(key, f.largest.userKey) > 0) continue
      this.counters.tableGets++
      const r = this.tableCache.get(f.number).get(key, seq)
      if (r !== undefined) return r
      this.counters.tableGetMisses++
    }
    for (let level = 1; level < NUM_LEVELS; level++) {
      const files = v.levels[level]
      if (files.length === 0) continue
      const i = v.findFile(level, key)
      if (i >= files.length || compareBytes(key, files[i].smallest.userKey) < 0) continue
      this.counters.tableGets++
      const r = this.tableCache.get(files[i].number).get(key, seq)
      if (r !== undefined) return r
      this.counters.tableGetMisses++
    }
    return undefined
  }

  /** A lazy iterator over the user's view at `snapshot` (default: now), within `range`. */
  iterator (range: RangeOptions, snapshot?: Snapshot): DbIterator {
    const seq = snapshot ? snapshot.seq : this.visibleSeq
    const v = this.versions.current
    v.ref()
    const children: InternalIterator[] = [this.mem.iterator()]
    for (let i = this.imms.length - 1; i >= 0; i--) children.push(this.imms[i].mem.iterator())
    try {
      children.push(...this.levelIterators(v))
    } catch (err) {
      for (const c of children) c.close()
      v.unref()
      throw err
    }
    return new DbIterator(new MergingIterator(children), seq, range, () => v.unref(), this.rangeTombstoneView(v))
  }

  private levelIterators (v: Version): InternalIterator[] {
    const out: InternalIterator[] = []
    // Each L0 table as a one-file level: opened on the first seek that needs it, so
    // that a damaged table fails the iterator's next() (LEVEL_CORRUPTION) rather
    // than its creation, which would leak the tables opened before it.
    for (const f of v.levels[0]) out.push(this.levelIterator([f]))
    for (let level = 1; level < NUM_LEVELS; level++) {
      if (v.levels[level].length > 0) out.push(this.levelIterator(v.levels[level]))
    }
    return out
  }

  private levelIterator (files: FileMeta[]): InternalIterator {
    return new LevelIterator(files, (meta) => this.tableCache.get(meta.number).iterator())
  }

  snapshot (): Snapshot {
    return this.snapshots.acquire(this.visibleSeq)
  }

  /**
   * The current sequence number as an unregistered snapshot, for a read that
   * continues on a later turn: safe because compaction only drops versions
   * hidden at a sequence number no newer than this one.
   */
  pointInTime (): Snapshot {
    return new Snapshot(this.visibleSeq)
  }

  releaseSnapshot (s: Snapshot): void {
    this.snapshots.release(s)
    // A range tombstone this snapshot held back may now be compacted away.
    if (this.versions.current.rangeTombstones.length > 0) this.scheduleBackground()
  }

  // ---------------------------------------------------------------- background work

  private scheduleBackground (): void {
    if (this.backgroundScheduled || this.closing) return
    this.backgroundScheduled = true
    setImmediate(() => {
      this.backgroundScheduled = false
      this.startBackgroundWork()
    })
  }

  private startBackgroundWork (): void {
    if (this.closing || this.backgroundError) return
    if (!this.flushJob && this.imms.length > 0 && this.imms[0].pendingGroups === 0) {
      this.flushJob = this.runJob(() => this.flushOldest()).finally(() => {
        this.flushJob = undefined
        this.afterBackgroundWork()
      })
    }
    if (!this.compactionJob) {
      const task = this.pickCompaction()
      if (task) {
        this.compactionJob = this.runJob(() => this.compact(task)).finally(() => {
          this.compactionJob = undefined
          this.afterBackgroundWork()
        })
      }
    }
  }

  private async runJob (job: () => Promise<void>): Promise<void> {
    try {
      await job()
    } catch (err) {
      // Closing aborts compactions (a terminated worker, an abandoned slice): not an error.
      if (this.closing) return
      const e = (err as LevelError).code === 'LEVEL_CORRUPTION' ? err as LevelError : ioError('Background flush or compaction failed', err)
      if (!this.backgroundError) this.backgroundError = e
      // Without flushes the memtable cannot drain: stop writes rather than grow without bound.
      this.stopWrites(e)
    }
  }

  private afterBackgroundWork (): void {
    if (this.pending.length > 0 && !this.commitScheduled) {
      this.commitScheduled = true
      queueMicrotask(() => this.commit())
    }
    if (this.closing) { this.notifyIdle(); return }
    this.scheduleBackground()
    if (!this.flushJob && !this.compactionJob && this.imms.length === 0) this.notifyIdle()
  }

  private tableWriterParams (targetFileSize: number, isBaseLevelForKey: (k: Uint8Array) => boolean) {
    return {
      fs: this.fs,
      dir: this.location,
      blockSize: this.options.blockSize,
      blockRestartInterval: this.options.blockRestartInterval,
      bloomBitsPerKey: this.options.bloomBitsPerKey,
      targetFileSize,
      smallestSnapshot: this.snapshots.oldest() ?? this.visibleSeq,
      isBaseLevelForKey,
      newFileNumber: () => this.versions.newFileNumber(),
      shouldAbort: () => this.closing
    }
  }

  private async flushOldest (): Promise<void> {
    const imm = this.imms[0]
    // A flush is finished even when the database is closing (close waits for it):
    // it is short, and it saves the next open a log replay.
    let result
    if (this.flushWorker) {
      // On a worker thread, from a copy of the frozen memtable (SkipList.state).
      // Copied over a few turns; the parameters below are taken after the copy, together.
      const entries = await imm.mem.entriesStateInSlices()
      const { floorBase } = this.flushTombstones(imm.mem)
      const job: FlushJob = {
        dir: this.location,
        entries,
        blockSize: this.options.blockSize,
        blockRestartInterval: this.options.blockRestartInterval,
        bloomBitsPerKey: this.options.bloomBitsPerKey,
        smallestSnapshot: this.snapshots.oldest() ?? this.visibleSeq,
        rangeTombstones: imm.mem.rangeTombstones().slice(),
        floorBase,
        fileNumber: this.versions.newFileNumber()
      }
      result = await this.flushWorker.flush(job)
    } else {
      const params = { ...this.tableWriterParams(Infinity, () => false), shouldAbort: () => false, ...this.flushTombstones(imm.mem) }
      result = await writeTables(imm.mem.iterator(), params)
    }
    const nextLog = this.imms.length > 1 ? this.imms[1].logNumber : this.logNumber
    await this.versions.logAndApply({
      newFiles: result.outputs.map((meta) => ({ level: 0, meta })),
      rangeTombstones: imm.mem.rangeTombstones().slice(),
      logNumber: nextLog,
      lastSequence: this.visibleSeq
    })
    this.imms.shift()
    this.counters.flushes++
    processCounters.flushes++
    this.counters.bytesFlushed += result.bytesWritten
    this.removeInBackground(logName(imm.logNumber))
  }

  /**
   * A flush applies its memtable's own range tombstones. The tombstones already in
   * the version are older than every entry of the memtable (memtables are flushed
   * in order), so they hide nothing in it: every tombstone up to
   * min(newest of the memtable's, smallest snapshot) is then applied in full.
   */
  private flushTombstones (mem: MemTable): { rangeTombstones?: RangeTombstoneIndex, floorBase: number } {
    const list = mem.rangeTombstones()
    if (list.length === 0) return { floorBase: 0 }
    const smallestSnapshot = this.snapshots.oldest() ?? this.visibleSeq
    return { rangeTombstones: mem.rangeTombstoneIndex(), floorBase: Math.min(list[list.length - 1].seq, smallestSnapshot) }
  }

  /** The next compaction the configured strategy wants, if any (pure pickers, lib/compaction/). */
  private pickCompaction (): CompactionTask | undefined {
    const v = this.versions.current
    const shape = { levels: v.levels, compactPointers: this.versions.compactPointers }
    let task: CompactionTask | undefined
    if (this.options.compaction === 'leveled') {
      task = pickLeveledCompaction(shape, this.options)
    } else {
      const t = pickTieredCompaction(shape, this.options)
      if (t) task = { level: t.runs[0].level, outputLevel: t.outputLevel, inputs: t.runs[0].files, overlaps: [], trivialMove: false, score: 0, runs: t.runs }
    }
    // Nothing else to do: reclaim the space under range tombstones.
    if (task === undefined && v.rangeTombstones.length > 0) {
      task = pickRangeTombstoneCompaction(v.levels, v.rangeTombstones, this.snapshots.oldest() ?? this.visibleSeq)
    }
    return task
  }

  private async compact (task: CompactionTask): Promise<void> {
    const inputRuns = task.runs ?? [
      { level: task.level, files: task.inputs },
      ...(task.overlaps.length > 0 ? [{ level: task.outputLevel, files: task.overlaps }] : [])
    ]
    const deleted = inputRuns.flatMap((r) => r.files.map((f) => ({ level: r.level, number: f.number })))
    let largest = task.inputs[0].largest
    for (const f of task.inputs) if (compareBytes(f.largest.userKey, largest.userKey) > 0) largest = f.largest
    // The leveled picker's round-robin position within the level.
    const pointer = task.runs || task.reason !== undefined ? [] : [{ level: task.level, key: largest }]
    if (task.trivialMove) {
      await this.versions.logAndApply({
        deletedFiles: deleted,
        newFiles: [{ level: task.outputLevel, meta: task.inputs[0] }],
        compactPointers: pointer
      })
      this.counters.trivialMoves++
      processCounters.trivialMoves++
      return
    }
    const base = this.versions.current
    base.ref()
    try {
      // Each level-0 table is a run of its own; a deeper level is one run.
      const runs = inputRuns.flatMap((r) => r.level === 0 ? r.files.map((f) => [f]) : [r.files])
      let inputBytes = 0
      for (const run of runs) for (const f of run) inputBytes += f.size
      const smallestSnapshot = this.snapshots.oldest() ?? this.visibleSeq
      const fileNumbers: number[] = []
      const reserve = 2 * Math.ceil(inputBytes / this.options.targetFileSize) + 8
      for (let i = 0; i < reserve; i++) fileNumbers.push(this.versions.newFileNumber())
      const job: CompactionJob = {
        dir: this.location,
        runs,
        deeper: base.levels.slice(task.outputLevel + 1),
        blockSize: this.options.blockSize,
        blockRestartInterval: this.options.blockRestartInterval,
        bloomBitsPerKey: this.options.bloomBitsPerKey,
        targetFileSize: this.options.targetFileSize,
        smallestSnapshot,
        rangeTombstones: base.rangeTombstones.slice(),
        floorBase: base.rangeTombstones.length === 0 ? 0 : Math.min(maxSeq(base.rangeTombstones), smallestSnapshot),
        fileNumbers
      }
      let result
      if (this.worker) {
        const signal: { cancel?: () => void } = {}
        this.cancelCompaction = () => signal.cancel?.()
        try {
          result = await this.worker.run(job, signal)
        } finally {
          this.cancelCompaction = undefined
        }
      } else {
        result = await runCompactionJob(job, this.fs, this.tableCache, () => this.closing)
      }
      if (this.closing) {
        for (const f of result.outputs) this.fs.remove(join(this.location, tableName(f.number)))
        return
      }
      const edit: VersionEdit = {
        deletedFiles: deleted,
        newFiles: result.outputs.map((meta) => ({ level: task.outputLevel, meta })),
        compactPointers: pointer
      }
      await this.versions.logAndApply(edit)
      this.counters.compactions++
      processCounters.compactions++
      this.counters.bytesCompacted += result.bytesWritten
    } finally {
      base.unref()
    }
  }

  private removeTable (number: number): void {
    this.tableCache.evict(number)
    this.removeInBackground(tableName(number))
  }

  /**
   * Deletes an obsolete file (a table no version uses, a flushed log) off the
   * event loop. File numbers are never reused, so a late unlink cannot hit a new
   * file; a file left behind by a crash is an orphan the next open removes.
   * close() waits for these.
   */
  private removeInBackground (name: string): void {
    const p = removeAsync(this.fs, join(this.location, name)).catch(() => {}).finally(() => { this.pendingRemovals.delete(p) })
    this.pendingRemovals.add(p)
  }

  /**
   * Compacts every table that overlaps [start, end] (undefined = open): each
   * level into the next down to the deepest level holding data, then that level
   * in place, so that tombstones and overwritten versions that no snapshot needs
   * are gone from the range afterwards.
   */
  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    await this.flushMemTable()
    while (this.compactionJob) await this.compactionJob
    let bottom = 0
    this.versions.current.levels.forEach((files, level) => { if (files.length > 0) bottom = level })
    for (let level = 0; level <= bottom; level++) {
      while (this.compactionJob) await this.compactionJob
      const v = this.versions.current
      if (v.overlapping(level, start, end).length === 0) continue
      // Level 0 tables may overlap one another: take them all, so that no older
      // L0 table is left above newer data.
      const inputs = level === 0 ? v.levels[0].slice() : v.overlapping(level, start, end)
      const outputLevel = level === bottom && level > 0 ? level : level + 1
      const task: CompactionTask = {
        level,
        outputLevel,
        inputs,
        overlaps: outputLevel === level ? [] : v.overlapping(outputLevel, ...rangeOf(inputs)),
        trivialMove: false,
        score: 0
      }
      this.compactionJob = this.runJob(() => this.compact(task)).finally(() => { this.compactionJob = undefined })
      await this.compactionJob
      if (this.backgroundError) throw this.backgroundError
      if (level === bottom) break
    }
    await this.settleRemovals()
  }

  /** Freezes the memtable (if it has data) and waits until every frozen memtable is flushed. */
  async flushMemTable (): Promise<void> {
    if (this.writeError) throw this.writeError
    while (this.unapplied.length > 0 && this.syncInFlight) await this.syncInFlight
    if (!this.mem.isEmpty()) {
      try {
        this.rotate()
      } catch (err) {
        // As in makeRoomForWrite: the log could not be synced or replaced.
        const e = ioError('Cannot start a new log; the database takes no more writes until reopened', err)
        this.stopWrites(e)
        throw e
      }
    }
    while (this.imms.length > 0) {
      if (this.backgroundError) throw this.backgroundError
      if (!this.flushJob) this.startBackgroundWork()
      if (this.flushJob) await this.flushJob
      else await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** Resolves when no flush or compaction is running or needed. */
  async waitForIdle (): Promise<void> {
    for (;;) {
      if (this.backgroundError) throw this.backgroundError
      if (this.flushJob) { await this.flushJob; continue }
      if (this.compactionJob) { await this.compactionJob; continue }
      if (this.imms.length > 0 || this.pickCompaction()) {
        this.startBackgroundWork()
        if (!this.flushJob && !this.compactionJob) break
        continue
      }
      break
    }
    await this.settleRemovals()
  }

  /** Waits for the obsolete files being deleted in the background. */
  private async settleRemovals (): Promise<void> {
    while (this.pendingRemovals.size > 0) await Promise.all(this.pendingRemovals)
  }

  private notifyIdle (): void {
    const waiters = this.idleWaiters.splice(0)
    for (const w of waiters) w()
  }

  // ---------------------------------------------------------------- introspection

  levels (): LevelInfo[] {
    return this.versions.current.levels.map((files, level) => ({
      level,
      files: files.length,
      bytes: files.reduce((s, f) => s + f.size, 0)
    }))
  }

  /** The tables of each level (copies of the manifest's metadata). */
  tables (): FileMeta[][] {
    return this.versions.current.levels.map((files) => files.slice())
  }

  /** Structured statistics (lib/stats.ts documents every field). */
  stats (): LsmStats {
    const levels = this.levels()
    let tables = 0
    let deepest = 0
    let runs = 1 + this.imms.length
    for (const l of levels) {
      tables += l.bytes
      if (l.files > 0) deepest = l.bytes
      runs += l.level === 0 ? l.files : l.files > 0 ? 1 : 0
    }
    const c = this.counters
    const written = c.bytesFlushed + c.bytesCompacted
    const bloomUseful = this.tableCache.bloomUseful
    return {
      levels,
      writeAmplification: c.userBytes > 0 ? written / c.userBytes : 0,
      spaceAmplification: deepest > 0 ? tables / deepest : 0,
      readAmplification: runs,
      bytes: { user: c.userBytes, wal: c.walBytes, flushed: c.bytesFlushed, compacted: c.bytesCompacted, tables },
      bloom: {
        useful: bloomUseful,
        falsePositives: Math.max(0, c.tableGetMisses - bloomUseful),
        checked: this.tableCache.bloomChecked
      },
      blockCache: {
        hits: this.blockCache.hits,
        misses: this.blockCache.misses,
        bytes: this.blockCache.usedBytes(),
        capacity: this.blockCache.capacityBytes
      },
      memtableBytes: this.memTableBytes(),
      rangeTombstones: this.rangeTombstoneCount(),
      pendingWrites: this.pending.length,
      stallMs: c.stallMs + (this.stallStartedAt > 0 ? Date.now() - this.stallStartedAt : 0),
      slowdowns: c.slowdowns,
      flushes: c.flushes,
      compactions: {
        running: (this.flushJob ? 1 : 0) + (this.compactionJob ? 1 : 0),
        done: c.compactions,
        trivialMoves: c.trivialMoves
      }
    }
  }

  /**
   * Approximate bytes on disk used by keys in [start, end): whole tables inside
   * the range plus the part of each boundary table before/after the key's
   * position (from the table's index). The memtables are not counted.
   */
  approximateSize (start: Uint8Array, end: Uint8Array): number {
    if (compareBytes(start, end) >= 0) return 0
    let total = 0
    for (const files of this.versions.current.levels) {
      for (const f of files) {
        if (compareBytes(f.largest.userKey, start) < 0 || compareBytes(f.smallest.userKey, end) >= 0) continue
        const inside = compareBytes(f.smallest.userKey, start) >= 0 && compareBytes(f.largest.userKey, end) < 0
        if (inside) { total += f.size; continue }
        const table = this.tableCache.get(f.number)
        const from = compareBytes(f.smallest.userKey, start) >= 0 ? 0 : table.approximateOffsetOf(start)
        const to = compareBytes(f.largest.userKey, end) < 0 ? f.size : table.approximateOffsetOf(end)
        total += Math.max(0, to - from)
      }
    }
    return total
  }

  memTableBytes (): number {
    return this.mem.approximateBytes() + this.imms.reduce((s, i) => s + i.mem.approximateBytes(), 0)
  }

  /** Frozen memtables waiting for (or in) their flush. */
  get frozenMemTables (): number {
    return this.imms.length
  }

  /** Obsolete files whose background unlink has not finished. */
  get pendingRemovalCount (): number {
    return this.pendingRemovals.size
  }

  get lastSequence (): number {
    return this.visibleSeq
  }

  get isClosed (): boolean {
    return this.closed
  }

  // ---------------------------------------------------------------- close

  /**
   * Waits for queued writes and running jobs to reach a safe point, then closes
   * files and releases the lock. A flush in progress is finished; a compaction in
   * progress is abandoned (its output is deleted; its inputs stay live).
   */
  async close (): Promise<void> {
    if (this.closed) return
    this.closeRequested = true
    // Writes held back behind a retired log's fsync commit once it is done.
    while (this.retiredSyncsPending > 0 && this.pending.length > 0 && !this.writeError) await this.retiredLogsSynced.catch(() => {})
    if (this.commitScheduled || this.pending.length > 0) this.commit()
    // Queued writes that could not commit (a stall) fail rather than hang.
    this.failPending(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database closed before the write could commit'))
    while (this.unapplied.length > 0 && this.syncInFlight) await this.syncInFlight
    // The log is closed below: not under its background fdatasync.
    while (this.backgroundLogSync) await this.backgroundLogSync
    // Retired logs synced and closed (trimmed), so that the next open finds them ending at their last record.
    await this.retiredLogsSynced.catch(() => {})
    this.closing = true
    if (this.unapplied.length > 0) this.stopWrites(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database closed'))
    this.cancelCompaction?.()
    while (this.flushJob || this.compactionJob) {
      await Promise.all([this.flushJob, this.compactionJob])
    }
    await this.settleRemovals()
    this.closed = true
    try {
      this.log?.close()
      this.closeRetiredLogs()
      this.versions.close()
      this.tableCache.close()
    } finally {
      this.lock?.release()
      this.lock = undefined
    }
  }
}

function maxSeq (list: readonly RangeTombstone[]): number {
  let max = 0
  for (const t of list) if (t.seq > max) max = t.seq
  return max
}

function rangeOf (files: FileMeta[]): [Buffer, Buffer] {
  let smallest = files[0].smallest.userKey
  let largest = files[0].largest.userKey
  for (const f of files) {
    if (compareBytes(f.smallest.userKey, smallest) < 0) smallest = f.smallest.userKey
    if (compareBytes(f.largest.userKey, largest) > 0) largest = f.largest.userKey
  }
  return [smallest, largest]
}
