// LevelDB's tables (<n>.ldb, or <n>.sst as LevelDB before 1.14 named them),
// read-only and front to back: the import's source of table entries (LevelDB's
// doc/table_format.md).
//
//   file
//   +--------------+-----+--------------+----------------+-------------+--------+
//   | data block 0 | ... | data block n | meta blocks    | metaindex   | index  |
//   +--------------+-----+--------------+----------------+-------------+--------+
//   | footer (FOOTER_SIZE = 48 bytes)                                           |
//   +---------------------------------------------------------------------------+
//
//   footer: metaindex handle, index handle (each a BlockHandle: varint64
//           offset, varint64 size), zero padding to 40 bytes, then the magic
//           number 0xdb4775248b80fb57 as fixed64 (LE).
//   block:  its contents (`size` bytes, as the handle says), then a 5-byte
//           trailer: 1 type byte (0 stored as is, 1 Snappy-compressed) and the
//           masked CRC-32C (fixed32) of contents ++ type byte.
//   block contents (uncompressed):
//     entries, then restart offsets (fixed32 each), then their count (fixed32).
//     An entry: varint32 shared (bytes of the previous key it starts with; 0 at
//     a restart point), varint32 unshared, varint32 value length, the key's
//     unshared bytes, the value.
//   index block: one entry per data block, key >= every key of the block,
//     value the block's BlockHandle. The metaindex (filter blocks, named
//     "filter.<policy>") is not needed to read the entries and is skipped.
//   keys in data blocks: internal keys, the user key then fixed64 (LE) of
//     (seq << 8 | type), type 1 a value, 0 a deletion; lsm-level's KIND_VALUE and
//     KIND_DELETE have the same numbers (lib/keys.ts).
//
// Every block's checksum is verified; damage is LEVEL_CORRUPTION naming the file.
import type { FileSystem, RandomAccessFile } from '../fs/fs'
import { corruption, ioError, levelError } from '../errors'
import { getFixed32, getVarint, varintOut } from '../util/coding'
import { unmaskCrc } from '../util/crc'
import { MAX_SEQ } from '../keys'
import type { InternalIterator } from '../iterators/internal-iterator'
import { crc32c } from './crc32c'
import { snappyDecompress, snappyUncompressedLength } from '../compression/snappy'

export const FOOTER_SIZE = 48
export const BLOCK_TRAILER_SIZE = 5
const MAGIC_LO = 0x8b80fb57
const MAGIC_HI = 0xdb477524
const TYPE_NONE = 0
const TYPE_SNAPPY = 1

/**
 * Source bytes read, shared by the readers of one import (for its report and
 * progress): a table counts its data blocks as they are read, and the rest of
 * its file when closed, so a table read through counts its size exactly.
 */
export interface ReadCounter {
  bytes: number
}

/** Bytes read ahead at a time: blocks are read front to back, a few KiB each. */
const READ_AHEAD_BYTES = 256 * 1024

/** One LevelDB table, open for reading, front to back (its reads go through a read-ahead window). */
export class LevelDBTable {
  readonly name: string
  private readonly file: RandomAccessFile
  private readonly fileSize: number
  /** The read-ahead window: file bytes [windowStart, windowStart + windowLength). */
  private window: Buffer = Buffer.alloc(0)
  private windowStart = 0
  private windowLength = 0
  /** Bytes of this table added to the counter so far. */
  private counted = 0
  /** Where Snappy blocks are uncompressed (a data block is valid until the next is read). */
  private scratch: Buffer = Buffer.alloc(0)
  /** Offsets and sizes of the data blocks, in key order. */
  private readonly blockOffsets: number[] = []
  private readonly blockSizes: number[] = []

  /** Opens the table and reads its footer and index block. `expectedSize`: the size the manifest records. */
  constructor (fs: FileSystem, path: string, name: string, expectedSize: number, private readonly counter: ReadCounter) {
    this.name = name
    try {
      this.file = fs.openRead(path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') throw corruption(name, 'missing, but the manifest names it as a live table')
      throw ioError(`Cannot read ${name}: ${(err as Error).message}`, err, name)
    }
    try {
      this.fileSize = this.file.size()
      this.readIndex(expectedSize)
    } catch (err) {
      this.file.close()
      throw err
    }
  }

  get blockCount (): number {
    return this.blockOffsets.length
  }

  /**
   * The contents of data block `i`, checksum verified and uncompressed: valid
   * until the next call (it lives in the table's read-ahead window or scratch).
   */
  dataBlock (i: number): Buffer {
    const block = this.readBlock(this.blockOffsets[i], this.blockSizes[i], `data block ${i}`, true)
    this.counted += this.blockSizes[i] + BLOCK_TRAILER_SIZE
    this.counter.bytes += this.blockSizes[i] + BLOCK_TRAILER_SIZE
    return block
  }

  close (): void {
    this.file.close()
    this.counter.bytes += this.fileSize - this.counted
    this.counted = this.fileSize
  }

  private readIndex (expectedSize: number): void {
    const size = this.fileSize
    if (size !== expectedSize) throw corruption(this.name, `is ${size} bytes, the manifest says ${expectedSize}`)
    if (size < FOOTER_SIZE) throw corruption(this.name, `too short for a table (${size} bytes)`)
    const footer = Buffer.from(this.read(size - FOOTER_SIZE, FOOTER_SIZE))
    if (getFixed32(footer, 40) !== MAGIC_LO || getFixed32(footer, 44) !== MAGIC_HI) throw corruption(this.name, 'bad magic number in the footer: not a LevelDB table')
    let pos = 0
    const handle = (what: string): { offset: number, size: number } => {
      if (!getVarint(footer, pos, 40)) throw corruption(this.name, `malformed ${what} handle in the footer`)
      const offset = varintOut.value
      if (!getVarint(footer, varintOut.pos, 40)) throw corruption(this.name, `malformed ${what} handle in the footer`)
      pos = varintOut.pos
      return { offset, size: varintOut.value }
    }
    handle('metaindex')
    const index = handle('index')
    if (index.offset + index.size + BLOCK_TRAILER_SIZE > size - FOOTER_SIZE) throw corruption(this.name, 'index block handle points past the end of the file')
    const block = Buffer.from(this.readBlock(index.offset, index.size, 'index block', false))
    for (const entry = new BlockCursor(block, this.name, 'index block'); entry.next();) {
      const v = entry.valueStart
      if (!getVarint(block, v, entry.valueEnd)) throw corruption(this.name, 'malformed block handle in the index block')
      const offset = varintOut.value
      if (!getVarint(block, varintOut.pos, entry.valueEnd)) throw corruption(this.name, 'malformed block handle in the index block')
      if (offset + varintOut.value + BLOCK_TRAILER_SIZE > index.offset) throw corruption(this.name, 'a data block handle points past the data blocks')
      this.blockOffsets.push(offset)
      this.blockSizes.push(varintOut.value)
    }
  }

  /** A block's contents, verified and uncompressed; a view of the window or (`reuse`) of the scratch buffer. */
  private readBlock (offset: number, size: number, what: string, reuse: boolean): Buffer {
    const raw = this.read(offset, size + BLOCK_TRAILER_SIZE)
    const type = raw[size]
    if (crc32c(raw, 0, size + 1) !== unmaskCrc(getFixed32(raw, size + 1))) throw corruption(this.name, `checksum mismatch in the ${what} at offset ${offset}`)
    if (type === TYPE_NONE) return raw.subarray(0, size)
    if (type === TYPE_SNAPPY) {
      let out: Uint8Array
      try {
        const src = raw.subarray(0, size)
        const length = snappyUncompressedLength(src)
        if (reuse && length > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(length, 2 * this.scratch.length))
        out = snappyDecompress(src, reuse ? this.scratch.subarray(0, length) : undefined)
      } catch (err) {
        throw corruption(this.name, `the ${what} at offset ${offset} does not decompress: ${(err as Error).message}`, err)
      }
      return Buffer.from(out.buffer, out.byteOffset, out.length)
    }
    throw corruption(this.name, `the ${what} at offset ${offset} has unknown compression type ${type}`)
  }

  /** File bytes [offset, offset + length): a view of the read-ahead window, valid until the next read. */
  private read (offset: number, length: number): Buffer {
    if (offset + length > this.fileSize) throw corruption(this.name, `truncated: ${length} bytes at offset ${offset} are past the end of the file`)
    if (offset < this.windowStart || offset + length > this.windowStart + this.windowLength) {
      const want = Math.min(Math.max(length, READ_AHEAD_BYTES), this.fileSize - offset)
      if (want > this.window.length) this.window = Buffer.allocUnsafe(Math.max(want, READ_AHEAD_BYTES))
      let got: number
      try {
        got = this.file.read(this.window, 0, want, offset)
      } catch (err) {
        throw ioError(`Cannot read ${this.name}: ${(err as Error).message}`, err, this.name)
      }
      if (got !== want) throw ioError(`Cannot read ${this.name}: short read at offset ${offset}`, undefined, this.name)
      this.windowStart = offset
      this.windowLength = want
    }
    return this.window.subarray(offset - this.windowStart, offset - this.windowStart + length)
  }
}

/**
 * Walks the entries of one block front to back. After next() returns true the
 * entry's key is key[0, keyLength) (a buffer of the cursor's own, rebuilt
 * from the shared prefixes) and its value block[valueStart, valueEnd).
 */
export class BlockCursor {
  key: Buffer = Buffer.allocUnsafe(64)
  keyLength = 0
  valueStart = 0
  valueEnd = 0
  private pos = 0
  private readonly entriesEnd: number

  constructor (private readonly block: Buffer, private readonly name: string, private readonly what: string) {
    if (block.length < 4) throw corruption(name, `${what} too short`)
    const restarts = getFixed32(block, block.length - 4)
    const end = block.length - 4 - 4 * restarts
    if (restarts === 0 || end < 0) throw corruption(name, `${what} has a malformed restart array`)
    this.entriesEnd = end
  }

  next (): boolean {
    const b = this.block
    const end = this.entriesEnd
    if (this.pos >= end) return false
    let p = this.pos
    if (!getVarint(b, p, end)) throw this.bad()
    const shared = varintOut.value
    if (!getVarint(b, varintOut.pos, end)) throw this.bad()
    const unshared = varintOut.value
    if (!getVarint(b, varintOut.pos, end)) throw this.bad()
    const valueLength = varintOut.value
    p = varintOut.pos
    if (shared > this.keyLength || p + unshared + valueLength > end) throw this.bad()
    const keyLength = shared + unshared
    if (keyLength > this.key.length) {
      const grown = Buffer.allocUnsafe(Math.max(keyLength, 2 * this.key.length))
      this.key.copy(grown, 0, 0, shared)
      this.key = grown
    }
    if (unshared <= 32) {
      // By hand: cheaper than Buffer#copy for the few bytes a key usually adds.
      const key = this.key
      for (let i = 0; i < unshared; i++) key[shared + i] = b[p + i]
    } else {
      b.copy(this.key, shared, p, p + unshared)
    }
    this.keyLength = keyLength
    this.valueStart = p + unshared
    this.valueEnd = this.valueStart + valueLength
    this.pos = this.valueEnd
    return true
  }

  private bad (): Error {
    return corruption(this.name, `malformed entry at offset ${this.pos} of the ${this.what}`)
  }
}

/**
 * The entries of a list of tables, read front to back one table and one block
 * at a time (memory: one index and one data block): the tables of one LevelDB
 * level above 0 (disjoint, in key order), or a single level-0 table.
 *
 * Forward only: the import's merge only ever calls seekToFirst and next; the
 * other moves of the InternalIterator contract throw.
 */
export class LevelDBTablesIterator implements InternalIterator {
  private tableIndex = -1
  private table: LevelDBTable | undefined
  private blockIndex = 0
  private block: Buffer = Buffer.alloc(0)
  private cursor: BlockCursor | undefined
  private entrySeq = 0
  private entryKind = 0
  private isValid = false
  /** Entries read so far. */
  entries = 0

  /** `open(i)` opens the i-th of `count` tables. */
  constructor (private readonly count: number, private readonly open: (i: number) => LevelDBTable) {}

  valid (): boolean {
    return this.isValid
  }

  seekToFirst (): void {
    this.closeTable()
    this.tableIndex = -1
    this.advance()
  }

  next (): void {
    this.advance()
  }

  seekToLast (): void { throw forwardOnly() }
  seek (): void { throw forwardOnly() }
  seekForPrev (): void { throw forwardOnly() }
  prev (): void { throw forwardOnly() }

  seq (): number { return this.entrySeq }
  kind (): number { return this.entryKind }
  keySource (): Buffer { return this.cursor!.key }
  keyStart (): number { return 0 }
  keyEnd (): number { return this.cursor!.keyLength - 8 }
  valueSource (): Buffer { return this.block }
  valueStart (): number { return this.cursor!.valueStart }
  valueEnd (): number { return this.cursor!.valueEnd }

  close (): void {
    this.closeTable()
    this.isValid = false
  }

  private advance (): void {
    for (;;) {
      if (this.cursor !== undefined && this.cursor.next()) {
        this.decodeTrailer(this.cursor)
        this.entries++
        this.isValid = true
        return
      }
      if (this.table !== undefined && this.blockIndex < this.table.blockCount) {
        this.block = this.table.dataBlock(this.blockIndex)
        this.cursor = new BlockCursor(this.block, this.table.name, `data block ${this.blockIndex}`)
        this.blockIndex++
        continue
      }
      this.closeTable()
      if (++this.tableIndex >= this.count) {
        this.isValid = false
        return
      }
      this.table = this.open(this.tableIndex)
      this.blockIndex = 0
    }
  }

  private decodeTrailer (c: BlockCursor): void {
    const k = c.key
    const t = c.keyLength - 8
    const name = this.table!.name
    if (t < 0) throw corruption(name, `an internal key of ${c.keyLength} bytes in data block ${this.blockIndex - 1}`)
    const kind = k[t]
    if (kind > 1) throw corruption(name, `an entry of unknown type ${kind} in data block ${this.blockIndex - 1}`)
    const seq = k[t + 1] + k[t + 2] * 0x100 + k[t + 3] * 0x10000 + k[t + 4] * 0x1000000 +
      k[t + 5] * 0x100000000 + k[t + 6] * 0x10000000000 + k[t + 7] * 0x1000000000000
    if (seq > MAX_SEQ) throw levelError('LEVEL_NOT_SUPPORTED', `${name} holds sequence number ${seq}, past lsm-level's largest (${MAX_SEQ})`, undefined, name)
    this.entryKind = kind
    this.entrySeq = seq
  }

  private closeTable (): void {
    this.table?.close()
    this.table = undefined
    this.cursor = undefined
  }
}

function forwardOnly (): Error {
  return new Error('LevelDBTablesIterator reads forward only')
}
