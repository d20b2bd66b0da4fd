// The write-ahead log's life cycle: the current log that commits append to,
// its syncs, and the retirement of a log when its memtable is frozen.
//
//   open(n) ---- append / sync ----> rotate(n + k) ---> open(n + k) ...
//                                        |
//                                        +--> retire log n (off the event loop):
//                                             fdatasync + directory fsync,
//                                             wait for its other syncs, close (trim)
//
// Ordering rule: no record goes into a new log before the logs it follows are
// durable, with its own directory entry: otherwise a power loss could keep a
// later log's records while tearing an earlier log, a hole in the history that
// recovery cannot replay past. So while a retirement runs, `retiring` is true,
// the commit pipeline holds its writes back, and onRetired() tells it to go on;
// a sync write's syncAsync() also waits for every earlier retirement.
//
// A retired log is closed (its preallocated zeros trimmed, hosts/node/node-fs.ts)
// before the new log takes a record, so that it normally ends at its last
// record; recovery also accepts an untrimmed zero tail (lib/recovery.ts). It
// is closed only once every sync of it has returned: an fd is never closed
// under a thread-pool fdatasync.
//
// Errors: a failed append or sync is a LevelError naming the log; the log
// writer is poisoned by it (lib/wal/log-writer.ts) and the engine stops writes.
import type { FileSystem } from '../fs/fs'
import { syncDirAsync } from '../fs/fs'
import { LogWriter } from './log-writer'
import { join, logName } from '../filenames'
import { ioError, isLevelError, type LevelError } from '../errors'
import { assert } from '../invariants'

export interface LogManagerEvents {
  /** A retirement finished: writes held back may go on. */
  onRetired (): void
  /** A background sync or a retirement failed: writes must stop. */
  onError (err: LevelError): void
}

/** A place in the write-ahead log: a byte offset in log `number`. */
export interface LogPosition {
  number: number
  offset: number
}

/** A log this manager rotated away from: no record is appended to it again. */
export interface SealedLog {
  /** Where its records end (the file may hold preallocated zeros after them until its retirement trims it). */
  length: number
  /** Resolves once its fdatasync of the retirement returned: its records are durable. Rejects if it failed. */
  durable: Promise<void>
}

interface Log {
  writer: LogWriter
  number: number
  /** Settles when every sync started on this log so far has returned. */
  syncs: Promise<void>
}

const settled = (): void => {}

export class LogManager {
  /** Bytes appended to logs since open (the stats' `wal` bytes). */
  bytesWritten = 0
  private current: Log | undefined
  /** Log bytes written since the current log's background fdatasync started (or the log opened). */
  private unsyncedBytes = 0
  /** The current log had its background fdatasync. */
  private backgroundSynced = false
  /** Retirements started and not finished. */
  private retirements = 0
  /** Resolves when every retirement started so far is done; rejects if one failed. */
  private retired: Promise<void> = Promise.resolve()
  /** Retired logs whose retirement failed: closed by close(). */
  private readonly failedRetirements: LogWriter[] = []
  /** Where the records of each log replayed at open and still live end, by log number (see recordsEnd). */
  private readonly adopted = new Map<number, number>()
  /** Directory fsyncs started for logs created by rotate(), by log number, until they return. */
  private readonly entrySyncs = new Map<number, Promise<void>>()
  /** The logs this manager rotated away from, by number, until forgotten (their writes are in tables). */
  private readonly sealed = new Map<number, SealedLog>()

  /**
   * @param backgroundSyncBytes Log bytes after which the log is fdatasynced once
   *   in the background (see append).
   */
  constructor (
    private readonly fs: FileSystem,
    private readonly dir: string,
    private readonly backgroundSyncBytes: number,
    private readonly events: LogManagerEvents
  ) {}

  /** The current log's file number. */
  get number (): number {
    return this.current!.number
  }

  /** Where the records appended so far end: the current log and its size. */
  get end (): LogPosition {
    return { number: this.current!.number, offset: this.current!.writer.size() }
  }

  /** Log `number`, if this manager rotated away from it; undefined for the current log and for logs of an earlier process. */
  sealedLog (number: number): SealedLog | undefined {
    return this.sealed.get(number)
  }

  /** Log `number`'s writes are in tables: it is no longer asked for. */
  forget (number: number): void {
    this.sealed.delete(number)
    this.adopted.delete(number)
  }

  /**
   * Resolves once log `number`'s directory entry is durable: before a manifest
   * edit names it as the live log (recovery takes a missing live log for
   * damage). Rejects if that directory fsync failed (rotate() reports it too).
   */
  entryDurable (number: number): Promise<void> {
    return this.entrySyncs.get(number) ?? Promise.resolve()
  }

  /** A retirement is running: records must wait (see the top of this file). */
  get retiring (): boolean {
    return this.retirements > 0
  }

  /**
   * Creates log `number` as the current log, at open. Its directory entry is
   * not yet durable: the caller syncs the directory before any write (recovery
   * does, lib/recovery.ts).
   */
  open (number: number): void {
    assert(this.current === undefined, 'log opened twice')
    this.current = this.create(number)
  }

  /**
   * Where the records of log `number` end: the current log's size, or the size
   * a retired or adopted log had when it took its last record. Undefined for a
   * log this manager does not know.
   */
  recordsEnd (number: number): number | undefined {
    if (this.current?.number === number) return this.current.writer.size()
    return this.sealed.get(number)?.length ?? this.adopted.get(number)
  }

  /** A log replayed at open that stays live: its records end at `end`. */
  adopt (number: number, end: number): void {
    this.adopted.set(number, end)
  }

  private create (number: number): Log {
    const file = this.fs.openWrite(join(this.dir, logName(number)), { preallocate: true })
    return { writer: new LogWriter(file), number, syncs: Promise.resolve() }
  }

  /** Appends one record per batch with one write(2). Throws a LevelError naming the log. */
  append (batches: Buffer[]): void {
    const log = this.current!
    const before = log.writer.size()
    try {
      log.writer.addRecords(batches)
    } catch (err) {
      throw ioError('Write to the log failed; the database takes no more writes until reopened', err, logName(log.number))
    }
    const bytes = log.writer.size() - before
    this.bytesWritten += bytes
    this.unsyncedBytes += bytes
    if (this.unsyncedBytes >= this.backgroundSyncBytes && !this.backgroundSynced) this.startBackgroundSync()
  }

  /**
   * An fdatasync of the current log off the event loop, once per log, about
   * halfway to its rotation: when the log is retired, the fsync that writes to
   * the next log wait for has only the second half left to do. It
   * acknowledges nothing (sync writes have their own); a failure stops writes.
   * Once per log: a sync running under the writes makes some write(2) calls
   * wait on the file system's journal.
   */
  private startBackgroundSync (): void {
    this.unsyncedBytes = 0
    this.backgroundSynced = true
    const log = this.current!
    this.track(log, log.writer.syncAsync().catch((err) => { this.events.onError(this.syncError(err, log.number)) }))
  }

  /** fdatasync of the current log on the event loop. Throws a LevelError. */
  sync (): void {
    const log = this.current!
    try {
      log.writer.sync()
    } catch (err) {
      throw this.syncError(err, log.number)
    }
  }

  /**
   * fdatasync of the current log off the event loop, resolved once every
   * earlier log's retirement is durable too: a sync write is acknowledged only
   * when everything before it in the write order is. Rejects with a LevelError.
   */
  async syncAsync (): Promise<void> {
    const log = this.current!
    const sync = log.writer.syncAsync()
    this.track(log, sync)
    try {
      await Promise.all([this.retired, sync])
    } catch (err) {
      throw this.syncError(err, log.number)
    }
  }

  private track (log: Log, sync: Promise<void>): void {
    log.syncs = Promise.all([log.syncs, sync.then(settled, settled)]).then(settled)
  }

  /**
   * Makes log `number` the current log and retires the old one off the event
   * loop (see the top of this file). Throws a LevelError if the new log cannot
   * be created.
   */
  rotate (number: number): void {
    const old = this.current!
    try {
      this.current = this.create(number)
    } catch (err) {
      throw ioError('Cannot start a new log; the database takes no more writes until reopened', err)
    }
    this.unsyncedBytes = 0
    this.backgroundSynced = false
    // The old log's closing waits for its other syncs (a background one, a
    // sync write's), then trims on the thread pool (the trim can wait on the
    // file system's journal: 66 ms measured on the event loop).
    const entry = syncDirAsync(this.fs, this.dir)
    this.entrySyncs.set(number, entry)
    entry.then(() => this.entrySyncs.delete(number), settled)
    const durable = old.writer.syncAsync()
    durable.catch(settled) // reported below, once
    this.sealed.set(old.number, { length: old.writer.size(), durable })
    const retirement = Promise.all([durable, entry])
      .then(async () => {
        await old.syncs
        await old.writer.closeAsync().catch(settled)
      })
    this.retired = Promise.all([this.retired, retirement]).then(settled)
    this.retired.catch(settled) // reported below, once
    this.retirements++
    retirement.then(() => {
      this.retirements--
      this.events.onRetired()
    }, (err) => {
      this.retirements--
      this.failedRetirements.push(old.writer)
      this.events.onError(ioError('fsync of a retired log failed; the database takes no more writes until reopened', err, logName(old.number)))
    })
  }

  /** Resolves when the retirements started so far are over (failed or not). */
  async settleRetirements (): Promise<void> {
    await this.retired.catch(settled)
  }

  /**
   * Waits for the syncs and retirements in progress, so that close() closes
   * no file under a sync and retired logs end at their last record.
   */
  async settle (): Promise<void> {
    if (this.current) await this.current.syncs
    await this.settleRetirements()
  }

  /** Closes the current log and any retired log left open. Idempotent. */
  close (): void {
    try {
      this.current?.writer.close()
    } finally {
      for (const w of this.failedRetirements.splice(0)) {
        try { w.close() } catch {}
      }
    }
  }

  private syncError (err: unknown, number: number): LevelError {
    if (isLevelError(err, 'LEVEL_IO_ERROR') || isLevelError(err, 'LEVEL_STORAGE_FULL')) return err
    return ioError('fsync of the log failed; the database takes no more writes until reopened', err, logName(number))
  }
}
