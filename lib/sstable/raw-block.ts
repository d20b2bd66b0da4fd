// A data block as the block cache holds it: the raw contents (layout in
// block-builder.ts), with its framing (the restart array) validated and the
// entries left encoded, charged at its raw size. Point lookups search a raw
// block in place, as LevelDB does (seekRawBlock, block-reader.ts): a binary
// search over the restart points, then a scan of at most one restart interval,
// validating every entry they read. Iterators decode the blocks they visit into
// columns (block-columns.ts).
import { corruption } from '../errors'
import { getFixed32 } from '../util/coding'
import { MAX_DECODED_BYTES } from './block-columns'
import { FORMAT_VERSION, supportedVersion } from './format'

/**
 * Memory per cached raw block beyond its contents: the RawBlock, the contents
 * view and its ArrayBuffer, the 5 trailer bytes read with the block and the
 * block cache's entry (measured by the sstable test "raw blocks: the cache
 * charge matches live memory"), plus the off-heap bookkeeping of the ArrayBuffer.
 */
const RAW_BLOCK_OVERHEAD = 384

export class RawBlock {
  /** Approximate memory held (bytes), for the block cache. */
  readonly charge: number
  /**
   * Its memory is never recycled by the block cache: set once views of the
   * contents may outlive every reader (the block was decoded into a
   * DecodedBlock, whose views stay valid forever), or when the memory is not
   * the cache's (a block an iterator read without caching it: readahead.ts).
   */
  pinned = false
  /**
   * Iterators positioned on this block (BlockCache.pin / release). The block
   * cache recycles the contents' memory only once the block is out of the cache
   * and no iterator is on it: point lookups copy what they return.
   */
  pins = 0
  /** In the block cache (set and cleared by it). */
  cached = false

  /** @internal Use parseRawBlock. */
  constructor (
    readonly contents: Buffer,
    /** Offset of the restart array: entries lie in [0, limit). */
    readonly limit: number,
    readonly numRestarts: number,
    /** Entry layout: the table format version. */
    readonly version: number
  ) {
    this.charge = contents.buffer.byteLength + RAW_BLOCK_OVERHEAD
  }
}

/** Throws unless `version` is a table format version whose block entries this code reads. */
export function checkBlockVersion (name: string, version: number): void {
  if (!supportedVersion(version)) throw corruption(name, `unsupported table format version ${version}`)
}

/** Checks a block's size and restart count; returns the end of its entries (the restart array's offset). */
export function entriesLimit (name: string, contents: Buffer): number {
  const size = contents.length
  if (size < 4) throw corruption(name, 'block too short for its restart count')
  if (size > MAX_DECODED_BYTES) throw corruption(name, `block of ${size} bytes is too large`)
  const numRestarts = getFixed32(contents, size - 4)
  // The restart array must fit: 4 bytes each plus the count.
  if (numRestarts > (size - 4) / 4) throw corruption(name, `block restart count ${numRestarts} exceeds block size ${size}`)
  return size - 4 - numRestarts * 4
}

/**
 * Checks the framing of block `contents` of table `name` (restart count and
 * offsets: increasing, inside the entries, the first at 0) without decoding the
 * entries; lookups validate the entries they read. Throws corruption on damage.
 */
export function parseRawBlock (name: string, contents: Buffer, version: number = FORMAT_VERSION): RawBlock {
  checkBlockVersion(name, version)
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4
  if (numRestarts === 0) {
    if (limit !== 0) throw corruption(name, 'first block entry is not a restart point')
  } else {
    if (getFixed32(contents, limit) !== 0) throw corruption(name, 'first block entry is not a restart point')
    let prev = 0
    for (let r = 1; r < numRestarts; r++) {
      const off = getFixed32(contents, limit + 4 * r)
      if (off <= prev || off >= limit) throw corruption(name, 'block restart array does not match its entries')
      prev = off
    }
  }
  return new RawBlock(contents, limit, numRestarts, version)
}

/** What seekRawBlock found (reused by every call: read it before the next one). */
export const rawSeekOut = { kind: 0, seq: 0, valueStart: 0, valueEnd: 0 }
