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
//                             newer than the current one that holds the next
//                             sequence number (the writer restarted) is
//                             followed from that segment on; if none does
//                             (their history starts after it, or another
//                             database ships to the prefix), the replica stays
//                             where it is and reports it (lastError): restore
//                             a new replica then
//
// A hole (a segment the writer never put, or one deleted) stops the
// following at the last batch before it, reported; damage is reported as
// LEVEL_CORRUPTION naming the object, and nothing of that segment is applied.
import { corruption } from '../errors'
import { HEADER_SIZE, RECORD_FULL, recordChecksum } from '../wal/log-format'
import { checkBatch } from '../wal/batch'
import { getFixed32, getFixed64 } from '../util/coding'
import { crc } from '../util/crc'
import { objectKey, withRetries, type ObjectStore, type RetryPolicy } from './object-store'
import { parseSegmentKey, type SegmentName } from './layout'
import { listGenerations } from './restore'

/** What the follower needs of the replica's engine. */
export interface FollowTarget {
  /** The replica's last sequence number. */
  sequence: () => number
  /** Applies one batch (an encoded batch, its sequence number the next one): resolves once it is visible. */
  apply: (batch: Buffer) => Promise<void>
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
  private readonly intervalMs: number
  private readonly generationCheckMs: number
  private generation: string | undefined
  private afterKey: string | undefined
  private lastGenerationCheck = 0
  private stopping = false
  private timer: NodeJS.Timeout | undefined
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
          this.timer = setTimeout(resolve, this.intervalMs)
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
    this.counters.polls++
    try {
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
   * the replica's history (a segment of it holds the next sequence number, or
   * ends just before it); true if it did.
   */
  private async switchGeneration (): Promise<boolean> {
    this.counters.requests++
    const gens = await listGenerations(this.store, this.prefix, this.options.retries)
    const expected = this.target.sequence() + 1
    // Newest first, down to the current one: the newest that continues (an older one may, when the newest
    // starts after writes that only it shipped, e.g. a writer restarted twice).
    for (const g of gens) {
      if (g.id === this.generation) return false
      if (!g.segments.some((s) => s.first <= expected && s.last >= expected - 1)) continue
      this.generation = g.id
      this.afterKey = undefined
      return true
    }
    if (gens.length > 0) {
      this.counters.lastError = `No newer generation in the store continues the replica's sequence number ${expected - 1} (the newest is ${gens[0].id}): the replica stays on ${this.generation ?? 'none'}; restore a new one to follow it`
    }
    return false
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

  private async applySegment (s: Listed): Promise<boolean> {
    const body = await this.request(s.key, () => this.store.get(s.key))
    this.counters.bytesFetched += body.length
    if (body.length !== s.end - s.start) throw corruption(s.key, `${body.length} bytes, its name says ${s.end - s.start}`)
    if ((crc(body) >>> 0) !== s.crc) throw corruption(s.key, 'checksum mismatch')
    // Every record checked before any is applied.
    const batches: Buffer[] = []
    for (let pos = 0; pos < body.length;) {
      const length = getFixed32(body, pos + 4)
      if (pos + HEADER_SIZE > body.length || body[pos + 8] !== RECORD_FULL || pos + HEADER_SIZE + length > body.length) throw corruption(s.key, `bad record at byte ${pos}`)
      const payload = body.subarray(pos + HEADER_SIZE, pos + HEADER_SIZE + length)
      if (recordChecksum(RECORD_FULL, payload) !== getFixed32(body, pos)) throw corruption(s.key, `record checksum mismatch at byte ${pos}`)
      checkBatch(payload, s.key)
      batches.push(payload)
      pos += HEADER_SIZE + length
    }
    let applied = false
    for (const payload of batches) {
      const first = getFixed64(payload, 0)
      const last = first + getFixed32(payload, 8) - 1
      const next = this.target.sequence() + 1
      if (last < next) continue
      if (first !== next) throw corruption(s.key, `batch ${first} does not continue the replica's sequence number ${next - 1}`)
      await this.target.apply(Buffer.from(payload))
      this.counters.batchesApplied++
      applied = true
    }
    this.counters.segmentsApplied++
    this.counters.appliedCapturedMs = Math.max(this.counters.appliedCapturedMs, s.ms)
    return applied
  }
}
