// Readahead for a table iterator that walks the table's blocks in order (a
// scan, or a compaction's input): RocksDB's automatic readahead. Each data
// block is one positional read when read alone; once the iterator has moved
// onto READAHEAD_AFTER_BLOCKS blocks in a row, the next block that is not in
// the block cache is read with the bytes after it, a window of
// READAHEAD_MIN_BYTES that doubles with each window up to READAHEAD_MAX_BYTES,
// and the blocks inside the window are then taken from it without a system
// call. A compressed block (format 3) is decompressed straight from the
// window; the caller copies an uncompressed one out, since the window's memory
// is reused.
//
// Filling the block cache (LevelDB's fill_cache). By default the blocks of a
// long run, after its first UNCACHED_AFTER_BLOCKS consecutive blocks (a scan),
// are not put in the block cache: they are read into this iterator's own
// memory, reused block after block, so a scan allocates nothing it keeps and
// does not push out the blocks that point reads and short range reads use;
// the first blocks of a run (a seek and the few blocks after it) are cached. `fillCache: true`
// caches every block read, `fillCache: false` none. A block already in the
// cache is used from there either way.
//
// Memory: one buffer of at most READAHEAD_MAX_BYTES per iterator during a run
// of consecutive blocks, and one of a block's decompressed size for a
// compressed block it does not cache; a jump to another block (a seek) drops
// a window larger than READAHEAD_MIN_BYTES, close() all. Checksums are checked per block as before, on the
// bytes taken from the window.
import { ioError } from '../errors'
import type { RandomAccessFile } from '../fs/fs'
import { type BlockHandle, BLOCK_TRAILER_SIZE } from './format'

/** Consecutive blocks an iterator visits before its misses read ahead. */
export const READAHEAD_AFTER_BLOCKS = 2
export const READAHEAD_MIN_BYTES = 16 * 1024
export const READAHEAD_MAX_BYTES = 128 * 1024
/** By default, the blocks of a run after this many consecutive blocks are not cached. */
export const UNCACHED_AFTER_BLOCKS = 8

export class Readahead {
  /** The window: file bytes [start, start + length) in buf[0, length). */
  private buf: Buffer | null = null
  private start = 0
  private length = 0
  private windowBytes = READAHEAD_MIN_BYTES
  private lastBlock = -2
  private run = 0
  /** Decompressed contents of the block last read without caching it. */
  private own: Buffer | null = null
  /** Positional reads this readahead made (tests). */
  reads = 0

  /** `fill`: the iterator's fillCache option (undefined: the default, see the file comment). */
  constructor (private readonly fill?: boolean) {}

  /**
   * The iterator moves onto block `i` (cached or not): a block right after the
   * last one extends the run, any other block ends it and drops the window.
   */
  visit (i: number): void {
    if (i === this.lastBlock + 1) this.run++
    else this.reset()
    this.lastBlock = i
  }

  /** Whether the block the iterator moved onto last (visit) goes into the block cache, if read now. */
  caches (): boolean {
    return this.fill ?? this.run < UNCACHED_AFTER_BLOCKS
  }

  /**
   * The stored bytes and trailer of the block at `h` (h.size + BLOCK_TRAILER_SIZE
   * bytes), as a view of the window, reading a new window if the run is long
   * enough; undefined: read the block alone. The view is valid until the next call.
   */
  stored (file: RandomAccessFile, name: string, h: BlockHandle): Buffer | undefined {
    const total = h.size + BLOCK_TRAILER_SIZE
    if (this.buf !== null && h.offset >= this.start && h.offset + total <= this.start + this.length) {
      const at = h.offset - this.start
      return this.buf.subarray(at, at + total)
    }
    if (this.run < READAHEAD_AFTER_BLOCKS) return undefined
    const n = this.read(file, name, h.offset, Math.max(total, this.windowBytes))
    this.windowBytes = Math.min(this.windowBytes * 2, READAHEAD_MAX_BYTES)
    // A short read (the end of the file): the caller reads the block alone and reports it.
    return n >= total ? this.buf!.subarray(0, total) : undefined
  }

  /**
   * Reads the stored bytes and trailer of the block at `h` alone into the
   * window's memory (a block that is not cached and that stored() did not
   * give); a view valid until the next call (short at the end of the file).
   */
  alone (file: RandomAccessFile, name: string, h: BlockHandle): Buffer {
    const n = this.read(file, name, h.offset, h.size + BLOCK_TRAILER_SIZE)
    return this.buf!.subarray(0, n)
  }

  /** Memory for the decompressed contents of a block not cached: valid until the next call. */
  readonly takeOwn = (size: number): Buffer => {
    if (this.own === null || this.own.length < size) this.own = Buffer.allocUnsafeSlow(Math.max(size, 4096))
    return this.own
  }

  /** Reads `size` bytes at `offset` into the window's memory; returns the bytes read. */
  private read (file: RandomAccessFile, name: string, offset: number, size: number): number {
    if (this.buf === null || this.buf.length < size) this.buf = Buffer.allocUnsafeSlow(size)
    let n: number
    try {
      n = file.read(this.buf, 0, size, offset)
    } catch (err) {
      this.length = 0
      throw ioError(`Read of ${name} failed at offset ${offset}`, err, name)
    }
    this.reads++
    this.start = offset
    this.length = n
    return n
  }

  /** Drops the window and the run (keeping the memory of a window of the smallest size for the next read). */
  reset (): void {
    if (this.buf !== null && this.buf.length > READAHEAD_MIN_BYTES) this.buf = null
    this.length = 0
    this.run = 0
    this.windowBytes = READAHEAD_MIN_BYTES
  }

  /** Drops all memory (the iterator closes). */
  release (): void {
    this.reset()
    this.buf = null
    this.own = null
  }
}
