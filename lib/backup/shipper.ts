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
//                        put yet in this generation, put or named
//                        (lib/backup/shipped-tables.ts)
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
// Logs are held open from round to round (lib/backup/held-logs.ts) until
// they are shipped to their end and retired. A retired log let go unshipped
// (maxHeldLogBytes) is a hole in the restorable sequence numbers: restore stops
// at it (lib/backup/restore.ts); its writes are in the tables of the first
// point whose capture's logNumber is above it, which the first round whose
// capture is past the hole puts, due or not. Until that point is in the store,
// shippedSequence does not move: a log let go after a point's capture (while
// that point is on its way, say) is a hole after that point too, whatever its
// upload. stats().logsDropped counts them.
//
// The lease (lib/backup/lease.ts): taken before the generation's first
// object (a second live writer fails there with LEVEL_LOCKED), renewed every
// leaseMs / 3 on its own timer (a long round does not delay it), released by
// stop(). A shipper that finds the lease taken by another writer stops
// shipping (lastError says so, LEVEL_LOCKED); the database goes on.
//
// Retention, by age and count of points and generations: lib/backup/retention.ts.
//
// Failures: an object store error fails the round after the store's retries
// (withRetries); what the round put stays put (a table once put is not put
// again; a log's bytes continue where its last segment ended) and the next
// round starts after a backoff that doubles up to retryDelayMsMax. The
// database keeps working meanwhile; the lag grows and stats() reports it and
// the last error. Nothing the database acknowledged depends on shipping.
//
// Options and their defaults: lib/backup/shipper-options.ts.
//
// Memory: TABLE_UPLOADS tables or one segment (maxSegmentBytes) at a time, plus
// the names of the objects the retention may delete.
import { closeAsync, type FileSystem } from '../fs/fs'
import type { Version } from '../manifest/version'
import type { FileMeta } from '../manifest/file-meta'
import type { LogPosition, SealedLog } from '../wal/log-manager'
import { crc } from '../util/crc'
import { backgroundTimer, nextTurn } from '../util/turn'
import { objectKey, withRetries, type ObjectStore } from './object-store'
import { resolveOptions, type ReplicateOptions, type ReplicationStats, type ShipperSettings } from './shipper-options'
import { Lease } from './lease'
import { HeldLogs, readSegment, recordsEnd, type HeldLog } from './held-logs'
import { Retention, type ShippedPoint } from './retention'
import type { TableContent } from './table-content'
import { ShippedTables } from './shipped-tables'
import {
  encodePoint, GENERATION_FILE, LAYOUT_VERSION, newGenerationId, pointKey, segmentKey
} from './layout'

export type { ReplicateOptions, ReplicationStats } from './shipper-options'

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

export class Shipper {
  readonly generation: string
  private readonly store: ObjectStore
  private readonly source: ShipperSource
  /** The options with their defaults. */
  private readonly o: ShipperSettings
  private readonly lease: Lease
  private readonly retention: Retention
  /** The lease was lost: no more rounds. */
  private halted = false
  private renewTimer: ReturnType<typeof setTimeout> | undefined
  private renewWake: (() => void) | undefined
  private renewing: Promise<void> | undefined

  private readonly tables: ShippedTables
  private readonly held: HeldLogs
  private readonly points: ShippedPoint[] = []
  private lastPointVersion: Version | undefined
  /** When the last point was put (its round's ms), and the bytes of log put since. */
  private lastPointMs = 0
  private logBytesSincePoint = 0
  /** The logNumber of the last point put: a restore from it replays the logs from there on. */
  private pointLogNumber: number | undefined
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
    this.o = resolveOptions(options)
    this.generation = newGenerationId(Date.now(), globalThis.crypto.getRandomValues(new Uint8Array(8)))
    const request = async <T>(what: string, op: () => Promise<T>): Promise<T> => await this.request(what, op)
    this.tables = new ShippedTables(store, source, this.generation, this.o.prefix, this.counters, request)
    this.held = new HeldLogs(source, this.o.maxHeldLogBytes, this.counters)
    this.lease = new Lease(store, this.o.prefix, this.generation, { leaseMs: this.o.leaseMs, request })
    this.retention = new Retention(store, this.generation, this.o, this.lease,
      { points: this.points, tables: this.tables.byNumber, refs: this.tables.refs, reusable: this.tables.reusable, closedLogKeys: this.held.closedKeys }, this.counters, request)
  }

  /** Whether the retention may run: by age or by count. */
  private get retaining (): boolean {
    return this.o.retainMs > 0 || this.o.retainPoints < Infinity || this.o.retainGenerations < Infinity
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
      await this.tables.listReusable()
    } catch (err) {
      await this.lease.release().catch(() => {})
      throw err
    }
    this.lastRetentionMs = Date.now()
    this.loop = this.run()
    this.renewing = this.renewLoop()
  }

  /** Renews the lease every leaseMs / 3 until stop(); a lost lease halts the rounds. */
  private async renewLoop (): Promise<void> {
    while (!this.stopping && !this.halted) {
      await new Promise<void>((resolve) => {
        this.renewWake = resolve
        this.renewTimer = backgroundTimer(resolve, this.o.leaseMs / 3)
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
      this.held.closeAll()
    }
  }

  stats (): ReplicationStats {
    const sequence = this.source.sequence()
    const c = this.counters
    const behind = sequence > c.shippedSequence
    return {
      store: this.store.description,
      prefix: this.o.prefix,
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
    if (!this.finished) this.held.retired(number)
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
        if (!last && this.retaining && began - this.lastRetentionMs >= this.o.retentionIntervalMs) {
          this.lastRetentionMs = began
          await this.retention.run(began)
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
        ? Math.min(this.o.retryDelayMsMax, this.o.intervalMs * 2 ** Math.min(this.failures, 20))
        : behind ? 0 : this.o.intervalMs - (Date.now() - began)
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
    return objectKey(this.o.prefix, rest)
  }

  private async request<T> (what: string, op: () => Promise<T>): Promise<T> {
    return await withRetries(this.store, what, async () => {
      this.counters.requests++
      return await op()
    }, this.o.retries)
  }

  /** One round (see the top of the file). Returns true if it stopped at its size cap, behind the database. */
  private async round (last: boolean): Promise<boolean> {
    this.counters.rounds++
    const cap = this.source.capture()
    const roundMs = Date.now()
    try {
      this.held.openFrom(cap)
      // The logs first: the recovery point waits for them, not for the tables.
      const behind = await this.putLogs(cap, roundMs)
      if (behind) return true
      this.counters.lastLogsMs = Date.now() - roundMs
      this.counters.maxLogsMs = Math.max(this.counters.maxLogsMs, this.counters.lastLogsMs)
      if (!this.hole()) this.shipped(cap.sequence, roundMs)
      // The writes after a hole are restorable only from a point past it: put as soon as a capture is past it.
      const pastHole = this.hole() && (this.held.newestDropped === undefined || cap.logNumber > this.held.newestDropped)
      if (pastHole || (cap.version !== this.lastPointVersion && this.pointDue(last, roundMs))) {
        await this.tables.put(cap.version)
        await this.putPoint(cap, roundMs)
        // Checked again: a log let go while the point was on its way may be one a restore from it replays.
        if (!this.hole()) this.shipped(cap.sequence, roundMs)
      }
      return false
    } finally {
      cap.version.unref()
    }
  }

  /** Ships every held log to where its visible records end; closes those retired and done. Returns true if a log is left behind its end (size cap). */
  private async putLogs (cap: Capture, roundMs: number): Promise<boolean> {
    const numbers = [...this.held.open.keys()].sort((a, b) => a - b)
    let behind = false
    for (const number of numbers) {
      const log = this.held.open.get(number)
      // Let go while an earlier log's segment was on its way (a hole, see hole()).
      if (log === undefined) continue
      const end = number === cap.visibleEnd.number
        ? cap.visibleEnd.offset
        : number > cap.visibleEnd.number ? log.shipped : (log.sealedLength ?? recordsEnd(log.file, log.shipped))
      if (log.shipped < end) {
        await this.putSegment(number, log, end, roundMs)
        if (log.shipped < end) { behind = true; break }
      }
      if (number < cap.logNumber && log.shipped >= end) {
        this.held.letGo(number, log)
        // Off the event loop: the engine has most often deleted the log, and its last close frees its blocks.
        await closeAsync(log.file)
      }
    }
    return behind
  }

  /** One segment of `log` from its shipped offset: whole records, up to `end` and at most maxSegmentBytes (one record at least). */
  private async putSegment (number: number, log: HeldLog, end: number, roundMs: number): Promise<void> {
    const { bytes, first, last } = readSegment(number, log, end, this.o.maxSegmentBytes)
    const seg = { log: number, start: log.shipped, end: log.shipped + bytes.length, first, last, crc: crc(bytes) >>> 0, ms: roundMs }
    const key = this.key(segmentKey(this.generation, seg))
    await this.request(key, () => this.store.put(key, bytes))
    log.shipped = seg.end
    log.lastSeq = seg.last
    log.keys.push(key)
    this.counters.segmentsUploaded++
    this.counters.bytesUploaded += bytes.length
    this.logBytesSincePoint += bytes.length
  }

  /**
   * Whether a restore from the last point put would stop before the logs'
   * end: no point yet, or a log let go unshipped at or above its logNumber.
   */
  private hole (): boolean {
    const dropped = this.held.newestDropped
    return this.pointLogNumber === undefined || (dropped !== undefined && dropped >= this.pointLogNumber)
  }

  /** Everything up to `sequence` is restorable from the store (the writes of the round captured at roundMs). */
  private shipped (sequence: number, roundMs: number): void {
    this.counters.shippedSequence = Math.max(this.counters.shippedSequence, sequence)
    this.caughtUpMs = roundMs
  }

  /** Whether a round puts a point if the version changed: the first and the last round do; others by pointLogBytes and pointIntervalMs. */
  private pointDue (last: boolean, roundMs: number): boolean {
    if (last || this.lastPointVersion === undefined || this.o.pointLogBytes === 0) return true
    return this.logBytesSincePoint >= this.o.pointLogBytes || (this.o.pointIntervalMs > 0 && roundMs - this.lastPointMs >= this.o.pointIntervalMs)
  }

  private async putPoint (cap: Capture, roundMs: number): Promise<void> {
    const files: Array<{ level: number, meta: FileMeta }> = []
    cap.version.levels.forEach((level, n) => { for (const meta of level) files.push({ level: n, meta }) })
    const body = encodePoint({
      sequence: cap.sequence,
      ms: roundMs,
      logNumber: cap.logNumber,
      nextFileNumber: cap.nextFileNumber,
      logs: this.held.lengths(cap),
      tables: files.map((f) => this.tables.byNumber.get(f.meta.number)!),
      files,
      rangeTombstones: cap.version.rangeTombstones.slice()
    })
    const key = this.key(pointKey(this.generation, cap.sequence, roundMs))
    await this.request(key, () => this.store.put(key, body))
    this.lastPointVersion = cap.version
    this.lastPointMs = roundMs
    this.logBytesSincePoint = 0
    this.pointLogNumber = cap.logNumber
    this.points.push({ key, ms: roundMs, logNumber: cap.logNumber, tables: files.map((f) => f.meta.number) })
    this.counters.pointsUploaded++
    this.counters.bytesUploaded += body.length
  }
}
