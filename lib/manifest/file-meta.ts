// Metadata of one table file, as recorded in the manifest, and the key-range
// helpers that compare tables with keys.
import type { InternalKey } from '../keys'
import { compareBytes } from '../util/coding'

export interface FileMeta {
  /** File number: the table lives in `<number>.sst` (6 digits, zero padded). */
  number: number
  /** File size in bytes. */
  size: number
  /** Smallest and largest internal keys in the table (inclusive). */
  smallest: InternalKey
  largest: InternalKey
  /** Number of entries (values and tombstones). */
  entries: number
  /**
   * No range tombstone (lib/range-tombstones.ts) with seq <= floor hides an entry
   * of this table: the larger of the table's smallest entry seq and the newest
   * tombstone the flush or compaction that wrote it applied. Undefined (tables
   * from a format 1 manifest): 0.
   */
  floor?: number
}

// Key ranges of tables: the one place that compares a table's bounds with keys.
// A table covers [smallest.userKey, largest.userKey], both inclusive.

/** True if the table's keys intersect [lo, hi], both inclusive (undefined: unbounded on that side). */
export function overlapsRange (f: FileMeta, lo: Uint8Array | undefined, hi: Uint8Array | undefined): boolean {
  if (hi !== undefined && compareBytes(f.smallest.userKey, hi) > 0) return false
  return lo === undefined || compareBytes(f.largest.userKey, lo) >= 0
}

/** True if the table's keys intersect [start, end): end exclusive (undefined: to the end of the key space). */
export function overlapsHalfOpen (f: FileMeta, start: Uint8Array, end: Uint8Array | undefined): boolean {
  if (end !== undefined && compareBytes(f.smallest.userKey, end) >= 0) return false
  return compareBytes(f.largest.userKey, start) >= 0
}

/** True if `userKey` lies within the table's key range. */
export function containsKey (f: FileMeta, userKey: Uint8Array): boolean {
  return compareBytes(userKey, f.smallest.userKey) >= 0 && compareBytes(userKey, f.largest.userKey) <= 0
}

/** The smallest and largest user keys of `files` (REQUIRES: at least one). */
export function keyRange (files: readonly FileMeta[]): { smallest: Buffer, largest: Buffer } {
  let smallest = files[0].smallest.userKey
  let largest = files[0].largest.userKey
  for (const f of files) {
    if (compareBytes(f.smallest.userKey, smallest) < 0) smallest = f.smallest.userKey
    if (compareBytes(f.largest.userKey, largest) > 0) largest = f.largest.userKey
  }
  return { smallest, largest }
}
