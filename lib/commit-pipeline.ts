// The commit pipeline: how a write becomes durable and visible.
//
//   write(batch) --queue--> commit (one microtask per tick: every write issued
//   in the same tick) --> one write(2) of their log records --> [fsync if any
//   asked for sync, shared by everything waiting] --> applied in log order --> resolve
//
// Default writes resolve once write(2) returned (they survive a killed
// process); sync writes once an fdatasync covering them returned (they survive
// power loss). A group queued behind a sync group is applied after it, so that
// readers see writes in log order. A failed write(2) or fsync fails the writes
// it covered and every later one: the pipeline stops until the database is
// reopened.
//
// The pipeline owns the queue, the sequence numbers and the sync policy; what
// a log, a memtable or a stall is belongs to its environment (CommitEnv), so
// that it can be tested alone (test/commit-pipeline.test.ts).
import { levelError, type LevelError } from './errors'
import { batchCount, setBatchSequence } from './wal/batch'
import type { TurnBudget } from './util/turn'

/** What the pipeline needs of the engine. `T` names where a group is applied (its memtable). */
export interface CommitEnv<T> {
  /** True if level 0 is filling faster than compaction drains it: each group then waits 1 ms once (LevelDB's slowdown). */
  shouldSlowDown (): boolean
  /**
   * Whether a group may go to the log now: 'go'; 'stall' (no room until
   * background work makes some: a write stall, counted in stallMs); 'hold'
   * (the log is not ready: an earlier log's retirement is running). After
   * 'stall' or 'hold' the env calls resume() once writes may go on.
   * Throws a LevelError if room cannot be made (the pipeline then stops).
   */
  makeRoom (): 'go' | 'stall' | 'hold'
  /** Appends the batches as log records with one write(2); returns where they will apply. Throws a LevelError on failure. */
  writeToLog (batches: Buffer[]): T
  /** Whether an fdatasync may run on the event loop now (no earlier log's sync outstanding). */
  canSyncInline (): boolean
  /** fdatasyncs the log on the event loop. Throws a LevelError on failure. */
  syncLog (): void
  /** fdatasyncs the log and waits for every earlier log's sync, off the event loop. Rejects with a LevelError. */
  syncLogAsync (): Promise<void>
  /** Applies a committed group's batches (firstSeqs[i] is batches[i]'s first sequence number) to `target`. */
  apply (target: T, batches: Buffer[], firstSeqs: number[]): void
}

export interface CommitPipelineOptions {
  /** Allow inline fdatasyncs (the `inlineSync` option). */
  inlineSync: boolean
}

/** An inline fdatasync slower than this (ms) moves syncs to the thread pool for a while. */
const INLINE_SYNC_MAX_MS = 1
/** How many syncs then run on the thread pool before inline syncs are tried again. */
const INLINE_SYNC_BACKOFF = 256

interface Writer {
  /** The encoded batch (lib/wal/batch.ts); its sequence number is set at commit. */
  batch: Buffer
  sync: boolean
  resolve: () => void
  reject: (err: Error) => void
}

/** Writers whose records went to the log in one write(2), waiting to be applied. */
interface Group<T> {
  writers: Writer[]
  target: T
  /** writers[i]'s batch and its first sequence number. */
  batches: Buffer[]
  firstSeqs: number[]
  lastSeq: number
  /** Some writer asked for sync and no fdatasync has covered the group yet. */
  needsSync: boolean
}

export class CommitPipeline<T> {
  /** Highest sequence number applied (what reads see). */
  visibleSeq = 0
  /** Highest sequence number handed out to a write. */
  private allocatedSeq = 0
  private queue: Writer[] = []
  private commitScheduled = false
  private unapplied: Array<Group<T>> = []
  private syncInFlight: Promise<void> | undefined
  /** Syncs left to run on the thread pool after a slow inline fdatasync. */
  private inlineSyncBackoff = 0
  private stopError: LevelError | undefined
  /** close() began: commit what can go now, without yielding or slowing down. */
  private closing = false
  private slowedDown = false
  private stallStartedAt = 0
  /** Write groups delayed by the level-0 slowdown; ms writes waited in stalls and slowdowns. */
  readonly counters = { slowdowns: 0, stallMs: 0 }

  constructor (private readonly env: CommitEnv<T>, private readonly turn: TurnBudget, private readonly options: CommitPipelineOptions) {}

  /** Starts the sequence numbers after recovery. */
  setLastSequence (seq: number): void {
    this.visibleSeq = this.allocatedSeq = seq
  }

  /** Set once the pipeline stopped after a failure: every write fails with it. */
  get error (): LevelError | undefined {
    return this.stopError
  }

  /** Writes queued and not yet in the log. */
  get queued (): number {
    return this.queue.length
  }

  /** ms writes have waited in the current stall, if any. */
  get currentStallMs (): number {
    return this.stallStartedAt > 0 ? Date.now() - this.stallStartedAt : 0
  }

  /**
   * Commits an encoded batch (lib/wal/batch.ts) with its sequence number unset.
   * The pipeline takes the buffer over: it becomes the log record, then the
   * memtable's source. Resolves once durable per `sync` (see the top of this file).
   */
  write (batch: Buffer, sync: boolean): Promise<void> {
    if (this.stopError) return Promise.reject(this.stopError)
    if (this.closing) return Promise.reject(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closing'))
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ batch, sync, resolve, reject })
      this.scheduleCommit()
    })
  }

  /** Commits queued writes on the next microtask: after a stall or hold ended. */
  resume (): void {
    if (this.queue.length > 0) this.scheduleCommit()
  }

  private scheduleCommit (): void {
    if (this.commitScheduled) return
    this.commitScheduled = true
    queueMicrotask(() => this.commit())
  }

  private commit (): void {
    if (this.queue.length === 0) { this.commitScheduled = false; return }
    if (!this.closing && this.turn.exhausted()) {
      // Let the event loop turn (timers, I/O, flush slices) before committing more.
      setImmediate(() => this.commit())
      return
    }
    if (!this.closing && !this.slowedDown && this.env.shouldSlowDown()) {
      this.slowedDown = true
      this.counters.slowdowns++
      const t0 = Date.now()
      setTimeout(() => { this.counters.stallMs += Date.now() - t0; this.commit() }, 1)
      return
    }
    this.slowedDown = false
    this.commitScheduled = false
    if (this.stopError) return this.failQueued(this.stopError)
    let room
    try {
      room = this.env.makeRoom()
    } catch (err) {
      this.stop(err as LevelError)
      return
    }
    if (room === 'stall' && this.stallStartedAt === 0) this.stallStartedAt = Date.now()
    if (room !== 'go') return
    if (this.stallStartedAt !== 0) {
      this.counters.stallMs += Date.now() - this.stallStartedAt
      this.stallStartedAt = 0
    }
    this.writeGroup()
  }

  /** Writes every queued batch to the log as one group, then applies what it can. */
  private writeGroup (): void {
    const writers = this.queue
    this.queue = []
    let seq = this.allocatedSeq + 1
    let needsSync = false
    const batches: Buffer[] = new Array(writers.length)
    const firstSeqs: number[] = new Array(writers.length)
    for (let i = 0; i < writers.length; i++) {
      const w = writers[i]
      setBatchSequence(w.batch, seq)
      batches[i] = w.batch
      firstSeqs[i] = seq
      seq += batchCount(w.batch)
      if (w.sync) needsSync = true
    }
    let target: T
    try {
      target = this.env.writeToLog(batches)
    } catch (err) {
      this.stop(err as LevelError)
      for (const w of writers) w.reject(err as LevelError)
      return
    }
    this.allocatedSeq = seq - 1
    this.unapplied.push({ writers, target, batches, firstSeqs, lastSeq: seq - 1, needsSync })
    if (needsSync) this.requestSync()
    this.applyInOrder()
  }

  /** Applies written groups in log order, as far as their syncs allow. */
  private applyInOrder (): void {
    while (this.unapplied.length > 0 && !this.unapplied[0].needsSync) {
      const g = this.unapplied.shift()!
      this.env.apply(g.target, g.batches, g.firstSeqs)
      this.visibleSeq = g.lastSeq
      for (const w of g.writers) w.resolve()
    }
  }

  /** Group commit: one fdatasync at a time covers every group written before it started. */
  private requestSync (): void {
    if (this.syncInFlight) return
    const covered = this.unapplied.filter((g) => g.needsSync)
    if (covered.length === 0) return
    if (this.inlineSyncAllowed()) {
      const t0 = performance.now()
      try {
        this.env.syncLog()
      } catch (err) {
        this.stop(err as LevelError)
        return
      }
      if (performance.now() - t0 > INLINE_SYNC_MAX_MS) this.inlineSyncBackoff = INLINE_SYNC_BACKOFF
      this.synced(covered)
      return
    }
    this.syncInFlight = this.env.syncLogAsync().then(() => {
      this.syncInFlight = undefined
      this.synced(covered)
      this.requestSync()
    }, (err) => {
      this.syncInFlight = undefined
      this.stop(err)
    })
  }

  /** An fdatasync covering `covered` returned: they, and the groups behind them, apply. */
  private synced (covered: Array<Group<T>>): void {
    for (const g of covered) g.needsSync = false
    this.applyInOrder()
  }

  /**
   * Whether the fdatasync may run on the event loop (a sync write then
   * resolves without the thread-pool round trip, ~100 µs here). Only while this
   * disk's fdatasync is fast: one that took longer than INLINE_SYNC_MAX_MS sends
   * the next INLINE_SYNC_BACKOFF syncs to the thread pool.
   */
  private inlineSyncAllowed (): boolean {
    if (!this.options.inlineSync || !this.env.canSyncInline()) return false
    if (this.inlineSyncBackoff > 0) { this.inlineSyncBackoff--; return false }
    return true
  }

  /** Fails every queued and unapplied write and refuses new ones. The first error stays. */
  stop (err: LevelError): void {
    if (!this.stopError) this.stopError = err
    const groups = this.unapplied
    this.unapplied = []
    for (const g of groups) for (const w of g.writers) w.reject(err)
    this.failQueued(err)
  }

  private failQueued (err: Error): void {
    const writers = this.queue
    this.queue = []
    for (const w of writers) w.reject(err)
  }

  /** Waits until the groups in the log are applied (their syncs done), unless the pipeline stops. */
  async settle (): Promise<void> {
    while (this.unapplied.length > 0 && this.syncInFlight) await this.syncInFlight
  }

  /**
   * The first step of closing: commits the queued writes that can go now (a
   * write held in a stall fails rather than hangs), waits for their syncs, and
   * refuses new writes.
   */
  async close (): Promise<void> {
    this.closing = true
    if (this.commitScheduled || this.queue.length > 0) this.commit()
    this.failQueued(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database closed before the write could commit'))
    await this.settle()
    if (this.unapplied.length > 0) this.stop(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database closed'))
  }
}
