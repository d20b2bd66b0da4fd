// Writes one table file (layout in format.ts): data blocks as entries arrive,
// then the filter, properties and index blocks and the footer in `finish`.
//
// With compression on, each data block and the index block is Snappy-compressed
// and stored compressed only if that saves at least 1/8 of its size (LevelDB's
// rule); otherwise it is stored as is, and reading it costs nothing extra.
//
// Index entries are added lazily: when a data block is cut we do not yet know
// the next block's first key, so the entry waits for the next `add` (or for
// `finish`), which lets its key be a short separator between the two blocks
// instead of the full last key. Blocks are buffered and appended to the file in
// chunks of about WRITE_CHUNK bytes to keep write(2) calls few.
import { assert, checks } from '../invariants'
import { type InternalKey, MAX_SEQ, KIND_DELETE, KIND_VALUE, TRAILER_SIZE, compareInternal } from '../keys'
import type { WritableFile } from '../fs/fs'
import { ByteWriter } from '../util/coding'
import { snappyCompress, snappyDecompress, snappyMaxCompressedLength } from '../compression/snappy'
import { BloomBuilder } from './bloom'
import { BlockBuilder, DEFAULT_RESTART_INTERVAL } from './block-builder'
import {
  type BlockHandle, BLOCK_TYPE_SNAPPY, BLOCK_TYPE_UNCOMPRESSED, FORMAT_VERSION, MIN_COMPRESSED_FORMAT_VERSION, NO_BLOCK,
  appendBlockTrailer, encodeFooter, encodeHandle, encodeProperties, isV1Layout, supportedVersion
} from './format'

export interface TableBuilderOptions {
  /** Target size of a data block's contents, in bytes (a block is cut once it reaches this). */
  blockSize: number
  /** Entries between restart points in data blocks (default 16). */
  blockRestartInterval?: number
  /** Bloom filter bits per user key; 0 writes no filter. */
  bloomBitsPerKey: number
  /**
   * Table format version to write (format.ts): FORMAT_VERSION (3, the default),
   * or 2 or 1, the layouts of lsm-level 0.3 and <= 0.2, kept so that tests can
   * build old tables.
   */
  formatVersion?: number
  /**
   * Snappy-compress data and index blocks where that saves at least 1/8
   * (default true; formats 1 and 2 never compress).
   */
  compression?: boolean
}

/**
 * The engine options that shape a table's blocks: what flush and compaction
 * jobs, the table writer and the tools that write tables carry (picked by
 * tableOptionsOf, so that a job copies these and not the whole options).
 */
export type TableOptions = Required<Pick<TableBuilderOptions, 'blockSize' | 'blockRestartInterval' | 'bloomBitsPerKey' | 'compression'>>

export function tableOptionsOf (options: TableOptions): TableOptions {
  return {
    blockSize: options.blockSize,
    blockRestartInterval: options.blockRestartInterval,
    bloomBitsPerKey: options.bloomBitsPerKey,
    compression: options.compression
  }
}

export interface TableBuildResult {
  /** File size in bytes. */
  size: number
  entries: number
  /** Smallest and largest internal keys (copies). Empty user key, seq 0, if no entries. */
  smallest: InternalKey
  largest: InternalKey
}

const WRITE_CHUNK = 64 * 1024

export class TableBuilder {
  private readonly blockSize: number
  private readonly formatVersion: number
  private readonly compression: boolean
  /** Where blocks are compressed (grown as needed). */
  private compressed = Buffer.allocUnsafe(0)
  private readonly data: BlockBuilder
  private readonly index: BlockBuilder
  private readonly bloom: BloomBuilder | null
  private readonly pending = new ByteWriter(WRITE_CHUNK + 8192)
  private offset = 0 // bytes appended to the file plus bytes in `pending`
  private dataBlocks = 0
  private entries = 0
  private rawKeyBytes = 0
  private rawValueBytes = 0
  private smallest: InternalKey | null = null
  private finished = false

  // The last key added (a reusable copy), for the order check and separators.
  private lastUserKey = Buffer.allocUnsafe(64)
  private lastUserKeyLen = 0
  private lastSeq = 0
  private lastKind = 0

  // The handle of the last cut data block, waiting for its index entry.
  private pendingIndex: BlockHandle | null = null
  private readonly handleScratch = new ByteWriter(24)

  constructor (private readonly file: WritableFile, options: TableBuilderOptions) {
    assert(Number.isInteger(options.blockSize) && options.blockSize > 0, 'blockSize must be a positive integer')
    assert(options.bloomBitsPerKey >= 0, 'bloomBitsPerKey must be >= 0')
    const version = options.formatVersion ?? FORMAT_VERSION
    assert(supportedVersion(version), `cannot write table format version ${version}`)
    this.formatVersion = version
    this.compression = (options.compression ?? true) && version >= MIN_COMPRESSED_FORMAT_VERSION
    this.blockSize = options.blockSize
    this.data = new BlockBuilder(options.blockRestartInterval ?? DEFAULT_RESTART_INTERVAL, version)
    this.index = new BlockBuilder(1, version) // index keys are few and binary searched after decoding
    this.bloom = options.bloomBitsPerKey > 0 ? new BloomBuilder(options.bloomBitsPerKey, version) : null
    this.offset = file.size()
    assert(this.offset === 0, 'TableBuilder needs an empty file')
  }

  /** REQUIRES: entries added in strictly increasing internal order (userKey asc, seq desc). */
  add (userKey: Uint8Array, seq: number, kind: number, value: Uint8Array): void {
    this.addRange(userKey, 0, userKey.length, seq, kind, value, 0, value.length)
  }

  /**
   * add() of the user key src[keyOff, keyOff + keyLen) and the value
   * valueSrc[valueOff, valueOff + valueLen), e.g. straight out of a memtable's
   * arena: no view is made per entry.
   */
  addRange (src: Uint8Array, keyOff: number, keyLen: number, seq: number, kind: number, valueSrc: Uint8Array, valueOff: number, valueLen: number): void {
    assert(!this.finished, 'TableBuilder.add after finish')
    assert(kind === KIND_VALUE || kind === KIND_DELETE, 'bad entry kind')
    assert(seq >= 0 && seq <= MAX_SEQ, 'sequence number out of range')
    let sameUserKey = false
    // Leading bytes the key shares with the previous one: found by the order
    // check, and the prefix the data block need not repeat.
    let common = 0
    if (this.entries > 0) {
      const last = this.lastUserKey
      const lastLen = this.lastUserKeyLen
      const min = lastLen < keyLen ? lastLen : keyLen
      while (common < min && last[common] === src[keyOff + common]) common++
      const c = common < min ? last[common] - src[keyOff + common] : lastLen - keyLen
      assert(c < 0 || (c === 0 && seq < this.lastSeq), 'TableBuilder entries must be added in strictly increasing internal order')
      sameUserKey = c === 0
    } else {
      this.smallest = { userKey: Buffer.from(src.subarray(keyOff, keyOff + keyLen)), seq, kind }
    }

    if (this.pendingIndex !== null) {
      // Once per data block: views are fine here.
      const prevUserKey = this.lastUserKey.subarray(0, this.lastUserKeyLen)
      const userKey = src.subarray(keyOff, keyOff + keyLen)
      const sep = separator(prevUserKey, this.lastSeq, this.lastKind, userKey)
      if (checks.paranoid) {
        assert(compareInternal(prevUserKey, this.lastSeq, sep.userKey, sep.seq) <= 0 &&
          compareInternal(sep.userKey, sep.seq, userKey, seq) < 0, 'index separator out of range')
      }
      this.addIndexEntry(sep)
    }
    if (this.bloom !== null && !sameUserKey) this.bloom.addKeyRange(src, keyOff, keyLen)

    if (!isV1Layout(this.formatVersion)) this.data.addV2(src, keyOff, keyLen, common, seq, kind, valueSrc, valueOff, valueLen)
    else this.data.addRange(src, keyOff, keyLen, seq, kind, valueSrc, valueOff, valueLen)
    this.entries++
    this.rawKeyBytes += keyLen + TRAILER_SIZE
    this.rawValueBytes += valueLen
    this.remember(src, keyOff, keyLen, seq, kind)

    if (this.data.estimatedSize() >= this.blockSize) this.cutDataBlock()
  }

  /** Bytes written or buffered so far (data blocks), to split outputs at a target size. */
  estimatedSize (): number {
    return this.offset + this.data.estimatedSize()
  }

  entryCount (): number {
    return this.entries
  }

  /**
   * Writes the last data block, filter, properties, index and footer. Does NOT
   * sync or close the file (the caller does).
   */
  finish (): TableBuildResult {
    assert(!this.finished, 'TableBuilder.finish called twice')
    this.finished = true
    if (!this.data.empty()) this.cutDataBlock()
    const last = this.lastUserKey.subarray(0, this.lastUserKeyLen)
    if (this.pendingIndex !== null) this.addIndexEntry(successor(last, this.lastSeq, this.lastKind))

    const filter = this.bloom !== null ? this.writeRaw(this.bloom.finish()) : NO_BLOCK

    const empty: InternalKey = { userKey: Buffer.alloc(0), seq: 0, kind: KIND_DELETE }
    const smallest = this.smallest ?? empty
    const largest = this.entries > 0 ? { userKey: Buffer.from(last), seq: this.lastSeq, kind: this.lastKind } : empty
    const w = new ByteWriter(128 + smallest.userKey.length + largest.userKey.length)
    encodeProperties(w, {
      formatVersion: this.formatVersion,
      entries: this.entries,
      dataBlocks: this.dataBlocks,
      rawKeyBytes: this.rawKeyBytes,
      rawValueBytes: this.rawValueBytes,
      smallest,
      largest
    })
    const properties = this.writeRaw(w.view())

    const index = this.writeBlock(this.index)
    const footer = encodeFooter({ index, filter, properties }, this.formatVersion)
    this.pending.bytes(footer)
    this.offset += footer.length
    this.flush()
    assert(this.file.size() === this.offset, 'table size does not match the bytes written')
    return { size: this.offset, entries: this.entries, smallest, largest }
  }

  private remember (src: Uint8Array, keyOff: number, keyLen: number, seq: number, kind: number): void {
    if (this.lastUserKey.length < keyLen) {
      this.lastUserKey = Buffer.allocUnsafe(Math.max(keyLen, this.lastUserKey.length * 2))
    }
    const last = this.lastUserKey
    if (keyLen <= 64) for (let i = 0; i < keyLen; i++) last[i] = src[keyOff + i]
    else last.set(src.subarray(keyOff, keyOff + keyLen), 0)
    this.lastUserKeyLen = keyLen
    this.lastSeq = seq
    this.lastKind = kind
  }

  private cutDataBlock (): void {
    this.pendingIndex = this.writeBlock(this.data)
    this.dataBlocks++
  }

  private addIndexEntry (key: InternalKey): void {
    const h = this.pendingIndex
    assert(h !== null, 'no pending index entry')
    const hw = this.handleScratch
    hw.reset()
    encodeHandle(hw, h)
    this.index.add(key.userKey, key.seq, key.kind, hw.view())
    this.pendingIndex = null
  }

  /** Finishes `block`, appends it (compressed if that pays) with its trailer, resets it; returns its handle. */
  private writeBlock (block: BlockBuilder): BlockHandle {
    const w = block.finish()
    const contents = w.buf.subarray(0, w.pos)
    const handle = this.compression ? this.writeCompressible(contents) : this.writeRaw(contents)
    block.reset()
    return handle
  }

  /** Appends `contents` Snappy-compressed if that saves at least 1/8, else as is. */
  private writeCompressible (contents: Uint8Array): BlockHandle {
    const max = snappyMaxCompressedLength(contents.length)
    if (this.compressed.length < max) this.compressed = Buffer.allocUnsafe(Math.max(max, this.compressed.length * 2))
    const packed = snappyCompress(contents, this.compressed)
    if (packed.length > contents.length - contents.length / 8) return this.writeRaw(contents)
    if (checks.paranoid) assert(Buffer.from(snappyDecompress(packed)).equals(contents), 'a compressed block does not decompress to its contents')
    return this.writeRaw(packed, BLOCK_TYPE_SNAPPY)
  }

  /** Appends stored block bytes with a trailer of `type`; returns its handle. */
  private writeRaw (stored: Uint8Array, type: number = BLOCK_TYPE_UNCOMPRESSED): BlockHandle {
    const handle = { offset: this.offset, size: stored.length }
    const start = this.pending.pos
    this.pending.bytes(stored)
    appendBlockTrailer(this.pending, start, type)
    this.offset += this.pending.pos - start
    if (this.pending.pos >= WRITE_CHUNK) this.flush()
    return handle
  }

  private flush (): void {
    if (this.pending.pos === 0) return
    this.file.append(this.pending.view())
    this.pending.reset()
  }
}

/**
 * An index key k with last <= k < (next user key, any seq), preferably with a
 * short user key: if the user keys differ at byte i and last[i] + 1 < next[i],
 * the user key last[0..i] + (last[i] + 1) with seq MAX_SEQ (the smallest
 * internal key for that user key) lies strictly between the two blocks.
 */
function separator (last: Buffer, lastSeq: number, lastKind: number, next: Uint8Array): InternalKey {
  const min = last.length < next.length ? last.length : next.length
  let i = 0
  while (i < min && last[i] === next[i]) i++
  if (i < min && i + 1 < last.length) {
    const b = last[i]
    if (b < 0xff && b + 1 < next[i]) {
      const k = Buffer.from(last.subarray(0, i + 1))
      k[i] = b + 1
      return { userKey: k, seq: MAX_SEQ, kind: KIND_VALUE }
    }
  }
  return { userKey: Buffer.from(last), seq: lastSeq, kind: lastKind }
}

/** An index key >= the table's last key: a short successor of its user key if one exists. */
function successor (last: Buffer, lastSeq: number, lastKind: number): InternalKey {
  for (let i = 0; i + 1 < last.length; i++) {
    if (last[i] !== 0xff) {
      const k = Buffer.from(last.subarray(0, i + 1))
      k[i] = last[i] + 1
      return { userKey: k, seq: MAX_SEQ, kind: KIND_VALUE }
    }
  }
  return { userKey: Buffer.from(last), seq: lastSeq, kind: lastKind }
}
