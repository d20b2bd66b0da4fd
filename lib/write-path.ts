// The write path's wiring: the commit pipeline (lib/commit-pipeline.ts) over
// the engine's log and memtables, and making room for writes: when the active
// memtable is full it is frozen and a new log started (rotate), unless too many frozen memtables or level-0 tables
// are waiting, or the file system is still making the file the new log needs
// (a write stall, lib/commit-pipeline.ts); a new log takes records once the
// retired one is durable.
import { createWhenRoom, writeBufferFor } from './fs/fs'
import type { MemTable } from './memtable/memtable'
import type { LogPosition } from './wal/log-manager'
import { CommitPipeline } from './commit-pipeline'
import type { TurnBudget } from './util/turn'
import type { EngineParts } from './engine-parts'
import { ioError, isLevelError, type LevelError } from './errors'

/**
 * How full the active memtable is when the flush runner is told a flush is
 * coming (JobRunner.prepare: a stopped job thread starts then, 40-125 ms of
 * its own work, rather than when the flush is due: in a bulk load the rest of
 * the memtable fills in about 75 ms).
 */
const FLUSH_PREPARE_FACTOR = 1 / 4

/** A group of writes in the log, waiting to be applied to `mem`; its records end at `logEnd`. */
export interface WrittenGroup {
  mem: MemTable
  logEnd: LogPosition
}

/** What the engine does around the pipeline. */
export interface PipelineHooks {
  /** The pipeline's makeRoom (Rotation.makeRoom). */
  makeRoom: () => 'go' | 'stall' | 'hold'
  /** A group was applied: its records end at `logEnd`, it held `bytes` of keys and values, `full`: its memtable is now full. */
  applied: (logEnd: LogPosition, bytes: number, full: boolean) => void
}

/** The commit pipeline writing to the engine's current log and applying to its memtables. */
export function commitPipeline (parts: Pick<EngineParts, 'options' | 'versions' | 'memtables' | 'logs'>, turn: TurnBudget, hooks: PipelineHooks): CommitPipeline<WrittenGroup> {
  const { options, versions, memtables, logs } = parts
  return new CommitPipeline<WrittenGroup>({
    shouldSlowDown: () => versions.current.levels[0].length >= options.level0SlowdownWritesTrigger * memtables.level0Scale,
    makeRoom: hooks.makeRoom,
    writeToLog: (batches) => {
      // An open that owed the manifest its edit writes it before the log's first record.
      versions.ensureResumed()
      logs.append(batches)
      return { mem: memtables.groupWritten(), logEnd: logs.end }
    },
    canSyncInline: () => !logs.retiring,
    syncLog: () => logs.sync(),
    syncLogAsync: () => logs.syncAsync(),
    apply: ({ mem, logEnd }, batches, firstSeqs) => {
      let bytes = 0
      for (let i = 0; i < batches.length; i++) bytes += mem.addBatch(batches[i], firstSeqs[i])
      hooks.applied(logEnd, bytes, memtables.groupApplied(mem))
    }
  }, turn, { inlineSync: options.inlineSync })
}

export class Rotation {
  /** The active memtable the flush runner was last told about (FLUSH_PREPARE_FACTOR). */
  private preparedFor: MemTable | undefined

  /** `resume`: the stalled writes may go on; `stop`: writes must stop, failing with the error. */
  constructor (private readonly source: EngineParts, private readonly resume: () => void, private readonly stop: (err: LevelError) => void) {}

  /** Whether a write group may go to the log (the commit pipeline's makeRoom); see the top of this file. */
  makeRoom (): 'go' | 'stall' | 'hold' {
    const { memtables, options, scheduler } = this.source
    const active = memtables.active
    if (this.preparedFor !== active && memtables.isFull(active, FLUSH_PREPARE_FACTOR)) {
      this.preparedFor = active
      scheduler.prepareFlush()
    }
    if (memtables.isFull(active)) {
      if (memtables.frozen.length >= options.maxImmutableMemtables ||
        this.source.versions.current.levels[0].length >= options.level0StopWritesTrigger * memtables.level0Scale) {
        scheduler.schedule()
        return 'stall'
      }
      const making = this.source.fs.roomToCreate?.(this.source.dir, 1)
      if (making !== undefined) {
        making.then(() => this.resume(), (err: unknown) => this.stop(ioError('Cannot create a new log', err)))
        return 'stall'
      }
      this.rotate()
    }
    return this.source.logs.retiring ? 'hold' : 'go'
  }

  /** Freezes the active memtable and starts a new log. Throws a LevelError if the log cannot be started. */
  rotate (): void {
    const { logs, memtables } = this.source
    const oldLog = logs.number
    logs.rotate(this.source.versions.newFileNumber())
    memtables.freeze(oldLog)
    this.sizeWriteBuffer()
    this.source.scheduler.schedule()
  }

  /** Sizes the active memtable's write buffer for the database's size now (writeBufferFor). */
  sizeWriteBuffer (): void {
    const { dir, fs, memtables, options, versions } = this.source
    if (fs.growthGrantBytes?.(dir) === undefined) return
    let tableBytes = 0
    for (let level = 0; level < versions.current.levels.length; level++) tableBytes += versions.current.levelBytes(level)
    memtables.writeBufferSize = writeBufferFor(fs, dir, options.writeBufferSize, tableBytes)
    memtables.level0Scale = Math.max(1, Math.floor(options.writeBufferSize / memtables.writeBufferSize))
  }

  /** Freezes the active memtable if it holds data, once there is room for the new log; a failure stops writes. */
  async freezeActive (): Promise<void> {
    const { memtables } = this.source
    if (memtables.active.isEmpty()) return
    try {
      await createWhenRoom(this.source.fs, this.source.dir, 1, () => { if (!memtables.active.isEmpty()) this.rotate() })
    } catch (err) {
      const e = isLevelError(err) ? err : ioError('Cannot create a new log', err)
      this.stop(e)
      throw e
    }
  }
}
