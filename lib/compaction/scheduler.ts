// Background work: flushes of frozen memtables to level 0 and compactions, one
// of each at a time, and the deletion of the files they make obsolete.
//
//   schedule() --setImmediate--> start(): flush the oldest frozen memtable (if
//   its writes are all applied); run the task pickCompaction() chooses
//   (lib/compaction/task.ts) --> the result goes into the manifest as one
//   version edit --> obsolete tables and logs deleted off the event loop
//
// Flushes and compactions each run on a worker thread of their own (node file
// system; hosts/node/job-thread.ts), the flush worker at a higher priority so
// that a flush that writes may be waiting for gets the CPU first; or on workers
// the engine was given (tests: in-process ones over the in-memory file system,
// which run the same job host); otherwise (compactionWorker: false, or another
// file system) on the event loop, in slices of a few thousand entries
// (lib/compaction/table-writer.ts).
//
// Subcompactions (option subcompactions): a large compaction split in two and
// run on both worker threads at once (lib/compaction/subcompactions.ts).
//
// A failed job stops writes (without flushes the memtables cannot drain) and
// is reported by every later waitForIdle, flush or compactRange.
import type { FileSystem } from '../fs/fs'
import { removeAsync } from '../fs/fs'
import { platform } from '../platform'
import { envFlag } from '../util/env-flag'
import type { EngineOptions } from '../options'
import type { VersionSet } from '../manifest/version-set'
import type { FileMeta } from '../manifest/file-meta'
import type { MemTable } from '../memtable/memtable'
import type { MemTableSet } from '../memtable/memtable-set'
import type { TableCache } from '../sstable/table-cache'
import type { RangeTombstone, RangeTombstoneIndex } from '../range-tombstones'
import { writeTables, type TableWriterParams, type TableWriterResult } from './table-writer'
import { runAtOnce, splitCompaction } from './subcompactions'
import { runCompactionJob, type CompactionJob, type FlushJob, type JobRunner, type JobRunners } from './job'
import type { TableContent } from '../backup/table-content'
import { compactionEdit, describeTask, isTrivialMove, manualTask, mergeRuns, movedTables, pickCompaction, type CompactionTask } from './task'
import { baseName, join, tableName } from '../filenames'
import { ioError, type LevelError } from '../errors'
import { tableOptionsOf, type TableOptions } from '../sstable/table-builder'

/**
 * LSM_TRACE_COMPACTIONS=1: one line on stderr per finished compaction (its input
 * runs' bytes, newest first, and the bytes it wrote): a picker's choices, to tune it;
 * and one per flush (its entries, and the milliseconds of its copy, its job and its
 * install): what writes stalled on a flush waited for.
 */
const traceCompactions = envFlag('LSM_TRACE_COMPACTIONS')

/** How a flush builds its level-0 table: uncompressed (see `compression` in lib/options.ts). */
function flushTableOptions (options: EngineOptions): TableOptions {
  return { ...tableOptionsOf(options), compression: false }
}

/** Totals over every engine in this process (tests use them to show background work happened). */
export const processCounters = { flushes: 0, compactions: 0, trivialMoves: 0 }

/** What the scheduler needs of the engine. */
export interface SchedulerEnv {
  fs: FileSystem
  dir: string
  options: EngineOptions
  versions: VersionSet
  tableCache: TableCache
  memtables: MemTableSet
  /** The oldest sequence number a reader may still read at: the oldest snapshot's, else the newest visible. */
  smallestSnapshot (): number
  /** The newest sequence number applied to the memtables. */
  lastSequence (): number
  /** The log the active memtable's writes go to. */
  currentLogNumber (): number
  /** Log `number` is no longer needed for recovery: the names of the logs to delete now (lib/wal/log-retention.ts). */
  retireLog (number: number): string[]
  /** Resolves once log `number`'s directory entry is durable (LogManager.entryDurable). */
  logEntryDurable (number: number): Promise<void>
  /** A job failed: writes must stop. */
  onError (err: LevelError): void
  /** A job ended: a write stall may be over. */
  onJobDone (): void
  /**
   * Internal (tests): the workers to use when options.compactionWorker is on,
   * whatever the file system. Default: the shared worker threads, with the node
   * file system only.
   */
  workers?: JobRunners
}

export class CompactionScheduler {
  readonly counters = { flushes: 0, compactions: 0, trivialMoves: 0, splitCompactions: 0, bytesFlushed: 0, bytesCompacted: 0 }
  /** Set after a failed flush or compaction. */
  private failure: LevelError | undefined
  private flushJob: Promise<void> | undefined
  private compactionJob: Promise<void> | undefined
  private scheduled = false
  private closing = false
  /** Runs compactions off the event loop; undefined: on the event loop. */
  private readonly compactionRunner: JobRunner | undefined
  /** Runs memtable flushes off the event loop, apart from compactions; undefined: on the event loop. */
  private readonly flushRunner: JobRunner | undefined
  private cancelCompaction: (() => void) | undefined
  /** Obsolete files being deleted off the event loop. */
  private readonly pendingRemovals = new Set<Promise<void>>()

  constructor (private readonly env: SchedulerEnv) {
    const runners = !env.options.compactionWorker
      ? undefined
      : env.workers ?? platform().jobRunners(env.fs)
    this.compactionRunner = runners?.compaction
    this.flushRunner = runners?.flush
    env.versions.onObsoleteTable = (n) => {
      env.tableCache.evict(n)
      this.removeInBackground(tableName(n))
    }
  }

  /** Reads a table's checksums (and bytes) on the compaction runner's thread (a backup's put); undefined where the runner cannot. */
  get tableReader (): ((path: string, size: number, keepBytes: boolean) => Promise<TableContent>) | undefined {
    const runner = this.compactionRunner
    if (runner?.readTable === undefined) return undefined
    return async (path, size, keepBytes) => await runner.readTable!(path, size, keepBytes)
  }

  get error (): LevelError | undefined {
    return this.failure
  }

  /** Flushes and compactions running now. */
  get running (): number {
    return (this.flushJob ? 1 : 0) + (this.compactionJob ? 1 : 0)
  }

  /** Obsolete files whose background unlink has not finished. */
  get pendingRemovalCount (): number {
    return this.pendingRemovals.size
  }

  /** Starts whatever background work is due, on a later turn. */
  schedule (): void {
    if (this.scheduled || this.closing) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.start()
    })
  }

  private start (): void {
    if (this.closing || this.failure) return
    if (!this.flushJob && this.env.memtables.flushable()) {
      this.flushJob = this.runJob(() => this.flushOldest()).finally(() => {
        this.flushJob = undefined
        this.afterJob()
      })
    }
    if (!this.compactionJob) {
      const task = this.pick()
      if (task) {
        this.compactionJob = this.runJob(() => this.compact(task)).finally(() => {
          this.compactionJob = undefined
          this.afterJob()
        })
      }
    }
  }

  private pick (): CompactionTask | undefined {
    const { versions, memtables } = this.env
    const v = versions.current
    // A write buffer smaller than configured lets level 0 hold more tables (MemTableSet.level0Scale).
    const scale = memtables.level0Scale
    const options = scale === 1 ? this.env.options : { ...this.env.options, level0CompactionTrigger: this.env.options.level0CompactionTrigger * scale }
    return pickCompaction({ levels: v.levels, compactPointers: versions.compactPointers }, options, v.rangeTombstones, this.env.smallestSnapshot())
  }

  private async runJob (job: () => Promise<void>): Promise<void> {
    try {
      await job()
    } catch (err) {
      // Closing aborts compactions (a job cancelled on its worker, an abandoned slice): not an error.
      if (this.closing) return
      const e = (err as LevelError).code === 'LEVEL_CORRUPTION' ? err as LevelError : backgroundError(err)
      if (!this.failure) this.failure = e
      this.env.onError(e)
    }
  }

  private afterJob (): void {
    this.env.onJobDone()
    this.schedule()
  }

  /**
   * A flush applies its memtable's own range tombstones. The tombstones already in
   * the version are older than every entry of the memtable (memtables are flushed
   * in order), so they hide nothing in it: every tombstone up to
   * min(newest of the memtable's, smallest snapshot) is then applied in full.
   */
  private flushTombstones (mem: MemTable, smallestSnapshot: number): { rangeTombstones?: RangeTombstoneIndex, floorBase: number } {
    const list = mem.rangeTombstones()
    if (list.length === 0) return { floorBase: 0 }
    return { rangeTombstones: mem.rangeTombstoneIndex(), floorBase: Math.min(list[list.length - 1].seq, smallestSnapshot) }
  }

  /** Writes a memtable to level-0 tables on the event loop (log replay; flushes without a worker). Not recorded in the manifest. */
  async writeLevel0 (mem: MemTable, smallestSnapshot: number, shouldAbort = (): boolean => this.closing): Promise<TableWriterResult> {
    const { fs, dir, options, versions } = this.env
    const params: TableWriterParams = {
      fs,
      dir,
      table: flushTableOptions(options),
      targetFileSize: Infinity,
      smallestSnapshot,
      isBaseLevelForKey: () => false,
      newFileNumber: () => versions.newFileNumber(),
      shouldAbort,
      ...this.flushTombstones(mem, smallestSnapshot)
    }
    return await writeTables(mem.iterator(), params)
  }

  /** Flushes the oldest frozen memtable: on the flush runner, or with `onEventLoop` (or no runner) on the event loop. */
  private async flushOldest (onEventLoop = false): Promise<void> {
    const { memtables, options, versions } = this.env
    const frozen = memtables.flushable()!
    const mem = frozen.mem
    // A flush is finished even when the database is closing (close waits for it):
    // it is short, and it saves the next open a log replay.
    let result
    const t0 = traceCompactions ? performance.now() : 0
    let t1 = t0
    if (this.flushRunner && !onEventLoop) {
      // On a worker thread, from a copy of the frozen memtable (SkipList.state).
      // Copied over a few turns; the parameters below are taken after the copy, together.
      const entries = await mem.entriesStateInSlices()
      const smallestSnapshot = this.env.smallestSnapshot()
      const job: FlushJob = {
        dir: this.env.dir,
        entries,
        table: flushTableOptions(options),
        smallestSnapshot,
        rangeTombstones: mem.rangeTombstones().slice(),
        floorBase: this.flushTombstones(mem, smallestSnapshot).floorBase,
        fileNumber: versions.newFileNumber()
      }
      if (traceCompactions) t1 = performance.now()
      result = await this.flushRunner.flush(job)
    } else {
      result = await this.writeLevel0(mem, this.env.smallestSnapshot(), () => false)
    }
    const t2 = traceCompactions ? performance.now() : 0
    // The edit names the next live log: its directory entry must be durable
    // first (a flush with no output table has synced no directory).
    const logNumber = memtables.logAfterOldest(this.env.currentLogNumber())
    await this.env.logEntryDurable(logNumber)
    await versions.logAndApply({
      newFiles: result.outputs.map((meta) => ({ level: 0, meta })),
      rangeTombstones: mem.rangeTombstones().slice(),
      logNumber,
      lastSequence: this.env.lastSequence()
    })
    if (traceCompactions) {
      const ms = (t: number): string => t.toFixed(1)
      process.stderr.write(`flush of ${mem.entryCount()} entries: copy ${ms(t1 - t0)} ms, job ${ms(t2 - t1)} ms, install ${ms(performance.now() - t2)} ms\n`)
    }
    memtables.dropOldest()
    this.counters.flushes++
    processCounters.flushes++
    this.counters.bytesFlushed += result.bytesWritten
    for (const name of this.env.retireLog(frozen.logNumber)) this.removeInBackground(name)
  }

  private async compact (task: CompactionTask): Promise<void> {
    const { versions } = this.env
    if (isTrivialMove(task)) {
      await versions.logAndApply(compactionEdit(task, movedTables(task)))
      this.counters.trivialMoves++
      processCounters.trivialMoves++
      if (traceCompactions) process.stderr.write(`compaction ${describeTask(task)}: moved\n`)
      return
    }
    const base = versions.current
    base.ref()
    try {
      const job = this.compactionJobFor(task, base.levels, base.rangeTombstones)
      const result = await this.runMerges(this.splitJob(job, task))
      if (this.closing) {
        for (const f of result.outputs) this.env.fs.remove(join(this.env.dir, tableName(f.number)))
        return
      }
      await versions.logAndApply(compactionEdit(task, result.outputs))
      this.counters.compactions++
      processCounters.compactions++
      this.counters.bytesCompacted += result.bytesWritten
      if (traceCompactions) process.stderr.write(`compaction ${describeTask(task)}: ${result.bytesWritten} bytes written\n`)
    } finally {
      base.unref()
    }
  }

  /** The task as a job for a worker (plain data), with output file numbers reserved. */
  private compactionJobFor (task: CompactionTask, levels: FileMeta[][], rangeTombstones: readonly RangeTombstone[]): CompactionJob {
    const { options, versions } = this.env
    const runs = mergeRuns(task)
    let inputBytes = 0
    let inputEntries = 0
    for (const run of runs) {
      for (const f of run) {
        inputBytes += f.size
        inputEntries += f.entries
      }
    }
    const smallestSnapshot = this.env.smallestSnapshot()
    const fileNumbers: number[] = []
    // Enough numbers for every output. An output is cut once its finished
    // (compressed) blocks plus the raw bytes of its open block reach the target:
    // with a target above the block size each output but the last holds more
    // than target - blockSize bytes of finished blocks, which the inputs' bytes
    // bound (twice, for a margin); in any case each output holds an entry.
    const perOutput = options.targetFileSize - options.blockSize
    const byBytes = perOutput > 0 ? 2 * Math.ceil(inputBytes / perOutput) + 8 : Infinity
    const reserve = Math.min(byBytes, inputEntries + 1)
    for (let i = 0; i < reserve; i++) fileNumbers.push(versions.newFileNumber())
    return {
      dir: this.env.dir,
      runs,
      deeper: levels.slice(task.outputLevel + 1),
      table: tableOptionsOf(options),
      targetFileSize: options.targetFileSize,
      smallestSnapshot,
      rangeTombstones: rangeTombstones.slice(),
      floorBase: rangeTombstones.length === 0 ? 0 : Math.min(maxSeq(rangeTombstones), smallestSnapshot),
      fileNumbers
    }
  }

  /**
   * `job` as two subcompactions (see the top of this file), or as it is: when
   * there is no second worker thread, the input is small, or no key splits it.
   * Each half gets file numbers of its own.
   */
  private splitJob (job: CompactionJob, task: CompactionTask): CompactionJob[] {
    const { options, versions } = this.env
    if (!this.compactionRunner || !this.flushRunner || !options.subcompactions) return [job]
    const halves = splitCompaction(job, options.targetFileSize, this.env.tableCache, () => versions.newFileNumber())
    if (halves.length < 2) return halves
    this.counters.splitCompactions++
    if (traceCompactions) process.stderr.write(`compaction ${describeTask(task)}: split in two at a key of ${halves[1].range!.start!.length} bytes\n`)
    return halves
  }

  /**
   * Runs the jobs, the first on the compaction worker and the second (if any)
   * on the flush worker, at once; their results as one. If one fails, the
   * other's outputs are removed and the failure is thrown.
   */
  private async runMerges (jobs: CompactionJob[]): Promise<TableWriterResult> {
    if (!this.compactionRunner) return await runCompactionJob(jobs[0], this.env.fs, this.env.tableCache, () => this.closing)
    const signals: Array<{ cancel?: () => void }> = jobs.map(() => ({}))
    this.cancelCompaction = () => { for (const signal of signals) signal.cancel?.() }
    try {
      return await runAtOnce(jobs, [this.compactionRunner, this.flushRunner!], signals, this.env.fs, this.env.dir)
    } finally {
      this.cancelCompaction = undefined
    }
  }

  /**
   * Deletes an obsolete file (a table no version uses, a flushed log) off the
   * event loop. File numbers are never reused, so a late unlink cannot hit a new
   * file; a file left behind by a crash is an orphan the next open removes.
   * close() waits for these.
   */
  private removeInBackground (name: string): void {
    const p = removeAsync(this.env.fs, join(this.env.dir, name)).catch(() => {}).finally(() => { this.pendingRemovals.delete(p) })
    this.pendingRemovals.add(p)
  }

  /** Waits for the obsolete files being deleted in the background. */
  private async settleRemovals (): Promise<void> {
    while (this.pendingRemovals.size > 0) await Promise.all(this.pendingRemovals)
  }

  /** A flush will soon be needed: its runner may get ready (start its thread). */
  prepareFlush (): void {
    this.flushRunner?.prepare?.()
  }

  /** Waits until every frozen memtable is flushed. */
  async flushFrozen (): Promise<void> {
    while (this.env.memtables.frozen.length > 0) {
      if (this.failure) throw this.failure
      if (!this.flushJob) this.start()
      if (this.flushJob) await this.flushJob
      else await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Compacts every table that overlaps [start, end] (undefined = open): each
   * level into the next down to the deepest level holding data, then that level
   * in place, so that tombstones and overwritten versions that no snapshot needs
   * are gone from the range afterwards. The memtables are flushed first (by the caller).
   */
  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    while (this.compactionJob) await this.compactionJob
    let bottom = 0
    this.env.versions.current.levels.forEach((files, level) => { if (files.length > 0) bottom = level })
    for (let level = 0; level <= bottom; level++) {
      while (this.compactionJob) await this.compactionJob
      const task = manualTask(this.env.versions.current.levels, level, bottom, start, end)
      if (task === undefined) continue
      this.compactionJob = this.runJob(() => this.compact(task)).finally(() => { this.compactionJob = undefined })
      await this.compactionJob
      if (this.failure) throw this.failure
      if (level === bottom) break
    }
    await this.settleRemovals()
  }

  /** Resolves when no flush or compaction is running or needed. */
  async waitForIdle (): Promise<void> {
    for (;;) {
      if (this.failure) throw this.failure
      if (this.flushJob) { await this.flushJob; continue }
      if (this.compactionJob) { await this.compactionJob; continue }
      if (this.env.memtables.frozen.length > 0 || this.pick()) {
        this.start()
        if (!this.flushJob && !this.compactionJob) break
        continue
      }
      break
    }
    await this.settleRemovals()
  }

  /**
   * Resolves once none of `mems` is among the frozen memtables, that is, once
   * each is in a table (flushes run oldest first), or at once when no flush can
   * run any more (the scheduler is closing). Rejects with the error that failed
   * a flush.
   */
  async flushed (mems: readonly MemTable[]): Promise<void> {
    const waiting = (): boolean => this.env.memtables.frozen.some((f) => mems.includes(f.mem))
    while (waiting()) {
      if (this.failure) throw this.failure
      if (!this.flushJob && !this.closing) this.start()
      if (!this.flushJob) return
      await this.flushJob
    }
  }

  /**
   * Stops scheduling: a flush in progress is finished; a compaction in
   * progress is abandoned (its output is deleted; its inputs stay live). With
   * `flushFrozen`, the frozen memtables are then flushed (flushFrozenAtClose).
   * Resolves when all that is over and the pending deletions done.
   */
  async close (flushFrozen = false): Promise<void> {
    this.closing = true
    this.cancelCompaction?.()
    while (this.flushJob || this.compactionJob) {
      await Promise.all([this.flushJob, this.compactionJob])
    }
    if (flushFrozen) await this.flushFrozenAtClose()
    await this.settleRemovals()
  }

  /**
   * close(true): every frozen memtable, oldest first, into a level-0 table on
   * the event loop (a job thread's start, 40-125 ms, would cost more than it
   * saves, and there is nothing else to run now), each installed by its own
   * edit as any flush. A failure stops it and is not an error of the close: the
   * memtables left keep their logs, which close() syncs and records as ever.
   */
  private async flushFrozenAtClose (): Promise<void> {
    while (this.failure === undefined && this.env.memtables.flushable() !== undefined) {
      try {
        await this.flushOldest(true)
      } catch {
        return
      }
    }
  }
}

/** A failed flush or compaction as LEVEL_IO_ERROR, naming the file it failed on when known. */
function backgroundError (err: unknown): LevelError {
  const e = err as { file?: unknown, path?: unknown } | undefined
  const file = typeof e?.file === 'string' ? e.file : typeof e?.path === 'string' ? baseName(e.path) : undefined
  return ioError(`Background flush or compaction failed${file === undefined ? '' : ` (${file})`}`, err, file)
}

function maxSeq (list: readonly RangeTombstone[]): number {
  let max = 0
  for (const t of list) if (t.seq > max) max = t.seq
  return max
}
