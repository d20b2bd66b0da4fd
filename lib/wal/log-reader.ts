// Streaming reader of log files (lib/wal/log-format.ts): the write-ahead log at
// recovery and the manifest at open. Files are read in CHUNK-sized positional
// reads, so a multi-megabyte log never has to sit in memory whole.
//
// Point-in-time recovery semantics:
// - `next()` returns the valid records in file order (one payload per call) and
//   stops for good at the first record that is incomplete (header or payload
//   runs past the end of the file), has a reserved type, or fails its checksum.
//   Nothing after that point is ever returned, even if it is intact: the log is
//   a history, and replaying writes that come after a hole would produce a state
//   that never existed.
// - Once `next()` has returned undefined, `tail` says why the valid prefix ended:
//     clean    the prefix is the whole file.
//     torn     the damage runs to the end of the file: no valid record starts at
//              any later byte. This is what an interrupted last write looks like
//              (a length pointing past EOF, a zero-filled or garbage tail).
//     corrupt  a valid record starts at some later byte offset: bytes in the
//              middle of the log were damaged, and records were lost with them.
//   The reader only reports; the caller decides (drop a torn tail quietly, refuse
//   or report a corrupt log). For a corrupt log whose damaged stretch is one
//   record that a single flipped bit explains, `tail.bitFlip` says where
//   (lib/wal/bit-flip.ts): a crash cannot leave that.
// - `skipDamage()` moves past a corrupt stretch to the valid record after it,
//   for callers that salvage (repair, walRecovery 'skip-damaged'); `next()`
//   then goes on from there.
// - The search for a later valid record runs only after damage, byte by byte.
//   Candidates are rejected cheaply first: a reserved type byte, or a length past
//   EOF. A candidate longer than CHUNK must also be "chained": followed by the end
//   of the file, by less than a header, or by a byte that could be the next
//   record's type. A genuine record after mid-log damage always is (unless the
//   next record is damaged too); random garbage passes only 1 time in 256, which
//   keeps the checksum work on a garbage tail from growing with the cube of its
//   size. Checksum work is capped at SCAN_BUDGET bytes; if the cap is hit the
//   state is 'corrupt' with validRecordAfter false: unable to rule out lost
//   records, the reader takes the side that does not let the caller silently
//   drop data. (A torn record whose payload happens to contain a well-formed
//   record can likewise be reported as 'corrupt'; again the loud direction.)
// - Damaged bytes never throw. I/O errors do, as LEVEL_IO_ERROR naming the file.
// - The file's size is taken when the reader is constructed; bytes appended
//   later are not read.
import type { FileSystem, RandomAccessFile } from '../fs/fs'
import { ioError } from '../errors'
import { getFixed32 } from '../util/coding'
import { crc, maskCrc } from '../util/crc'
import { HEADER_SIZE, RECORD_FULL, recordIntact, recordLength } from './log-format'
import type { LogRecord } from './log-format'
import { assert } from '../invariants'
import { findBitFlip, MAX_SEARCH } from './bit-flip'

const CHUNK = 64 * 1024
const SCAN_BUDGET = 256 * 1024 * 1024

// CRC of the RECORD_FULL type byte: the running start of every record's CRC.
const FULL_TYPE_CRC = crc(Uint8Array.of(RECORD_FULL))

export type TailState = 'clean' | 'torn' | 'corrupt'

export interface TailStatus {
  state: TailState
  /** Where the valid prefix ends: the offset just past the last record returned. */
  offset: number
  /** Bytes from `offset` to the end of the file (0 when clean). */
  droppedBytes: number
  /** True when a valid record was found after the damage (state 'corrupt'). */
  validRecordAfter: boolean
  /** Offset of the first valid record found after the damage, or -1. */
  nextValidOffset: number
  /** A corrupt stretch that one flipped bit explains: the file offset of its byte, the bit, and the byte's value now. */
  bitFlip?: { offset: number, bit: number, byte: number }
}

export class LogReader {
  readonly name: string
  private file: RandomAccessFile | undefined
  private readonly fileSize: number
  private readonly win = Buffer.allocUnsafe(CHUNK)
  private winStart = 0
  private winLen = 0
  private pos = 0
  private status: TailStatus | undefined = undefined

  /**
   * Opens `path` for reading; `name` (the file's basename) labels errors.
   * `start`: the offset of the first record to read (one `offset` returned
   * earlier: a follower resumes a log that has grown since, lib/follower.ts).
   */
  constructor (fs: FileSystem, path: string, name: string, start = 0) {
    this.name = name
    this.pos = start
    try {
      this.file = fs.openRead(path)
      this.fileSize = this.file.size()
    } catch (err) {
      this.close()
      throw ioError(`Cannot open ${name}: ${(err as Error).message}`, err, name)
    }
  }

  /** The next record's payload (a buffer owned by the caller), or undefined at the end of the valid prefix. */
  next (): Buffer | undefined {
    const payload = this.nextView()
    return payload !== undefined && payload.buffer === this.win.buffer ? Buffer.from(payload) : payload
  }

  /**
   * next() without the copy, for a caller that is done with the payload before
   * its next call (log replay): a view of the reader's window, valid until the
   * next call, or a buffer of its own for a record larger than the window.
   */
  nextView (): Buffer | undefined {
    if (this.status !== undefined) return undefined
    const payload = this.readRecord(this.pos)
    if (payload === undefined) {
      this.finish()
      return undefined
    }
    this.pos += HEADER_SIZE + payload.length
    return payload
  }

  /** The offset just past the last record `next()` returned (or where reading resumes after `skipDamage()`). */
  get offset (): number {
    return this.pos
  }

  /** Why reading stopped. Only available once `next()` has returned undefined. */
  get tail (): TailStatus {
    assert(this.status !== undefined, 'LogReader.tail read before the end of the log')
    return this.status
  }

  /**
   * After `next()` stopped at a corrupt stretch with a valid record after it,
   * moves to that record (the next `next()` returns it) and returns true;
   * otherwise returns false.
   */
  skipDamage (): boolean {
    const status = this.status
    if (status === undefined || !status.validRecordAfter) return false
    this.pos = status.nextValidOffset
    this.status = undefined
    return true
  }

  /** Releases the file. Called automatically at the end of the log, unless a valid record follows damage; idempotent. */
  close (): void {
    const file = this.file
    this.file = undefined
    if (file !== undefined) file.close()
  }

  // The payload of a valid record starting at `off` (a view of the window if it fits), or undefined.
  private readRecord (off: number): Buffer | undefined {
    const len = this.plausibleHeader(off)
    if (len < 0) return undefined
    if (HEADER_SIZE + len <= CHUNK) {
      const at = this.ensure(off, HEADER_SIZE + len)
      const payload = this.win.subarray(at + HEADER_SIZE, at + HEADER_SIZE + len)
      return recordIntact(this.win, at, payload) ? payload : undefined
    }
    // A large record: read its payload straight into a buffer of its own (the window keeps its header).
    const payload = Buffer.allocUnsafe(len)
    this.readFully(payload, off + HEADER_SIZE)
    return recordIntact(this.win, off - this.winStart, payload) ? payload : undefined
  }

  // If a record header at `off` is plausible (fully inside the file, type FULL,
  // payload inside the file), loads it into the window and returns the payload
  // length; otherwise -1. No checksum work.
  private plausibleHeader (off: number): number {
    if (off + HEADER_SIZE > this.fileSize) return -1
    const len = recordLength(this.win, this.ensure(off, HEADER_SIZE), this.fileSize - off - HEADER_SIZE)
    return typeof len === 'number' ? len : -1
  }

  private finish (): void {
    const offset = this.pos
    const droppedBytes = this.fileSize - offset
    let state: TailState = 'clean'
    let nextValidOffset = -1
    let bitFlip: TailStatus['bitFlip']
    if (droppedBytes > 0) {
      const found = this.scan(offset + 1)
      state = found === -1 ? 'torn' : 'corrupt'
      nextValidOffset = Math.max(found, -1)
      if (found >= 0 && found - offset <= MAX_SEARCH) {
        const stretch = Buffer.allocUnsafe(found - offset)
        this.readFully(stretch, offset)
        const flip = findBitFlip(stretch)
        if (flip !== undefined) bitFlip = { offset: offset + flip.at, bit: flip.bit, byte: flip.byte }
      }
    }
    this.status = { state, offset, droppedBytes, validRecordAfter: nextValidOffset >= 0, nextValidOffset }
    if (bitFlip !== undefined) this.status.bitFlip = bitFlip
    if (nextValidOffset < 0) this.close()
  }

  // Offset of the first valid record at or after `from`; -1 if there is none;
  // -2 if the checksum budget ran out first (reported as 'corrupt').
  private scan (from: number): number {
    let budget = SCAN_BUDGET
    for (let c = from; c + HEADER_SIZE <= this.fileSize; c++) {
      // Jump to the next offset whose type byte is RECORD_FULL (native search
      // through the window instead of a header check at every byte).
      const at = this.ensure(c, HEADER_SIZE)
      const k = this.win.indexOf(RECORD_FULL, at + 8)
      if (k < 0 || k >= this.winLen) {
        c = this.winStart + this.winLen - HEADER_SIZE // the loop's c++ makes it the first unsearched type byte - 8
        continue
      }
      c = this.winStart + k - 8
      const len = this.plausibleHeader(c)
      if (len < 0) continue
      const stored = getFixed32(this.win, c - this.winStart)
      if (len > CHUNK && !this.chained(c + HEADER_SIZE + len)) continue
      if (budget < len) return -2
      budget -= len
      if (this.rangeChecksum(c + HEADER_SIZE, len) === stored) return c
    }
    return -1
  }

  // Whether what follows a candidate record ending at `end` could be the end of
  // the log or the next record.
  private chained (end: number): boolean {
    if (this.fileSize - end < HEADER_SIZE) return true
    return this.win[this.ensure(end + 8, 1)] === RECORD_FULL
  }

  // Masked CRC of a RECORD_FULL record whose payload is the file range
  // [start, start + len), computed chunk by chunk through the window.
  private rangeChecksum (start: number, len: number): number {
    let c = FULL_TYPE_CRC
    let at = start
    const end = start + len
    while (at < end) {
      const n = Math.min(CHUNK, end - at)
      const i = this.ensure(at, n)
      c = crc(this.win.subarray(i, i + n), c)
      at += n
    }
    return maskCrc(c)
  }

  // Makes file bytes [off, off + len) available in the window (len <= CHUNK,
  // off + len <= fileSize); returns the index of `off` in the window.
  private ensure (off: number, len: number): number {
    if (off >= this.winStart && off + len <= this.winStart + this.winLen) return off - this.winStart
    const want = Math.min(CHUNK, this.fileSize - off)
    this.winStart = off
    this.winLen = 0
    this.readFully(this.win.subarray(0, want), off)
    this.winLen = want
    return 0
  }

  private readFully (dst: Buffer, position: number): void {
    const file = this.file
    assert(file !== undefined, 'LogReader read after close')
    let n: number
    try {
      n = file.read(dst, 0, dst.length, position)
    } catch (err) {
      throw ioError(`Cannot read ${this.name}: ${(err as Error).message}`, err, this.name)
    }
    if (n !== dst.length) {
      throw ioError(`Cannot read ${this.name}: short read at offset ${position} (the file shrank while being read)`, undefined, this.name)
    }
  }
}

/** Largest payload readRecordFrom reads. */
const MAX_READ = 0x7fffffff

/**
 * The valid record at `offset` of an open log file (two positional reads), or
 * undefined where there is none: the end of what is written so far, or a torn
 * or damaged record. A reader that must tell these apart reads with LogReader.
 */
export function readRecordFrom (file: RandomAccessFile, offset: number): LogRecord | undefined {
  const header = Buffer.allocUnsafe(HEADER_SIZE)
  if (file.read(header, 0, HEADER_SIZE, offset) < HEADER_SIZE) return undefined
  const length = recordLength(header, 0, MAX_READ)
  if (typeof length !== 'number') return undefined
  const payload = Buffer.allocUnsafe(length)
  if (file.read(payload, 0, length, offset + HEADER_SIZE) < length) return undefined
  return recordIntact(header, 0, payload) ? { payload, next: offset + HEADER_SIZE + length } : undefined
}

/**
 * True if `file` holds only zero bytes from `offset` to its end: the space a
 * log is extended with ahead of its records (hosts/node/node-fs.ts), not damage.
 */
export function tailIsZeros (fs: FileSystem, file: string, offset: number): boolean {
  const f = fs.openRead(file)
  try {
    const size = f.size()
    const buf = Buffer.allocUnsafe(CHUNK)
    for (let pos = offset; pos < size;) {
      const n = f.read(buf, 0, Math.min(buf.length, size - pos), pos)
      if (n <= 0) return false
      for (let j = 0; j < n; j++) if (buf[j] !== 0) return false
      pos += n
    }
    return true
  } finally {
    f.close()
  }
}
