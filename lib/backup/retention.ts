// A shipper's retention (lib/backup/shipper.ts), every retentionIntervalMs and
// only while the lease is surely held:
// this generation's points beyond the newest retainPoints or older than
// retainMs, the newest always kept, with the segments and tables only they
// needed; other generations beyond the newest retainGenerations (this one
// counted) or whose newest object is older than retainMs, whole, except the
// tables a kept generation's refs markers name.
import { levelError } from '../errors'
import { objectKey, type ObjectStore } from './object-store'
import type { Lease } from './lease'
import type { ShipperSettings } from './shipper-options'
import { GENERATION_FILE, generationStartMs, isGenerationId, parsePointKey, parseRefKey, parseSegmentKey, parseTableKey, refKey, type PointTable } from './layout'

/** A point this shipper put. */
export interface ShippedPoint {
  key: string
  ms: number
  logNumber: number
  tables: number[]
}

/** The shipper's records that the retention reads and trims (shared with it, changed in place). */
export interface RetentionState {
  /** This generation's points, oldest first. */
  points: ShippedPoint[]
  /** The tables of this generation's points, by number. */
  tables: Map<number, PointTable>
  /** Refs markers put (relative keys of the tables named). */
  refs: Set<string>
  /** Table objects of older generations, by content, relative to the prefix. */
  reusable: Map<string, string>
  /** Segments of logs already closed, by log number. */
  closedLogKeys: Map<number, string[]>
}

export interface RetentionCounters {
  objectsDeleted: number
  pointsDeleted: number
  generationsDeleted: number
}

export class Retention {
  constructor (
    private readonly store: ObjectStore,
    private readonly generation: string,
    private readonly o: ShipperSettings,
    private readonly lease: Lease,
    private readonly state: RetentionState,
    private readonly counters: RetentionCounters,
    private readonly request: <T>(what: string, op: () => Promise<T>) => Promise<T>
  ) {}

  private key (rest: string): string {
    return objectKey(this.o.prefix, rest)
  }

  /**
   * Runs the retention (see the top of the file). Runs only while the lease is surely
   * this shipper's (with a quarter of leaseMs to spare), checked again before
   * each delete request.
   */
  async run (nowMs: number): Promise<void> {
    if (!this.lease.valid(this.o.leaseMs / 4)) return
    const cutoff = this.o.retainMs > 0 ? nowMs - this.o.retainMs : -Infinity
    await this.retainPointsOfThis(cutoff)
    if (this.state.points.length > 0) await this.retainOthers(nowMs, cutoff)
  }

  /** This generation's points beyond retainPoints or older than `cutoff` (the newest kept), and what only they needed. */
  private async retainPointsOfThis (cutoff: number): Promise<void> {
    const n = this.state.points.length
    let drop = 0
    while (drop < n - 1 && (n - drop > this.o.retainPoints || this.state.points[drop].ms < cutoff)) drop++
    if (drop === 0) return
    const dropped = this.state.points.splice(0, drop)
    const kept = new Set<number>()
    for (const p of this.state.points) for (const t of p.tables) kept.add(t)
    const keys: string[] = []
    const gone = new Map<number, PointTable>()
    for (const p of dropped) {
      keys.push(p.key)
      for (const t of p.tables) {
        const meta = this.state.tables.get(t)
        if (kept.has(t) || gone.has(t) || meta === undefined) continue
        gone.set(t, meta)
        this.state.tables.delete(t)
      }
    }
    // The tables only dropped points named: this generation's deleted; another's let go (its refs marker deleted, after the points).
    const stillNamed = new Set([...this.state.tables.values()].map((t) => t.key))
    const markers: string[] = []
    for (const meta of gone.values()) {
      if (meta.key === undefined) continue
      if (meta.key.startsWith(this.generation + '/')) keys.push(this.key(meta.key))
      else if (!stillNamed.has(meta.key) && this.state.refs.delete(meta.key)) markers.push(this.key(refKey(this.generation, meta.key)))
    }
    const oldestLog = this.state.points[0].logNumber
    for (const [log, logKeys] of this.state.closedLogKeys) {
      if (log < oldestLog) { keys.push(...logKeys); this.state.closedLogKeys.delete(log) }
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
    const root = this.o.prefix === '' ? '' : objectKey(this.o.prefix, '')
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
    const keep = new Set(restorable.slice(0, Math.max(0, this.o.retainGenerations - 1)).filter((g) => g.newestMs >= cutoff).map((g) => g.id))
    const idleMs = 2 * Math.max(this.o.leaseMs, this.o.retentionIntervalMs)
    for (const g of others) if (g.points === 0 && g.marker && g.newestMs >= nowMs - idleMs) keep.add(g.id)
    // The tables kept generations name, this one's included.
    const named = new Set(this.state.refs)
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
        if (t !== undefined) for (const [id, rel] of this.state.reusable) if (rel === k.slice(root.length)) this.state.reusable.delete(id)
      }
      if (g.marker || g.points > 0) this.counters.generationsDeleted++
    }
  }

  private async deleteKeys (keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      // Nothing deleted once the lease may be another writer's.
      if (!this.lease.valid(this.o.leaseMs / 4)) throw levelError('LEVEL_LOCKED', `Retention stopped: the lease on ${this.store.description} may have lapsed (not renewed for ${this.o.leaseMs} ms)`)
      const chunk = keys.slice(i, i + 1000)
      await this.request(chunk[0], () => this.store.delete(chunk))
      this.counters.objectsDeleted += chunk.length
    }
  }
}
