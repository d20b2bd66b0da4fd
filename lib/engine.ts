// The engine: open and close, the read facade, and the wiring of its parts. It
// knows nothing of abstract-level; the adapter (LsmLevel) translates.
//
//   write  --> CommitPipeline (lib/commit-pipeline.ts): queue, group commit,
//              sync policy, apply in log order
//                --> LogManager (lib/wal/log-manager.ts): the current log,
//                    rotation, retired logs' sync and close
//                --> MemTableSet (lib/memtable/memtable-set.ts): the active
//                    memtable, frozen ones waiting for their flush
//   full memtable --> rotate(): freeze it, start a new log
//                --> CompactionScheduler (lib/compaction/scheduler.ts):
//                    flushes to level 0, compactions (lib/compaction/task.ts),
//                    version edits (lib/manifest/version-set.ts)
//   open   --> recover (lib/recovery.ts): manifest, log replay, orphans
//   read-only open --> Follower (lib/follower.ts): the writer's manifest and
//              logs, read into this engine's VersionSet and MemTableSet; no
//              lock, no write, no background work
//
// Read path
//   memtables (active, then frozen newest first) -> the current Version's tables
//   (Version.get: L0 newest first, then one table per level by binary search,
//   each Bloom-gated). The first version visible at the read's sequence number
//   decides; a range tombstone that covers it hides it.
import { createWhenRoom, type FileSystem } from './fs/fs'
import { platform, type LockHandle } from './platform'
import { resolveOptions, type EngineOptions } from './options'
import { VersionSet } from './manifest/version-set'
import type { Version } from './manifest/version'
import { overlapsHalfOpen, type FileMeta } from './manifest/file-meta'
import type { MemTable } from './memtable/memtable'
import { MemTableSet } from './memtable/memtable-set'
import { LogManager, type LogPosition } from './wal/log-manager'
import { encodeBatch, OP_RANGE_DELETE, type BatchOp } from './wal/batch'
import { clearBounds, RangeTombstoneView, type RangeTombstoneIndex } from './range-tombstones'
import { BlockCache } from './sstable/cache'
import { TableCache } from './sstable/table-cache'
import { MergingIterator } from './iterators/merging-iterator'
import { LevelIterator } from './iterators/level-iterator'
import type { InternalIterator } from './iterators/internal-iterator'
import { DbIterator, entryKey, FOUND, type RangeOptions } from './iterators/db-iterator'
import { CommitPipeline } from './commit-pipeline'
import { CompactionScheduler } from './compaction/scheduler'
import type { JobRunners } from './compaction/job'
import { emptyRecoveryReport, recover, removeOrphans, type RecoveryReport } from './recovery'
import { Follower } from './follower'
import { SnapshotList, Snapshot } from './snapshots'
import { refuseLevelDB } from './leveldb/detect'
import { KIND_DELETE, KIND_VALUE } from './keys'
import { compareBytes } from './util/coding'
import { ioError, isLevelError, levelError, type LevelError } from './errors'
import type { LsmStats } from './stats'
import { nextTurn, TurnBudget } from './util/turn'
import { LogRetention } from './wal/log-retention'
import { openUnflushedLogs, writeCheckpoint, type CheckpointResult } from './checkpoint'
import { changes, type ChangeBatch } from './change-feed'
import { logNumbers } from './filenames'
import { Shipper, type ReplicateOptions } from './backup/shipper'
import type { ObjectStore } from './backup/object-store'

export { Snapshot } from './snapshots'
export { encodeBatch, type BatchOp } from './wal/batch'
export type { RangeOptions } from './iterators/db-iterator'
export type { RecoveryReport } from './recovery'
export { processCounters } from './compaction/scheduler'
export type { ChangeBatch, ChangeOp } from './change-feed'
export type { CheckpointResult } from './checkpoint'

/** How many write buffers' worth a memtable replayed at open may hold before it is written to a table during the open (lib/recovery.ts). */
const REPLAY_BUFFER_FACTOR = 4

/**
 * How full the active memtable is when the flush runner is told a flush is
 * coming (JobRunner.prepare: a stopped job thread starts then, 40-125 ms of
 * its own work, rather than when the flush is due: in a bulk load the rest of
 * the memtable fills in about 75 ms).
 */
const FLUSH_PREPARE_FACTOR = 1 / 4

/** A group of writes in the log, waiting to be applied to `mem`; its records end at `logEnd`. */
interface WrittenGroup {
  mem: MemTable
  logEnd: LogPosition
}

export interface LevelInfo {
  level: number
  files: number
  bytes: number
}

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
  private readonly snapshots = new SnapshotList()
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
  /** Set by a read-only open (options.readOnly). */
  private follower: Follower | undefined
  private refreshTimer: NodeJS.Timeout | undefined
  private closed = false
  /** close() has begun: change feeds end. */
  private closing = false
  /** Tables point reads searched, and those that did not hold the key (Version.get). */
  readonly tableReads = { tableGets: 0, tableGetMisses: 0 }
  /** Keys and values written by the user since open. */
  private userBytes = 0
  /** Retired logs kept for the change feed. */
  private readonly retention: LogRetention
  /** Change feeds waiting for the next commit. */
  private commitWaiters: Array<() => void> = []
  /**
   * The memtables replayed from the logs at open and flushed after it: until
   * they are in tables, the sizes of what the logs held are not known
   * (approximateSize waits for them; levels() and tables() do not count them).
   */
  private replayedMemTables: MemTable[] = []
  /** Shipping to an object store (replicate), if started. */
  private shipper: Shipper | undefined
  /** The active memtable the flush runner was last told about (FLUSH_PREPARE_FACTOR). */
  private flushPreparedFor: MemTable | undefined

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
    this.pipeline = new CommitPipeline<WrittenGroup>({
      shouldSlowDown: () => this.versions.current.levels[0].length >= options.level0SlowdownWritesTrigger,
      makeRoom: () => this.makeRoomForWrite(),
      writeToLog: (batches) => {
        this.logs.append(batches)
        return { mem: this.memtables.groupWritten(), logEnd: this.logs.end }
      },
      canSyncInline: () => !this.logs.retiring,
      syncLog: () => this.logs.sync(),
      syncLogAsync: () => this.logs.syncAsync(),
      apply: ({ mem, logEnd }, batches, firstSeqs) => {
        for (let i = 0; i < batches.length; i++) this.userBytes += mem.addBatch(batches[i], firstSeqs[i])
        this.visibleLogEnd = logEnd
        if (this.memtables.groupApplied(mem)) this.scheduler.schedule()
        if (this.commitWaiters.length > 0) this.wakeFeeds()
      }
    }, this.turn, { inlineSync: options.inlineSync })
    this.scheduler = new CompactionScheduler({
      fs,
      dir: location,
      options,
      versions: this.versions,
      tableCache: this.tableCache,
      memtables: this.memtables,
      smallestSnapshot: () => this.smallestSnapshot(),
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
  }

  /**
   * Opens (or creates) the database in `location`. Options are validated first.
   * `workers` (internal, for tests): where flushes and compactions run when
   * options.compactionWorker is on, e.g. JobThread.inProcess over `fs`
   * (default: the shared worker threads, with the node file system only).
   */
  static async open (location: string, options: Partial<Record<keyof EngineOptions, unknown>> = {}, fs: FileSystem = platform().fileSystem, workers?: JobRunners): Promise<Engine> {
    const resolved = resolveOptions(options)
    const engine = new Engine(platform().resolvePath(location), resolved, fs, workers)
    try {
      await engine.openFiles()
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

  private async openFiles (): Promise<void> {
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
    this.scheduler.schedule()
  }

  private async openReadOnly (): Promise<void> {
    // Tables the writer dropped leave the cache; the files are the writer's.
    this.versions.onObsoleteTable = (n) => this.tableCache.evict(n)
    this.follower = await Follower.open({
      fs: this.fs,
      dir: this.location,
      versions: this.versions,
      memtables: this.memtables,
      tableCache: this.tableCache,
      publish: (seq) => this.pipeline.setLastSequence(seq)
    })
    const every = this.options.refreshIntervalMs
    if (every > 0) {
      // A refresh that fails (the writer is moving too fast) is retried on the next tick.
      this.refreshTimer = setInterval(() => { this.follower!.refresh().catch(() => {}) }, every)
      this.refreshTimer.unref()
    }
  }

  /**
   * A read-only open: moves to the writer's latest committed state (lib/follower.ts).
   * Resolves true if reads now see newer writes. Iterators and snapshots keep their view.
   */
  refresh (): Promise<boolean> {
    if (this.follower === undefined) return Promise.reject(levelError('LEVEL_NOT_SUPPORTED', 'refresh() is for read-only opens (option readOnly)'))
    if (this.closed) return Promise.reject(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closed'))
    return this.follower.refresh()
  }

  /** Refreshes that published a newer state and attempts started over (read-only opens; undefined otherwise). */
  get followerCounters (): Follower['counters'] | undefined {
    return this.follower?.counters
  }

  private readOnlyError (what: string): LevelError {
    return levelError('LEVEL_READ_ONLY', `Cannot ${what}: the database was opened read-only`)
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
    if (this.follower !== undefined) return Promise.reject(this.readOnlyError('write'))
    return this.pipeline.write(batch, sync)
  }

  /**
   * Deletes the keys in `range` visible at `snapshot` (default: now), at most
   * `limit` of them. Unlimited and at the latest state: one range tombstone
   * (lib/range-tombstones.ts), whatever the size of the range; entries written
   * after the call are not affected. Otherwise point deletes in batches of
   * 1,000 read from a snapshot, so memory stays bounded whatever the range.
   */
  async clear (range: RangeOptions, limit = Infinity, snapshot?: Snapshot): Promise<void> {
    if (this.follower !== undefined) throw this.readOnlyError('clear')
    if (limit === Infinity && snapshot === undefined) {
      const { start, end } = clearBounds(range)
      if (end !== undefined && compareBytes(start, end) >= 0) return
      await this.write(encodeBatch([{ kind: OP_RANGE_DELETE, key: start, end }]), false)
      return
    }
    const own = snapshot ? undefined : this.snapshot()
    const it = this.iterator(range, snapshot ?? own)
    let remaining = limit
    try {
      while (remaining > 0) {
        const ops: BatchOp[] = []
        while (ops.length < 1000 && remaining > 0 && it.step(Infinity) === FOUND) {
          ops.push({ kind: KIND_DELETE, key: Buffer.from(entryKey(it)) })
          remaining--
        }
        if (ops.length === 0) break
        await this.write(encodeBatch(ops), false)
      }
    } finally {
      it.close()
      if (own) this.releaseSnapshot(own)
    }
  }

  /**
   * Whether a write group may go to the log (the commit pipeline's makeRoom):
   * a full memtable is frozen and a new log started, unless too many frozen
   * memtables or level-0 tables are waiting, or the file system is still
   * making the file the new log needs (a write stall); a new log takes
   * records once the retired one is durable.
   */
  private makeRoomForWrite (): 'go' | 'stall' | 'hold' {
    const active = this.memtables.active
    if (this.flushPreparedFor !== active && this.memtables.isFull(active, FLUSH_PREPARE_FACTOR)) {
      this.flushPreparedFor = active
      this.scheduler.prepareFlush()
    }
    if (this.memtables.isFull(active)) {
      if (this.memtables.frozen.length >= this.options.maxImmutableMemtables ||
        this.versions.current.levels[0].length >= this.options.level0StopWritesTrigger) {
        this.scheduler.schedule()
        return 'stall'
      }
      const making = this.fs.roomToCreate?.(this.location, 1)
      if (making !== undefined) {
        making.then(() => this.pipeline.resume(), (err: unknown) => this.pipeline.stop(ioError('Cannot create a new log', err)))
        return 'stall'
      }
      this.rotate()
    }
    return this.logs.retiring ? 'hold' : 'go'
  }

  /** Freezes the active memtable and starts a new log. Throws a LevelError if the log cannot be started. */
  private rotate (): void {
    const oldLog = this.logs.number
    this.logs.rotate(this.versions.newFileNumber())
    this.memtables.freeze(oldLog)
    this.scheduler.schedule()
  }

  // ---------------------------------------------------------------- reads

  /** The value of `key` visible at `snapshot` (default: latest), or undefined. The value is a copy the caller owns. */
  get (key: Uint8Array, snapshot?: Snapshot): Buffer | undefined {
    const seq = snapshot ? snapshot.seq : this.pipeline.visibleSeq
    const v = snapshot?.pinned?.version ?? this.versions.current
    const memtables = snapshot?.pinned?.memtables ?? this.memtables
    const r = memtables.get(key, seq) ?? v.get(this.tableCache, key, seq, this.tableReads)
    if (r === undefined || r.kind !== KIND_VALUE) return undefined
    if (memtables.hides(key, r.seq, seq)) return undefined
    if (v.rangeTombstones.length > 0 && v.rangeTombstoneIndex().covers(key, r.seq, seq)) return undefined
    return r.value
  }

  /** The range tombstones a new iterator consults (undefined: none). */
  private rangeTombstoneView (v: Version, memtables: MemTableSet): RangeTombstoneView | undefined {
    const indexes: RangeTombstoneIndex[] = []
    memtables.tombstoneIndexes(indexes)
    if (v.rangeTombstones.length > 0) indexes.push(v.rangeTombstoneIndex())
    return RangeTombstoneView.of(indexes)
  }

  /** Range tombstones written (memtables) or live (version). */
  rangeTombstoneCount (): number {
    return this.memtables.rangeTombstoneCount() + this.versions.current.rangeTombstones.length
  }

  /** A lazy iterator over the user's view at `snapshot` (default: now), within `range`. */
  iterator (range: RangeOptions, snapshot?: Snapshot): DbIterator {
    const seq = snapshot ? snapshot.seq : this.pipeline.visibleSeq
    const v = snapshot?.pinned?.version ?? this.versions.current
    const memtables = snapshot?.pinned?.memtables ?? this.memtables
    v.ref()
    const children: InternalIterator[] = memtables.iterators()
    // Each L0 table as a one-file level: opened on the first seek that needs it, so
    // that a damaged table fails the iterator's next() (LEVEL_CORRUPTION) rather
    // than its creation, which would leak the tables opened before it.
    const fillCache = range.fillCache
    const open = (meta: FileMeta): InternalIterator => this.tableCache.get(meta.number).iterator(fillCache)
    for (const f of v.levels[0]) children.push(new LevelIterator([f], open))
    for (let level = 1; level < v.levels.length; level++) {
      if (v.levels[level].length > 0) children.push(new LevelIterator(v.levels[level], open))
    }
    return new DbIterator(new MergingIterator(children), seq, range, () => v.unref(), this.rangeTombstoneView(v, memtables))
  }

  snapshot (): Snapshot {
    if (this.follower !== undefined) {
      // The writer's compactions do not know of this snapshot: it pins what it reads.
      const version = this.versions.current
      version.ref()
      return new Snapshot(this.pipeline.visibleSeq, { version, memtables: this.memtables.copy() })
    }
    return this.snapshots.acquire(this.pipeline.visibleSeq)
  }

  /**
   * The current sequence number as an unregistered snapshot, for a read that
   * continues on a later turn: safe because compaction only drops versions
   * hidden at a sequence number no newer than this one. Read-only, it pins the
   * current version and memtables instead (the writer's compactions and the
   * next refresh know nothing of it). Give it back with releasePointInTime.
   */
  pointInTime (): Snapshot {
    if (this.follower !== undefined) return this.snapshot()
    return new Snapshot(this.pipeline.visibleSeq)
  }

  releasePointInTime (s: Snapshot): void {
    if (s.pinned !== undefined) this.releaseSnapshot(s)
  }

  /**
   * Runs `read` at `snapshot`, or at the current sequence number: now, or,
   * when this turn's budget is used up, on the next turn at the point taken
   * now (a read sees the state as of its call, whenever it runs).
   */
  async readAtPoint<T> (snapshot: Snapshot | undefined, read: (at: Snapshot | undefined) => T): Promise<T> {
    if (!this.turn.exhausted()) return read(snapshot)
    const point = snapshot ?? this.pointInTime()
    try {
      await nextTurn()
      return read(point)
    } finally {
      if (point !== snapshot) this.releasePointInTime(point)
    }
  }

  releaseSnapshot (s: Snapshot): void {
    if (s.pinned !== undefined) {
      if (!s.released) s.pinned.version.unref()
      s.released = true
      return
    }
    this.snapshots.release(s)
    // A range tombstone this snapshot held back may now be compacted away.
    if (this.versions.current.rangeTombstones.length > 0) this.scheduler.schedule()
  }

  private smallestSnapshot (): number {
    return this.snapshots.oldest() ?? this.pipeline.visibleSeq
  }

  // ---------------------------------------------------------------- background work

  /** See CompactionScheduler.compactRange; the memtables are flushed first. */
  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    if (this.follower !== undefined) throw this.readOnlyError('compact')
    await this.flushMemTable()
    await this.scheduler.compactRange(start, end)
  }

  /** Freezes the memtable (if it has data) and waits until every frozen memtable is flushed. */
  async flushMemTable (): Promise<void> {
    if (this.follower !== undefined) throw this.readOnlyError('flush')
    if (this.pipeline.error) throw this.pipeline.error
    await this.pipeline.settle()
    if (!this.memtables.active.isEmpty()) {
      try {
        await createWhenRoom(this.fs, this.location, 1, () => { if (!this.memtables.active.isEmpty()) this.rotate() })
      } catch (err) {
        const e = isLevelError(err) ? err : ioError('Cannot create a new log', err)
        this.pipeline.stop(e)
        throw e
      }
    }
    await this.scheduler.flushFrozen()
  }

  /** Resolves when no flush or compaction is running or needed. */
  async waitForIdle (): Promise<void> {
    await this.scheduler.waitForIdle()
  }

  // ---------------------------------------------------------------- checkpoints and the change feed

  /**
   * Writes an openable copy of the database as of its current sequence number
   * into `dir` (lib/checkpoint.ts): tables hard-linked, the unflushed part of
   * the logs taken by bytes (the log of the sequence number copied up to it,
   * older logs linked), a manifest for exactly that version.
   */
  async checkpoint (dir: string): Promise<CheckpointResult> {
    if (this.follower !== undefined) throw this.readOnlyError('checkpoint')
    if (this.pipeline.error) throw this.pipeline.error
    // One turn: the version, its logNumber, the sequence number and where its
    // writes end in the logs; the logs opened, so that a flush's removal of
    // one cannot take its bytes away before they are copied.
    const version = this.versions.current
    const logNumber = this.versions.logNumber
    const sequence = this.pipeline.visibleSeq
    const logs = openUnflushedLogs(this.fs, this.location, logNumber, this.visibleLogEnd, (n) => this.logs.sealedLog(n))
    version.ref()
    return await writeCheckpoint({
      fs: this.fs,
      dir: this.location,
      version,
      sequence,
      logs,
      nextFileNumber: this.versions.nextFileNumber
    }, platform().resolvePath(dir))
  }

  /**
   * The committed batches after sequence number `since`, then new ones as they
   * commit (lib/change-feed.ts), until the database closes or the consumer stops.
   */
  changes (since: number): AsyncGenerator<ChangeBatch, void, undefined> {
    return changes({
      fs: this.fs,
      dir: this.location,
      sequence: () => this.pipeline.visibleSeq,
      logNumbers: () => logNumbers(this.fs, this.location),
      nextCommit: () => new Promise<void>((resolve) => this.commitWaiters.push(resolve)),
      closed: () => this.closed || this.closing
    }, since)
  }

  /**
   * Starts shipping the database to `store` (lib/backup/shipper.ts): resolves
   * once the new generation is in the store; stopped by close() after a last
   * round. One shipper per open database.
   */
  async replicate (store: ObjectStore, options: ReplicateOptions = {}): Promise<Shipper> {
    if (this.follower !== undefined) throw this.readOnlyError('replicate')
    if (this.shipper !== undefined) throw levelError('LEVEL_INVALID_OPTION', `replicate(): the database is already shipping to ${this.shipper.storeDescription}`)
    const shipper = new Shipper(store, {
      fs: this.fs,
      dir: this.location,
      // One turn, as for a checkpoint: the version (pinned), its logNumber, the sequence number and where its writes end.
      capture: () => {
        const version = this.versions.current
        version.ref()
        return { version, logNumber: this.versions.logNumber, sequence: this.pipeline.visibleSeq, visibleEnd: this.visibleLogEnd, nextFileNumber: this.versions.nextFileNumber }
      },
      sealedLog: (n) => this.logs.sealedLog(n),
      sequence: () => this.pipeline.visibleSeq,
      readTable: this.scheduler.tableReader,
      hostFiles: platform().isHostFileSystem?.(this.fs) === true
    }, options)
    this.shipper = shipper
    try {
      await shipper.start()
    } catch (err) {
      this.shipper = undefined
      throw err
    }
    return shipper
  }

  private wakeFeeds (): void {
    const waiters = this.commitWaiters
    this.commitWaiters = []
    for (const wake of waiters) wake()
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
    const levels = this.levels()
    let tables = 0
    let deepest = 0
    let runs = 1 + this.memtables.frozen.length
    for (const l of levels) {
      tables += l.bytes
      if (l.files > 0) deepest = l.bytes
      runs += l.level === 0 ? l.files : l.files > 0 ? 1 : 0
    }
    const c = this.scheduler.counters
    const written = c.bytesFlushed + c.bytesCompacted
    const bloomUseful = this.tableCache.bloomUseful
    return {
      levels,
      writeAmplification: this.userBytes > 0 ? written / this.userBytes : 0,
      spaceAmplification: deepest > 0 ? tables / deepest : 0,
      readAmplification: runs,
      bytes: { user: this.userBytes, wal: this.logs.bytesWritten, flushed: c.bytesFlushed, compacted: c.bytesCompacted, tables },
      bloom: {
        useful: bloomUseful,
        falsePositives: Math.max(0, this.tableReads.tableGetMisses - bloomUseful),
        checked: this.tableCache.bloomChecked
      },
      blockCache: {
        hits: this.blockCache.hits,
        misses: this.blockCache.misses,
        bytes: this.blockCache.usedBytes(),
        capacity: this.blockCache.capacityBytes
      },
      memtableBytes: this.memtableBytes(),
      memory: this.memoryBytes(),
      rangeTombstones: this.rangeTombstoneCount(),
      pendingWrites: this.pipeline.queued,
      stallMs: this.pipeline.counters.stallMs + this.pipeline.currentStallMs,
      slowdowns: this.pipeline.counters.slowdowns,
      flushes: c.flushes,
      compactions: {
        running: this.scheduler.running,
        done: c.compactions,
        trivialMoves: c.trivialMoves,
        split: c.splitCompactions
      },
      recovery: structuredClone(this.recovery),
      ...(this.shipper !== undefined ? { replication: this.shipper.stats() } : {})
    }
  }

  /**
   * Approximate bytes on disk used by keys in [start, end): whole tables inside
   * the range plus the part of each boundary table before/after the key's
   * position (from the table's index). The memtables are not counted, but for
   * those replayed at open: their flush is awaited first, so that a reopen
   * reports what was in tables at close plus what the logs held, as LevelDB
   * does (it writes the replayed log to a table during the open), and two
   * reopens with no write between them report the same size.
   */
  async approximateSize (start: Uint8Array, end: Uint8Array): Promise<number> {
    if (this.replayedMemTables.length > 0) {
      await this.scheduler.flushed(this.replayedMemTables)
      if (!this.memtables.frozen.some((f) => this.replayedMemTables.includes(f.mem))) this.replayedMemTables = []
    }
    if (this.closed) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closed')
    if (compareBytes(start, end) >= 0) return 0
    let total = 0
    for (const files of this.versions.current.levels) {
      for (const f of files) {
        if (!overlapsHalfOpen(f, start, end)) continue
        const startsInside = compareBytes(f.smallest.userKey, start) >= 0
        const endsInside = compareBytes(f.largest.userKey, end) < 0
        if (startsInside && endsInside) { total += f.size; continue }
        const table = this.tableCache.get(f.number)
        const from = startsInside ? 0 : table.approximateOffsetOf(start)
        const to = endsInside ? f.size : table.approximateOffsetOf(end)
        total += Math.max(0, to - from)
      }
    }
    return total
  }

  memtableBytes (): number {
    return this.memtables.approximateBytes()
  }

  /** stats().memory: what the engine holds, by what bounds it. */
  private memoryBytes (): LsmStats['memory'] {
    const memtables = this.memtableBytes()
    const blockCache = this.blockCache.usedBytes()
    const tables = this.tableCache.memoryBytes
    return { memtables, blockCache, tables, total: memtables + blockCache + tables }
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

  /**
   * Records in the manifest that the database was closed cleanly: the logs it
   * still needs (the frozen memtables' and the current one), each synced
   * first, with where its records end, and the newest sequence number. The
   * next open then refuses any of them that differs (lib/recovery.ts): no
   * crash can explain it. Not after a failed write (the current log's end is
   * not known); if the record cannot be written, the next open takes the logs
   * as a crash left them, as before.
   */
  private async recordCleanClose (): Promise<void> {
    if (this.pipeline.error !== undefined) return
    const numbers = [...this.memtables.frozen.map((f) => f.logNumber), this.logs.number]
    const logs: Array<{ number: number, size: number }> = []
    for (const number of new Set(numbers)) {
      if (number < this.versions.logNumber) continue
      const size = this.logs.recordsEnd(number)
      if (size === undefined) return
      logs.push({ number, size })
    }
    logs.sort((a, b) => a.number - b.number)
    try {
      this.logs.sync()
      await this.versions.recordClose({ lastSequence: this.pipeline.visibleSeq, logs })
    } catch {}
  }

  /**
   * flushOnClose: freezes the active memtable (its log retired, a new empty
   * log started), and says whether the scheduler is to flush the frozen
   * memtables as it closes. Then the logs left hold no record: the next open
   * replays nothing. Not for a read-only open, nor after a failed write or job
   * (the logs as they are then are what the next open recovers from).
   */
  private async freezeForClose (): Promise<boolean> {
    if (this.follower !== undefined || !this.options.flushOnClose) return false
    if (this.pipeline.error !== undefined || this.scheduler.error !== undefined) return false
    if (!this.memtables.active.isEmpty()) {
      try {
        await createWhenRoom(this.fs, this.location, 1, () => { if (!this.memtables.active.isEmpty()) this.rotate() })
      } catch {
        // No new log: the writes stay in the current one, recorded at close as before.
        return this.memtables.frozen.length > 0
      }
    }
    return this.memtables.frozen.length > 0
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
    clearInterval(this.refreshTimer)
    await this.follower?.settle()
    // Writes held back behind a retired log's fsync commit once it is done.
    while (this.logs.retiring && this.pipeline.queued > 0 && !this.pipeline.error) await this.logs.settleRetirements()
    await this.pipeline.close()
    // No file is closed under a sync; retired logs end at their last record.
    await this.logs.settle()
    // Every write is in the logs: the shipper's last round takes them.
    await this.shipper?.stop()
    await this.scheduler.close(await this.freezeForClose())
    if (this.follower === undefined) await this.recordCleanClose()
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
