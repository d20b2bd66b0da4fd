// What carries an engine's committed state elsewhere: checkpoints
// (lib/checkpoint.ts), the change feed (lib/change-feed.ts) and shipping to an
// object store (lib/backup/shipper.ts). Each takes what it needs in one turn:
// the version, its logNumber, the visible sequence number and where its
// writes end in the logs.
import { platform } from './platform'
import type { LogPosition } from './wal/log-manager'
import type { EngineParts } from './engine-parts'
import { openUnflushedLogs, writeCheckpoint, type CheckpointResult } from './checkpoint'
import { changes, type ChangeBatch } from './change-feed'
import { Shipper, type ReplicateOptions } from './backup/shipper'
import type { ObjectStore } from './backup/object-store'
import { logNumbers } from './filenames'
import { levelError, type LevelError } from './errors'

/** What the outlets need of the engine besides its parts. */
export interface OutletState {
  /** The newest visible sequence number. */
  sequence: () => number
  /** Where the records of the writes up to the visible sequence number end. */
  visibleLogEnd: () => LogPosition
  /** The failure that stopped writes, if one did. */
  error: () => LevelError | undefined
  /** close() has begun (or is done): change feeds end. */
  closing: () => boolean
}

export class Outlets {
  /** Shipping to an object store (replicate), if started. */
  shipper: Shipper | undefined
  /** Change feeds waiting for the next commit. */
  private waiters: Array<() => void> = []

  constructor (private readonly parts: EngineParts, private readonly source: OutletState) {}

  /**
   * Writes an openable copy of the database as of its current sequence number
   * into `dir` (lib/checkpoint.ts): tables hard-linked, the unflushed part of
   * the logs taken by bytes (the log of the sequence number copied up to it,
   * older logs linked), a manifest for exactly that version.
   */
  async checkpoint (dir: string): Promise<CheckpointResult> {
    const { fs, dir: from, versions, logs } = this.parts
    const error = this.source.error()
    if (error) throw error
    // One turn: the version, its logNumber, the sequence number and where its
    // writes end in the logs; the logs opened, so that a flush's removal of
    // one cannot take its bytes away before they are copied.
    const version = versions.current
    const logNumber = versions.logNumber
    const sequence = this.source.sequence()
    const opened = openUnflushedLogs(fs, from, logNumber, this.source.visibleLogEnd(), (n) => logs.sealedLog(n))
    version.ref()
    return await writeCheckpoint({ fs, dir: from, version, sequence, logs: opened, nextFileNumber: versions.nextFileNumber }, platform().resolvePath(dir))
  }

  /**
   * The committed batches after sequence number `since`, then new ones as they
   * commit (lib/change-feed.ts), until the database closes or the consumer stops.
   */
  changes (since: number): AsyncGenerator<ChangeBatch, void, undefined> {
    const { fs, dir } = this.parts
    return changes({
      fs,
      dir,
      sequence: this.source.sequence,
      logNumbers: () => logNumbers(fs, dir),
      nextCommit: () => new Promise<void>((resolve) => this.waiters.push(resolve)),
      closed: this.source.closing
    }, since)
  }

  /** A group of writes became visible: the change feeds waiting for it go on. */
  committed (): void {
    if (this.waiters.length > 0) this.wakeFeeds()
  }

  /** Wakes every change feed waiting for a commit (at a commit, and at close). */
  wakeFeeds (): void {
    const waiters = this.waiters
    this.waiters = []
    for (const wake of waiters) wake()
  }

  /**
   * Starts shipping the database to `store` (lib/backup/shipper.ts): resolves
   * once the new generation is in the store; stopped by close() after a last
   * round. One shipper per open database.
   */
  async replicate (store: ObjectStore, options: ReplicateOptions): Promise<Shipper> {
    if (this.shipper !== undefined) throw levelError('LEVEL_INVALID_OPTION', `replicate(): the database is already shipping to ${this.shipper.storeDescription}`)
    const { fs, dir, versions, logs, scheduler } = this.parts
    const shipper = new Shipper(store, {
      fs,
      dir,
      // One turn, as for a checkpoint: the version (pinned), its logNumber, the sequence number and where its writes end.
      capture: () => {
        const version = versions.current
        version.ref()
        return { version, logNumber: versions.logNumber, sequence: this.source.sequence(), visibleEnd: this.source.visibleLogEnd(), nextFileNumber: versions.nextFileNumber }
      },
      sealedLog: (n) => logs.sealedLog(n),
      sequence: this.source.sequence,
      readTable: scheduler.tableReader,
      hostFiles: platform().isHostFileSystem?.(fs) === true
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
}
