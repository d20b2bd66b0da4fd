// The table file format: block handles, the block trailer, the properties block
// and the footer. Blocks themselves are laid out in block-builder.ts (data and
// index blocks) and bloom.ts (filter block).
//
// A table file:
//
//   +----------------------+  offset 0
//   | data block 0         |  entries in internal order (block-builder.ts; the
//   |                      |  entry layout depends on the format version),
//   |                      |  stored as is or Snappy-compressed (format 3)
//   | trailer (5 B)        |
//   +----------------------+
//   | ... data block n-1   |
//   | trailer              |
//   +----------------------+
//   | filter block         |  whole-table Bloom filter over user keys (bloom.ts);
//   | trailer              |  absent (handle 0/0) when bloomBitsPerKey is 0
//   +----------------------+
//   | properties block     |  see below
//   | trailer              |
//   +----------------------+
//   | index block          |  one entry per data block (block-builder.ts format, the
//   | trailer              |  same entry layout and compression as the data blocks): key = internal
//   |                      |  key >= the block's last key and < the next block's
//   +----------------------+  first key (user key, seq, kind), value = block handle
//   | footer (60 B)        |
//   +----------------------+  end of file
//
// Block trailer (after every block; the handle's size does NOT include it):
//
//   +-----------+-----------------------------------------------------+
//   | type (1B) | masked CRC-32 of the stored block bytes + type (4 B) |
//   +-----------+-----------------------------------------------------+
//     type 0 = uncompressed: the stored bytes are the block's contents (the
//              only type in format versions 1 and 2)
//     type 1 = Snappy (format 3): the stored bytes are a Snappy raw block
//              (lib/compression/snappy.ts) whose header records the length of
//              the contents. Written only for data and index blocks, and only
//              when it saves at least 1/8 of the contents' size (LevelDB's
//              rule); filter and properties blocks are always type 0.
//   The checksum covers the stored (compressed) bytes, so it is checked before
//   anything is decompressed; a block that passes it but does not decompress,
//   or not to the recorded length, is corruption naming the table file.
//
// Block handle inside the index block (value of an index entry):
//
//   varint offset, varint size (the stored size: compressed, if the block is)
//
// Properties block contents (all varints unless noted):
//
//   +---------+---------+-------------+---------------+-----------------+
//   | version | entries | data blocks | raw key bytes | raw value bytes |
//   +---------+---------+-------------+---------------+-----------------+
//   | varint len + smallest internal key | varint len + largest internal key |
//   +------------------------------------+-----------------------------------+
//     version = the footer's format version (they must agree);
//     raw key bytes = sum of encoded internal key lengths (user key + 8), in
//     both versions (a logical size, not the bytes the blocks spend on keys);
//     smallest/largest are encoded as in lib/keys.ts (with the 8-byte trailer,
//     in both versions); both are empty when the table has no entries.
//
// Footer (fixed size, the last FOOTER_SIZE bytes of the file):
//
//   +-------------------------------+-----------------------------+
//   | index offset (fixed64)        | index size (fixed64)        |  16 B
//   +-------------------------------+-----------------------------+
//   | filter offset (fixed64)       | filter size (fixed64)       |  16 B
//   +-------------------------------+-----------------------------+
//   | properties offset (fixed64)   | properties size (fixed64)   |  16 B
//   +-------------------------------+-----------------------------+
//   | format version (fixed32)      |  1, 2 or 3                     4 B
//   +-------------------------------+-----------------------------+
//   | magic number (8 B, TABLE_MAGIC)                             |  8 B
//   +-------------------------------------------------------------+
//
// Format versions (the footer's version field):
//
//   1  lsm-level <= 0.2: block entries carry encoded internal keys (user key +
//      8-byte trailer), block-builder.ts.
//   2  lsm-level >= 0.3: block entries carry the user key and a varint tag
//      (seq * 2 + kind) instead of the trailer, block-builder.ts. Everything
//      else (footer, trailers, handles, filter, properties) is as in version 1.
//   3  lsm-level >= 0.4: as version 2, and data and index blocks may be stored
//      Snappy-compressed (block type 1 in the trailer, above), as the
//      `compression` option (default on) asks.
//
// Readers accept versions 1 to FORMAT_VERSION; new tables are written as
// FORMAT_VERSION. Any other version (a table from a newer lsm-level, or damage)
// is corruption naming the table file.
//
// Every length and offset read from disk is validated against the file size
// before use; damage surfaces as corruption(name, ...) naming the table file.
import { corruption, ioError } from '../errors'
import type { RandomAccessFile } from '../fs/fs'
import { snappyDecompress, snappyUncompressedLength } from '../compression/snappy'
import { type InternalKey, TRAILER_SIZE, KIND_DELETE, KIND_VALUE, encodeInternalKey, trailerKind, trailerSeq } from '../keys'
import { crc, maskCrc, unmaskCrc } from '../util/crc'
import { ByteWriter, getFixed32, getFixed64, getVarint, putFixed32, putFixed64, varintOut } from '../util/coding'

/** Version of the table format written by this code, and the newest one it reads. */
export const FORMAT_VERSION = 3

/** Oldest table format version this code reads. */
export const MIN_FORMAT_VERSION = 1

/** True if this code reads tables of format version `v`. */
export function supportedVersion (v: number): boolean {
  return v >= MIN_FORMAT_VERSION && v <= FORMAT_VERSION
}

/** "lsmlvSST" in ASCII: identifies a table file and guards against a torn footer. */
export const TABLE_MAGIC = Buffer.from('lsmlvSST', 'latin1')

/** True if tables of format `v` use version 1's entry and filter layouts (versions 2 and 3 share theirs). */
export function isV1Layout (v: number): boolean {
  return v === 1
}

/** Oldest table format version whose blocks may be stored compressed. */
export const MIN_COMPRESSED_FORMAT_VERSION = 3

export const BLOCK_TRAILER_SIZE = 5
export const BLOCK_TYPE_UNCOMPRESSED = 0
export const BLOCK_TYPE_SNAPPY = 1

export const FOOTER_SIZE = 3 * 16 + 4 + 8

/** Where a block lives in the file. `size` excludes the 5-byte trailer. */
export interface BlockHandle {
  offset: number
  size: number
}

export const NO_BLOCK: BlockHandle = Object.freeze({ offset: 0, size: 0 })

export function encodeHandle (w: ByteWriter, h: BlockHandle): void {
  w.varint(h.offset)
  w.varint(h.size)
}

/**
 * Decodes an index entry's value into a handle and checks that the block and its
 * trailer lie inside [0, limit). Throws corruption otherwise.
 */
export function decodeHandle (name: string, buf: Uint8Array, limit: number): BlockHandle {
  if (!getVarint(buf, 0, buf.length)) throw corruption(name, 'bad block handle')
  const offset = varintOut.value
  if (!getVarint(buf, varintOut.pos, buf.length)) throw corruption(name, 'bad block handle')
  const size = varintOut.value
  if (varintOut.pos !== buf.length) throw corruption(name, 'trailing bytes after block handle')
  checkHandle(name, { offset, size }, limit, 'data block')
  return { offset, size }
}

function checkHandle (name: string, h: BlockHandle, limit: number, what: string): void {
  if (h.offset + h.size + BLOCK_TRAILER_SIZE > limit) {
    throw corruption(name, `${what} handle (offset ${h.offset}, size ${h.size}) is outside the file`)
  }
}

/** Appends the 5-byte trailer of `type` for the stored block bytes currently in `w` (from `start`). */
export function appendBlockTrailer (w: ByteWriter, start: number, type: number = BLOCK_TYPE_UNCOMPRESSED): void {
  w.byte(type)
  const c = crc(w.buf.subarray(start, w.pos))
  w.fixed32(maskCrc(c))
}

/** Memory for a block's contents: a buffer of at least `size` bytes that the block may own. */
export type TakeBuffer = (size: number) => Buffer

const freshBuffer: TakeBuffer = (size) => Buffer.allocUnsafeSlow(size)

/**
 * Reads the block at `h` (one positional read of size + trailer) and returns its
 * contents, decompressed if it is stored compressed: a view of a buffer owned by
 * the block, so cached blocks pin nothing else. The stored bytes are read into
 * `into` when it is large enough (else a fresh buffer); a compressed block's
 * contents go to memory from `take`, and `into` is then free again (the caller
 * can tell: the result is not a view of it). Checks the block type always and the
 * checksum when `verify` is set; damage is corruption naming `name`.
 */
export function readBlock (file: RandomAccessFile, name: string, h: BlockHandle, verify: boolean, into?: Buffer, take: TakeBuffer = freshBuffer): Buffer {
  const total = h.size + BLOCK_TRAILER_SIZE
  const buf = into !== undefined && into.length >= total ? into : Buffer.allocUnsafeSlow(total)
  let n: number
  try {
    n = file.read(buf, 0, total, h.offset)
  } catch (err) {
    throw ioError(`Read of ${name} failed at offset ${h.offset}`, err, name)
  }
  if (n !== total) throw corruption(name, `truncated block at offset ${h.offset} (read ${n} of ${total} bytes)`)
  return blockContents(name, h, buf, verify, take)
}

/**
 * The contents of the block at `h` whose stored bytes and trailer, already
 * read, are `buf[0, h.size + BLOCK_TRAILER_SIZE)`: readBlock() after its read.
 * An uncompressed block's contents are a view of `buf`; a compressed block's
 * go to memory from `take`.
 */
export function blockContents (name: string, h: BlockHandle, buf: Buffer, verify: boolean, take: TakeBuffer = freshBuffer): Buffer {
  const type = buf[h.size]
  if (type !== BLOCK_TYPE_UNCOMPRESSED && type !== BLOCK_TYPE_SNAPPY) throw corruption(name, `unknown block type ${type} at offset ${h.offset}`)
  if (verify) {
    const actual = crc(buf.subarray(0, h.size + 1))
    const expected = unmaskCrc(getFixed32(buf, h.size + 1))
    if (actual !== expected) throw corruption(name, `block checksum mismatch at offset ${h.offset}`)
  }
  const stored = buf.subarray(0, h.size)
  return type === BLOCK_TYPE_UNCOMPRESSED ? stored : decompressBlock(name, h, stored, take)
}

/** The contents of the Snappy-compressed block `stored` (at `h` in table `name`), in memory from `take`. */
function decompressBlock (name: string, h: BlockHandle, stored: Buffer, take: TakeBuffer): Buffer {
  try {
    const length = snappyUncompressedLength(stored)
    const contents = take(length).subarray(0, length)
    snappyDecompress(stored, contents)
    return contents
  } catch (err) {
    throw corruption(name, `compressed block at offset ${h.offset} does not decompress (${(err as Error).message})`, err)
  }
}

export interface Footer {
  index: BlockHandle
  filter: BlockHandle
  properties: BlockHandle
}

/** A footer as read from disk, with its table format version. */
export interface DecodedFooter extends Footer {
  version: number
}

export function encodeFooter (f: Footer, version: number = FORMAT_VERSION): Buffer {
  const buf = Buffer.alloc(FOOTER_SIZE)
  let p = 0
  for (const h of [f.index, f.filter, f.properties]) {
    p = putFixed64(buf, p, h.offset)
    p = putFixed64(buf, p, h.size)
  }
  p = putFixed32(buf, p, version)
  buf.set(TABLE_MAGIC, p)
  return buf
}

/**
 * Parses and validates a footer read from the last FOOTER_SIZE bytes of a file of
 * `fileSize` bytes: magic, version, and every handle inside the metadata area.
 * A filter handle of size 0 means "no filter".
 */
export function decodeFooter (name: string, buf: Uint8Array, fileSize: number): DecodedFooter {
  if (buf.length !== FOOTER_SIZE) throw corruption(name, 'short footer')
  if (Buffer.compare(buf.subarray(FOOTER_SIZE - 8), TABLE_MAGIC) !== 0) {
    throw corruption(name, 'bad magic number (not a table file, or truncated)')
  }
  const version = getFixed32(buf, FOOTER_SIZE - 12)
  if (!supportedVersion(version)) throw corruption(name, `unsupported table format version ${version}`)
  const handles: BlockHandle[] = []
  for (let i = 0; i < 3; i++) {
    const offset = getFixed64(buf, i * 16)
    const size = getFixed64(buf, i * 16 + 8)
    // Both halves are < 2^32 * 2^32, but a sum above 2^53 would lose precision:
    // limit each to the file size first.
    if (offset > fileSize || size > fileSize) throw corruption(name, 'footer block handle is outside the file')
    handles.push({ offset, size })
  }
  const limit = fileSize - FOOTER_SIZE
  const [index, filter, properties] = handles
  checkHandle(name, index, limit, 'index block')
  checkHandle(name, properties, limit, 'properties block')
  if (filter.size !== 0) checkHandle(name, filter, limit, 'filter block')
  return { index, filter, properties, version }
}

/** Table-wide facts, recorded in the properties block. */
export interface TableProperties {
  formatVersion: number
  entries: number
  dataBlocks: number
  rawKeyBytes: number
  rawValueBytes: number
  /** Empty user key, seq 0, when entries === 0. */
  smallest: InternalKey
  largest: InternalKey
}

export function encodeProperties (w: ByteWriter, p: TableProperties): void {
  w.varint(p.formatVersion)
  w.varint(p.entries)
  w.varint(p.dataBlocks)
  w.varint(p.rawKeyBytes)
  w.varint(p.rawValueBytes)
  for (const k of [p.smallest, p.largest]) {
    if (p.entries === 0) w.varint(0)
    else w.lengthPrefixed(encodeInternalKey(k.userKey, k.seq, k.kind))
  }
}

/** Decodes a properties block; its version must be `footerVersion` (the footer's). */
export function decodeProperties (name: string, buf: Buffer, footerVersion: number = FORMAT_VERSION): TableProperties {
  const nums: number[] = []
  let pos = 0
  for (let i = 0; i < 5; i++) {
    if (!getVarint(buf, pos, buf.length)) throw corruption(name, 'bad properties block')
    nums.push(varintOut.value)
    pos = varintOut.pos
  }
  const [formatVersion, entries, dataBlocks, rawKeyBytes, rawValueBytes] = nums
  if (!supportedVersion(formatVersion)) throw corruption(name, `properties: unsupported format version ${formatVersion}`)
  if (formatVersion !== footerVersion) {
    throw corruption(name, `properties: format version ${formatVersion} disagrees with the footer's ${footerVersion}`)
  }
  const keys: InternalKey[] = []
  for (let i = 0; i < 2; i++) {
    if (!getVarint(buf, pos, buf.length)) throw corruption(name, 'bad properties block')
    const len = varintOut.value
    pos = varintOut.pos
    if (len > buf.length - pos) throw corruption(name, 'properties: key length past end of block')
    if ((len === 0) !== (entries === 0)) throw corruption(name, 'properties: key bounds disagree with entry count')
    if (len === 0) {
      keys.push({ userKey: Buffer.alloc(0), seq: 0, kind: KIND_DELETE })
    } else {
      keys.push(decodeKeyCopy(name, buf.subarray(pos, pos + len)))
    }
    pos += len
  }
  if (pos !== buf.length) throw corruption(name, 'properties: trailing bytes')
  if ((entries === 0) !== (dataBlocks === 0) || dataBlocks > entries) {
    throw corruption(name, 'properties: inconsistent entry and block counts')
  }
  return { formatVersion, entries, dataBlocks, rawKeyBytes, rawValueBytes, smallest: keys[0], largest: keys[1] }
}

/** Decodes an encoded internal key into an owned InternalKey (validating the trailer). */
function decodeKeyCopy (name: string, enc: Buffer): InternalKey {
  if (enc.length < TRAILER_SIZE) throw corruption(name, 'internal key shorter than its trailer')
  const t = enc.length - TRAILER_SIZE
  const kind = trailerKind(enc, t)
  if (kind !== KIND_DELETE && kind !== KIND_VALUE) throw corruption(name, `bad key kind ${kind}`)
  return { userKey: Buffer.from(enc.subarray(0, t)), seq: trailerSeq(enc, t), kind }
}
