// A multiProcess client's reads, served in this process: a read-only open of
// the database (lib/follower.ts: the tables through a table cache of its own,
// the owner's logs tailed into memtables of its own, its manifest followed),
// caught up with the owner before it serves a read.
//
// Freshness. The owner resolves a write once its log record is in the OS
// (write(2), before the memtable), and the logs and manifest are read back
// through the same OS: a catch-up that starts after a write was acknowledged
// reads it. A read catches up first, unless a catch-up already ran in the
// same stretch of code: the rest of the task of the event loop it ran in,
// with the promise callbacks that task queues (a process.nextTick queued
// then runs once they have all run, before any other task, and ends it), and
// at most STRETCH_MS. News that a write was acknowledged elsewhere arrives in
// a task of its own (a socket, a timer, a message), and this open's own
// writes end the stretch when they resolve (stale()), so the reads that share
// a catch-up are reads no acknowledgement could have come between. They see
// one state, as at a snapshot. The time bound is for news learned without a
// task (a file read synchronously, the clock): a loop of awaited reads that
// never yields to the event loop still sees new writes within STRETCH_MS.
//
// Handles. Snapshots and iterators read the state they were made on: the
// follower's views pin their memtables, and a table the owner deletes stays
// readable through the descriptor opened before (POSIX). They outlive owner
// changes. When this process becomes the owner, its reads go to its engine and
// this open is retired: it stops following and closes once its last snapshot
// and iterator close (or the database does).
import { AbstractSnapshot } from 'abstract-level'
import { Engine } from '../../lib/engine'
import { ioError } from '../../lib/errors'
import type { Snapshot } from '../../lib/snapshots'
import { entryKey, FOUND } from '../../lib/iterators/db-iterator'
import { EngineBackend } from '../engine-backend'
import { rangeFrom, type IteratorOptions, type RangeReadOptions } from '../lsm-cursor'

/** The longest a stretch of code shares one catch-up (see Freshness above). */
const STRETCH_MS = 1

// Read once: in Node the global `performance` is an accessor, looked up on every use.
const clock = globalThis.performance

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

/** An explicit snapshot of a client: a point in time of its local reads. */
export class LocalSnapshot extends SnapshotBase {
  readonly inner: Snapshot

  constructor (options: object, readonly reads: LocalReads) {
    super(options)
    this.inner = reads.engine.snapshot()
    reads.hold()
  }

  async _close (): Promise<void> {
    this.reads.engine.releaseSnapshot(this.inner)
    await this.reads.let()
  }
}

interface Closable { _close: () => Promise<void> }

export class LocalReads {
  readonly backend: EngineBackend
  /** A catch-up ran in this stretch of code (see above), which ends at this clock.now(). */
  private fresh = false
  private freshUntil = 0
  private readonly unfresh = (): void => { this.fresh = false }
  /** Snapshots and iterators open on it. */
  private handles = 0
  private retired = false
  private closed: Promise<void> | undefined

  private constructor (readonly engine: Engine) {
    this.backend = new EngineBackend(engine)
  }

  /** Opens the database read-only (it exists: its owner serves it), caught up with its owner now. */
  static async open (location: string, engineOptions: Record<string, unknown>): Promise<LocalReads> {
    return new LocalReads(await Engine.open(location, { ...engineOptions, readOnly: true, refreshIntervalMs: 0 }))
  }

  /**
   * Catches up with the owner unless this stretch of code did: at once when
   * it can (undefined), else a promise (the owner moved under every pass;
   * the follower then waits between passes).
   */
  caughtUp (): Promise<void> | undefined {
    if (this.fresh && clock.now() < this.freshUntil) return undefined
    if (this.engine.refreshSync() === true) {
      this.stretch()
      return undefined
    }
    return this.engine.refresh().then(() => this.stretch())
  }

  /** caughtUp() for a read that cannot wait (getSync, an iterator or snapshot made now). */
  caughtUpNow (): void {
    if (this.fresh && clock.now() < this.freshUntil) return
    const failure = this.engine.refreshSync()
    if (failure !== true) throw ioError(`Cannot catch up with the owner of the database: ${String((failure as Error)?.message)}`, failure)
    this.stretch()
  }

  /** A write of this open resolved: the next read catches up. */
  stale (): void {
    this.fresh = false
  }

  private stretch (): void {
    this.freshUntil = clock.now() + STRETCH_MS
    if (this.fresh) return // its nextTick is queued
    this.fresh = true
    process.nextTick(this.unfresh)
  }

  /** An iterator on the local reads, caught up first; counted until it closes. */
  iterator (db: unknown, options: IteratorOptions): ReturnType<EngineBackend['iterator']> {
    if (options.snapshot === undefined) this.caughtUpNow()
    const it = this.backend.iterator(db, options)
    this.hold()
    const inner = it as unknown as Closable
    const close = inner._close.bind(it)
    inner._close = async () => {
      try {
        await close()
      } finally {
        await this.let()
      }
    }
    return it
  }

  snapshot (options: object): LocalSnapshot {
    this.caughtUpNow()
    return new LocalSnapshot(options, this)
  }

  /**
   * The keys of a range at `snapshot`, at most `limit`, in batches of up to
   * 1,000 given to `remove` (a client's clear at a snapshot: the point deletes go to the owner).
   */
  async clearAt (options: RangeReadOptions, snapshot: Snapshot, limit: number, remove: (keys: Uint8Array[]) => Promise<void>): Promise<void> {
    const it = this.engine.iterator(rangeFrom(options), snapshot)
    let remaining = limit >= 0 ? limit : Infinity
    try {
      while (remaining > 0) {
        const keys: Uint8Array[] = []
        while (keys.length < 1000 && remaining > 0 && it.step(Infinity) === FOUND) {
          keys.push(Buffer.from(entryKey(it)))
          remaining--
        }
        if (keys.length === 0) break
        await remove(keys)
      }
    } finally {
      it.close()
    }
  }

  hold (): void {
    this.handles++
  }

  async let (): Promise<void> {
    if (--this.handles === 0 && this.retired) await this.close()
  }

  /** This process owns the database now: no more reads come here but those of its handles. */
  async retire (): Promise<void> {
    this.retired = true
    if (this.handles === 0) await this.close()
  }

  async close (): Promise<void> {
    this.closed ??= this.engine.close()
    await this.closed
  }
}
