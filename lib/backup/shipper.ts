// Continuous shipping of a database to an object store (db.replicate): the
// layout is drawn in lib/backup/layout.ts. A shipper runs rounds, one at a
// time, at most every intervalMs (and back to back while it is behind):
//
//   capture (one turn)   the current version (pinned: Version.ref, so no
//                        compaction deletes its tables under the upload), its
//                        logNumber, the visible sequence number and where its
//                        writes end in the logs; every log from logNumber on
//                        opened (a flush that removes one later leaves its
//                        bytes readable through the open file)
//   logs                 of each open log, the bytes from where the previous
//                        round stopped to where its visible records end: the
//                        log of the sequence number up to it, an older (sealed)
//                        log whole. Cut at record boundaries (at most
//                        maxSegmentBytes an object); each a segment. First:
//                        the recovery point waits for these, not for tables
//   tables               if a point is due (below) and the version is not
//                        the one of the last point: each of its tables not
//                        put yet in this generation, read, CRC-32'd and
//                        SHA-256'd (TABLE_UPLOADS at once; on a job thread
//                        where the engine has one), then put, or, if an older
//                        generation holds an object of the same size and
//                        SHA-256 (listed at the start: a restart, a restored
//                        copy), named instead: a refs marker put (the
//                        retention keeps what it names) and the point names
//                        that object. Each table's bytes reach the store
//                        once per prefix
//   point                then the point (tables, range tombstones,
//                        logNumber, sequence)
//
// A point is due in the first round and the last (stop(), close()), after a
// log let go unshipped (below), and in between once pointLogBytes of log were
// put since the last one or pointIntervalMs passed. Between points only segments go out: a restore
// replays at most about that much log after its point, and the tables that
// compactions replace in the meantime (most of what a bulk load writes) are
// never read, hashed or put.
//
// Logs are held open from round to round until they are shipped to their end
// and retired (below the manifest's logNumber), so the segments of a log are
// contiguous from byte 0 even when its flush removes it from the directory
// between two rounds; a log made and flushed entirely between two rounds is
// opened by the engine's retirement hook (logRetired) before it is deleted.
// Held logs that are retired but not shipped keep their disk space (the
// files are unlinked, the descriptors open): at most maxHeldLogBytes of them;
// past it the oldest is let go, and the sequence numbers it held cannot be
// restored on their own (restore stops at such a hole, lib/backup/restore.ts;
// its writes are in the tables of the next point, which the round that
// follows a hole puts, due or not; shippedSequence waits for that point).
// stats().logsDropped counts them.
//
// The lease (lib/backup/lease.ts): taken before the generation's first
// object (a second live writer fails there with LEVEL_LOCKED), renewed every
// leaseMs / 3 on its own timer (a long round does not delay it), released by
// stop(). A shipper that finds the lease taken by another writer stops
// shipping (lastError says so, LEVEL_LOCKED); the database goes on.
//
// Retention (every retentionIntervalMs, only while the lease is surely held):
// this generation's points beyond the newest retainPoints or older than
// retainMs, the newest always kept, with the segments and tables only they
// needed; other generations beyond the newest retainGenerations (this one
// counted) or whose newest object is older than retainMs, whole, except the
// tables a kept generation's refs markers name.
//
// Failures: an object store error fails the round after the store's retries
// (withRetries); what the round put stays put (a table once put is not put
// again; a log's bytes continue where its last segment ended) and the next
// round starts after a backoff that doubles up to retryDelayMsMax. The
// database keeps working meanwhile; the lag grows and stats() reports it and
// the last error. Nothing the database acknowledged depends on shipping.
//
// Memory: TABLE_UPLOADS tables or one segment (maxSegmentBytes) at a time, plus
// the names of the objects the retention may delete.
import { closeAsync, type FileSystem, type RandomAccessFile } from '../fs/fs'
import type { Version } from '../manifest/version'
import type { FileMeta } from '../manifest/file-meta'
import type { LogPosition, SealedLog } from '../wal/log-manager'
import { HEADER_SIZE, recordFaultText, recordLength, walkRecords } from '../wal/log-format'
import { readRecordFrom } from '../wal/log-reader'
import { BATCH_HEADER_SIZE, batchCount } from '../wal/batch'
import { getFixed64 } from '../util/coding'
import { crc } from '../util/crc'
import { backgroundTimer, nextTurn } from '../util/turn'
import { join, logName, logNumbers, tableName } from '../filenames'
import { corruption, levelError } from '../errors'
import { objectKey, withRetries, type ObjectStore, type RetryPolicy } from './object-store'
import { Lease } from './lease'
import { readTableContent, type TableContent } from './table-content'
import {
  encodePoint, GENERATION_FILE, generationStartMs, isGenerationId, LAYOUT_VERSION, newGenerationId,
  parsePointKey, parseRefKey, parseSegmentKey, parseTableKey, pointKey, refKey, segmentKey, tableKey, type PointTable
} from './layout'

/** Tables put at once (each one in memory meanwhile). */
const TABLE_UPLOADS = 4

/** What a shipper needs of the engine. */
export interface ShipperSource {
  fs: FileSystem
  dir: string
  /**
   * Synchronous, in one turn: the current version, referenced for the caller
   * (who unrefs it), and the state that goes with it.
   */
  capture: () => Capture
  sealedLog: (number: number) => SealedLog | undefined
  /** The visible sequence number now. */
  sequence: () => number
  /** Reads a table's checksums, and its bytes if keepBytes, off the event loop (a job thread), where the engine can; else the shipper reads it. */
  readTable?: (path: string, size: number, keepBytes: boolean) => Promise<TableContent>
  /** The tables' paths name this machine's files: a store with putFile copies them itself. */
  hostFiles?: boolean
}

export interface Capture {
  version: Version
  logNumber: number
  sequence: number
  visibleEnd: LogPosition
  nextFileNumber: number
}

export interface ReplicateOptions {
  /** Keys start with this ('' or a path like 'backups/db1'). Default ''. */
  prefix?: string
  /** The most often a round starts (ms): writes reach the store about this often. Default 1000. */
  intervalMs?: number
  /** Largest log segment object (bytes); a longer stretch of log is cut in several. Default 4 MiB. */
  maxSegmentBytes?: number
  /** Points (and the logs and tables only they need) older than this are deleted, the newest point always kept; other generations whose newest object is older are deleted whole. 0: no bound by age. Default 7 days. */
  retainMs?: number
  /** At most this many points of this generation are kept (the newest; with their logs and tables). Default: no bound by count. */
  retainPoints?: number
  /** At most this many generations are kept, this one included (the newest by their newest object); older ones are deleted whole. Default: no bound by count. */
  retainGenerations?: number
  /** The writers' lease (lib/backup/lease.ts): renewed every leaseMs / 3; a writer that stops renewing loses it after leaseMs. Default 30000. */
  leaseMs?: number
  /** How often the retention runs (ms). Default 10 minutes. */
  retentionIntervalMs?: number
  /**
   * A round puts a point (and the tables it needs) when the version changed and this many bytes of log
   * were put since the last point, or pointIntervalMs passed: the most log a restore replays after its
   * point. Between points only log segments are put, so tables that compactions replace in the meantime
   * are never put. The first and last rounds, and the round after a log let go unshipped, put one
   * anyway. 0: a point each round the version changed. Default 64 MiB.
   */
  pointLogBytes?: number
  /** See pointLogBytes (ms). 0: no bound by time. Default 60000. */
  pointIntervalMs?: number
  /** Bytes of retired logs not shipped yet kept readable for the shipper (their disk space is not freed meanwhile). Default 256 MiB. */
  maxHeldLogBytes?: number
  /** Retries of one request (lib/backup/object-store.ts). */
  retries?: RetryPolicy
  /** The longest wait between failed rounds (ms). Default 30000. */
  retryDelayMsMax?: number
}

export interface ReplicationStats {
  store: string
  prefix: string
  generation: string
  /** The newest sequence number in the store (restorable from it). */
  shippedSequence: number
  /** The database's sequence number minus shippedSequence. */
  lagSequences: number
  /** How long writes have been waiting to reach the store (ms): 0 when everything visible is shipped. */
  lagMs: number
  /** Bytes put: tables, log segments, points. */
  bytesUploaded: number
  tablesUploaded: number
  /** Tables found in the store under an older generation (same size and SHA-256) and named instead of put, and their bytes. */
  tablesReused: number
  bytesReused: number
  segmentsUploaded: number
  pointsUploaded: number
  /** Requests made to the store (puts, lists, deletes, retries included). */
  requests: number
  objectsDeleted: number
  /** Points of this generation, and other generations, deleted by the retention. */
  pointsDeleted: number
  generationsDeleted: number
  /** This shipper holds the writers' lease on the prefix (false once it is lost or released). */
  leaseHeld: boolean
  /** Retired logs let go before they were shipped (maxHeldLogBytes): holes in the restorable sequence numbers. */
  logsDropped: number
  rounds: number
  failedRounds: number
  /** How long the last successful round took, and the longest one (ms), tables included. */
  lastRoundMs: number
  maxRoundMs: number
  /** How long the last round took to put its log segments (from its capture), and the longest (ms): the upload time a write waits for after its round's capture. */
  lastLogsMs: number
  maxLogsMs: number
  /** The last round's failure, until a round succeeds. */
  lastError: string | undefined
}

interface HeldLog {
  file: RandomAccessFile
  /** Bytes put so far (a record boundary). */
  shipped: number
  /** Where its records end, once it is sealed. */
  sealedLength: number | undefined
  /** Segment keys, for the retention. */
  keys: string[]
  /** The last sequence number shipped from it. */
  lastSeq: number
}

interface ShippedPoint {
  key: string
  ms: number
  logNumber: number
  tables: number[]
}

/** A table object of an older generation that a table of this one may be: by size and SHA-256. */
const contentId = (size: number, sha: string): string => `${size}-${sha}`

export class Shipper {
  readonly generation: string
  private readonly store: ObjectStore
  private readonly source: ShipperSource
  private readonly prefix: string
  private readonly intervalMs: number
  private readonly maxSegmentBytes: number
  private readonly retainMs: number
  private readonly retentionIntervalMs: number
  private readonly retries: RetryPolicy | undefined
  private readonly retryDelayMsMax: number
  private readonly maxHeldLogBytes: number
  private readonly retainPoints: number
  private readonly retainGenerations: number
  private readonly leaseMs: number
  private readonly pointLogBytes: number
  private readonly pointIntervalMs: number
  private readonly lease: Lease
  /** Table objects of older generations, by content (contentId), relative to the prefix: listed at start. */
  private readonly reusable = new Map<string, string>()
  /** Refs markers put (relative keys of the tables named), for the retention. */
  private readonly refs = new Set<string>()
  /** The lease was lost: no more rounds. */
  private halted = false
  private renewTimer: ReturnType<typeof setTimeout> | undefined
  private renewWake: (() => void) | undefined
  private renewing: Promise<void> | undefined
  /** The first capture's logNumber: the logs below it are not needed (the first point's tables hold them). */
  private firstLog: number | undefined

  private readonly tables = new Map<number, PointTable>()
  private readonly logs = new Map<number, HeldLog>()
  private readonly points: ShippedPoint[] = []
  /** Segments of logs already closed, by log number, for the retention. */
  private readonly closedLogKeys = new Map<number, string[]>()
  private lastPointVersion: Version | undefined
  /** When the last point was put (its round's ms), and the bytes of log put since. */
  private lastPointMs = 0
  private logBytesSincePoint = 0
  /** logsDropped when the last point was put. */
  private droppedAtPoint = 0
  private lastRetentionMs = 0
  private started = false
  private stopping = false
  /** The last round is over: no log is opened again. */
  private finished = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private wake: (() => void) | undefined
  private loop: Promise<void> | undefined
  private failures = 0
  /** When the last round that reached its capture's sequence number took it (ms): every write acknowledged before then is in the store. */
  private caughtUpMs = Date.now()
  private readonly counters = {
    shippedSequence: 0,
    bytesUploaded: 0,
    tablesUploaded: 0,
    tablesReused: 0,
    bytesReused: 0,
    segmentsUploaded: 0,
    pointsUploaded: 0,
    requests: 0,
    objectsDeleted: 0,
    pointsDeleted: 0,
    generationsDeleted: 0,
    logsDropped: 0,
    rounds: 0,
    failedRounds: 0,
    lastRoundMs: 0,
    maxRoundMs: 0,
    lastLogsMs: 0,
    maxLogsMs: 0,
    lastError: undefined as string | undefined
  }

  constructor (store: ObjectStore, source: ShipperSource, options: ReplicateOptions = {}) {
    this.store = store
    this.source = source
    this.prefix = options.prefix ?? ''
    this.intervalMs = options.intervalMs ?? 1000
    this.maxSegmentBytes = options.maxSegmentBytes ?? 4 * 1024 * 1024
    this.retainMs = options.retainMs ?? 7 * 24 * 3600 * 1000
    this.retentionIntervalMs = options.retentionIntervalMs ?? 10 * 60 * 1000
    this.retries = options.retries
    this.retryDelayMsMax = options.retryDelayMsMax ?? 30000
    this.maxHeldLogBytes = options.maxHeldLogBytes ?? 256 * 1024 * 1024
    this.retainPoints = options.retainPoints ?? Infinity
    this.retainGenerations = options.retainGenerations ?? Infinity
    this.leaseMs = options.leaseMs ?? 30000
    this.pointLogBytes = options.pointLogBytes ?? 64 * 1024 * 1024
    this.pointIntervalMs = options.pointIntervalMs ?? 60000
    checkOptions({ pointLogBytes: this.pointLogBytes, pointIntervalMs: this.pointIntervalMs, intervalMs: this.intervalMs, maxSegmentBytes: this.maxSegmentBytes, retainMs: this.retainMs, retentionIntervalMs: this.retentionIntervalMs, retryDelayMsMax: this.retryDelayMsMax, maxHeldLogBytes: this.maxHeldLogBytes, retainPoints: this.retainPoints, retainGenerations: this.retainGenerations, leaseMs: this.leaseMs })
    this.generation = newGenerationId(Date.now(), globalThis.crypto.getRandomValues(new Uint8Array(8)))
    this.lease = new Lease(store, this.prefix, this.generation, { leaseMs: this.leaseMs, request: async (what, op) => await this.request(what, op) })
  }

  /** Whether the retention may run: by age or by count. */
  private get retaining (): boolean {
    return this.retainMs > 0 || this.retainPoints < Infinity || this.retainGenerations < Infinity
  }

  get storeDescription (): string {
    return this.store.description
  }

  /**
   * Takes the lease (LEVEL_LOCKED if another writer holds it), puts the
   * generation's first object, lists the tables older generations hold, and
   * starts the rounds; a failure rejects and stops.
   */
  async start (): Promise<void> {
    if (this.started) return
    this.started = true
    await this.lease.acquire()
    try {
      const key = this.key(`${this.generation}/${GENERATION_FILE}`)
      const body = Buffer.from(JSON.stringify({ layout: LAYOUT_VERSION, createdMs: Date.now() }) + '\n')
      await this.request(key, () => this.store.put(key, body, { ifAbsent: this.store.conditionalPut }))
      this.counters.bytesUploaded += body.length
      await this.listReusable()
    } catch (err) {
      await this.lease.release().catch(() => {})
      throw err
    }
    this.lastRetentionMs = Date.now()
    this.loop = this.run()
    this.renewing = this.renewLoop()
  }

  /** The layout-2 table objects under the prefix, by content. */
  private async listReusable (): Promise<void> {
    const root = this.prefix === '' ? '' : objectKey(this.prefix, '')
    const all = await this.request(root || '(root)', () => this.store.list(root))
    for (const { key, size } of all) {
      const rel = key.slice(root.length)
      const t = parseTableKey(rel)
      if (t !== undefined && t.gen !== this.generation) this.reusable.set(contentId(size, t.sha), rel)
    }
  }

  /** Renews the lease every leaseMs / 3 until stop(); a lost lease halts the rounds. */
  private async renewLoop (): Promise<void> {
    while (!this.stopping && !this.halted) {
      await new Promise<void>((resolve) => {
        this.renewWake = resolve
        this.renewTimer = backgroundTimer(resolve, this.leaseMs / 3)
      })
      if (this.stopping) return
      try {
        await this.lease.renew()
      } catch (err) {
        if ((err as { code?: string }).code === 'LEVEL_LOCKED') {
          this.halted = true
          this.counters.lastError = (err as Error).message
          clearTimeout(this.timer)
          this.wake?.()
          return
        }
        // The store unreachable: tried again at the next turn; the lease lapses meanwhile (valid() is false).
      }
    }
  }

  /** Stops after the running round and one last round, or as many as its segments need (what was written before stop() is shipped if the store takes it); then releases the logs. */
  async stop (): Promise<void> {
    if (this.stopping) return await this.loop
    this.stopping = true
    clearTimeout(this.timer)
    this.wake?.()
    clearTimeout(this.renewTimer)
    this.renewWake?.()
    try {
      await this.loop
      await this.renewing
      await this.lease.release().catch(() => {})
    } finally {
      for (const log of this.logs.values()) log.file.close()
      this.logs.clear()
    }
  }

  stats (): ReplicationStats {
    const sequence = this.source.sequence()
    const c = this.counters
    const behind = sequence > c.shippedSequence
    return {
      store: this.store.description,
      prefix: this.prefix,
      generation: this.generation,
      shippedSequence: c.shippedSequence,
      lagSequences: Math.max(0, sequence - c.shippedSequence),
      lagMs: behind ? Date.now() - this.caughtUpMs : 0,
      bytesUploaded: c.bytesUploaded,
      tablesUploaded: c.tablesUploaded,
      tablesReused: c.tablesReused,
      bytesReused: c.bytesReused,
      segmentsUploaded: c.segmentsUploaded,
      pointsUploaded: c.pointsUploaded,
      requests: c.requests,
      objectsDeleted: c.objectsDeleted,
      pointsDeleted: c.pointsDeleted,
      generationsDeleted: c.generationsDeleted,
      leaseHeld: this.lease.held,
      logsDropped: c.logsDropped,
      rounds: c.rounds,
      failedRounds: c.failedRounds,
      lastRoundMs: c.lastRoundMs,
      maxRoundMs: c.maxRoundMs,
      lastLogsMs: c.lastLogsMs,
      maxLogsMs: c.maxLogsMs,
      lastError: c.lastError
    }
  }

  /**
   * The engine's hook, called in the turn a flush retires log `number`,
   * before the log is deleted: a log this shipper has not opened yet is
   * opened now (its bytes stay readable after the unlink), and its length
   * noted. Never throws: a log it cannot open is a hole, not a failure.
   */
  logRetired (number: number): void {
    // Until the last round's capture (stop() waits for the running round, whose capture may be older than this log).
    if (this.finished || this.firstLog === undefined || number < this.firstLog) return
    try {
      const held = this.logs.get(number)
      if (held !== undefined) {
        held.sealedLength ??= this.source.sealedLog(number)?.length ?? recordsEnd(held.file, held.shipped)
        return
      }
      // Shipped and let go already; else a log no round opened (made and flushed between two captures,
      // or left out of a capture that saw the flush's version before this hook ran).
      if (this.closedLogKeys.has(number)) return
      const { fs, dir } = this.source
      const file = fs.openRead(join(dir, logName(number)))
      this.logs.set(number, { file, shipped: 0, sealedLength: this.source.sealedLog(number)?.length ?? recordsEnd(file, 0), keys: [], lastSeq: 0 })
      this.dropOverHeld()
    } catch {
      this.counters.logsDropped++
    }
  }

  /** Lets go of the oldest retired, unshipped logs beyond maxHeldLogBytes. */
  private dropOverHeld (): void {
    let bytes = 0
    const retired = [...this.logs].filter(([, l]) => l.sealedLength !== undefined).sort((a, b) => b[0] - a[0])
    for (const [number, log] of retired) {
      bytes += log.sealedLength! - log.shipped
      if (bytes <= this.maxHeldLogBytes) continue
      log.file.close()
      this.logs.delete(number)
      this.closedLogKeys.set(number, log.keys)
      this.counters.logsDropped++
    }
  }

  private async run (): Promise<void> {
    for (;;) {
      if (this.halted) {
        this.finished = true
        return
      }
      const last = this.stopping
      const began = Date.now()
      let behind = false
      try {
        behind = await this.round(last)
        this.counters.lastRoundMs = Date.now() - began
        this.counters.maxRoundMs = Math.max(this.counters.maxRoundMs, this.counters.lastRoundMs)
        this.failures = 0
        this.counters.lastError = undefined
        if (!last && this.retaining && began - this.lastRetentionMs >= this.retentionIntervalMs) {
          this.lastRetentionMs = began
          await this.retain(began)
        }
      } catch (err) {
        this.failures++
        this.counters.failedRounds++
        if (!this.halted) this.counters.lastError = (err as Error).message
      }
      // The last rounds go on while they stop at the segment cap: close() ships everything written before it.
      if (last && !behind) {
        this.finished = true
        return
      }
      // Behind (a segment cap reached): the next round at once; after a failure, a backoff.
      const wait = this.failures > 0
        ? Math.min(this.retryDelayMsMax, this.intervalMs * 2 ** Math.min(this.failures, 20))
        : behind ? 0 : this.intervalMs - (Date.now() - began)
      if (wait > 0) await this.sleep(wait)
      else await nextTurn()
    }
  }

  private async sleep (ms: number): Promise<void> {
    if (this.stopping) return
    await new Promise<void>((resolve) => {
      this.wake = resolve
      this.timer = backgroundTimer(resolve, ms)
    })
    this.wake = undefined
  }

  private key (rest: string): string {
    return objectKey(this.prefix, rest)
  }

  private async request<T> (what: string, op: () => Promise<T>): Promise<T> {
    return await withRetries(this.store, what, async () => {
      this.counters.requests++
      return await op()
    }, this.retries)
  }

  /** One round (see the top of the file). Returns true if it stopped at its size cap, behind the database. */
  private async round (last: boolean): Promise<boolean> {
    this.counters.rounds++
    const cap = this.source.capture()
    const roundMs = Date.now()
    try {
      this.openLogs(cap)
      // The logs first: the recovery point waits for them, not for the tables.
      const behind = await this.putLogs(cap, roundMs)
      if (behind) return true
      this.counters.lastLogsMs = Date.now() - roundMs
      this.counters.maxLogsMs = Math.max(this.counters.maxLogsMs, this.counters.lastLogsMs)
      // A log let go unshipped since the last point is a hole that a restore stops at: the writes after it
      // are restorable only from a point after it, put now.
      const hole = this.counters.logsDropped > this.droppedAtPoint
      if (!hole) this.shipped(cap.sequence, roundMs)
      if (hole || (cap.version !== this.lastPointVersion && this.pointDue(last, roundMs))) {
        await this.putTables(cap.version)
        await this.putPoint(cap, roundMs)
        this.shipped(cap.sequence, roundMs)
      }
      return false
    } finally {
      cap.version.unref()
    }
  }

  /** In the capture's turn: opens the logs from logNumber to the visible one not held yet, and notes which are sealed. */
  private openLogs (cap: Capture): void {
    const { fs, dir } = this.source
    this.firstLog ??= cap.logNumber
    for (const number of logNumbers(fs, dir, cap.logNumber)) {
      if (number > cap.visibleEnd.number || this.logs.has(number) || this.closedLogKeys.has(number)) continue
      this.logs.set(number, { file: fs.openRead(join(dir, logName(number))), shipped: 0, sealedLength: undefined, keys: [], lastSeq: 0 })
    }
    for (const [number, log] of this.logs) {
      if (number < cap.visibleEnd.number && log.sealedLength === undefined) {
        // A log of an earlier process (replayed at open) was not sealed by this one: its records end where the valid ones do.
        log.sealedLength = this.source.sealedLog(number)?.length ?? recordsEnd(log.file, log.shipped)
      }
    }
  }

  /** The logs from logNumber to the visible one and where their writes up to the capture's sequence number end. */
  private logLengths (cap: Capture): Array<[number, number]> {
    const out: Array<[number, number]> = []
    for (const [number, log] of this.logs) {
      if (number < cap.logNumber || number > cap.visibleEnd.number) continue
      out.push([number, number === cap.visibleEnd.number ? cap.visibleEnd.offset : log.sealedLength!])
    }
    return out.sort((a, b) => a[0] - b[0])
  }

  private async putTables (version: Version): Promise<void> {
    const { fs, dir } = this.source
    const todo = version.levels.flat().filter((meta) => !this.tables.has(meta.number))
    let next = 0
    let failed: { err: unknown } | undefined
    const worker = async (): Promise<void> => {
      while (failed === undefined && next < todo.length) {
        const meta = todo[next++]
        try {
          const path = join(dir, tableName(meta.number))
          // A store that copies the file itself gets its path: the bytes are read here (or on the job thread) only to hash them.
          const byPath = this.source.hostFiles === true && this.store.putFile !== undefined
          const { bytes: body, crc: c, sha } = this.source.readTable !== undefined
            ? await this.source.readTable(path, meta.size, !byPath)
            : await readTableContent(fs, path, meta.size, !byPath)
          const found = sha === undefined ? undefined : this.reusable.get(contentId(meta.size, sha))
          if (found !== undefined) {
            // The same bytes are in the store already (an older generation's): a marker, so that the retention keeps them.
            if (!this.refs.has(found)) {
              const marker = this.key(refKey(this.generation, found))
              await this.request(marker, () => this.store.put(marker, Buffer.alloc(0)))
              this.refs.add(found)
            }
            this.tables.set(meta.number, { number: meta.number, size: meta.size, crc: c, key: found })
            this.counters.tablesReused++
            this.counters.bytesReused += meta.size
            continue
          }
          const rel = tableKey(this.generation, meta.number, sha)
          const key = this.key(rel)
          await this.request(key, async () => body === undefined ? await this.store.putFile!(key, path) : await this.store.put(key, body))
          this.tables.set(meta.number, { number: meta.number, size: meta.size, crc: c, key: rel })
          this.counters.tablesUploaded++
          this.counters.bytesUploaded += meta.size
        } catch (err) {
          failed ??= { err }
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(TABLE_UPLOADS, todo.length) }, worker))
    if (failed !== undefined) throw failed.err
  }

  /** Ships every held log to where its visible records end; closes those retired and done. Returns true if a log is left behind its end (size cap). */
  private async putLogs (cap: Capture, roundMs: number): Promise<boolean> {
    const numbers = [...this.logs.keys()].sort((a, b) => a - b)
    let behind = false
    for (const number of numbers) {
      const log = this.logs.get(number)!
      const end = number === cap.visibleEnd.number
        ? cap.visibleEnd.offset
        : number > cap.visibleEnd.number ? log.shipped : (log.sealedLength ?? recordsEnd(log.file, log.shipped))
      if (log.shipped < end) {
        await this.putSegment(number, log, end, roundMs)
        if (log.shipped < end) { behind = true; break }
      }
      if (number < cap.logNumber && log.shipped >= end) {
        this.logs.delete(number)
        this.closedLogKeys.set(number, log.keys)
        // Off the event loop: the engine has most often deleted the log, and its last close frees its blocks.
        await closeAsync(log.file)
      }
    }
    return behind
  }

  /** One segment of `log` from its shipped offset: whole records, up to `end` and at most maxSegmentBytes (one record at least). */
  private async putSegment (number: number, log: HeldLog, end: number, roundMs: number): Promise<void> {
    const name = logName(number)
    let want = Math.min(end - log.shipped, this.maxSegmentBytes)
    let bytes = readAt(log.file, log.shipped, want, name)
    let walk = walkBatches(bytes, name, log.shipped)
    if (walk.end === 0) {
      // One record longer than the cap: that record alone.
      const length = recordLength(bytes, 0, Infinity)
      if (typeof length !== 'number') throw corruption(name, recordFaultText(length, log.shipped))
      want = HEADER_SIZE + length
      bytes = readAt(log.file, log.shipped, want, name)
      walk = walkBatches(bytes, name, log.shipped)
    }
    bytes = bytes.subarray(0, walk.end)
    const seg = { log: number, start: log.shipped, end: log.shipped + walk.end, first: walk.first, last: walk.last, crc: crc(bytes) >>> 0, ms: roundMs }
    const key = this.key(segmentKey(this.generation, seg))
    await this.request(key, () => this.store.put(key, bytes))
    log.shipped = seg.end
    log.lastSeq = seg.last
    log.keys.push(key)
    this.counters.segmentsUploaded++
    this.counters.bytesUploaded += bytes.length
    this.logBytesSincePoint += bytes.length
  }

  /** Everything up to `sequence` is restorable from the store (the writes of the round captured at roundMs). */
  private shipped (sequence: number, roundMs: number): void {
    this.counters.shippedSequence = Math.max(this.counters.shippedSequence, sequence)
    this.caughtUpMs = roundMs
  }

  /** Whether a round puts a point if the version changed: the first and the last round do; others by pointLogBytes and pointIntervalMs. */
  private pointDue (last: boolean, roundMs: number): boolean {
    if (last || this.lastPointVersion === undefined || this.pointLogBytes === 0) return true
    return this.logBytesSincePoint >= this.pointLogBytes || (this.pointIntervalMs > 0 && roundMs - this.lastPointMs >= this.pointIntervalMs)
  }

  private async putPoint (cap: Capture, roundMs: number): Promise<void> {
    const files: Array<{ level: number, meta: FileMeta }> = []
    cap.version.levels.forEach((level, n) => { for (const meta of level) files.push({ level: n, meta }) })
    const body = encodePoint({
      sequence: cap.sequence,
      ms: roundMs,
      logNumber: cap.logNumber,
      nextFileNumber: cap.nextFileNumber,
      logs: this.logLengths(cap),
      tables: files.map((f) => this.tables.get(f.meta.number)!),
      files,
      rangeTombstones: cap.version.rangeTombstones.slice()
    })
    const key = this.key(pointKey(this.generation, cap.sequence, roundMs))
    await this.request(key, () => this.store.put(key, body))
    this.lastPointVersion = cap.version
    this.lastPointMs = roundMs
    this.logBytesSincePoint = 0
    this.droppedAtPoint = this.counters.logsDropped
    this.points.push({ key, ms: roundMs, logNumber: cap.logNumber, tables: files.map((f) => f.meta.number) })
    this.counters.pointsUploaded++
    this.counters.bytesUploaded += body.length
  }

  /**
   * Retention (see the top of the file). Runs only while the lease is surely
   * this shipper's (with a quarter of leaseMs to spare), checked again before
   * each delete request.
   */
  private async retain (nowMs: number): Promise<void> {
    if (!this.lease.valid(this.leaseMs / 4)) return
    const cutoff = this.retainMs > 0 ? nowMs - this.retainMs : -Infinity
    await this.retainPointsOfThis(cutoff)
    if (this.points.length > 0) await this.retainOthers(nowMs, cutoff)
  }

  /** This generation's points beyond retainPoints or older than `cutoff` (the newest kept), and what only they needed. */
  private async retainPointsOfThis (cutoff: number): Promise<void> {
    const n = this.points.length
    let drop = 0
    while (drop < n - 1 && (n - drop > this.retainPoints || this.points[drop].ms < cutoff)) drop++
    if (drop === 0) return
    const dropped = this.points.splice(0, drop)
    const kept = new Set<number>()
    for (const p of this.points) for (const t of p.tables) kept.add(t)
    const keys: string[] = []
    const gone = new Map<number, PointTable>()
    for (const p of dropped) {
      keys.push(p.key)
      for (const t of p.tables) {
        const meta = this.tables.get(t)
        if (kept.has(t) || gone.has(t) || meta === undefined) continue
        gone.set(t, meta)
        this.tables.delete(t)
      }
    }
    // The tables only dropped points named: this generation's deleted; another's let go (its refs marker deleted, after the points).
    const stillNamed = new Set([...this.tables.values()].map((t) => t.key))
    const markers: string[] = []
    for (const meta of gone.values()) {
      if (meta.key === undefined) continue
      if (meta.key.startsWith(this.generation + '/')) keys.push(this.key(meta.key))
      else if (!stillNamed.has(meta.key) && this.refs.delete(meta.key)) markers.push(this.key(refKey(this.generation, meta.key)))
    }
    const oldestLog = this.points[0].logNumber
    for (const [log, logKeys] of this.closedLogKeys) {
      if (log < oldestLog) { keys.push(...logKeys); this.closedLogKeys.delete(log) }
    }
    await this.deleteKeys(keys.concat(markers))
    this.counters.pointsDeleted += dropped.length
  }

  /**
   * Other generations: beyond the newest retainGenerations - 1 that hold a
   * point, or whose newest object is older than `cutoff`, deleted whole but
   * for the tables that a kept generation's refs markers name (the
   * generation's own marker last: a half-deleted generation stays listed).
   * One that holds no point yet is deleted only once its newest object is
   * older than twice the lease and the retention interval (its writer gone).
   */
  private async retainOthers (nowMs: number, cutoff: number): Promise<void> {
    const root = this.prefix === '' ? '' : objectKey(this.prefix, '')
    const all = await this.request(root || '(root)', () => this.store.list(root))
    interface Gen { id: string, keys: string[], newestMs: number, points: number, marker: boolean, refs: string[] }
    const gens = new Map<string, Gen>()
    for (const { key } of all) {
      const rel = key.slice(root.length)
      const id = rel.split('/')[0]
      if (!isGenerationId(id)) continue
      let g = gens.get(id)
      if (g === undefined) gens.set(id, g = { id, keys: [], newestMs: generationStartMs(id), points: 0, marker: false, refs: [] })
      g.keys.push(key)
      const point = parsePointKey(key)
      if (point !== undefined) g.points++
      if (rel === `${id}/${GENERATION_FILE}`) g.marker = true
      const ref = parseRefKey(rel)
      if (ref !== undefined) g.refs.push(ref.table)
      const ms = point?.ms ?? parseSegmentKey(key)?.ms
      if (ms !== undefined && ms > g.newestMs) g.newestMs = ms
    }
    const others = [...gens.values()].filter((g) => g.id !== this.generation)
    const restorable = others.filter((g) => g.points > 0).sort((a, b) => b.newestMs - a.newestMs || (a.id < b.id ? 1 : -1))
    const keep = new Set(restorable.slice(0, Math.max(0, this.retainGenerations - 1)).filter((g) => g.newestMs >= cutoff).map((g) => g.id))
    const idleMs = 2 * Math.max(this.leaseMs, this.retentionIntervalMs)
    for (const g of others) if (g.points === 0 && g.marker && g.newestMs >= nowMs - idleMs) keep.add(g.id)
    // The tables kept generations name, this one's included.
    const named = new Set(this.refs)
    for (const g of gens.values()) if (g.id === this.generation || keep.has(g.id)) for (const t of g.refs) named.add(t)
    for (const g of others) {
      if (keep.has(g.id)) continue
      const doomed = g.keys.filter((k) => !named.has(k.slice(root.length)))
      const marker = doomed.filter((k) => k.endsWith('/' + GENERATION_FILE))
      const rest = doomed.filter((k) => !k.endsWith('/' + GENERATION_FILE))
      if (doomed.length === 0) continue
      await this.deleteKeys(rest.concat(marker))
      for (const k of rest) {
        const t = parseTableKey(k.slice(root.length))
        if (t !== undefined) for (const [id, rel] of this.reusable) if (rel === k.slice(root.length)) this.reusable.delete(id)
      }
      if (g.marker || g.points > 0) this.counters.generationsDeleted++
    }
  }

  private async deleteKeys (keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      // Nothing deleted once the lease may be another writer's.
      if (!this.lease.valid(this.leaseMs / 4)) throw levelError('LEVEL_LOCKED', `Retention stopped: the lease on ${this.store.description} may have lapsed (not renewed for ${this.leaseMs} ms)`)
      const chunk = keys.slice(i, i + 1000)
      await this.request(chunk[0], () => this.store.delete(chunk))
      this.counters.objectsDeleted += chunk.length
    }
  }
}

function checkOptions (s: { pointLogBytes: number, pointIntervalMs: number, intervalMs: number, maxSegmentBytes: number, retainMs: number, retentionIntervalMs: number, retryDelayMsMax: number, maxHeldLogBytes: number, retainPoints: number, retainGenerations: number, leaseMs: number }): void {
  const check = (name: string, v: number, min: number): void => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw levelError('LEVEL_INVALID_OPTION', `replicate(): ${name} must be a number >= ${min}, got ${String(v)}`)
  }
  check('intervalMs', s.intervalMs, 1)
  check('maxSegmentBytes', s.maxSegmentBytes, 64)
  check('retainMs', s.retainMs, 0)
  check('retentionIntervalMs', s.retentionIntervalMs, 1)
  check('retryDelayMsMax', s.retryDelayMsMax, 1)
  check('maxHeldLogBytes', s.maxHeldLogBytes, 0)
  check('leaseMs', s.leaseMs, 30)
  check('pointLogBytes', s.pointLogBytes, 0)
  check('pointIntervalMs', s.pointIntervalMs, 0)
  for (const [name, v] of [['retainPoints', s.retainPoints], ['retainGenerations', s.retainGenerations]] as const) {
    if (v !== Infinity && (!Number.isInteger(v) || v < 1)) throw levelError('LEVEL_INVALID_OPTION', `replicate(): ${name} must be an integer >= 1, got ${String(v)}`)
  }
}

/** Reads `length` bytes at `position`; LEVEL_CORRUPTION if the file is shorter. */
function readAt (file: RandomAccessFile, position: number, length: number, name: string): Buffer {
  const buf = Buffer.allocUnsafe(length)
  let done = 0
  while (done < length) {
    const n = file.read(buf, done, length - done, position + done)
    if (n === 0) throw corruption(name, `ends at ${position + done} bytes, before its records' end at ${position + length}`)
    done += n
  }
  return buf
}

/**
 * The whole records at the start of `bytes` (log bytes from file offset
 * `base`): where the last whole one ends (0: not even one; a record cut by the
 * end of `bytes` is left for the next segment), and the sequence numbers of the
 * first and last operations. Headers only: the CRCs are the restore's to check.
 */
function walkBatches (bytes: Buffer, name: string, base: number): { end: number, first: number, last: number } {
  let first = 0
  let last = 0
  const walk = walkRecords(bytes, (payload, at) => {
    if (payload.length < BATCH_HEADER_SIZE) throw corruption(name, `no log record at offset ${base + at}`)
    const seq = getFixed64(payload, 0)
    if (first === 0) first = seq
    last = seq + batchCount(payload) - 1
  }, false)
  if (walk.fault === 'bad-type') throw corruption(name, recordFaultText(walk.fault, base + walk.end))
  return { end: walk.end, first, last }
}

/** Where the valid records of a retired log end, from `from` (a record boundary): its length was not noted while it was sealed. */
function recordsEnd (file: RandomAccessFile, from: number): number {
  let pos = from
  for (let rec = readRecordFrom(file, pos); rec !== undefined && rec.payload.length >= BATCH_HEADER_SIZE; rec = readRecordFrom(file, pos)) pos = rec.next
  return pos
}
