// An open table file (layout in format.ts). Opening reads only the footer and
// the index, filter and properties blocks, each with one positional read; data
// blocks are read on demand, one block per read (or, for an iterator walking
// the blocks in order, from its readahead window: readahead.ts), through the shared BlockCache,
// which holds them raw (decompressed on the miss that reads them, if they are
// stored compressed; a long scan keeps the blocks of its run out of the cache,
// in memory of its own: readahead.ts): get() searches a raw block in place (raw-block.ts),
// iterators decode the blocks they visit into columns of their own
// (block-columns.ts).
//
// Lifetime: a Table starts with one reference (the opener's: usually the
// TableCache). Iterators take their own reference, so a table evicted from the
// table cache stays readable until its last iterator closes; the file descriptor
// is closed, and the table's cached blocks dropped, when references reach 0.
import { corruption, ioError } from '../errors'
import type { FileSystem, RandomAccessFile } from '../fs/fs'
import { assert } from '../invariants'
import { type InternalKey, MAX_SEQ } from '../keys'
import type { InternalIterator } from '../iterators/internal-iterator'
import { BloomFilter } from './bloom'
import { type BlockColumns, releaseColumns, takeColumns } from './block-columns'
import { decodeBlockInto, seekRawBlock } from './block-reader'
import { type DecodedBlock, decodeBlock } from './decoded-block'
import { type RawBlock, parseRawBlock, rawSeekOut } from './raw-block'
import type { BlockCache, BlockSlots } from './cache'
import { type BlockHandle, BLOCK_TRAILER_SIZE, FOOTER_SIZE, type TableProperties, blockContents, decodeFooter, decodeHandle, decodeProperties, readBlock } from './format'
import { Readahead } from './readahead'

export interface GetResult {
  kind: number
  /** A copy the caller owns (the block's memory may be recycled once evicted). */
  value: Buffer
  seq: number
}

export interface TableOpenOptions {
  /** Verify data block checksums on every read (default true; metadata blocks are always verified). */
  verifyChecksums?: boolean
}

let nextTableId = 1

export class Table {
  /** Unique per open Table instance in this process. */
  readonly id: number
  readonly fileSize: number
  readonly entries: number
  readonly smallest: InternalKey
  readonly largest: InternalKey
  readonly properties: TableProperties
  /** Table format version (format.ts): the entry layout of its blocks. */
  readonly formatVersion: number

  private checked = 0
  private useful = 0
  /** @internal The table cache's LRU stamp. */
  lastUse = 0

  private refs = 1
  // The index, decoded once (decoded-block.ts). Data block i spans
  // [blockOffsets[i], + blockSizes[i]), its handle decoded from the index on
  // first use (blockSizes[i] < 0 until then): an open reads no handle it does
  // not need, which is most of them for a table opened for one get.
  private readonly index: DecodedBlock
  private readonly blockOffsets: Float64Array
  private readonly blockSizes: Float64Array
  /** This table's slots in the block cache (one per data block). */
  private readonly slots: BlockSlots
  /** Memory for decompressed blocks: recycled block cache buffers. */
  private readonly takeBuffer = (size: number): Buffer => this.cache.takeBuffer(size)

  private constructor (
    private readonly file: RandomAccessFile,
    readonly name: string,
    private readonly cache: BlockCache,
    private readonly verifyChecksums: boolean,
    private readonly filter: BloomFilter | null,
    index: DecodedBlock,
    properties: TableProperties,
    fileSize: number
  ) {
    this.id = nextTableId++
    this.fileSize = fileSize
    this.properties = properties
    this.formatVersion = properties.formatVersion
    this.entries = properties.entries
    this.smallest = properties.smallest
    this.largest = properties.largest
    this.index = index
    this.blockOffsets = new Float64Array(index.length)
    this.blockSizes = new Float64Array(index.length).fill(-1)
    this.slots = cache.slotsFor(index.length)
    if (index.length !== properties.dataBlocks) {
      throw corruption(name, `index lists ${index.length} data blocks, properties say ${properties.dataBlocks}`)
    }
  }

  /**
   * Opens a table: reads footer, index, filter and properties with positional
   * reads (never the whole file). Throws LEVEL_CORRUPTION naming `name` (the
   * file's basename) on a bad footer, magic, version or checksum.
   */
  static open (fs: FileSystem, path: string, name: string, cache: BlockCache, options?: TableOpenOptions): Table {
    const file = fs.openRead(path)
    try {
      const fileSize = file.size()
      if (fileSize < FOOTER_SIZE) throw corruption(name, `file too short to be a table (${fileSize} bytes)`)
      const footerBuf = Buffer.allocUnsafe(FOOTER_SIZE)
      let n: number
      try {
        n = file.read(footerBuf, 0, FOOTER_SIZE, fileSize - FOOTER_SIZE)
      } catch (err) {
        throw ioError(`Read of ${name} failed`, err, name)
      }
      if (n !== FOOTER_SIZE) throw corruption(name, 'short read of footer')
      const footer = decodeFooter(name, footerBuf, fileSize)
      const properties = decodeProperties(name, readBlock(file, name, footer.properties, true), footer.version)
      const index = decodeBlock(name, readBlock(file, name, footer.index, true), footer.version)
      const filter = footer.filter.size === 0 ? null : new BloomFilter(name, readBlock(file, name, footer.filter, true), footer.version)
      return new Table(file, name, cache, options?.verifyChecksums ?? true, filter, index, properties, fileSize)
    } catch (err) {
      file.close()
      throw err
    }
  }

  /** get() calls that consulted the Bloom filter. */
  get bloomChecked (): number {
    return this.checked
  }

  /** get() calls the Bloom filter answered alone (key certainly absent). */
  get bloomUseful (): number {
    return this.useful
  }

  /**
   * Bytes this open table holds outside the block cache: its decoded index, its
   * Bloom filter and the per-block offsets and sizes (stats().memory.tables).
   */
  get memoryBytes (): number {
    return this.index.bytes.byteLength + this.index.contents.byteLength + (this.filter?.byteLength ?? 0) + 16 * this.blockOffsets.length
  }

  /** Number of data blocks. */
  get dataBlockCount (): number {
    return this.blockOffsets.length
  }

  /** Bloom check over the user key (true if the table has no filter). Counts nothing. */
  mayContain (userKey: Uint8Array): boolean {
    return this.filter === null || this.filter.mayContain(userKey)
  }

  /**
   * Newest entry for userKey with entry.seq <= seq, or undefined if none in this
   * table. Bloom-gated; reads at most one data block. Allocates only the value
   * (a copy) and the result object, both caller-owned.
   */
  get (userKey: Uint8Array, seq: number): GetResult | undefined {
    assert(this.refs > 0, `Table ${this.name} used after close`)
    if (this.filter !== null) {
      this.checked++
      if (!this.filter.mayContain(userKey)) {
        this.useful++
        return undefined
      }
    }
    // The first index key >= (userKey, seq) names the only block that can hold the
    // first entry >= (userKey, seq): every earlier block ends below the target,
    // and every later block starts above this block's separator.
    const b = this.index.lowerBound(userKey, seq)
    if (b === this.index.length) return undefined
    const block = this.rawBlock(b)
    // Not found in the block: the key falls between its last key and its separator.
    if (!seekRawBlock(this.name, block, userKey, seq)) return undefined
    const value = Buffer.allocUnsafe(rawSeekOut.valueEnd - rawSeekOut.valueStart)
    block.contents.copy(value, 0, rawSeekOut.valueStart, rawSeekOut.valueEnd)
    return { kind: rawSeekOut.kind, value, seq: rawSeekOut.seq }
  }

  /**
   * Lazy two-level iterator (index block -> data blocks); takes a reference
   * until closed. `fillCache`: whether the blocks it reads go into the block
   * cache (readahead.ts; default: not those of a long run).
   */
  iterator (fillCache?: boolean): InternalIterator {
    return new TableIterator(this, fillCache)
  }

  /** Approximate file offset where userKey would be (for size estimates). */
  approximateOffsetOf (userKey: Uint8Array): number {
    const b = this.index.lowerBound(userKey, MAX_SEQ)
    const n = this.blockOffsets.length
    if (b < n) return this.blockOffsets[this.locate(b)]
    // Past the last block: where the data blocks end.
    return n === 0 ? 0 : this.blockOffsets[this.locate(n - 1)] + this.blockSizes[n - 1] + BLOCK_TRAILER_SIZE
  }

  /** Decodes data block i's handle from the index if not done yet; returns i. */
  private locate (i: number): number {
    if (this.blockSizes[i] < 0) {
      const h = decodeHandle(this.name, this.index.value(i), this.fileSize - FOOTER_SIZE)
      this.blockOffsets[i] = h.offset
      this.blockSizes[i] = h.size
    }
    return i
  }

  ref (): void {
    assert(this.refs > 0, `Table ${this.name} referenced after close`)
    this.refs++
  }

  unref (): void {
    assert(this.refs > 0, `Table ${this.name} unreferenced too often`)
    if (--this.refs === 0) {
      this.file.close()
      this.cache.eraseTable(this.slots)
    }
  }

  /** @internal Index block, for the iterator. */
  indexBlock (): DecodedBlock {
    return this.index
  }

  /**
   * @internal Data block `i` (0 <= i < dataBlockCount), raw, from the cache or
   * the file (through `readahead`, an iterator's, if given).
   */
  rawBlock (i: number, readahead?: Readahead): RawBlock {
    assert(this.refs > 0, `Table ${this.name} used after close`)
    const cached = this.cache.get(this.slots, i)
    if (cached !== undefined) return cached
    const offset = this.blockOffsets[this.locate(i)]
    const size = this.blockSizes[i]
    const handle: BlockHandle = { offset, size }
    const stored = readahead?.stored(this.file, this.name, handle)
    if (readahead !== undefined && !readahead.caches()) return this.uncachedBlock(handle, stored, readahead)
    let contents: Buffer
    if (stored !== undefined) {
      contents = blockContents(this.name, handle, stored, this.verifyChecksums, this.takeBuffer)
      // An uncompressed block is a view of the window, which the next read reuses: the cache gets a copy.
      if (contents.buffer === stored.buffer) contents = this.copyOut(contents)
    } else {
      const into = this.cache.takeBuffer(size + BLOCK_TRAILER_SIZE)
      contents = readBlock(this.file, this.name, handle, this.verifyChecksums, into, this.takeBuffer)
      // A compressed block was only read into `into`: its contents are elsewhere.
      if (contents.buffer !== into.buffer) this.cache.giveBack(into)
    }
    const block = parseRawBlock(this.name, contents, this.formatVersion)
    this.cache.set(this.slots, i, block, block.charge)
    return block
  }

  /**
   * The block at `h`, read into `readahead`'s memory and not cached (`stored`:
   * its bytes from a window, if stored() gave them): valid until the
   * readahead's next read. Marked pinned, so that the block cache never takes
   * its memory for another block.
   */
  private uncachedBlock (h: BlockHandle, stored: Buffer | undefined, readahead: Readahead): RawBlock {
    const total = h.size + BLOCK_TRAILER_SIZE
    const bytes = stored ?? readahead.alone(this.file, this.name, h)
    if (bytes.length !== total) throw corruption(this.name, `truncated block at offset ${h.offset} (read ${bytes.length} of ${total} bytes)`)
    const block = parseRawBlock(this.name, blockContents(this.name, h, bytes, this.verifyChecksums, readahead.takeOwn), this.formatVersion)
    block.pinned = true
    return block
  }

  /** `bytes` copied to memory from the block cache's buffers. */
  private copyOut (bytes: Buffer): Buffer {
    const copy = this.takeBuffer(bytes.length).subarray(0, bytes.length)
    copy.set(bytes)
    return copy
  }

  /** @internal Data block `i`, raw and pinned in the block cache until releaseBlock(). */
  pinBlock (i: number, readahead?: Readahead): RawBlock {
    const raw = this.rawBlock(i, readahead)
    this.cache.pin(raw)
    return raw
  }

  /** @internal Drops a pinBlock() pin. */
  releaseBlock (raw: RawBlock): void {
    this.cache.release(raw)
  }

  /**
   * @internal Data block `i` (0 <= i < dataBlockCount), decoded (each call
   * decodes anew). Its views stay valid forever: the raw block is pinned for good.
   */
  dataBlock (i: number): DecodedBlock {
    const raw = this.rawBlock(i)
    raw.pinned = true
    return decodeBlock(this.name, raw.contents, this.formatVersion)
  }
}

/**
 * Two-level iterator: a position in the index (which data block) and a position
 * in that block. Blocks are loaded only when the iterator moves onto them, and
 * decoded into the iterator's own columns (no allocation per block). The raw
 * block it is on stays pinned in the block cache until it moves off it: keys
 * and values read from it are valid until then (the iterator contract).
 */
class TableIterator implements InternalIterator {
  private blockIdx = -1
  /** The raw block the iterator is on (pinned), or null: not valid. */
  private raw: RawBlock | null = null
  private readonly cols: BlockColumns = takeColumns()
  private pos = -1
  private closed = false
  /** Reads ahead while the iterator walks the blocks in order, and holds the blocks it does not cache (readahead.ts). */
  readonly readahead: Readahead

  constructor (private readonly table: Table, fillCache?: boolean) {
    table.ref()
    this.readahead = new Readahead(fillCache)
  }

  valid (): boolean {
    return this.raw !== null
  }

  seekToFirst (): void {
    this.load(0)
    this.pos = 0
    this.skipEmptyForward()
  }

  seekToLast (): void {
    this.load(this.table.dataBlockCount - 1)
    this.pos = this.cols.length - 1
    this.skipEmptyBackward()
  }

  seek (userKey: Uint8Array, seq: number): void {
    this.load(this.table.indexBlock().lowerBound(userKey, seq))
    if (this.raw !== null) this.pos = this.cols.lowerBound(userKey, seq)
    this.skipEmptyForward()
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    // Blocks before the first one whose separator is >= target hold only keys <
    // target, so the answer is in that block or is the last key before it.
    const index = this.table.indexBlock()
    let b = index.lowerBound(userKey, seq)
    if (b === index.length) b = index.length - 1
    this.load(b)
    if (this.raw !== null) this.pos = this.cols.upperBound(userKey, seq) - 1
    this.skipEmptyBackward()
  }

  next (): void {
    assert(this.raw !== null, 'next() on an invalid iterator')
    this.pos++
    this.skipEmptyForward()
  }

  prev (): void {
    assert(this.raw !== null, 'prev() on an invalid iterator')
    this.pos--
    this.skipEmptyBackward()
  }

  seq (): number {
    return this.cols.seqs[this.pos]
  }

  kind (): number {
    return this.cols.kinds[this.pos]
  }

  keySource (): Buffer {
    return this.cols.arena
  }

  keyStart (): number {
    return this.cols.keyOffs[this.pos]
  }

  keyEnd (): number {
    return this.cols.keyOffs[this.pos + 1]
  }

  valueSource (): Buffer {
    return this.cols.contents
  }

  valueStart (): number {
    return this.cols.valueStarts[this.pos]
  }

  valueEnd (): number {
    return this.cols.valueEnds[this.pos]
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.unload()
    this.readahead.release()
    releaseColumns(this.cols)
    this.table.unref()
  }

  /** Makes block `i` current (or none if out of range); pos is left for the caller. */
  private load (i: number): void {
    assert(!this.closed, 'iterator used after close')
    this.unload() // stays invalid if the read below throws
    this.blockIdx = i
    if (i < 0 || i >= this.table.dataBlockCount) return
    this.readahead.visit(i)
    const raw = this.table.pinBlock(i, this.readahead)
    try {
      decodeBlockInto(this.table.name, raw.contents, this.table.formatVersion, this.cols)
    } catch (err) {
      this.table.releaseBlock(raw)
      throw err
    }
    this.raw = raw
  }

  private unload (): void {
    const raw = this.raw
    if (raw === null) return
    this.raw = null
    this.table.releaseBlock(raw)
  }

  private skipEmptyForward (): void {
    while (this.raw !== null && this.pos >= this.cols.length) {
      this.load(this.blockIdx + 1)
      this.pos = 0
    }
  }

  private skipEmptyBackward (): void {
    while (this.raw !== null && this.pos < 0) {
      this.load(this.blockIdx - 1)
      this.pos = this.cols.length - 1
    }
  }
}
