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
// value(i) make short-lived views on demand. Views stay valid forever (the
// block is immutable and never reused), which is what the iterator contract asks.
//
// The block cache does not hold decoded blocks: it holds RawBlocks, the raw
// contents with their restart array validated, charged at their raw size. Point
// lookups (seekRawBlock) search a raw block in place, as LevelDB does: a binary
// search over the restart points, then a scan of at most one restart interval,
// validating every entry they read. Iterators decode the blocks they visit.
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
  private readonly contents: Buffer
  private readonly arena: Buffer

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
    let lo = 0
    let hi = this.length
    const bytes = this.bytes
    const offs = this.ints
    const seqs = this.seqs
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

  /**
   * Index of the first entry > (userKey, seq); `length` if none. Sequence numbers
   * are integers, so "> (k, s)" is ">= (k, s - 1)" in internal order (seq descending).
   */
  upperBound (userKey: Uint8Array, seq: number): number {
    return this.lowerBound(userKey, seq - 1)
  }
}

// Scratch space reused by every decode (decoding is synchronous, never
// reentrant); each decode copies the used part into its block's packed buffer.
let keyScratch = new Uint8Array(256) // the full internal key being reconstructed
let arenaScratch = new Uint8Array(16384)
let seqScratch = new Float64Array(1024)
let keyEndScratch = new Int32Array(1024)
let valueStartScratch = new Int32Array(1024)
let valueEndScratch = new Int32Array(1024)
let kindScratch = new Uint8Array(1024)

/** Offsets are kept in Int32Arrays: larger decoded blocks are refused (no writer makes them). */
const MAX_DECODED_BYTES = 0x7fffffff

/** Doubles the per-entry scratch arrays (keeping the first n entries). */
function growEntryScratch (n: number): void {
  const cap = seqScratch.length * 2
  const seqs = new Float64Array(cap)
  seqs.set(seqScratch.subarray(0, n))
  seqScratch = seqs
  const ends = new Int32Array(cap)
  ends.set(keyEndScratch.subarray(0, n))
  keyEndScratch = ends
  const vs = new Int32Array(cap)
  vs.set(valueStartScratch.subarray(0, n))
  valueStartScratch = vs
  const ve = new Int32Array(cap)
  ve.set(valueEndScratch.subarray(0, n))
  valueEndScratch = ve
  const kinds = new Uint8Array(cap)
  kinds.set(kindScratch.subarray(0, n))
  kindScratch = kinds
}

/** Do not pin a one-off huge scratch (a big index block) for the process lifetime. */
function shrinkScratch (): void {
  if (arenaScratch.length > 1 << 20) arenaScratch = new Uint8Array(16384)
  if (keyScratch.length > 1 << 16) keyScratch = new Uint8Array(256)
  if (seqScratch.length > 1 << 16) {
    seqScratch = new Float64Array(1024)
    keyEndScratch = new Int32Array(1024)
    valueStartScratch = new Int32Array(1024)
    valueEndScratch = new Int32Array(1024)
    kindScratch = new Uint8Array(1024)
  }
}

/**
 * Decodes block `contents` of table `name`, whose entries use the layout of
 * table format `version` (1 or 2). Throws corruption on any damage.
 */
export function decodeBlock (name: string, contents: Buffer, version: number = DEFAULT_BLOCK_VERSION): DecodedBlock {
  if (version === 2) return decodeBlockV2(name, contents)
  checkVersion(name, version)
  return decodeBlockV1(name, contents)
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
function decodeBlockV2 (name: string, contents: Buffer): DecodedBlock {
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4

  let arena = arenaScratch
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
      const bigger = new Uint8Array(Math.min(Math.max(keyBytes + keyLen, arena.length * 2), MAX_DECODED_BYTES))
      bigger.set(arena.subarray(0, keyBytes))
      arena = arenaScratch = bigger
    }
    for (let j = 0; j < shared; j++) arena[keyBytes + j] = arena[prevStart + j]
    const at = keyBytes + shared
    for (let j = 0; j < unshared; j++) arena[at + j] = contents[pos + j]
    pos += unshared
    prevStart = keyBytes
    keyBytes += keyLen
    if (n === seqScratch.length) growEntryScratch(n)
    keyEndScratch[n] = keyBytes
    seqScratch[n] = header.seq
    kindScratch[n] = header.kind
    valueStartScratch[n] = pos
    pos += valueLen
    valueEndScratch[n] = pos
    n++
  }
  if (nextRestart !== numRestarts) throw corruption(name, 'block restart array does not match its entries')
  return pack(name, contents, n, arena, keyBytes)
}

/** Version 1 entries: encoded internal keys, rebuilt in a scratch key, then split into user key and trailer. */
function decodeBlockV1 (name: string, contents: Buffer): DecodedBlock {
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4

  let key = keyScratch
  let keyLen = 0
  let arena = arenaScratch
  let keyBytes = 0
  let n = 0

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

    const t = keyLen - TRAILER_SIZE
    const kind = key[t]
    if ((kind !== KIND_DELETE && kind !== KIND_VALUE) || key[t + 7] !== 0) {
      throw corruption(name, `bad key trailer at block offset ${entryStart}`)
    }
    if (keyBytes + t > arena.length) {
      // Prefix sharing lets a damaged small block claim huge keys: bound the arena.
      if (keyBytes + t > MAX_DECODED_BYTES - 25 * (n + 1)) throw corruption(name, 'block keys expand past the decoded size limit')
      const bigger = new Uint8Array(Math.min(Math.max(keyBytes + t, arena.length * 2), MAX_DECODED_BYTES))
      bigger.set(arena.subarray(0, keyBytes))
      arena = arenaScratch = bigger
    }
    for (let j = 0; j < t; j++) arena[keyBytes + j] = key[j]
    keyBytes += t
    if (n === seqScratch.length) growEntryScratch(n)
    keyEndScratch[n] = keyBytes
    // 6-byte little-endian seq after the kind byte (keys.ts trailerSeq).
    seqScratch[n] = key[t + 1] + key[t + 2] * 0x100 + key[t + 3] * 0x10000 + key[t + 4] * 0x1000000 +
      key[t + 5] * 0x100000000 + key[t + 6] * 0x10000000000
    kindScratch[n] = kind
    valueStartScratch[n] = pos
    pos += valueLen
    valueEndScratch[n] = pos
    n++
  }
  if (nextRestart !== numRestarts) throw corruption(name, 'block restart array does not match its entries')
  return pack(name, contents, n, arena, keyBytes)
}

/** Copies the used scratch (n entries, arena[0, keyBytes)) into one exact-size buffer (layout at the top). */
function pack (name: string, contents: Buffer, n: number, arena: Uint8Array, keyBytes: number): DecodedBlock {
  const kindsAt = 8 * n + 4 * (3 * n + 1)
  const arenaAt = kindsAt + n
  if (arenaAt + keyBytes > MAX_DECODED_BYTES) throw corruption(name, 'block keys expand past the decoded size limit')
  const packed = new ArrayBuffer(arenaAt + keyBytes)
  new Float64Array(packed, 0, n).set(seqScratch.subarray(0, n))
  const ints = new Int32Array(packed, 8 * n, 3 * n + 1)
  ints[0] = arenaAt
  for (let i = 0; i < n; i++) ints[i + 1] = arenaAt + keyEndScratch[i]
  ints.set(valueStartScratch.subarray(0, n), n + 1)
  ints.set(valueEndScratch.subarray(0, n), 2 * n + 1)
  const bytes = new Uint8Array(packed)
  bytes.set(kindScratch.subarray(0, n), kindsAt)
  bytes.set(arena.subarray(0, keyBytes), arenaAt)
  shrinkScratch()

  const block = new DecodedBlock(contents, packed, n)
  if (checks.paranoid) {
    const offs = block.ints
    const seqs = block.seqs
    const keys = block.bytes
    for (let i = 1; i < n; i++) {
      const c = compareRange(keys, offs[i - 1], offs[i], keys, offs[i], offs[i + 1])
      if (c > 0 || (c === 0 && seqs[i - 1] <= seqs[i])) throw corruption(name, 'block entries out of order')
    }
  }
  return block
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

  userKey (): Buffer {
    return this.block.userKey(this.pos)
  }

  seq (): number {
    return this.block.seqs[this.pos]
  }

  kind (): number {
    return this.block.kind(this.pos)
  }

  value (): Buffer {
    return this.block.value(this.pos)
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
   * Set once views of the contents may outlive the current synchronous step (the
   * block was decoded for an iterator). Until then the block cache may recycle
   * the contents' memory when it evicts the block: point lookups copy what they
   * return.
   */
  pinned = false

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
