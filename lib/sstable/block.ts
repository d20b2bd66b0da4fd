// Reading blocks (layout in block-builder.ts): a block is decoded once into a
// compact columnar form, then searched by binary search in internal order.
// Both entry layouts (table format versions 1 and 2) are read; the caller says
// which one a block uses (its table's footer version). Each version has its own
// decoder and in-place search, so neither hot loop tests the version per entry.
// Decoding validates every varint, length and restart offset, so a damaged block
// (read with checksums off, or damaged in a way the CRC cannot see) is a
// corruption error naming the table, never a wrong key or a RangeError.
//
// Decoded form: no object per entry (the block cache holds many blocks, and every
// per-entry object would be long-lived garbage-collector work), and few objects
// per block. Besides the raw contents (kept: values are read from it in place),
// each block has ONE packed ArrayBuffer, seen through three views:
//
//   seqs   Float64Array  [0, n)            sequence numbers
//   ints   Int32Array    [0, n]            key offsets: user key i = bytes[ints[i], ints[i + 1])
//                        [n + 1, 2n + 1)   value starts: value i = contents[start, end)
//                        [2n + 1, 3n + 1)  value ends
//   bytes  Uint8Array    [kindsAt, + n)    kinds
//   (whole buffer)       [kindsAt + n, end) the key arena: every user key back to
//                                          back, prefix compression undone
//
// Searches compare the target against arena bytes in place; userKey(i) and
// value(i) make short-lived views on demand. A DecodedBlock's views stay valid
// forever (its raw block is pinned for good): index blocks and repair use it.
//
// Iterators decode the data blocks they visit into BlockColumns of their own
// instead (the same columns in growable arrays, overwritten by the next
// block), so moving to another block allocates nothing; what they hand out is
// valid until they move (lib/iterators/internal-iterator.ts).
//
// The block cache does not hold decoded blocks: it holds RawBlocks, the raw
// contents with their restart array validated, charged at their raw size. Point
// lookups (seekRawBlock) search a raw block in place, as LevelDB does: a binary
// search over the restart points, then a scan of at most one restart interval,
// validating every entry they read.
import { corruption } from '../errors'
import { checks } from '../invariants'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, TRAILER_SIZE } from '../keys'
import { compareRange, getFixed32, getVarint, varintOut } from '../util/coding'

/** The entry layout blocks are read with when the caller does not say (the current table format). */
export const DEFAULT_BLOCK_VERSION = 2

/** Largest valid version 2 tag: seq MAX_SEQ, kind 1. */
const MAX_TAG = MAX_SEQ * 2 + 1

/**
 * An entry's header, as read by readEntryHeader / readEntryHeaderV2 (one shared
 * object: no allocation per entry). seq and kind: version 2 only (from the tag).
 */
const header = { shared: 0, unshared: 0, valueLen: 0, pos: 0, seq: 0, kind: 0 }

/** Throws unless `version` is a block entry layout this code reads (1 or 2). */
function checkVersion (name: string, version: number): void {
  if (version !== 1 && version !== 2) throw corruption(name, `unsupported table format version ${version}`)
}

/**
 * Reads the three varints that start the entry at `pos` (shared, unshared and
 * value lengths) into `header`, with `header.pos` at the key's unshared bytes;
 * the key bytes and the value must fit before `limit`. Damage is corruption.
 */
function readEntryHeader (c: Uint8Array, pos: number, limit: number, name: string): void {
  const entryStart = pos
  if (!getVarint(c, pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.shared = varintOut.value
  if (!getVarint(c, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.unshared = varintOut.value
  if (!getVarint(c, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.valueLen = varintOut.value
  pos = varintOut.pos
  if (header.unshared > limit - pos || header.valueLen > limit - pos - header.unshared) {
    throw corruption(name, `entry at block offset ${entryStart} runs past the end of the block`)
  }
  header.pos = pos
}

/**
 * Version 2: reads the four varints that start the entry at `pos` (shared,
 * unshared and value lengths, tag) into `header`, with `header.pos` at the key's
 * unshared bytes and the tag split into seq and kind; the key bytes and the
 * value must fit before `limit`, and the tag must be at most MAX_TAG. Damage is
 * corruption.
 */
function readEntryHeaderV2 (c: Uint8Array, pos: number, limit: number, name: string): void {
  const entryStart = pos
  if (!getVarint(c, pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.shared = varintOut.value
  if (!getVarint(c, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.unshared = varintOut.value
  if (!getVarint(c, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
  header.valueLen = varintOut.value
  if (!getVarint(c, varintOut.pos, limit)) throw corruption(name, `bad entry tag at block offset ${entryStart}`)
  const tag = varintOut.value
  pos = varintOut.pos
  if (tag > MAX_TAG) throw corruption(name, `bad entry tag at block offset ${entryStart}`)
  const kind = tag % 2
  header.kind = kind
  header.seq = (tag - kind) / 2
  if (header.unshared > limit - pos || header.valueLen > limit - pos - header.unshared) {
    throw corruption(name, `entry at block offset ${entryStart} runs past the end of the block`)
  }
  header.pos = pos
}

export { compareRange }
import type { InternalIterator } from '../iterators/internal-iterator'

/**
 * Memory per decoded block beyond its contents and packed buffer: the
 * DecodedBlock, its three views, two ArrayBuffer objects, the 5 trailer bytes
 * kept with the contents and the block cache's entry (~650 B on the JS heap,
 * measured by the sstable test "decoded blocks: the cache charge matches live
 * memory"), plus the off-heap bookkeeping of the two ArrayBuffers (~120 B each
 * on Node 20, which heapUsed and arrayBuffers do not show).
 */
const BLOCK_OVERHEAD = 896

export class DecodedBlock {
  readonly length: number
  /** Approximate memory held (bytes), for the block cache. */
  readonly charge: number
  readonly seqs: Float64Array
  /** Key offsets, value starts, value ends (layout at the top of the file). */
  readonly ints: Int32Array
  /** The whole packed buffer: kinds, then the key arena. */
  readonly bytes: Uint8Array
  private readonly kindsAt: number
  // Views are made with Buffer#subarray (cheaper than Buffer.from(arrayBuffer, ...)).
  /** The raw block: value i is contents[ints[n + 1 + i], ints[2n + 1 + i]). */
  readonly contents: Buffer
  /** The whole packed buffer as a Buffer: user key i is arena[ints[i], ints[i + 1]). */
  readonly arena: Buffer

  /** @internal Use decodeBlock. Nothing here may be mutated. */
  constructor (contents: Buffer, packed: ArrayBuffer, n: number) {
    this.length = n
    this.seqs = new Float64Array(packed, 0, n)
    this.ints = new Int32Array(packed, 8 * n, 3 * n + 1)
    this.bytes = new Uint8Array(packed)
    this.kindsAt = 8 * n + 4 * (3 * n + 1)
    this.contents = contents
    this.arena = Buffer.from(packed)
    this.charge = contents.length + packed.byteLength + BLOCK_OVERHEAD
  }

  /** User key of entry i (a view into the block's arena). */
  userKey (i: number): Buffer {
    return this.arena.subarray(this.ints[i], this.ints[i + 1])
  }

  /** Value of entry i (a view into the block's contents). */
  value (i: number): Buffer {
    return this.contents.subarray(this.ints[this.length + 1 + i], this.ints[2 * this.length + 1 + i])
  }

  seq (i: number): number {
    return this.seqs[i]
  }

  kind (i: number): number {
    return this.bytes[this.kindsAt + i]
  }

  /** Compares the user key of entry i with userKey (bytewise). */
  compareKey (i: number, userKey: Uint8Array): number {
    return compareRange(this.bytes, this.ints[i], this.ints[i + 1], userKey, 0, userKey.length)
  }

  /** Index of the first entry >= (userKey, seq); `length` if none. */
  lowerBound (userKey: Uint8Array, seq: number): number {
    return lowerBoundIn(this.bytes, this.ints, this.seqs, this.length, userKey, seq)
  }

  /**
   * Index of the first entry > (userKey, seq); `length` if none. Sequence numbers
   * are integers, so "> (k, s)" is ">= (k, s - 1)" in internal order (seq descending).
   */
  upperBound (userKey: Uint8Array, seq: number): number {
    return this.lowerBound(userKey, seq - 1)
  }
}

/** Offsets are kept in Int32Arrays: larger decoded blocks are refused (no writer makes them). */
const MAX_DECODED_BYTES = 0x7fffffff

/**
 * A block decoded into columns that a later decode overwrites (growing them as
 * needed): an iterator decodes every block it visits into its own BlockColumns,
 * so moving to the next block allocates nothing. Entry i:
 *
 *   user key   arena[keyOffs[i], keyOffs[i + 1])  (prefix compression undone)
 *   value      contents[valueStarts[i], valueEnds[i])  (in the raw block, in place)
 *   seqs[i], kinds[i]
 *
 * Everything read from it is valid until its next load().
 */
export class BlockColumns {
  length = 0
  arena: Buffer
  seqs: Float64Array
  /** length + 1 offsets into the arena. */
  keyOffs: Int32Array
  kinds: Uint8Array
  valueStarts: Int32Array
  valueEnds: Int32Array
  /** The raw block the values are read from. */
  contents: Buffer = EMPTY_CONTENTS

  constructor (entries = 64, arenaBytes = 2048) {
    this.arena = Buffer.allocUnsafeSlow(arenaBytes)
    this.seqs = new Float64Array(entries)
    this.keyOffs = new Int32Array(entries + 1)
    this.kinds = new Uint8Array(entries)
    this.valueStarts = new Int32Array(entries)
    this.valueEnds = new Int32Array(entries)
  }

  /** Decodes block `contents` of table `name` (entry layout of table format `version`) into these columns. */
  load (name: string, contents: Buffer, version: number): void {
    if (version === 2) decodeV2Into(name, contents, this)
    else {
      checkVersion(name, version)
      decodeV1Into(name, contents, this)
    }
  }

  /** Index of the first entry >= (userKey, seq); `length` if none. */
  lowerBound (userKey: Uint8Array, seq: number): number {
    return lowerBoundIn(this.arena, this.keyOffs, this.seqs, this.length, userKey, seq)
  }

  /** Index of the first entry > (userKey, seq); `length` if none. */
  upperBound (userKey: Uint8Array, seq: number): number {
    return lowerBoundIn(this.arena, this.keyOffs, this.seqs, this.length, userKey, seq - 1)
  }

  /** Doubles the per-entry columns, keeping the first n entries. */
  growEntries (n: number): void {
    const cap = this.seqs.length * 2
    const seqs = new Float64Array(cap)
    seqs.set(this.seqs.subarray(0, n))
    this.seqs = seqs
    const offs = new Int32Array(cap + 1)
    offs.set(this.keyOffs.subarray(0, n + 1))
    this.keyOffs = offs
    const vs = new Int32Array(cap)
    vs.set(this.valueStarts.subarray(0, n))
    this.valueStarts = vs
    const ve = new Int32Array(cap)
    ve.set(this.valueEnds.subarray(0, n))
    this.valueEnds = ve
    const kinds = new Uint8Array(cap)
    kinds.set(this.kinds.subarray(0, n))
    this.kinds = kinds
  }

  /** An arena of at least `need` bytes, keeping its first `keep` bytes. */
  growArena (need: number, keep: number): Buffer {
    const bigger = Buffer.allocUnsafeSlow(Math.min(Math.max(need, this.arena.length * 2), MAX_DECODED_BYTES))
    this.arena.copy(bigger, 0, 0, keep)
    this.arena = bigger
    return bigger
  }
}

const EMPTY_CONTENTS = Buffer.alloc(0)

/**
 * Columns of closed iterators, for the next ones (a seek-then-read-a-few
 * workload opens an iterator per seek; new columns cost ~2 µs). Columns grown
 * past the initial size for a large block are not kept.
 */
const spareColumns: BlockColumns[] = []
const MAX_SPARE_COLUMNS = 16

/** Columns for an iterator: spare ones if any. Give them back with releaseColumns(). */
export function takeColumns (): BlockColumns {
  return spareColumns.pop() ?? new BlockColumns()
}

/** Returns columns taken with takeColumns(); the caller must not use them any more. */
export function releaseColumns (cols: BlockColumns): void {
  cols.contents = EMPTY_CONTENTS
  cols.length = 0
  if (spareColumns.length < MAX_SPARE_COLUMNS && cols.seqs.length <= 1024 && cols.arena.length <= 65536) spareColumns.push(cols)
}

/**
 * Index of the first of n entries >= (userKey, seq) in internal order, the user
 * key of entry i being bytes[offs[i], offs[i + 1]); n if none.
 */
function lowerBoundIn (bytes: Uint8Array, offs: Int32Array, seqs: Float64Array, n: number, userKey: Uint8Array, seq: number): number {
  let lo = 0
  let hi = n
  const keyLen = userKey.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    // entry(mid) < target: user key smaller, or same user key and larger seq.
    const c = compareRange(bytes, offs[mid], offs[mid + 1], userKey, 0, keyLen)
    if (c < 0 || (c === 0 && seqs[mid] > seq)) lo = mid + 1
    else hi = mid
  }
  return lo
}

// The columns every decodeBlock() decodes into before packing (decoding is
// synchronous, never reentrant), and the version 1 decoder's key scratch.
let scratch = new BlockColumns(1024, 16384)
let keyScratch = new Uint8Array(256) // the full internal key being reconstructed

/** Do not pin a one-off huge scratch (a big index block) for the process lifetime. */
function shrinkScratch (): void {
  if (scratch.arena.length > 1 << 20 || scratch.seqs.length > 1 << 16) scratch = new BlockColumns(1024, 16384)
  if (keyScratch.length > 1 << 16) keyScratch = new Uint8Array(256)
}

/**
 * Decodes block `contents` of table `name`, whose entries use the layout of
 * table format `version` (1 or 2). Throws corruption on any damage.
 */
export function decodeBlock (name: string, contents: Buffer, version: number = DEFAULT_BLOCK_VERSION): DecodedBlock {
  scratch.load(name, contents, version)
  return pack(name, contents, scratch)
}

/** Checks a block's size and restart count; returns the end of its entries. */
function entriesLimit (name: string, contents: Buffer): number {
  const size = contents.length
  if (size < 4) throw corruption(name, 'block too short for its restart count')
  if (size > MAX_DECODED_BYTES) throw corruption(name, `block of ${size} bytes is too large`)
  const numRestarts = getFixed32(contents, size - 4)
  // The restart array must fit: 4 bytes each plus the count.
  if (numRestarts > (size - 4) / 4) throw corruption(name, `block restart count ${numRestarts} exceeds block size ${size}`)
  return size - 4 - numRestarts * 4
}

/** Version 2 entries: user keys rebuilt straight into the arena, seq and kind from the tag. */
function decodeV2Into (name: string, contents: Buffer, t: BlockColumns): void {
  t.length = 0
  t.contents = contents
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4

  let arena = t.arena
  let seqs = t.seqs
  let keyOffs = t.keyOffs
  let kinds = t.kinds
  let valueStarts = t.valueStarts
  let valueEnds = t.valueEnds
  let cap = seqs.length
  keyOffs[0] = 0
  let keyBytes = 0 // end of the arena; the previous key is [prevStart, keyBytes)
  let prevStart = 0
  let n = 0

  let nextRestart = 0
  let pos = 0
  while (pos < limit) {
    const entryStart = pos
    readEntryHeaderV2(contents, pos, limit, name)
    const shared = header.shared
    const unshared = header.unshared
    const valueLen = header.valueLen
    pos = header.pos
    if (shared > keyBytes - prevStart) throw corruption(name, `entry shares ${shared} bytes with a ${keyBytes - prevStart}-byte key`)
    if (nextRestart < numRestarts && getFixed32(contents, limit + nextRestart * 4) === entryStart) {
      if (shared !== 0) throw corruption(name, `restart entry at block offset ${entryStart} shares bytes`)
      nextRestart++
    } else if (entryStart === 0) {
      throw corruption(name, 'first block entry is not a restart point')
    }
    const keyLen = shared + unshared
    if (keyBytes + keyLen > arena.length) {
      // Prefix sharing lets a damaged small block claim huge keys: bound the arena.
      if (keyBytes + keyLen > MAX_DECODED_BYTES - 25 * (n + 1)) throw corruption(name, 'block keys expand past the decoded size limit')
      arena = t.growArena(keyBytes + keyLen, keyBytes)
    }
    for (let j = 0; j < shared; j++) arena[keyBytes + j] = arena[prevStart + j]
    const at = keyBytes + shared
    for (let j = 0; j < unshared; j++) arena[at + j] = contents[pos + j]
    pos += unshared
    prevStart = keyBytes
    keyBytes += keyLen
    if (n === cap) {
      t.growEntries(n)
      seqs = t.seqs
      keyOffs = t.keyOffs
      kinds = t.kinds
      valueStarts = t.valueStarts
      valueEnds = t.valueEnds
      cap = seqs.length
    }
    keyOffs[n + 1] = keyBytes
    seqs[n] = header.seq
    kinds[n] = header.kind
    valueStarts[n] = pos
    pos += valueLen
    valueEnds[n] = pos
    n++
  }
  if (nextRestart !== numRestarts) throw corruption(name, 'block restart array does not match its entries')
  t.length = n
  if (checks.paranoid) checkOrder(name, arena, keyOffs, seqs, n)
}

/** Version 1 entries: encoded internal keys, rebuilt in a scratch key, then split into user key and trailer. */
function decodeV1Into (name: string, contents: Buffer, t: BlockColumns): void {
  t.length = 0
  t.contents = contents
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4

  let key = keyScratch
  let keyLen = 0
  let arena = t.arena
  let keyBytes = 0
  let n = 0
  t.keyOffs[0] = 0

  let nextRestart = 0
  let pos = 0
  while (pos < limit) {
    const entryStart = pos
    readEntryHeader(contents, pos, limit, name)
    const shared = header.shared
    const unshared = header.unshared
    const valueLen = header.valueLen
    pos = header.pos
    if (shared > keyLen) throw corruption(name, `entry shares ${shared} bytes with a ${keyLen}-byte key`)
    if (nextRestart < numRestarts && getFixed32(contents, limit + nextRestart * 4) === entryStart) {
      if (shared !== 0) throw corruption(name, `restart entry at block offset ${entryStart} shares bytes`)
      nextRestart++
    } else if (entryStart === 0) {
      throw corruption(name, 'first block entry is not a restart point')
    }
    const newLen = shared + unshared
    if (newLen < TRAILER_SIZE) throw corruption(name, `key of ${newLen} bytes is shorter than its trailer`)
    if (newLen > key.length) {
      const bigger = new Uint8Array(Math.max(newLen, key.length * 2))
      bigger.set(key.subarray(0, shared))
      key = keyScratch = bigger
    }
    for (let j = 0; j < unshared; j++) key[shared + j] = contents[pos + j]
    keyLen = newLen
    pos += unshared

    const k = keyLen - TRAILER_SIZE
    const kind = key[k]
    if ((kind !== KIND_DELETE && kind !== KIND_VALUE) || key[k + 7] !== 0) {
      throw corruption(name, `bad key trailer at block offset ${entryStart}`)
    }
    if (keyBytes + k > arena.length) {
      // Prefix sharing lets a damaged small block claim huge keys: bound the arena.
      if (keyBytes + k > MAX_DECODED_BYTES - 25 * (n + 1)) throw corruption(name, 'block keys expand past the decoded size limit')
      arena = t.growArena(keyBytes + k, keyBytes)
    }
    for (let j = 0; j < k; j++) arena[keyBytes + j] = key[j]
    keyBytes += k
    if (n === t.seqs.length) t.growEntries(n)
    t.keyOffs[n + 1] = keyBytes
    // 6-byte little-endian seq after the kind byte (keys.ts trailerSeq).
    t.seqs[n] = key[k + 1] + key[k + 2] * 0x100 + key[k + 3] * 0x10000 + key[k + 4] * 0x1000000 +
      key[k + 5] * 0x100000000 + key[k + 6] * 0x10000000000
    t.kinds[n] = kind
    t.valueStarts[n] = pos
    pos += valueLen
    t.valueEnds[n] = pos
    n++
  }
  if (nextRestart !== numRestarts) throw corruption(name, 'block restart array does not match its entries')
  t.length = n
  if (checks.paranoid) checkOrder(name, arena, t.keyOffs, t.seqs, n)
}

/** Paranoid mode: entries strictly increasing in internal order. */
function checkOrder (name: string, keys: Uint8Array, offs: Int32Array, seqs: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const c = compareRange(keys, offs[i - 1], offs[i], keys, offs[i], offs[i + 1])
    if (c > 0 || (c === 0 && seqs[i - 1] <= seqs[i])) throw corruption(name, 'block entries out of order')
  }
}

/** Copies decoded columns into one exact-size buffer (layout at the top). */
function pack (name: string, contents: Buffer, t: BlockColumns): DecodedBlock {
  const n = t.length
  const keyBytes = t.keyOffs[n]
  const kindsAt = 8 * n + 4 * (3 * n + 1)
  const arenaAt = kindsAt + n
  if (arenaAt + keyBytes > MAX_DECODED_BYTES) throw corruption(name, 'block keys expand past the decoded size limit')
  const packed = new ArrayBuffer(arenaAt + keyBytes)
  new Float64Array(packed, 0, n).set(t.seqs.subarray(0, n))
  const ints = new Int32Array(packed, 8 * n, 3 * n + 1)
  const keyOffs = t.keyOffs
  for (let i = 0; i <= n; i++) ints[i] = arenaAt + keyOffs[i]
  ints.set(t.valueStarts.subarray(0, n), n + 1)
  ints.set(t.valueEnds.subarray(0, n), 2 * n + 1)
  const bytes = new Uint8Array(packed)
  bytes.set(t.kinds.subarray(0, n), kindsAt)
  bytes.set(t.arena.subarray(0, keyBytes), arenaAt)
  shrinkScratch()
  return new DecodedBlock(contents, packed, n)
}

/** InternalIterator over one decoded block. */
export class BlockIterator implements InternalIterator {
  private pos = -1

  constructor (private readonly block: DecodedBlock) {}

  valid (): boolean {
    return this.pos >= 0 && this.pos < this.block.length
  }

  seekToFirst (): void {
    this.pos = 0
  }

  seekToLast (): void {
    this.pos = this.block.length - 1
  }

  seek (userKey: Uint8Array, seq: number): void {
    this.pos = this.block.lowerBound(userKey, seq)
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    this.pos = this.block.upperBound(userKey, seq) - 1
  }

  next (): void {
    if (++this.pos >= this.block.length) this.pos = -1
  }

  prev (): void {
    this.pos--
  }

  seq (): number {
    return this.block.seqs[this.pos]
  }

  kind (): number {
    return this.block.kind(this.pos)
  }

  keySource (): Buffer {
    return this.block.arena
  }

  keyStart (): number {
    return this.block.ints[this.pos]
  }

  keyEnd (): number {
    return this.block.ints[this.pos + 1]
  }

  valueSource (): Buffer {
    return this.block.contents
  }

  valueStart (): number {
    return this.block.ints[this.block.length + 1 + this.pos]
  }

  valueEnd (): number {
    return this.block.ints[2 * this.block.length + 1 + this.pos]
  }

  close (): void {
    this.pos = -1
  }
}

/**
 * Memory per cached raw block beyond its contents: the RawBlock, the contents
 * view and its ArrayBuffer, the 5 trailer bytes read with the block and the
 * block cache's entry (measured by the sstable test "raw blocks: the cache
 * charge matches live memory"), plus the off-heap bookkeeping of the ArrayBuffer.
 */
const RAW_BLOCK_OVERHEAD = 384

/** A data block as the block cache holds it: raw contents, restart array checked. */
export class RawBlock {
  /** Approximate memory held (bytes), for the block cache. */
  readonly charge: number
  /**
   * Set once views of the contents may outlive every reader (the block was
   * decoded into a DecodedBlock, whose views stay valid forever): its memory is
   * then never recycled.
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
    /** Entry layout: table format version 1 or 2. */
    readonly version: number
  ) {
    this.charge = contents.buffer.byteLength + RAW_BLOCK_OVERHEAD
  }
}

/**
 * Checks the framing of block `contents` of table `name` (restart count and
 * offsets: increasing, inside the entries, the first at 0) without decoding the
 * entries; lookups validate the entries they read. Throws corruption on damage.
 */
export function parseRawBlock (name: string, contents: Buffer, version: number = DEFAULT_BLOCK_VERSION): RawBlock {
  checkVersion(name, version)
  const size = contents.length
  if (size < 4) throw corruption(name, 'block too short for its restart count')
  if (size > MAX_DECODED_BYTES) throw corruption(name, `block of ${size} bytes is too large`)
  const numRestarts = getFixed32(contents, size - 4)
  if (numRestarts > (size - 4) / 4) throw corruption(name, `block restart count ${numRestarts} exceeds block size ${size}`)
  const limit = size - 4 - numRestarts * 4
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

// The key being reconstructed by a scan (full internal key, prefix compression undone).
let scanKey = new Uint8Array(256)

/**
 * Finds the first entry >= (userKey, seq) in internal order in `block` and, if
 * its user key is `userKey`, reports it in rawSeekOut and returns true (false if
 * there is no such entry). Validates every entry it reads: damage is a
 * corruption error naming `name`, never a wrong answer.
 */
export function seekRawBlock (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
  return block.version === 2 ? seekRawBlockV2(name, block, userKey, seq) : seekRawBlockV1(name, block, userKey, seq)
}

/** seekRawBlock over version 2 entries (user key + tag). */
function seekRawBlockV2 (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
  const c = block.contents
  const limit = block.limit
  const keyLen = userKey.length
  // Binary search: the last restart point whose key is < the target (or the first).
  let lo = 0
  let hi = block.numRestarts - 1
  if (hi < 0) return false
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1
    const entryStart = getFixed32(c, limit + 4 * mid)
    // Restart entry: shared (must be 0), unshared, value length, tag. One-byte
    // varints are read inline: the entry starts before `limit` (parseRawBlock),
    // so its first four bytes lie inside the contents (the restart count is
    // after `limit`); longer varints are read bounded by `limit`, and the
    // position is checked against `limit` before any key byte is read.
    if (c[entryStart] !== 0) throw corruption(name, `restart entry at block offset ${entryStart} shares bytes`)
    let pos = entryStart + 1
    let unshared = c[pos++]
    if (unshared >= 128) {
      if (!getVarint(c, pos - 1, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
      unshared = varintOut.value
      pos = varintOut.pos
    }
    if (c[pos++] >= 128) {
      if (!getVarint(c, pos - 1, limit)) throw corruption(name, `bad entry header at block offset ${entryStart}`)
      pos = varintOut.pos
    }
    const tagAt = pos
    while (pos < limit && c[pos] >= 128) pos++
    pos++ // past the tag's last byte
    if (pos > limit || unshared > limit - pos) throw corruption(name, `bad restart entry at block offset ${entryStart}`)
    let cmp = compareRange(c, pos, pos + unshared, userKey, 0, keyLen)
    if (cmp === 0) {
      if (!getVarint(c, tagAt, limit) || varintOut.value > MAX_TAG) throw corruption(name, `bad entry tag at block offset ${entryStart}`)
      const tag = varintOut.value
      cmp = (tag - tag % 2) / 2 > seq ? -1 : 1 // a larger seq sorts first
    }
    if (cmp < 0) lo = mid
    else hi = mid - 1
  }
  // Scan forward from that restart point, without rebuilding keys. `matched`:
  // how many leading bytes the previous entry's user key P shares with the
  // target T. P is below T in one of three ways: P[matched] < T[matched]; P is a
  // proper prefix of T (matched = |P|); or P = T with a seq above the reader's
  // (matched = |P| = |T|). An entry that shares more than `matched` bytes with P
  // keeps P's smaller byte at `matched` (only the first way allows it), so it is
  // below T too and its bytes need not be read; otherwise its first `shared`
  // bytes equal T's and its key bytes are compared with T from there.
  let pos = getFixed32(c, limit + 4 * lo)
  let prevLen = -1 // no previous entry: the first must share nothing
  let matched = 0
  while (pos < limit) {
    // The entry's header, read inline in the common case (shared and unshared
    // lengths of one varint byte, a value length of one or two): readEntryHeaderV2
    // (a call, and its results through a shared object) costs about a third of a
    // cached point read otherwise. Anything else, and anything out of bounds,
    // goes to readEntryHeaderV2, which reads every form and reports damage.
    let shared = c[pos]
    let unshared = c[pos + 1]
    let valueLen = c[pos + 2]
    let p = pos + 3
    if (valueLen >= 128) valueLen = (valueLen & 127) | (c[p++] << 7)
    let tag = 0
    let mul = 1
    let t = 128
    for (let i = 0; i < 7 && t >= 128; i++) {
      t = c[p++]
      tag += (t & 127) * mul
      mul *= 128
    }
    let entrySeq: number
    let kind: number
    if (shared < 128 && unshared < 128 && valueLen < 16384 && t < 128 && p <= limit && tag <= MAX_TAG &&
        unshared <= limit - p && valueLen <= limit - p - unshared) {
      kind = tag % 2
      entrySeq = (tag - kind) / 2
    } else {
      readEntryHeaderV2(c, pos, limit, name)
      shared = header.shared
      unshared = header.unshared
      valueLen = header.valueLen
      entrySeq = header.seq
      kind = header.kind
      p = header.pos
    }
    const delta = p
    if (prevLen < 0 ? shared !== 0 : shared > prevLen) throw corruption(name, `entry shares ${shared} bytes with a ${prevLen < 0 ? 0 : prevLen}-byte key`)
    prevLen = shared + unshared
    if (shared <= matched) {
      const room = keyLen - shared
      const max = unshared < room ? unshared : room
      let j = 0
      while (j < max && c[delta + j] === userKey[shared + j]) j++
      if (j < max) {
        if (c[delta + j] > userKey[shared + j]) return false // past the target
        matched = shared + j
      } else if (j < unshared) {
        return false // T is a proper prefix of this key: past the target
      } else {
        matched = shared + j
        if (matched === keyLen && entrySeq <= seq) {
          rawSeekOut.kind = kind
          rawSeekOut.seq = entrySeq
          rawSeekOut.valueStart = delta + unshared
          rawSeekOut.valueEnd = delta + unshared + valueLen
          return true
        }
      }
    }
    pos = delta + unshared + valueLen
  }
  return false
}

/** seekRawBlock over version 1 entries (encoded internal keys). */
function seekRawBlockV1 (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
  const c = block.contents
  const limit = block.limit
  const keyLen = userKey.length
  if (scanKey.length > 1 << 16) scanKey = new Uint8Array(256)
  // Binary search: the last restart point whose key is < the target (or the first).
  let lo = 0
  let hi = block.numRestarts - 1
  if (hi < 0) return false
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1
    let pos = getFixed32(c, limit + 4 * mid)
    // Restart entry: shared (must be 0), unshared, value length.
    if (c[pos] !== 0) throw corruption(name, `restart entry at block offset ${pos} shares bytes`)
    pos++
    let unshared = c[pos++]
    if (unshared >= 128) {
      if (!getVarint(c, pos - 1, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
      unshared = varintOut.value
      pos = varintOut.pos
    }
    let v = c[pos++]
    if (v >= 128 && !getVarint(c, pos - 1, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
    if (v >= 128) pos = varintOut.pos
    if (unshared < TRAILER_SIZE || unshared > limit - pos) throw corruption(name, `bad restart entry at block offset ${pos}`)
    const t = pos + unshared - TRAILER_SIZE
    let cmp = compareRange(c, pos, t, userKey, 0, keyLen)
    if (cmp === 0) {
      const s = c[t + 1] + c[t + 2] * 0x100 + c[t + 3] * 0x10000 + c[t + 4] * 0x1000000 +
        c[t + 5] * 0x100000000 + c[t + 6] * 0x10000000000
      cmp = s > seq ? -1 : 1 // a larger seq sorts first
    }
    if (cmp < 0) lo = mid
    else hi = mid - 1
  }
  // Scan forward from that restart point.
  let key = scanKey
  let len = 0
  let pos = getFixed32(c, limit + 4 * lo)
  let first = true
  while (pos < limit) {
    const entryStart = pos
    readEntryHeader(c, pos, limit, name)
    const shared = header.shared
    const unshared = header.unshared
    const valueLen = header.valueLen
    pos = header.pos
    if (shared > len || (first && shared !== 0)) throw corruption(name, `entry shares ${shared} bytes with a ${first ? 0 : len}-byte key`)
    first = false
    const newLen = shared + unshared
    if (newLen < TRAILER_SIZE) throw corruption(name, `key of ${newLen} bytes is shorter than its trailer`)
    if (newLen > key.length) {
      const bigger = new Uint8Array(Math.max(newLen, key.length * 2))
      bigger.set(key.subarray(0, shared))
      key = scanKey = bigger
    }
    for (let j = 0; j < unshared; j++) key[shared + j] = c[pos + j]
    len = newLen
    pos += unshared
    const t = len - TRAILER_SIZE
    const kind = key[t]
    if ((kind !== KIND_DELETE && kind !== KIND_VALUE) || key[t + 7] !== 0) {
      throw corruption(name, `bad key trailer at block offset ${entryStart}`)
    }
    const cmp = compareRange(key, 0, t, userKey, 0, keyLen)
    if (cmp > 0) return false
    if (cmp === 0) {
      const s = key[t + 1] + key[t + 2] * 0x100 + key[t + 3] * 0x10000 + key[t + 4] * 0x1000000 +
        key[t + 5] * 0x100000000 + key[t + 6] * 0x10000000000
      if (s <= seq) {
        rawSeekOut.kind = kind
        rawSeekOut.seq = s
        rawSeekOut.valueStart = pos
        rawSeekOut.valueEnd = pos + valueLen
        return true
      }
    }
    pos += valueLen
  }
  return false
}
