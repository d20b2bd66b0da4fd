// The engine: open and close, the read facade, and the wiring of its parts. It
// knows nothing of abstract-level; the adapter (LsmLevel) translates.
//
//   write  --> CommitPipeline (lib/commit-pipeline.ts): queue, group commit,
//              sync policy, apply in log order
//                --> LogManager (lib/wal/log-manager.ts): the current log,
//                    rotation, retired logs' sync and close
//                --> MemTableSet (lib/memtable/memtable-set.ts): the active
//                    memtable, frozen ones waiting for their flush
//   full memtable --> Rotation (lib/write-path.ts): freeze it, start a new log
//                --> CompactionScheduler (lib/compaction/scheduler.ts):
//                    flushes to level 0, compactions (lib/compaction/task.ts),
//                    version edits (lib/manifest/version-set.ts)
//   open   --> recover (lib/recovery.ts): manifest, log replay, orphans
//   read-only open --> Follower (lib/follower.ts): the writer's manifest and
//              logs, read into this engine's VersionSet and MemTableSet; no
//              lock, no write, no background work
//
// Read path: lib/reads.ts, at a point in time (lib/snapshots.ts).
import type { FileSystem } from './fs/fs'
import { platform, type LockHandle } from './platform'
import { resolveOptions, type EngineOptions } from './options'
import { VersionSet } from './manifest/version-set'
import type { FileMeta } from './manifest/file-meta'
import type { MemTable } from './memtable/memtable'
import { MemTableSet } from './memtable/memtable-set'
import { LogManager, type LogPosition } from './wal/log-manager'
import { BlockCache } from './sstable/cache'
import { TableCache } from './sstable/table-cache'
import type { DbIterator, RangeOptions } from './iterators/db-iterator'
import type { CommitPipeline } from './commit-pipeline'
import { CompactionScheduler } from './compaction/scheduler'
import type { JobRunners } from './compaction/job'
import { emptyRecoveryReport, recover, removeOrphans, type RecoveryReport, type ReplayedPrefix } from './recovery'
import { ReadOnlyMode, type Follower } from './follower'
import { PointsInTime, type Snapshot } from './snapshots'
import { refuseLevelDB } from './leveldb/detect'
import { ioError, levelError, type LevelError } from './errors'
import type { LsmStats } from './stats'
import { openIterator, readKey } from './reads'
import { clearRange } from './clear'
import { approximateSizeOf, engineStats, levelInfo, type LevelInfo } from './engine-stats'
import { TurnBudget } from './util/turn'
import { LogRetention } from './wal/log-retention'
import type { CheckpointResult } from './checkpoint'
import type { ChangeBatch } from './change-feed'
import { Outlets } from './outlets'
import { commitPipeline, Rotation, type WrittenGroup } from './write-path'
import type { EngineParts } from './engine-parts'
import { freezeForClose, recordCleanClose, type CloseState } from './clean-close'
import { logNumbers } from './filenames'
import type { Shipper, ReplicateOptions } from './backup/shipper'
import type { ObjectStore } from './backup/object-store'

export { Snapshot } from './snapshots'
export type { LevelInfo } from './engine-stats'
export { encodeBatch, type BatchOp } from './wal/batch'
export type { RangeOptions } from './iterators/db-iterator'
export type { RecoveryReport } from './recovery'
export { processCounters } from './compaction/scheduler'
export type { ChangeBatch, ChangeOp } from './change-feed'
export type { CheckpointResult } from './checkpoint'

/** How many write buffers' worth a memtable replayed at open may hold before it is written to a table during the open (lib/recovery.ts). */
const REPLAY_BUFFER_FACTOR = 4

export class Engine {
  readonly location: string
  readonly options: EngineOptions
  readonly fs: FileSystem
  /** What open() found and did (lib/recovery.ts). */
  recovery: RecoveryReport
  /** Shared by writes and reads so that a loop of awaited operations lets the event loop turn. */
  readonly turn = new TurnBudget()

  private readonly versions: VersionSet
  private readonly blockCache: BlockCache
  private readonly tableCache: TableCache
  /** Snapshots and the points in time of reads that continue on a later turn. */
  private readonly points: PointsInTime
  private readonly memtables: MemTableSet
  private readonly logs: LogManager
  private readonly pipeline: CommitPipeline<WrittenGroup>
  /**
   * Where the records of the writes up to the visible sequence number end:
   * the log records before it are exactly those writes (records are appended
   * in sequence order), what follows it is not visible yet.
   */
  private visibleLogEnd: LogPosition = { number: 0, offset: 0 }
  private readonly scheduler: CompactionScheduler
  private lock: LockHandle | undefined
  /** Set by a read-only open (options.readOnly): everything that writes is refused through it. */
  private readOnly: ReadOnlyMode | undefined
  private closed = false
  /** close() has begun: change feeds end. */
  private closing = false
  /** Tables point reads searched, and those that did not hold the key (Version.get). */
  readonly tableReads = { tableGets: 0, tableGetMisses: 0 }
  /** Keys and values written by the user since open. */
  private userBytes = 0
  /** Retired logs kept for the change feed. */
  private readonly retention: LogRetention
  /**
   * The memtables replayed from the logs at open and flushed after it: until
   * they are in tables, the sizes of what the logs held are not known
   * (approximateSize waits for them; levels() and tables() do not count them).
   */
  private replayedMemTables: MemTable[] = []
  /** Checkpoints, change feeds and shipping. */
  private readonly outlets: Outlets
  /** Freezing full memtables and starting new logs (lib/write-path.ts). */
  private readonly rotation: Rotation
  /** The parts above, for the modules that work on several of them. */
  private readonly parts: EngineParts

  private constructor (location: string, options: EngineOptions, fs: FileSystem, workers: JobRunners | undefined) {
    this.location = location
    this.options = options
    this.fs = fs
    this.recovery = emptyRecoveryReport(options.walRecovery)
    this.versions = new VersionSet(fs, location)
    this.blockCache = new BlockCache(options.cacheSize)
    // A read-only open keeps the tables of every live version open: the writer may delete them.
    this.tableCache = new TableCache(fs, location, options.readOnly ? Infinity : options.maxOpenFiles, this.blockCache)
    this.memtables = new MemTableSet(options.writeBufferSize)
    this.retention = new LogRetention(fs, location, options)
    // The log is synced once in the background about halfway to its rotation (LogManager.append).
    this.logs = new LogManager(fs, location, Math.max(4096, options.writeBufferSize >>> 1), {
      onRetired: () => this.pipeline.resume(),
      onError: (err) => this.pipeline.stop(err)
    })
    this.pipeline = commitPipeline({ options, versions: this.versions, memtables: this.memtables, logs: this.logs }, this.turn, {
      makeRoom: () => this.rotation.makeRoom(),
      applied: (logEnd, bytes, full) => {
        this.userBytes += bytes
        this.visibleLogEnd = logEnd
        if (full) this.scheduler.schedule()
        this.outlets.committed()
      }
    })
    const { versions, memtables, tableCache, blockCache } = this
    this.scheduler = new CompactionScheduler({
      fs,
      dir: location,
      options,
      versions,
      tableCache,
      memtables,
      smallestSnapshot: () => this.points.smallest(),
      lastSequence: () => this.pipeline.visibleSeq,
      currentLogNumber: () => this.logs.number,
      retireLog: (number) => {
        this.shipper?.logRetired(number)
        this.logs.forget(number)
        return this.retention.retire(number)
      },
      logEntryDurable: (number) => this.logs.entryDurable(number),
      onError: (err) => this.pipeline.stop(err),
      onJobDone: () => this.pipeline.resume(),
      workers
    })
    this.parts = { fs, dir: location, options, versions, memtables, tableCache, blockCache, logs: this.logs, scheduler: this.scheduler }
    this.points = new PointsInTime(this.parts, this.turn, () => this.pipeline.visibleSeq)
    this.rotation = new Rotation(this.parts, () => this.pipeline.resume(), (err) => this.pipeline.stop(err))
    this.outlets = new Outlets(this.parts, {
      sequence: () => this.pipeline.visibleSeq,
      visibleLogEnd: () => this.visibleLogEnd,
      error: () => this.pipeline.error,
      closing: () => this.closed || this.closing
    })
  }

  /**
   * Opens (or creates) the database in `location`. Options are validated first.
   * `workers` (internal, for tests): where flushes and compactions run when
   * options.compactionWorker is on, e.g. JobThread.inProcess over `fs`
   * (default: the shared worker threads, with the node file system only).
   */
  /** `replayedPrefixes`: logs this process has replayed in part already (RecoveryContext.replayedPrefixes). */
  static async open (location: string, options: Partial<Record<keyof EngineOptions, unknown>> = {}, fs: FileSystem = platform().fileSystem, workers?: JobRunners, replayedPrefixes?: () => ReplayedPrefix[]): Promise<Engine> {
    const resolved = resolveOptions(options)
    const engine = new Engine(platform().resolvePath(location), resolved, fs, workers)
    try {
      await engine.openFiles(replayedPrefixes)
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

  private async openFiles (replayedPrefixes?: () => ReplayedPrefix[]): Promise<void> {
    const { fs, location: dir, options } = this
    if (options.readOnly) {
      await this.openReadOnly()
      return
    }
    if (!fs.exists(dir)) {
      if (!options.createIfMissing) throw levelError('LEVEL_INVALID_OPTION', `Database does not exist and createIfMissing is false: ${dir}`)
      fs.mkdirp(dir)
    }
    // Another engine's data is refused before the lock is taken: nothing in the directory changes.
    refuseLevelDB(fs, dir, 'open')
    this.lock = platform().acquireLock(fs, dir)
    const recovered = await recover({
      fs,
      dir,
      versions: this.versions,
      createIfMissing: options.createIfMissing,
      errorIfExists: options.errorIfExists,
      walRecovery: options.walRecovery,
      createLog: (number) => this.logs.open(number),
      // A log written with a larger write buffer than this open's still replays
      // into one memtable, up to a bound that keeps memory near the writer's.
      isFull: (mem) => this.memtables.isFull(mem, REPLAY_BUFFER_FACTOR),
      replayedPrefixes,
      writeLevel0: async (mem, lastSeq) => (await this.scheduler.writeLevel0(mem, lastSeq)).outputs
    })
    this.recovery = recovered.report
    this.pipeline.setLastSequence(recovered.lastSequence)
    // Every replayed record is visible; the new log holds none yet.
    this.visibleLogEnd = this.logs.end
    // The replayed memtables not yet in tables are flushed in the background (lib/recovery.ts).
    this.memtables.adoptReplayed(recovered.unflushed)
    this.replayedMemTables = recovered.unflushed.map((u) => u.mem)
    for (const u of recovered.unflushed) this.logs.adopt(u.logNumber, u.logEnd)
    const logs = logNumbers(fs, dir)
    const keep = this.retention.adopt(logs.filter((n) => n < this.versions.logNumber))
    for (const n of logs) if (n >= this.versions.logNumber) keep.add(n)
    removeOrphans(fs, dir, this.versions, keep, this.recovery)
    this.rotation.sizeWriteBuffer()
    this.scheduler.schedule()
  }

  private async openReadOnly (): Promise<void> {
    this.readOnly = await ReadOnlyMode.open(this.parts, (seq) => this.pipeline.setLastSequence(seq))
  }

  /**
   * A read-only open: moves to the writer's latest committed state (lib/follower.ts).
   * Resolves true if reads now see newer writes. Iterators and snapshots keep their view.
   */
  refresh (): Promise<boolean> {
    if (this.readOnly === undefined) return Promise.reject(levelError('LEVEL_NOT_SUPPORTED', 'refresh() is for read-only opens (option readOnly)'))
    if (this.closed) return Promise.reject(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closed'))
    return this.readOnly.follower.refresh()
  }

  /**
   * A read-only open whose process took the writer's LOCK: its logs' memtables,
   * read to the logs' end, for that process's open to continue (Follower.handOver).
   * It stops following; resumeFollowing() undoes that if the open failed.
   */
  handOver (): ReplayedPrefix[] {
    return this.readOnly?.follower.handOver() ?? []
  }

  resumeFollowing (): void {
    this.readOnly?.follower.resume()
  }

  /** refresh() without waiting (Follower.refreshSync): true once caught up; else the reason it is not (call refresh()). */
  refreshSync (): true | unknown {
    if (this.readOnly === undefined) throw levelError('LEVEL_NOT_SUPPORTED', 'refreshSync() is for read-only opens (option readOnly)')
    if (this.closed) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closed')
    const follower = this.readOnly.follower
    return follower.refreshSync() || follower.lastFailure
  }

  /** Refreshes that published a newer state and attempts started over (read-only opens; undefined otherwise). */
  get followerCounters (): Follower['counters'] | undefined {
    return this.readOnly?.follower.counters
  }

  private abortOpen (): void {
    this.closed = true
    try { this.logs.close() } catch {}
    try { this.versions.close() } catch {}
    try { this.tableCache.close() } catch {}
    // The error that failed the open matters more than one releasing the lock.
    // A stale LOCK the open took over is put back: the directory is left as found.
    try { this.lock?.restore() } catch {}
    this.lock = undefined
  }

  // ---------------------------------------------------------------- writes

  /**
   * Applies a batch encoded by encodeBatch (lib/wal/batch.ts) atomically.
   * The engine takes the buffer over: it becomes the log record, then the
   * memtable's source. Resolves once durable per `sync` (lib/commit-pipeline.ts).
   */
  write (batch: Buffer, sync: boolean): Promise<void> {
    if (this.readOnly !== undefined) return Promise.reject(this.readOnly.refusal('write'))
    return this.pipeline.write(batch, sync)
  }

  /** See clearRange (lib/clear.ts). */
  async clear (range: RangeOptions, limit = Infinity, snapshot?: Snapshot): Promise<void> {
    if (this.readOnly !== undefined) throw this.readOnly.refusal('clear')
    await clearRange(this, range, limit, snapshot)
  }

  // ---------------------------------------------------------------- reads

  /** The value of `key` visible at `snapshot` (default: latest), or undefined. The value is a copy the caller owns. */
  get (key: Uint8Array, snapshot?: Snapshot): Buffer | undefined {
    return readKey(this.points.view(snapshot), this.tableCache, key, this.tableReads)
  }

  /** A lazy iterator over the user's view at `snapshot` (default: now), within `range`. */
  iterator (range: RangeOptions, snapshot?: Snapshot): DbIterator {
    return openIterator(this.points.view(snapshot), this.tableCache, range)
  }

  /** See PointsInTime (lib/snapshots.ts). */
  snapshot (): Snapshot {
    return this.points.snapshot()
  }

  /** See PointsInTime.pointInTime. */
  pointInTime (): Snapshot {
    return this.points.pointInTime()
  }

  releasePointInTime (s: Snapshot): void {
    this.points.releasePointInTime(s)
  }

  /** See PointsInTime.readAtPoint. */
  readAtPoint<T> (snapshot: Snapshot | undefined, read: (at: Snapshot | undefined) => T): Promise<T> {
    return this.points.readAtPoint(snapshot, read)
  }

  releaseSnapshot (s: Snapshot): void {
    this.points.release(s)
  }

  // ---------------------------------------------------------------- background work

  /** See CompactionScheduler.compactRange; the memtables are flushed first. */
  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    if (this.readOnly !== undefined) throw this.readOnly.refusal('compact')
    await this.flushMemTable()
    await this.scheduler.compactRange(start, end)
  }

  /** Freezes the memtable (if it has data) and waits until every frozen memtable is flushed. */
  async flushMemTable (): Promise<void> {
    if (this.readOnly !== undefined) throw this.readOnly.refusal('flush')
    if (this.pipeline.error) throw this.pipeline.error
    await this.pipeline.settle()
    await this.rotation.freezeActive()
    await this.scheduler.flushFrozen()
  }

  /** Resolves when no flush or compaction is running or needed. */
  async waitForIdle (): Promise<void> {
    await this.scheduler.waitForIdle()
  }

  // ---------------------------------------------------------------- checkpoints, the change feed, shipping (lib/outlets.ts)

  /** See Outlets.checkpoint. */
  async checkpoint (dir: string): Promise<CheckpointResult> {
    if (this.readOnly !== undefined) throw this.readOnly.refusal('checkpoint')
    return await this.outlets.checkpoint(dir)
  }

  /** See Outlets.changes. */
  changes (since: number): AsyncGenerator<ChangeBatch, void, undefined> {
    return this.outlets.changes(since)
  }

  /** See Outlets.replicate. */
  async replicate (store: ObjectStore, options: ReplicateOptions = {}): Promise<Shipper> {
    if (this.readOnly !== undefined) throw this.readOnly.refusal('replicate')
    return await this.outlets.replicate(store, options)
  }

  /** Shipping to an object store (replicate), if started. */
  private get shipper (): Shipper | undefined {
    return this.outlets.shipper
  }

  private wakeFeeds (): void {
    this.outlets.wakeFeeds()
  }

  // ---------------------------------------------------------------- introspection

  levels (): LevelInfo[] {
    return levelInfo(this.versions.current)
  }

  /** The tables of each level (copies of the manifest's metadata). */
  tables (): FileMeta[][] {
    return this.versions.current.levels.map((files) => files.slice())
  }

  /** Flush and compaction counters since open. */
  get counters (): CompactionScheduler['counters'] {
    return this.scheduler.counters
  }

  /** The error that failed a flush or compaction, if one did. */
  get backgroundError (): LevelError | undefined {
    return this.scheduler.error
  }

  /** Structured statistics (lib/stats.ts documents every field). */
  stats (): LsmStats {
    return engineStats(this.parts, {
      tableReads: this.tableReads,
      userBytes: this.userBytes,
      pendingWrites: this.pipeline.queued,
      stallMs: this.pipeline.counters.stallMs + this.pipeline.currentStallMs,
      slowdowns: this.pipeline.counters.slowdowns,
      recovery: this.recovery,
      replication: this.shipper?.stats()
    })
  }

  /**
   * Approximate bytes on disk used by keys in [start, end) (approximateSizeOf,
   * lib/engine-stats.ts). The memtables are not counted, but for those replayed
   * at open: their flush is awaited first (see approximateSizeOf).
   */
  async approximateSize (start: Uint8Array, end: Uint8Array): Promise<number> {
    if (this.replayedMemTables.length > 0) {
      await this.scheduler.flushed(this.replayedMemTables)
      if (!this.memtables.frozen.some((f) => this.replayedMemTables.includes(f.mem))) this.replayedMemTables = []
    }
    if (this.closed) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closed')
    return approximateSizeOf(this.versions.current, this.tableCache, start, end)
  }

  memtableBytes (): number {
    return this.memtables.approximateBytes()
  }

  /** Frozen memtables waiting for (or in) their flush. */
  get frozenMemTables (): number {
    return this.memtables.frozen.length
  }

  /** Obsolete files whose background unlink has not finished. */
  get pendingRemovalCount (): number {
    return this.scheduler.pendingRemovalCount
  }

  get lastSequence (): number {
    return this.pipeline.visibleSeq
  }

  get isClosed (): boolean {
    return this.closed
  }

  // ---------------------------------------------------------------- close

  private closeState (): CloseState {
    return { lastSequence: this.pipeline.visibleSeq, writeError: this.pipeline.error }
  }

  /**
   * Waits for queued writes and running jobs to reach a safe point, then closes
   * files and releases the lock. A flush in progress is finished; a compaction in
   * progress is abandoned (its output is deleted; its inputs stay live). With
   * flushOnClose, the memtables are written to level-0 tables first.
   */
  async close (): Promise<void> {
    if (this.closed) return
    this.closing = true
    this.wakeFeeds()
    await this.readOnly?.stop()
    // Writes held back behind a retired log's fsync commit once it is done.
    while (this.logs.retiring && this.pipeline.queued > 0 && !this.pipeline.error) await this.logs.settleRetirements()
    await this.pipeline.close()
    // No file is closed under a sync; retired logs end at their last record.
    await this.logs.settle()
    // Every write is in the logs: the shipper's last round takes them.
    await this.shipper?.stop()
    if (this.readOnly === undefined) {
      await this.scheduler.close(await freezeForClose(this.parts, this.rotation, this.closeState()))
      await recordCleanClose(this.parts, this.closeState())
    } else {
      await this.scheduler.close()
    }
    this.closed = true
    try {
      this.logs.close()
      this.versions.close()
      this.tableCache.close()
    } finally {
      this.lock?.release()
      this.lock = undefined
    }
  }
}
