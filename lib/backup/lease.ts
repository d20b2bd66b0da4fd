// The writers' lease on a backup prefix (lib/backup/layout.ts): one shipper
// at a time ships to a prefix. A second live writer fails with LEVEL_LOCKED
// before it puts anything; a writer that stopped renewing (its machine lost,
// its process killed) loses the lease after leaseMs, so that a writer started
// elsewhere takes over.
//
//   <prefix>/lease/<epoch>   JSON {"generation","leaseMs","renewals","renewedMs","released"}
//
// The lease is the object of the highest epoch. To take it, a writer lists
// the lease objects and reads the newest:
//   none, or released        it puts the next epoch
//   held                     it watches the object (every leaseMs / 10) for
//                            the holder's leaseMs, measured on its own clock:
//                            renewed meanwhile: LEVEL_LOCKED; released: it
//                            takes it; untouched for leaseMs: the holder is
//                            gone, it takes it. No clock is compared with
//                            another machine's: only durations are measured.
//   the next epoch appears   another writer took it first: LEVEL_LOCKED
// Putting the next epoch is the conditional put (ifAbsent) where the store
// has one: of two writers that put the same epoch, one fails there
// (LEVEL_OBJECT_EXISTS: LEVEL_LOCKED). Where it has none (s3rver, many
// S3-compatible services), the put is plain and the writer reads it back
// after a pause: two writers that put the same epoch within that pause may
// both believe they hold it, until the next renewal, which reads the object
// first and finds the other's generation (see renew).
//
// The holder renews every leaseMs / 3: it lists the epochs after its own
// (one there: it lost the lease, LEVEL_LOCKED, and stops), reads its object
// where the store has no conditional put (someone else's generation in it:
// lost), and puts it again with renewals + 1. It counts the lease as its own
// until leaseMs after the start of its last successful renewal, less a
// margin (validUntilMs): the retention deletes nothing outside that window,
// so a writer that lost the lease without knowing it (paused, cut off from
// the store) deletes nothing another writer needs. Its own generation's
// objects it may still put: no one else writes them. On close it puts the
// object once more with released: true, and the next writer need not wait.
import { levelError } from '../errors'
import { isStoreAnswer, objectKey, type ObjectStore } from './object-store'

export const LEASE_DIR = 'lease/'

const EPOCH_RE = /lease\/(\d{16})$/

interface LeaseRecord {
  generation: string
  leaseMs: number
  renewals: number
  renewedMs: number
  released: boolean
}

export interface LeaseOptions {
  leaseMs: number
  /** Runs a store request with the shipper's retries and request count. */
  request: <T>(what: string, op: () => Promise<T>) => Promise<T>
  /** Where the store has no conditional put: how long after putting an epoch it is read back (ms). Default min(1000, leaseMs / 10). */
  settleMs?: number
}

export class Lease {
  private epoch = 0
  private renewals = 0
  private lost = false
  /** Until when the lease is this writer's for sure (ms, its own clock). */
  validUntilMs = 0

  constructor (private readonly store: ObjectStore, private readonly prefix: string, private readonly generation: string, private readonly options: LeaseOptions) {}

  get held (): boolean {
    return !this.lost && this.epoch > 0
  }

  /** Whether the lease is this writer's now, with `marginMs` to spare. */
  valid (marginMs = 0): boolean {
    return this.held && Date.now() + marginMs < this.validUntilMs
  }

  private key (epoch: number): string {
    return objectKey(this.prefix, LEASE_DIR + String(epoch).padStart(16, '0'))
  }

  private async epochs (after?: number): Promise<number[]> {
    const dir = objectKey(this.prefix, LEASE_DIR)
    const listed = await this.options.request(dir, () => this.store.list(dir, after === undefined ? {} : { startAfter: this.key(after) }))
    const out: number[] = []
    for (const { key } of listed) {
      const m = EPOCH_RE.exec(key)
      if (m !== null) out.push(Number(m[1]))
    }
    return out.sort((a, b) => a - b)
  }

  private async read (epoch: number): Promise<LeaseRecord | undefined> {
    const key = this.key(epoch)
    try {
      const body = await this.options.request(key, () => this.store.get(key))
      const r = JSON.parse(body.toString('utf8')) as LeaseRecord
      return typeof r.generation === 'string' && typeof r.leaseMs === 'number' ? r : undefined
    } catch (err) {
      if (isStoreAnswer(err, 'LEVEL_NOT_FOUND') || err instanceof SyntaxError) return undefined
      throw err
    }
  }

  private locked (message: string): Error {
    return levelError('LEVEL_LOCKED', `Another writer ships to the prefix '${this.prefix}' of ${this.store.description}: ${message}`)
  }

  private body (released = false): Buffer {
    const r: LeaseRecord = { generation: this.generation, leaseMs: this.options.leaseMs, renewals: this.renewals, renewedMs: Date.now(), released }
    return Buffer.from(JSON.stringify(r) + '\n')
  }

  /** Takes the lease (see the top of the file), or fails with LEVEL_LOCKED. */
  async acquire (): Promise<void> {
    const newest = (await this.epochs()).pop()
    if (newest !== undefined) {
      const first = await this.read(newest)
      if (first !== undefined && !first.released) await this.waitOut(newest, first)
    }
    await this.take((newest ?? 0) + 1)
  }

  /** Watches the holder's object for its leaseMs: returns if it is released or not renewed meanwhile; LEVEL_LOCKED if it is renewed or a newer epoch appears. */
  private async waitOut (epoch: number, seen: LeaseRecord): Promise<void> {
    const started = Date.now()
    const pollMs = Math.max(5, Math.min(1000, seen.leaseMs / 10))
    for (;;) {
      if (Date.now() - started >= seen.leaseMs) return
      await new Promise((resolve) => setTimeout(resolve, pollMs))
      if ((await this.epochs(epoch)).length > 0) throw this.locked('another writer took the lease first')
      const now = await this.read(epoch)
      if (now === undefined || now.released) return
      if (now.renewals !== seen.renewals || now.generation !== seen.generation) {
        throw this.locked(`generation ${now.generation} holds its lease and renews it (every ${Math.round(now.leaseMs / 3)} ms); a lease not renewed for ${now.leaseMs} ms is taken over`)
      }
    }
  }

  private async take (epoch: number): Promise<void> {
    const started = Date.now()
    const key = this.key(epoch)
    const conditional = this.store.conditionalPut
    try {
      const body = this.body()
      await this.options.request(key, () => this.store.put(key, body, { ifAbsent: conditional }))
    } catch (err) {
      if (isStoreAnswer(err, 'LEVEL_OBJECT_EXISTS')) throw this.locked('another writer took the lease at the same moment')
      throw err
    }
    if (!conditional) {
      // No conditional put: read it back after a pause; another writer's put of the same epoch may have replaced it.
      await new Promise((resolve) => setTimeout(resolve, this.options.settleMs ?? Math.min(1000, this.options.leaseMs / 10)))
      const r = await this.read(epoch)
      if (r?.generation !== this.generation) throw this.locked(`generation ${r?.generation ?? '?'} took the lease at the same moment`)
      if ((await this.epochs(epoch)).length > 0) throw this.locked('another writer took the lease first')
    }
    this.epoch = epoch
    this.validUntilMs = started + this.options.leaseMs
    // The older epochs are history: deleted (a failure leaves them, harmless).
    const older = (await this.epochs().catch(() => [])).filter((e) => e < epoch).map((e) => this.key(e))
    if (older.length > 0) await this.options.request(older[0], () => this.store.delete(older)).catch(() => {})
  }

  /** Renews the lease; LEVEL_LOCKED (and it stays lost) if another writer has taken it. */
  async renew (): Promise<void> {
    if (this.lost) throw this.locked('this writer lost the lease')
    const started = Date.now()
    const newer = await this.epochs(this.epoch)
    if (newer.length > 0) return this.lose(`epoch ${newer[newer.length - 1]} was taken after this writer's ${this.epoch}`)
    if (!this.store.conditionalPut) {
      const r = await this.read(this.epoch)
      if (r !== undefined && r.generation !== this.generation) return this.lose(`generation ${r.generation} holds the lease`)
    }
    this.renewals++
    const key = this.key(this.epoch)
    const body = this.body()
    await this.options.request(key, () => this.store.put(key, body))
    this.validUntilMs = started + this.options.leaseMs
  }

  private lose (why: string): never {
    this.lost = true
    this.validUntilMs = 0
    throw this.locked(`this writer lost its lease: ${why}`)
  }

  /** Lets the lease go (a clean stop): the next writer takes it at once. */
  async release (): Promise<void> {
    if (!this.held) return
    const newer = await this.epochs(this.epoch)
    if (newer.length > 0) { this.lost = true; return }
    const key = this.key(this.epoch)
    const body = this.body(true)
    await this.options.request(key, () => this.store.put(key, body))
    this.lost = true
    this.validUntilMs = 0
  }
}
