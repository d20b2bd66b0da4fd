// Range tombstones: one record that deletes every key in [start, end) written
// before it (RocksDB's DeleteRange). `clear()` without a limit or snapshot
// writes one instead of a point tombstone per key, so clearing a range costs the
// same whatever its size and never reads it.
//
// Semantics. A tombstone (start, end, seq) hides the version (k, s) of a key k
// from a reader at sequence number S when start <= k < end and s < seq <= S.
// (end undefined: to the end of the key space.) It hides versions anywhere in
// the tree, whatever level they are in: the check is made against the version a
// read found, not per level. A version written after the tombstone (s > seq) is
// not hidden.
//
// Where they live (see lib/wal/batch.ts and lib/manifest/version-edit.ts for the
// bytes):
//   - in the write-ahead log, as a batch operation;
//   - in the memtable that took the write, beside its skiplist;
//   - once that memtable is flushed, in the manifest: the flush's version edit
//     adds them to the version, atomically with the flushed table.
// Tables never hold them. Compactions drop the versions they hide (when every
// snapshot sees the tombstone), and each table records a `floor` (lib/manifest/
// file-meta.ts): no tombstone with seq <= floor hides anything in it. A version's
// tombstone is dropped as soon as every table overlapping its range has a floor
// >= its seq: nothing older is left for it to hide.
//
// Lookup. Overlapping tombstones are cut into non-overlapping fragments, each
// with the sequence numbers of the tombstones covering it, newest first; a read
// finds its fragment by binary search.
import { compareBytes } from './util/coding'

export interface RangeTombstone {
  /** First key deleted. */
  start: Buffer
  /** First key not deleted; undefined: to the end of the key space. */
  end: Buffer | undefined
  seq: number
}

const NO_SEQS: number[] = []

/** An immutable index over a set of range tombstones. */
export class RangeTombstoneIndex {
  /** Fragment i covers [bounds[i], bounds[i + 1]) (the last one: [bounds[i], end of key space)). */
  private readonly bounds: Buffer[]
  /** Sequence numbers covering fragment i, descending; empty for a gap. */
  private readonly seqs: number[][]
  readonly size: number

  private constructor (bounds: Buffer[], seqs: number[][], size: number) {
    this.bounds = bounds
    this.seqs = seqs
    this.size = size
  }

  static readonly EMPTY = new RangeTombstoneIndex([], [], 0)

  static build (list: readonly RangeTombstone[]): RangeTombstoneIndex {
    const live = list.filter((t) => t.end === undefined || compareBytes(t.start, t.end) < 0)
    if (live.length === 0) return RangeTombstoneIndex.EMPTY
    const points: Buffer[] = []
    for (const t of live) {
      points.push(t.start)
      if (t.end !== undefined) points.push(t.end)
    }
    points.sort(compareBytes)
    const bounds: Buffer[] = []
    for (const p of points) if (bounds.length === 0 || compareBytes(bounds[bounds.length - 1], p) !== 0) bounds.push(p)
    // Sweep: tombstones sorted by start join the active set at their start and
    // leave it at their end.
    const byStart = live.slice().sort((a, b) => compareBytes(a.start, b.start))
    const seqs: number[][] = []
    let active: RangeTombstone[] = []
    let next = 0
    for (const b of bounds) {
      active = active.filter((t) => t.end === undefined || compareBytes(t.end, b) > 0)
      while (next < byStart.length && compareBytes(byStart[next].start, b) <= 0) active.push(byStart[next++])
      seqs.push(active.length === 0 ? NO_SEQS : active.map((t) => t.seq).sort((x, y) => y - x))
    }
    return new RangeTombstoneIndex(bounds, seqs, live.length)
  }

  /** Index of the fragment holding `key`, or -1 if it is before every fragment. */
  fragmentOf (key: Uint8Array): number {
    const bounds = this.bounds
    let lo = 0
    let hi = bounds.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareBytes(bounds[mid], key) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo - 1
  }

  /** The newest tombstone covering `key` that a reader at `readSeq` sees (its seq), or 0. */
  coveringSeq (key: Uint8Array, readSeq: number): number {
    if (this.size === 0) return 0
    const i = this.fragmentOf(key)
    if (i < 0) return 0
    const seqs = this.seqs[i]
    for (let j = 0; j < seqs.length; j++) if (seqs[j] <= readSeq) return seqs[j]
    return 0
  }

  /** True if the version (key, seq) is hidden from a reader at `readSeq`. */
  covers (key: Uint8Array, seq: number, readSeq: number): boolean {
    return this.coveringSeq(key, readSeq) > seq
  }
}

/**
 * The tombstones a read consults: the memtables' and the version's. Each read
 * takes one (cheap: a few references) so that its view stays fixed while writes
 * and flushes go on.
 */
export class RangeTombstoneView {
  constructor (private readonly indexes: readonly RangeTombstoneIndex[]) {}

  static of (indexes: RangeTombstoneIndex[]): RangeTombstoneView | undefined {
    const nonEmpty = indexes.filter((x) => x.size > 0)
    return nonEmpty.length === 0 ? undefined : new RangeTombstoneView(nonEmpty)
  }

  covers (key: Uint8Array, seq: number, readSeq: number): boolean {
    for (const x of this.indexes) if (x.coveringSeq(key, readSeq) > seq) return true
    return false
  }
}

/**
 * The tombstone bounds of a clear() range: [start, end) from gt/gte/lt/lte
 * (gte and lte take precedence, as on iterators). The key just after `k` in
 * bytewise order is k followed by a zero byte.
 */
export function clearBounds (range: { gt?: Buffer, gte?: Buffer, lt?: Buffer, lte?: Buffer }): { start: Buffer, end: Buffer | undefined } {
  const after = (k: Buffer): Buffer => Buffer.concat([k, ZERO])
  const start = range.gte !== undefined ? range.gte : range.gt !== undefined ? after(range.gt) : EMPTY
  const end = range.lte !== undefined ? after(range.lte) : range.lt
  return { start, end }
}

const ZERO = Buffer.from([0])
const EMPTY = Buffer.alloc(0)
