// LevelIterator: one sorted run read as a single internal iterator: a level
// from L1 on, or one level-0 table (a run of its own). The run's tables are
// sorted by smallest key and do not overlap, so the run is just their
// concatenation; this iterator walks it while keeping at most one table open.
//
// Tables are opened lazily: a seek binary-searches the file list by key bounds
// (no I/O) and opens only the one table that can hold the target. When a table
// is exhausted the iterator closes it and opens the neighbour in the direction
// of travel. A seek that lands in the table already open reuses it, which keeps
// the repositioning done by MergingIterator on direction changes cheap.
//
// Invariant after every positioning call: either `table` is null (not valid) or
// `table` is valid. Empty tables (which a well-formed level does not contain)
// are skipped rather than trusted.
import { compareInternal } from '../keys'
import { assert, checks } from '../invariants'
import type { FileMeta } from '../manifest/file-meta'
import type { InternalIterator } from './internal-iterator'

export class LevelIterator implements InternalIterator {
  /** Index in `files` of the open table, or -1. */
  private index = -1
  private table: InternalIterator | null = null

  /**
   * `files` are sorted by smallest key and do not overlap (the caller's list is
   * not copied and must not change while this iterator is in use). `openTable`
   * returns a fresh, unpositioned iterator over one table; this iterator closes it.
   */
  constructor (
    private readonly files: readonly FileMeta[],
    private readonly openTable: (meta: FileMeta) => InternalIterator
  ) {}

  valid (): boolean {
    return this.table !== null
  }

  seekToFirst (): void {
    if (this.openFile(0)) this.table!.seekToFirst()
    this.skipForward()
  }

  seekToLast (): void {
    if (this.openFile(this.files.length - 1)) this.table!.seekToLast()
    this.skipBackward()
  }

  seek (userKey: Uint8Array, seq: number): void {
    // The first file whose largest key is >= the target is the only one that can
    // hold the first entry >= target; every earlier file ends before the target.
    const files = this.files
    let lo = 0
    let hi = files.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const largest = files[mid].largest
      if (compareInternal(largest.userKey, largest.seq, userKey, seq) < 0) lo = mid + 1
      else hi = mid
    }
    if (this.openFile(lo)) this.table!.seek(userKey, seq)
    this.skipForward()
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    // Symmetrically: the last file whose smallest key is <= the target.
    const files = this.files
    let lo = 0
    let hi = files.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const smallest = files[mid].smallest
      if (compareInternal(smallest.userKey, smallest.seq, userKey, seq) <= 0) lo = mid + 1
      else hi = mid
    }
    if (this.openFile(lo - 1)) this.table!.seekForPrev(userKey, seq)
    this.skipBackward()
  }

  next (): void {
    if (checks.paranoid) assert(this.table !== null, 'LevelIterator.next() while not valid')
    this.table!.next()
    this.skipForward()
  }

  prev (): void {
    if (checks.paranoid) assert(this.table !== null, 'LevelIterator.prev() while not valid')
    this.table!.prev()
    this.skipBackward()
  }

  seq (): number {
    return this.table!.seq()
  }

  kind (): number {
    return this.table!.kind()
  }

  keySource (): Buffer {
    return this.table!.keySource()
  }

  keyStart (): number {
    return this.table!.keyStart()
  }

  keyEnd (): number {
    return this.table!.keyEnd()
  }

  valueSource (): Buffer {
    return this.table!.valueSource()
  }

  valueStart (): number {
    return this.table!.valueStart()
  }

  valueEnd (): number {
    return this.table!.valueEnd()
  }

  close (): void {
    this.closeTable()
  }

  /**
   * Makes file `i` the open table (reusing it if it already is); closes the open
   * table and returns false if `i` is out of range.
   */
  private openFile (i: number): boolean {
    if (i === this.index && this.table !== null) return true
    this.closeTable()
    if (i < 0 || i >= this.files.length) return false
    this.table = this.openTable(this.files[i])
    this.index = i
    return true
  }

  private closeTable (): void {
    const table = this.table
    this.table = null
    this.index = -1
    if (table !== null) table.close()
  }

  /** While the open table is exhausted, move on to the start of the next file. */
  private skipForward (): void {
    while (this.table !== null && !this.table.valid()) {
      if (this.openFile(this.index + 1)) this.table.seekToFirst()
    }
  }

  /** While the open table is exhausted, move back to the end of the previous file. */
  private skipBackward (): void {
    while (this.table !== null && !this.table.valid()) {
      if (this.openFile(this.index - 1)) this.table.seekToLast()
    }
  }
}
