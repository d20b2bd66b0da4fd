// Following a backup in an object store (lib/backup/layout.ts) from another
// machine: a replica (adapters/replica-level.ts) restored from the store
// (lib/backup/restore.ts) applies the batches of the segments shipped after
// its sequence number, in order, as they appear:
//
//   poll (every intervalMs)   list the generation's segments after the last
//                             one taken (list's startAfter), and, for each in
//                             order: skip it if it ends at or below the
//                             replica's sequence number; else fetch it, check
//                             its size, its CRC-32 and its records' CRCs, and
//                             apply its batches after the replica's sequence
//                             number, each continuing it (batch by batch: a
//                             reader sees a prefix of the writer's writes, never
//                             a part of a batch, never a step back)
//   generations               every generationCheckMs: the newest generation
//                             newer than the current one that continues the
//                             replica's history is followed from the segment
//                             that holds the next sequence number on (the
//                             writer restarted). It continues it if one of its
//                             segments holds the next sequence number (or ends
//                             just before it), or a point is at the replica's
//                             sequence number and no segment after it, and
//                             every batch it holds that
//                             the replica applied recently (the CRC-32s of the
//                             last RECENT_BATCHES are kept) is the same batch.
//                             If none does and the newest generation holds a
//                             point, the store's history no longer continues
//                             the replica's (a restore to an earlier point that
//                             ships again, another database on the prefix):
//                             the follower stops and calls diverged(), and the
//                             replica rebuilds itself from the store
//                             (adapters/replica-level.ts). A generation with no
//                             point yet is waited for.
//
// What the check cannot see: a generation whose batches start exactly after
// the replica's sequence number, with no batch in common, is taken as a
// continuation (it is one whenever the writer restarted; it is not if a
// restored copy wrote exactly as many batches before it started shipping).
// Batches older than the last RECENT_BATCHES are not compared; a replica
// restored at its open takes the CRC-32s of the batches it holds from the
// segments of its generation (seed), one opened again on its directory has
// none until it applies some.
//
// A hole (a segment the writer never put, or one deleted) stops the
// following at the last batch before it, reported; damage is reported as
// LEVEL_CORRUPTION naming the object, and nothing of that segment is applied.
import { corruption } from '../errors'
import { recordFaultText, walkRecords } from '../wal/log-format'
import { checkBatch } from '../wal/batch'
import { getFixed32, getFixed64 } from '../util/coding'
import { crc } from '../util/crc'
import { backgroundTimer } from '../util/turn'
import { objectKey, withRetries, type ObjectStore, type RetryPolicy } from './object-store'
import { parseSegmentKey, type SegmentName } from './layout'
import { listGenerations } from './restore'

/** The batches whose CRC-32 the follower keeps, to tell a generation that continues its history from one that does not. */
const RECENT_BATCHES = 4096

/** What the follower needs of the replica's engine. */
export interface FollowTarget {
  /** The replica's last sequence number. */
  sequence: () => number
  /** Applies one batch (an encoded batch, its sequence number the next one): resolves once it is visible. */
  apply: (batch: Buffer) => Promise<void>
  /** The store's history does not continue the replica's; `generation` is the newest. Called once; the follower stops polling. */
  diverged?: (generation: string, why: string) => void
}

export interface FollowOptions {
  prefix?: string
  /** How often the store is polled (ms). Default 1000. */
  intervalMs?: number
  /** How often newer generations are looked for (ms; it lists the whole prefix). Default 10 x intervalMs. */
  generationCheckMs?: number
  /** The generation to follow first (the one the replica was restored from). */
  generation?: string
  retries?: RetryPolicy
}

export interface FollowStats {
  generation: string | undefined
  /** Times the replica rebuilt itself from the store because the store's history did not continue its own (ReplicaLevel). */
  rebuilds?: number
  /** The replica's sequence number. */
  sequence: number
  /** The newest sequence number seen in the store. */
  storeSequence: number
  lagSequences: number
  /** When the writer took the newest batch applied (ms since the epoch): the replica holds the writer's writes up to about then. */
  appliedCapturedMs: number
  /** How far behind the writer's newest shipped round the replica is (ms): 0 when it has applied everything listed. */
  lagMs: number
  segmentsApplied: number
  batchesApplied: number
  bytesFetched: number
  requests: number
  polls: number
  lastError: string | undefined
}

type Listed = SegmentName & { key: string, size: number }

export class StoreFollower {
  private readonly prefix: string
  /** The CRC-32 of each recently applied batch, by its first sequence number (insertion order: oldest first). */
  private readonly recent = new Map<number, number>()
  private diverged = false
  private seeded = false
  private readonly intervalMs: number
  private readonly generationCheckMs: number
  private generation: string | undefined
  private afterKey: string | undefined
  private lastGenerationCheck = 0
  private stopping = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private wake: (() => void) | undefined
  private running: Promise<void> | undefined
  private readonly counters = {
    storeSequence: 0,
    appliedCapturedMs: 0,
    newestListedMs: 0,
    segmentsApplied: 0,
    batchesApplied: 0,
    bytesFetched: 0,
    requests: 0,
    polls: 0,
    lastError: undefined as string | undefined
  }

  constructor (private readonly store: ObjectStore, private readonly target: FollowTarget, private readonly options: FollowOptions = {}) {
    this.prefix = options.prefix ?? ''
    this.intervalMs = options.intervalMs ?? 1000
    this.generationCheckMs = options.generationCheckMs ?? 10 * this.intervalMs
    this.generation = options.generation
  }

  /** Polls every intervalMs until stop(). */
  start (): void {
    const loop = async (): Promise<void> => {
      while (!this.stopping) {
        await this.poll()
        if (this.stopping) return
        await new Promise<void>((resolve) => {
          this.wake = resolve
          this.timer = backgroundTimer(resolve, this.intervalMs)
        })
      }
    }
    this.running = loop()
  }

  async stop (): Promise<void> {
    this.stopping = true
    clearTimeout(this.timer)
    this.wake?.()
    await this.running
  }

  private remember (first: number, c: number): void {
    this.recent.set(first, c)
    if (this.recent.size > RECENT_BATCHES) this.recent.delete(this.recent.keys().next().value as number)
  }

  stats (): FollowStats {
    const c = this.counters
    const sequence = this.target.sequence()
    const behind = c.storeSequence > sequence
    return {
      generation: this.generation,
      sequence,
      storeSequence: Math.max(c.storeSequence, sequence),
      lagSequences: Math.max(0, c.storeSequence - sequence),
      appliedCapturedMs: c.appliedCapturedMs,
      lagMs: behind ? Math.max(0, c.newestListedMs - c.appliedCapturedMs) : 0,
      segmentsApplied: c.segmentsApplied,
      batchesApplied: c.batchesApplied,
      bytesFetched: c.bytesFetched,
      requests: c.requests,
      polls: c.polls,
      lastError: c.lastError
    }
  }

  private async request<T> (what: string, op: () => Promise<T>): Promise<T> {
    return await withRetries(this.store, what, async () => {
      this.counters.requests++
      return await op()
    }, this.options.retries)
  }

  /** One poll (see the top of the file); failures are kept in lastError, never thrown. */
  async poll (): Promise<void> {
    if (this.diverged) return
    this.counters.polls++
    try {
      if (!this.seeded) await this.seed()
      const now = Date.now()
      let progressed = this.generation !== undefined && await this.follow()
      // Not on every idle poll: it lists the whole prefix.
      if (this.generation === undefined || now - this.lastGenerationCheck >= this.generationCheckMs) {
        this.lastGenerationCheck = now
        if (await this.switchGeneration()) progressed = await this.follow()
      }
      if (progressed || this.counters.lastError?.startsWith('Object store') === true) this.counters.lastError = undefined
    } catch (err) {
      this.counters.lastError = (err as Error).message
    }
  }

  /**
   * Moves to the newest generation newer than the current one that continues
   * the replica's history (see the top of the file); true if it did. If none
   * does and the newest holds a point: diverged.
   */
  private async switchGeneration (): Promise<boolean> {
    this.counters.requests++
    const gens = await listGenerations(this.store, this.prefix, this.options.retries)
    const expected = this.target.sequence() + 1
    // Newest first, down to the current one: the newest that continues (an older one may, when the newest
    // starts after writes that only it shipped, e.g. a writer restarted twice).
    let why = ''
    for (const g of gens) {
      if (g.id === this.generation) break
      // A point at the replica's sequence number with no segment past it: a writer restarted with nothing new in its logs.
      const atPoint = g.points.some((p) => p.sequence === expected - 1) && !g.segments.some((s) => s.last >= expected - 1)
      if (!atPoint && !g.segments.some((s) => s.first <= expected && s.last >= expected - 1)) {
        why ||= `the newest generation ${g.id} does not hold sequence number ${expected} next to the replica's ${expected - 1}`
        continue
      }
      const differs = await this.firstDifference(g.segments, expected - 1)
      if (differs !== undefined) {
        why ||= `generation ${g.id} holds another batch ${differs} than the one the replica applied`
        continue
      }
      this.generation = g.id
      this.afterKey = undefined
      return true
    }
    const newest = gens[0]
    if (newest === undefined || newest.id === this.generation) return false
    if (newest.points.length > 0 && this.target.diverged !== undefined) {
      this.diverged = true
      this.counters.lastError = `The store's history does not continue the replica's (${why}): rebuilding from generation ${newest.id}`
      this.target.diverged(newest.id, why)
      return false
    }
    this.counters.lastError = `No newer generation in the store continues the replica's sequence number ${expected - 1} (${why}): the replica stays on ${this.generation ?? 'none'} until the newest holds a point`
    return false
  }

  /**
   * The CRC-32s of the batches the replica holds from the generation it
   * starts on (restored from it): those of its segments at or below the
   * replica's sequence number, the last RECENT_BATCHES. Without a generation
   * (a replica opened again on its directory) there is nothing to take them from.
   */
  private async seed (): Promise<void> {
    if (this.generation !== undefined) {
      const upTo = this.target.sequence()
      const root = objectKey(this.prefix, `${this.generation}/logs/`)
      const listed = await this.request(root, () => this.store.list(root))
      const segments: Listed[] = []
      for (const o of listed) {
        const s = parseSegmentKey(o.key)
        if (s !== undefined && s.first <= upTo && s.last > upTo - RECENT_BATCHES) segments.push({ ...s, key: o.key, size: o.size })
      }
      segments.sort((a, b) => a.log - b.log || a.start - b.start || b.end - a.end)
      for (const s of segments) {
        for (const payload of await this.fetchBatches(s)) {
          const first = getFixed64(payload, 0)
          if (first <= upTo && !this.recent.has(first)) this.remember(first, crc(payload) >>> 0)
        }
      }
    }
    this.seeded = true
  }

  /**
   * The first batch (its first sequence number) at or below `upTo` that a
   * generation's segments hold and that differs from the one the replica
   * applied (by CRC-32), among those the replica remembers; undefined if none.
   */
  private async firstDifference (segments: Listed[], upTo: number): Promise<number | undefined> {
    if (this.recent.size === 0) return undefined
    const oldest = this.recent.keys().next().value as number
    for (const s of segments) {
      if (s.last < oldest || s.first > upTo) continue
      for (const payload of await this.fetchBatches(s)) {
        const first = getFixed64(payload, 0)
        const mine = this.recent.get(first)
        if (first <= upTo && mine !== undefined && mine !== (crc(payload) >>> 0)) return first
      }
    }
    return undefined
  }

  /** Applies the segments listed after the last one taken; true if any batch was applied. */
  private async follow (): Promise<boolean> {
    const root = objectKey(this.prefix, `${this.generation!}/logs/`)
    const listed = await this.request(root, () => this.store.list(root, { startAfter: this.afterKey }))
    const segments: Listed[] = []
    for (const o of listed) {
      const s = parseSegmentKey(o.key)
      if (s !== undefined) segments.push({ ...s, key: o.key, size: o.size })
    }
    segments.sort((a, b) => a.log - b.log || a.start - b.start || b.end - a.end)
    let applied = false
    for (const s of segments) {
      this.counters.storeSequence = Math.max(this.counters.storeSequence, s.last)
      this.counters.newestListedMs = Math.max(this.counters.newestListedMs, s.ms)
    }
    for (const s of segments) {
      const expected = this.target.sequence() + 1
      if (s.last < expected) { this.afterKey = s.key; continue }
      if (s.first > expected) {
        this.counters.lastError = `The store's segments continue at sequence number ${s.first}, after a hole from ${expected} (${s.key}): the replica stays at ${expected - 1}; restore a new one from the store`
        return applied
      }
      if (await this.applySegment(s)) applied = true
      this.afterKey = s.key
    }
    return applied
  }

  /** A segment's batches, checked (size, CRC-32, each record's CRC and encoding) before any is returned. */
  private async fetchBatches (s: Listed): Promise<Buffer[]> {
    const body = await this.request(s.key, () => this.store.get(s.key))
    this.counters.bytesFetched += body.length
    if (body.length !== s.end - s.start) throw corruption(s.key, `${body.length} bytes, its name says ${s.end - s.start}`)
    if ((crc(body) >>> 0) !== s.crc) throw corruption(s.key, 'checksum mismatch')
    // Every record checked before any is applied.
    const batches: Buffer[] = []
    const walk = walkRecords(body, (payload) => {
      checkBatch(payload, s.key)
      batches.push(payload)
    })
    if (walk.fault !== undefined) throw corruption(s.key, recordFaultText(walk.fault, walk.end))
    return batches
  }

  private async applySegment (s: Listed): Promise<boolean> {
    const batches = await this.fetchBatches(s)
    let applied = false
    for (const payload of batches) {
      const first = getFixed64(payload, 0)
      const last = first + getFixed32(payload, 8) - 1
      const next = this.target.sequence() + 1
      if (last < next) continue
      if (first !== next) throw corruption(s.key, `batch ${first} does not continue the replica's sequence number ${next - 1}`)
      await this.target.apply(Buffer.from(payload))
      this.remember(first, crc(payload) >>> 0)
      this.counters.batchesApplied++
      applied = true
    }
    this.counters.segmentsApplied++
    this.counters.appliedCapturedMs = Math.max(this.counters.appliedCapturedMs, s.ms)
    return applied
  }
}
