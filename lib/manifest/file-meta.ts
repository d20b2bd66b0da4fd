// Metadata of one table file, as recorded in the manifest.
import type { InternalKey } from '../keys'

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
