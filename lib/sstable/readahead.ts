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
// Memory: one buffer of at most READAHEAD_MAX_BYTES per iterator during a run
// of consecutive blocks; a jump to another block (a seek) or close() drops it.
// Checksums are checked per block as before, on the bytes taken from the window.
import { ioError } from '../errors'
import type { RandomAccessFile } from '../fs/fs'
import { type BlockHandle, BLOCK_TRAILER_SIZE } from './format'

/** Consecutive blocks an iterator visits before its misses read ahead. */
export const READAHEAD_AFTER_BLOCKS = 2
export const READAHEAD_MIN_BYTES = 16 * 1024
export const READAHEAD_MAX_BYTES = 128 * 1024

export class Readahead {
  /** The window: file bytes [start, start + length) in buf[0, length). */
  private buf: Buffer | null = null
  private start = 0
  private length = 0
  private windowBytes = READAHEAD_MIN_BYTES
  private lastBlock = -2
  private run = 0
  /** Positional reads this readahead made (tests). */
  reads = 0

  /**
   * The iterator moves onto block `i` (cached or not): a block right after the
   * last one extends the run, any other block ends it and drops the window.
   */
  visit (i: number): void {
    if (i === this.lastBlock + 1) this.run++
    else this.reset()
    this.lastBlock = i
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
    const size = Math.max(total, this.windowBytes)
    if (this.buf === null || this.buf.length < size) this.buf = Buffer.allocUnsafeSlow(size)
    let n: number
    try {
      n = file.read(this.buf, 0, size, h.offset)
    } catch (err) {
      throw ioError(`Read of ${name} failed at offset ${h.offset}`, err, name)
    }
    this.reads++
    this.start = h.offset
    this.length = n
    this.windowBytes = Math.min(this.windowBytes * 2, READAHEAD_MAX_BYTES)
    // A short read (the end of the file): the caller reads the block alone and reports it.
    return n >= total ? this.buf.subarray(0, total) : undefined
  }

  /** Drops the window and the run. */
  reset (): void {
    this.buf = null
    this.length = 0
    this.run = 0
    this.windowBytes = READAHEAD_MIN_BYTES
  }
}
