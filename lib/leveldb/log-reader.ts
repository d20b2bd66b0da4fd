// Reader of LevelDB's log format, the framing of its write-ahead logs (<n>.log)
// and of its MANIFEST-<n> (LevelDB's doc/log_format.md). Read-only: lsm-level
// never writes this format (its own is lib/wal/log-format.ts).
//
// A file is a sequence of 32 KiB blocks; records never cross a block boundary
// whole, they are cut into fragments instead:
//
//   block (BLOCK_SIZE = 32768 bytes; the last block of a file may be shorter)
//   +----------+----------+-----+----------------------------------+
//   | record 0 | record 1 | ... | trailer: < 7 bytes, zeros        |
//   +----------+----------+-----+----------------------------------+
//
//   record (physical)
//   +-------------------+-----------------+------+------------------------+
//   | masked CRC-32C    | length          | type | data (`length` bytes)  |
//   | fixed32 (LE)      | fixed16 (LE)    | 1 B  |                        |
//   +-------------------+-----------------+------+------------------------+
//   |<------------ header: HEADER_SIZE = 7 bytes --------->|
//
//   masked CRC = maskCrc(crc32c(type byte ++ data))   (maskCrc as LevelDB's)
//   type       = FULL (1) a whole logical record; FIRST (2), MIDDLE (3), LAST
//                (4) the fragments of one that did not fit the rest of a block
//                (FIRST, zero or more MIDDLE, LAST, in consecutive blocks);
//                ZERO (0) with length 0: space preallocated and never written,
//                skipped to the end of the block.
//
// Damage: a record whose checksum fails, a length past its block, an unknown
// type or fragments out of order is LEVEL_CORRUPTION naming the file and the
// offset. A record cut off by the end of the file is what a writer that
// stopped mid-append leaves (LevelDB itself drops it silently): reading ends
// before it and `tornBytes` says how many bytes were left unread.
import type { FileSystem, RandomAccessFile } from '../fs/fs'
import { corruption, ioError } from '../errors'
import { getFixed32 } from '../util/coding'
import { unmaskCrc } from '../util/crc'
import { crc32c } from './crc32c'

export const BLOCK_SIZE = 32768
export const HEADER_SIZE = 7

const ZERO = 0
const FULL = 1
const FIRST = 2
const MIDDLE = 3
const LAST = 4

export class LevelDBLogReader {
  readonly name: string
  /** Bytes of a record cut off by the end of the file (0 if the file ends cleanly). */
  tornBytes = 0
  /** Bytes read from the file so far. */
  bytesRead = 0
  private readonly file: RandomAccessFile
  private readonly fileSize: number
  private readonly block = Buffer.allocUnsafe(BLOCK_SIZE)
  /** File offset of `block`, its length, and the position in it. */
  private blockStart = 0
  private blockLen = 0
  private pos = 0
  /** A logical record being assembled from fragments. */
  private assembled: Buffer = Buffer.allocUnsafe(BLOCK_SIZE)
  private assembledLen = 0
  private done = false

  constructor (fs: FileSystem, path: string, name: string) {
    this.name = name
    try {
      this.file = fs.openRead(path)
      this.fileSize = this.file.size()
    } catch (err) {
      throw ioError(`Cannot read ${name}: ${(err as Error).message}`, err, name)
    }
  }

  /**
   * The next logical record's bytes, or undefined at the end of the file. The
   * buffer is valid until the next call (it may be a view of the reader's block).
   */
  next (): Buffer | undefined {
    let fragmentStart = -1
    for (;;) {
      if (this.done) return undefined
      if (this.blockLen - this.pos < HEADER_SIZE) {
        // A full block's last bytes are padding; in a short (last) block they are a cut-off header.
        const cutHeader = this.blockLen < BLOCK_SIZE ? this.blockLen - this.pos : 0
        if (!this.loadNextBlock()) {
          this.tornBytes = fragmentStart >= 0 ? this.fileSize - fragmentStart : cutHeader
          return undefined
        }
        continue
      }
      const b = this.block
      const at = this.blockStart + this.pos
      const length = b[this.pos + 4] | (b[this.pos + 5] << 8)
      const type = b[this.pos + 6]
      if (type === ZERO && length === 0) {
        this.pos = this.blockLen // preallocated space: nothing more in this block
        continue
      }
      const dataStart = this.pos + HEADER_SIZE
      if (dataStart + length > this.blockLen) {
        if (this.blockLen < BLOCK_SIZE && this.blockStart + this.blockLen === this.fileSize) {
          // Cut off by the end of the file: an interrupted append.
          this.tornBytes = this.fileSize - (fragmentStart >= 0 ? fragmentStart : at)
          this.done = true
          return undefined
        }
        throw corruption(this.name, `record at offset ${at} has length ${length}, past the end of its block`)
      }
      const stored = unmaskCrc(getFixed32(b, this.pos))
      if (crc32c(b, this.pos + 6, dataStart + length) !== stored) throw corruption(this.name, `checksum mismatch in the record at offset ${at}`)
      this.pos = dataStart + length
      if (type === FULL) {
        if (fragmentStart >= 0) throw corruption(this.name, `record at offset ${at}: a whole record inside a fragmented one`)
        return b.subarray(dataStart, dataStart + length)
      }
      if (type === FIRST) {
        if (fragmentStart >= 0) throw corruption(this.name, `record at offset ${at}: a first fragment inside a fragmented record`)
        fragmentStart = at
        this.assembledLen = 0
        this.append(b, dataStart, length)
      } else if (type === MIDDLE || type === LAST) {
        if (fragmentStart < 0) throw corruption(this.name, `record at offset ${at}: a fragment with no first fragment`)
        this.append(b, dataStart, length)
        if (type === LAST) return this.assembled.subarray(0, this.assembledLen)
      } else {
        throw corruption(this.name, `record at offset ${at} has unknown type ${type}`)
      }
    }
  }

  close (): void {
    this.file.close()
  }

  private append (src: Buffer, start: number, length: number): void {
    const need = this.assembledLen + length
    if (need > this.assembled.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.assembled.length * 2))
      this.assembled.copy(grown, 0, 0, this.assembledLen)
      this.assembled = grown
    }
    src.copy(this.assembled, this.assembledLen, start, start + length)
    this.assembledLen = need
  }

  /** Reads the next block; false at the end of the file. */
  private loadNextBlock (): boolean {
    const start = this.blockStart + this.blockLen
    if (start >= this.fileSize) {
      this.done = true
      return false
    }
    const len = Math.min(BLOCK_SIZE, this.fileSize - start)
    let got: number
    try {
      got = this.file.read(this.block, 0, len, start)
    } catch (err) {
      throw ioError(`Cannot read ${this.name}: ${(err as Error).message}`, err, this.name)
    }
    if (got !== len) throw ioError(`Cannot read ${this.name}: short read at offset ${start}`, undefined, this.name)
    this.bytesRead += len
    this.blockStart = start
    this.blockLen = len
    this.pos = 0
    return true
  }
}
