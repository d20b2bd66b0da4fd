// Explicit snapshots: a sequence number that reads use instead of the latest,
// registered so that compaction keeps every version a snapshot can still see.
// (Iterators pin their version and memtables instead and need no registration.)
// A read-only open's snapshot (lib/follower.ts) pins them too: the writer's
// compactions do not know of it, so its sequence number alone would not do.
import type { Version } from './manifest/version'
import type { MemTableSet } from './memtable/memtable-set'

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
