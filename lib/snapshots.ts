// Explicit snapshots: a sequence number that reads use instead of the latest,
// registered so that compaction keeps every version a snapshot can still see.
// (Iterators pin their version and memtables instead and need no registration.)

export class Snapshot {
  released = false
  constructor (readonly seq: number) {}
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
