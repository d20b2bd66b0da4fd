// Explicit snapshots: a sequence number that reads use instead of the latest,
// registered so that compaction keeps every version a snapshot can still see.
// (Iterators pin their version and memtables instead and need no registration.)
// A read-only open's snapshot (lib/follower.ts) pins them too: the writer's
// compactions do not know of it, so its sequence number alone would not do.
// PointsInTime below hands them out, with the unregistered points of reads
// that continue on a later turn.
import type { Version } from './manifest/version'
import type { MemTableSet } from './memtable/memtable-set'
import { sharedNextTurn, type TurnBudget } from './util/turn'
import type { EngineParts } from './engine-parts'

/** The version and memtables a snapshot reads, instead of the current ones. */
export interface PinnedView {
  version: Version
  memtables: MemTableSet
}

export class Snapshot {
  released = false
  constructor (readonly seq: number, readonly pinned?: PinnedView) {}
}

export class SnapshotList {
  private readonly counts = new Map<number, number>()

  acquire (seq: number): Snapshot {
    this.counts.set(seq, (this.counts.get(seq) ?? 0) + 1)
    return new Snapshot(seq)
  }

  release (s: Snapshot): void {
    if (s.released) return
    s.released = true
    const n = (this.counts.get(s.seq) ?? 1) - 1
    if (n > 0) this.counts.set(s.seq, n)
    else this.counts.delete(s.seq)
  }

  /** The oldest registered sequence number, or undefined if none. */
  oldest (): number | undefined {
    let min: number | undefined
    for (const seq of this.counts.keys()) if (min === undefined || seq < min) min = seq
    return min
  }

  get size (): number {
    let n = 0
    for (const c of this.counts.values()) n += c
    return n
  }
}

/** The state a read sees: its sequence number, version and memtables. */
export interface ReadView {
  seq: number
  version: Version
  memtables: MemTableSet
}

/**
 * The points in time reads are made at: snapshots (registered, or pinned on a
 * read-only open), and unregistered points for a read that continues on a
 * later turn.
 */
export class PointsInTime {
  private readonly list = new SnapshotList()

  /**
   * `sequence`: the newest visible sequence number. On a read-only open
   * (options.readOnly) a snapshot pins the version and memtables it reads (see
   * the top of this file).
   */
  constructor (private readonly parts: EngineParts, private readonly turn: TurnBudget, private readonly sequence: () => number) {}

  /** What a read at `snapshot` (default: now) sees. */
  view (snapshot?: Snapshot): ReadView {
    const { parts } = this
    return {
      seq: snapshot !== undefined ? snapshot.seq : this.sequence(),
      version: snapshot?.pinned?.version ?? parts.versions.current,
      memtables: snapshot?.pinned?.memtables ?? parts.memtables
    }
  }

  snapshot (): Snapshot {
    const { parts } = this
    if (parts.options.readOnly) {
      // The writer's compactions do not know of this snapshot: it pins what it reads.
      const version = parts.versions.current
      version.ref()
      return new Snapshot(this.sequence(), { version, memtables: parts.memtables.copy() })
    }
    return this.list.acquire(this.sequence())
  }

  /**
   * The current sequence number as an unregistered snapshot, for a read that
   * continues on a later turn: safe because compaction only drops versions
   * hidden at a sequence number no newer than this one. Read-only, it pins the
   * current version and memtables instead (the writer's compactions and the
   * next refresh know nothing of it). Give it back with releasePointInTime.
   */
  pointInTime (): Snapshot {
    if (this.parts.options.readOnly) return this.snapshot()
    return new Snapshot(this.sequence())
  }

  releasePointInTime (s: Snapshot): void {
    if (s.pinned !== undefined) this.release(s)
  }

  /**
   * Runs `read` at `snapshot`, or at the current sequence number: now, or,
   * when this turn's budget is used up, on the next turn at the point taken
   * now (a read sees the state as of its call, whenever it runs).
   */
  async readAtPoint<T> (snapshot: Snapshot | undefined, read: (at: Snapshot | undefined) => T): Promise<T> {
    if (!this.turn.exhausted()) return read(snapshot)
    const point = snapshot ?? this.pointInTime()
    try {
      await sharedNextTurn()
      return read(point)
    } finally {
      if (point !== snapshot) this.releasePointInTime(point)
    }
  }

  /** How many registered snapshots are held. */
  get size (): number {
    return this.list.size
  }

  release (s: Snapshot): void {
    if (s.pinned !== undefined) {
      if (!s.released) s.pinned.version.unref()
      s.released = true
      return
    }
    this.list.release(s)
    // A range tombstone this snapshot held back may now be compacted away.
    if (this.parts.versions.current.rangeTombstones.length > 0) this.parts.scheduler.schedule()
  }

  /** The oldest sequence number a reader may still read at: the oldest snapshot's, else the newest visible. */
  smallest (): number {
    return this.list.oldest() ?? this.sequence()
  }
}
