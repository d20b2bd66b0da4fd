// A read-only open: follows a database that another process (the writer) may be
// writing, without its LOCK and without creating, changing or removing any file.
//
// The state it shows is the writer's manifest (CURRENT -> MANIFEST, version
// edits) plus the logs the manifest still needs (number >= its logNumber),
// replayed into memtables of its own, one per log. Each refresh continues where
// the last one stopped: the edits appended to the manifest since (or a new
// manifest, after the writer reopened), the records appended to the logs since,
// and logs started since. What a refresh publishes is a prefix of the writer's
// committed writes:
//
//   - Records are read in log order and sequence numbers run on without a gap
//     from record to record and log to log; reading stops at the first record
//     that is not complete yet (the writer may be mid-append) or not contiguous.
//   - The writer deletes a log or a table only after a durable manifest edit no
//     longer names it. A refresh reads the manifest, then the logs and tables;
//     if a file it needs has gone, or CURRENT or the manifest changed meanwhile,
//     it starts over from the new edits (a few times, then the refresh fails
//     and the previous state stays). A file opened before its deletion stays
//     readable (POSIX): the tables of every version still pinned by a
//     snapshot or an iterator are kept open (the table cache does not evict
//     them; maxOpenFiles does not bound a read-only open).
//   - The published sequence number never goes back: a state older than the
//     one shown (the writer lost unsynced writes in a machine crash) is not
//     published; the refresh waits for the writer to pass it.
//
// Snapshots pin the version and memtables they were taken on (lib/snapshots.ts):
// the writer's compactions do not know of the reader's snapshots.
import type { FileSystem, RandomAccessFile } from './fs/fs'
import type { VersionSet } from './manifest/version-set'
import { Version } from './manifest/version'
import { decodeVersionEdit, MANIFEST_FORMAT_VERSION } from './manifest/version-edit'
import { MemTable } from './memtable/memtable'
import type { MemTableSet } from './memtable/memtable-set'
import type { TableCache } from './sstable/table-cache'
import type { EngineParts } from './engine-parts'
import type { ReplayedPrefix } from './recovery'
import { LogReader, readRecordFrom } from './wal/log-reader'
import { HEADER_SIZE, readRecordAt, recordLength } from './wal/log-format'
import { batchSequence, checkBatch } from './wal/batch'
import { CURRENT, join, logName, logNumbers } from './filenames'
import { ioError, isLevelError, levelError, type LevelError } from './errors'

/** Attempts of one refresh before it fails, and the pause before an attempt after an I/O error. */
const MAX_ATTEMPTS = 40
const RETRY_PAUSE_MS = 5

export interface FollowerEnv {
  fs: FileSystem
  dir: string
  /** Takes the followed version (VersionSet.follow); its released tables leave the table cache. */
  versions: VersionSet
  /** Takes the replayed logs' memtables (MemTableSet.follow). */
  memtables: MemTableSet
  tableCache: TableCache
  /** The newest sequence number reads now see. */
  publish (seq: number): void
}

/** A live log and how far it has been replayed. */
interface LogTail {
  number: number
  mem: MemTable
  /** Where the next record starts. */
  offset: number
  /** The sequence number the next record must start at (-1: no record yet), that of the first record, and the records read. */
  nextSeq: number
  firstSeq: number
  records: number
  /** The log, open while it is tailed. */
  file?: RandomAccessFile
}

function closeLog (log: LogTail): void {
  const file = log.file
  log.file = undefined
  try { file?.close() } catch {}
}

/** How much of a log one read takes. */
const WINDOW = 16 * 1024

/** Bounds on how coarse file modification times are: a kernel tick; on file systems that keep whole seconds, two of them. */
const FILE_TIME_MS = 50
const COARSE_FILE_TIME_MS = 2000

/** Why an attempt did not reach a consistent state: the attempt is repeated. */
class Moved extends Error {}

export class Follower {
  /** Refreshes that published a newer state, and attempts started over. */
  readonly counters = { refreshes: 0, retries: 0 }
  private manifestName = ''
  /** Where the next edit of the manifest starts, and the manifest's size when last read. */
  private manifestOffset = 0
  private manifestSize = 0
  private version = Version.empty()
  private complete = false
  private logNumber = 0
  private lastSequence = 0
  private logs: LogTail[] = []
  private visibleSeq = -1
  private running: Promise<boolean> | undefined
  private readonly window = Buffer.allocUnsafe(WINDOW)
  /** The manifest read, open while it is followed. */
  private manifestFile: RandomAccessFile | undefined
  /** What the last complete pass saw, for the quick check (unchanged()). */
  private seen: { dirMs: number, at: number } | undefined
  /** Why the last pass that failed did. */
  lastFailure: unknown
  /** handOver() gave the logs' memtables away: no pass adds to them any more. */
  private handedOver = false

  private constructor (private readonly env: FollowerEnv) {}

  /** Reads the writer's current state. Rejects if the directory holds no database or no consistent state is reached. */
  static async open (env: FollowerEnv): Promise<Follower> {
    if (!env.fs.exists(join(env.dir, CURRENT))) {
      throw levelError('LEVEL_INVALID_OPTION', `Database does not exist (a read-only open creates nothing): ${env.dir}`)
    }
    const follower = new Follower(env)
    await follower.refresh()
    return follower
  }

  /**
   * Moves to the writer's latest committed state. Resolves true if a newer
   * state was published. Concurrent calls share one refresh.
   */
  refresh (): Promise<boolean> {
    if (this.running === undefined) {
      this.running = this.refreshNow().finally(() => { this.running = undefined })
    }
    return this.running
  }

  /**
   * Moves to the writer's latest committed state now, without waiting: up to
   * MAX_ATTEMPTS passes one after another (a writer that moved under a pass
   * is read again at once). True if a pass reached a consistent state (a
   * newer one is published), false if none did (lastFailure says why;
   * refresh() waits between passes). LEVEL_NOT_SUPPORTED is thrown.
   */
  refreshSync (): boolean {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        this.attempt()
        return true
      } catch (err) {
        if (isLevelError(err, 'LEVEL_NOT_SUPPORTED')) throw err
        this.lastFailure = err
        this.counters.retries++
      }
    }
    return false
  }

  /** Resolves when no refresh is running. */
  async settle (): Promise<void> {
    await this.running?.catch(() => {})
  }

  private async refreshNow (): Promise<boolean> {
    let last: unknown
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (attempt > 0) {
        this.counters.retries++
        // The writer moved on: the next attempt reads only what it added, at
        // once. Otherwise (a file not there yet, a short read) give it a moment.
        if (!(last instanceof Moved)) await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS))
        else await new Promise((resolve) => setImmediate(resolve))
      }
      try {
        return this.attempt()
      } catch (err) {
        if (isLevelError(err, 'LEVEL_NOT_SUPPORTED')) throw err
        last = err
      }
    }
    throw ioError(`Cannot follow the database: no consistent state after ${MAX_ATTEMPTS} attempts (${String((last as Error).message)})`, last)
  }

  /**
   * This process took the writer's LOCK (the writer is gone: the logs end
   * here): reads the logs to their end, then gives their memtables to the
   * open that replays them (lib/recovery.ts, ReplayedPrefix), which goes on
   * writing to them. From then on this follower shows that final state and
   * never changes; resume() starts it over if the open fails. Nothing is
   * given if no pass reached a consistent state.
   */
  handOver (): ReplayedPrefix[] {
    if (this.handedOver || !this.refreshSync()) return []
    this.handedOver = true
    return this.logs.filter((l) => l.records > 0).map((l) => ({ logNumber: l.number, mem: l.mem, offset: l.offset, records: l.records, firstSeq: l.firstSeq, nextSeq: l.nextSeq }))
  }

  /** After a handOver() whose open failed: follows again, the logs read anew from their start into memtables of its own. */
  resume (): void {
    if (!this.handedOver) return
    for (const log of this.logs) closeLog(log)
    this.logs = []
    this.seen = undefined
    this.handedOver = false
  }

  /** One pass; throws (Moved or an I/O error) if the writer moved under it. */
  private attempt (): boolean {
    if (this.handedOver || this.unchanged()) return false
    const at = Date.now()
    const dirMs = this.env.fs.modifiedMs?.(this.env.dir)
    this.seen = undefined
    this.readManifest()
    this.readLogs()
    const opened: number[] = []
    try {
      this.openTables(opened)
      this.checkManifestUnchanged()
      const published = this.publish()
      if (dirMs !== undefined) this.seen = { dirMs, at }
      return published
    } catch (err) {
      // Tables of a version never installed would stay in the cache.
      for (const n of opened) if (!this.env.versions.isLiveTable(n)) this.env.tableCache.evict(n)
      throw err
    }
  }

  /**
   * Whether the writer surely changed nothing since the last complete pass,
   * from three small reads instead of a pass: no file was added, removed or
   * renamed in the directory (its modification time; CURRENT is replaced by
   * a rename, a log or table is created), the manifest did not grow, and no
   * record header follows the last record read in the newest log. File times
   * come from a clock coarser than Date.now() (a tick of the kernel; seconds
   * on some file systems): the directory's is trusted only once it is older
   * than the pass by more than that, so that a change after the pass cannot
   * carry the same time.
   */
  private unchanged (): boolean {
    const { seen, manifestFile } = this
    const log = this.logs[this.logs.length - 1]
    if (seen === undefined || manifestFile === undefined || log?.file === undefined) return false
    const grain = seen.dirMs % 1000 === 0 ? COARSE_FILE_TIME_MS : FILE_TIME_MS
    if (seen.dirMs > seen.at - grain) return false
    const { fs, dir } = this.env
    if (fs.modifiedMs?.(dir) !== seen.dirMs || this.manifestGrew(manifestFile)) return false
    const header = this.window
    if (log.file.read(header, 0, HEADER_SIZE, log.offset) < HEADER_SIZE) return true
    return typeof recordLength(header, 0, Infinity) !== 'number'
  }

  /** Whether the manifest holds bytes past those read (an open file's size() is its size at open: a read tells). */
  private manifestGrew (file: RandomAccessFile): boolean {
    return file.read(this.window, 0, 1, this.manifestSize) > 0
  }

  /** The manifest named by CURRENT, from where the last pass stopped (or from its start, if it is a new one). */
  private readManifest (): void {
    const { fs, dir } = this.env
    const name = readCurrent(fs, dir)
    if (name !== this.manifestName) {
      try { this.manifestFile?.close() } catch {}
      this.manifestFile = undefined
      this.manifestName = name
      this.manifestOffset = 0
      this.version = Version.empty()
      this.complete = false
    }
    const reader = new LogReader(fs, join(dir, name), name, this.manifestOffset)
    try {
      for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
        const edit = decodeVersionEdit(rec, name)
        if (edit.formatVersion !== undefined && edit.formatVersion > MANIFEST_FORMAT_VERSION) {
          throw levelError('LEVEL_NOT_SUPPORTED', `${name} has format version ${edit.formatVersion}; this version of lsm-level reads up to ${MANIFEST_FORMAT_VERSION} (see UPGRADING.md)`)
        }
        this.version = this.version.apply(edit)
        if (edit.logNumber !== undefined) this.logNumber = edit.logNumber
        if (edit.lastSequence !== undefined) this.lastSequence = edit.lastSequence
        this.complete ||= edit.nextFileNumber !== undefined && edit.lastSequence !== undefined
        this.manifestOffset = reader.offset
      }
      this.manifestSize = reader.offset + reader.tail.droppedBytes
    } finally {
      reader.close()
    }
    // Its first record is written and synced before CURRENT names it: a
    // manifest without it is one the writer has already replaced.
    if (!this.complete) throw new Moved(`${name} holds no complete state yet`)
  }

  /** Replays the live logs' new records; drops the logs the manifest no longer needs. */
  private readLogs (): void {
    const { fs, dir } = this.env
    const listed = logNumbers(fs, dir, this.logNumber)
    // The live log is created before the manifest names it and removed only
    // after an edit no longer does: without it, a flush has just retired it.
    if (this.logNumber > 0 && listed[0] !== this.logNumber) throw new Moved(`${logName(this.logNumber)} was removed`)
    const kept = this.logs.filter((l) => l.number >= this.logNumber)
    for (const l of this.logs) if (l.number < this.logNumber) closeLog(l)
    for (const l of kept) if (!listed.includes(l.number)) throw new Moved(`${logName(l.number)} was removed`)
    const newest = kept.length > 0 ? kept[kept.length - 1].number : -1
    for (const number of listed) {
      if (number > newest) kept.push({ number, mem: new MemTable(), offset: 0, nextSeq: -1, firstSeq: -1, records: 0 })
    }
    this.logs = kept
    // Records continue the previous log's; the first live log's first record
    // may repeat sequence numbers the manifest counts, not skip any.
    // (The writer fills a log only once the one before it is complete.)
    let expected = -1
    for (const log of this.logs) {
      if (!this.replayLog(log, expected)) return
      if (log.nextSeq >= 0) expected = log.nextSeq
    }
  }

  /**
   * Applies the log's complete, contiguous new records. False if a record
   * broke the sequence (reading stops). The log stays open from pass to pass,
   * and only what follows the last record read is read: a live log is
   * extended with zeros ahead of its records (hosts/node/node-fs.ts), which
   * end the read at once.
   */
  private replayLog (log: LogTail, expected: number): boolean {
    const { fs, dir } = this.env
    const name = logName(log.number)
    if (log.file === undefined) {
      try {
        log.file = fs.openRead(join(dir, name))
      } catch (err) {
        throw ioError(`Cannot open ${name}: ${(err as Error).message}`, err, name)
      }
    }
    const buf = this.window
    for (;;) {
      const n = log.file.read(buf, 0, buf.length, log.offset)
      const bytes = n === buf.length ? buf : buf.subarray(0, n)
      let pos = 0
      let rec = readRecordAt(bytes, pos)
      for (; typeof rec === 'object'; rec = readRecordAt(bytes, pos)) {
        // A view of the window: the memtable copies it into its arena (a view
        // that does not start its buffer is never adopted: MemTable.addBatch).
        if (!this.apply(log, rec.payload, expected, name)) return false
        pos = rec.next
        log.offset += rec.payload.length + HEADER_SIZE
      }
      // What the window cut short is read again from its start; a record larger than the window, on its own.
      if (rec !== 'cut-header' && rec !== 'past-end') return true
      if (pos > 0 && n === buf.length) continue
      const big = readRecordFrom(log.file, log.offset)
      if (big === undefined) return true
      if (!this.apply(log, big.payload, expected, name)) return false
      log.offset = big.next
    }
  }

  /** Adds a record to the log's memtable if it continues the sequence; false if it does not. */
  private apply (log: LogTail, rec: Buffer, expected: number, name: string): boolean {
    const count = checkBatch(rec, name)
    const firstSeq = batchSequence(rec)
    const want = log.nextSeq >= 0 ? log.nextSeq : expected
    if (want >= 0 ? firstSeq !== want : firstSeq > this.lastSequence + 1) return false
    log.mem.addBatch(rec, firstSeq)
    if (log.records++ === 0) log.firstSeq = firstSeq
    log.nextSeq = firstSeq + count
    return true
  }

  /** Closes the logs it tails. */
  close (): void {
    for (const log of this.logs) closeLog(log)
    this.logs = []
    try { this.manifestFile?.close() } catch {}
    this.manifestFile = undefined
    this.seen = undefined
  }

  /** Opens the tables of the version read (an open file stays readable once the writer deletes it); adds those newly opened to `opened`. */
  private openTables (opened: number[]): void {
    const { versions, tableCache } = this.env
    for (const files of this.version.levels) {
      for (const f of files) {
        if (versions.isLiveTable(f.number)) continue
        tableCache.get(f.number)
        opened.push(f.number)
      }
    }
  }

  /** The writer deletes files only after an edit: if none came while the files were read, none of those it needs went. */
  private checkManifestUnchanged (): void {
    const { fs, dir } = this.env
    if (readCurrent(fs, dir) !== this.manifestName) throw new Moved('CURRENT names a new manifest')
    this.manifestFile ??= fs.openRead(join(dir, this.manifestName))
    if (this.manifestGrew(this.manifestFile)) throw new Moved(`${this.manifestName} has new edits`)
  }

  /** Makes the state read the one reads see, unless it is older than the one they see. */
  private publish (): boolean {
    // The writes the manifest counts are in its tables or, once written to a
    // log, in its live logs: logs that hold records but end before its last
    // sequence number were read short (a record out of sequence).
    let logged = -1
    for (const log of this.logs) if (log.nextSeq - 1 > logged) logged = log.nextSeq - 1
    if (logged >= 0 && logged < this.lastSequence) throw new Moved('the live logs end before the manifest\'s last sequence number')
    const seq = Math.max(logged, this.lastSequence)
    if (seq < this.visibleSeq) return false
    const { versions, memtables } = this.env
    if (versions.current !== this.version) versions.follow(this.version, this.logNumber, this.lastSequence)
    memtables.follow(this.logs.map((l) => l.mem))
    const moved = seq > this.visibleSeq
    this.visibleSeq = seq
    this.env.publish(seq)
    if (moved) this.counters.refreshes++
    return moved
  }
}

/** The manifest CURRENT names. */
function readCurrent (fs: FileSystem, dir: string): string {
  const current = fs.readSmallFile(join(dir, CURRENT)).toString('latin1')
  const m = /^(MANIFEST-\d+)\n$/.exec(current)
  // The writer replaces CURRENT by a rename: a partial one is never seen.
  if (!m) throw new Moved('CURRENT does not name a manifest')
  return m[1]
}

/**
 * A read-only open (option readOnly) as one object: the follower, refreshed
 * every refreshIntervalMs (a refresh that fails, the writer moving too fast, is
 * retried on the next tick), and the refusal of everything that writes.
 * Snapshots on such an open pin what they read (lib/snapshots.ts).
 */
export class ReadOnlyMode {
  private timer: ReturnType<typeof setInterval> | undefined

  private constructor (readonly follower: Follower) {}

  /** Opens the follower over the engine's parts; `publish` makes a sequence number the visible one. */
  static async open (parts: EngineParts, publish: (seq: number) => void): Promise<ReadOnlyMode> {
    const { fs, dir, versions, memtables, tableCache } = parts
    // Tables the writer dropped leave the cache; the files are the writer's.
    versions.onObsoleteTable = (n) => tableCache.evict(n)
    const mode = new ReadOnlyMode(await Follower.open({ fs, dir, versions, memtables, tableCache, publish }))
    const refreshIntervalMs = parts.options.refreshIntervalMs
    if (refreshIntervalMs > 0) {
      mode.timer = setInterval(() => { mode.follower.refresh().catch(() => {}) }, refreshIntervalMs)
      mode.timer.unref()
    }
    return mode
  }

  /** LEVEL_READ_ONLY: `what` writes. */
  refusal (what: string): LevelError {
    return levelError('LEVEL_READ_ONLY', `Cannot ${what}: the database was opened read-only`)
  }

  /** Stops the refreshes; resolves when none is running. */
  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.follower.settle()
    this.follower.close()
  }
}
