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
}
