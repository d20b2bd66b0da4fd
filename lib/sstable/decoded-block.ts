// A block decoded once for good into one packed buffer, for blocks that are
// searched for as long as their table is open (every table's index block) and
// for repair, which reads data blocks whole. Iterators over data blocks use
// reusable columns instead (block-columns.ts), and point lookups the raw block
// (raw-block.ts).
//
// Packed form: no object per entry (every open table keeps its index decoded,
// and every per-entry object would be long-lived garbage-collector work), and
// few objects per block. Besides the raw contents (kept: values are read from
// it in place), each block has ONE packed ArrayBuffer, seen through three views:
//
//   seqs   Float64Array  [0, n)            sequence numbers
//   ints   Int32Array    [0, n]            key offsets: user key i = bytes[ints[i], ints[i + 1])
//                        [n + 1, 2n + 1)   value starts: value i = contents[start, end)
//                        [2n + 1, 3n + 1)  value ends
//   bytes  Uint8Array    [kindsAt, + n)    kinds
//   (whole buffer)       [kindsAt + n, end) the key arena: every user key back to
//                                          back, prefix compression undone
//
// Searches compare the target against arena bytes in place. A DecodedBlock
// stays valid forever, and so do the ranges its BlockIterator hands out: its
// contents are never recycled (Table.dataBlock pins the raw block for good).
import { corruption } from '../errors'
import type { InternalIterator } from '../iterators/internal-iterator'
import { BlockColumns, MAX_DECODED_BYTES, lowerBoundIn } from './block-columns'
import { decodeBlockInto } from './block-reader'
import { FORMAT_VERSION } from './format'

export class DecodedBlock {
  readonly length: number
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

// The columns every decodeBlock() decodes into before packing (decoding is
// synchronous, never reentrant).
let scratch = new BlockColumns(1024, 16384)

/**
 * Decodes block `contents` of table `name`, whose entries use the layout of
 * table format `version`. Throws corruption on any damage.
 */
export function decodeBlock (name: string, contents: Buffer, version: number = FORMAT_VERSION): DecodedBlock {
  decodeBlockInto(name, contents, version, scratch)
  const block = pack(name, contents, scratch)
  // Do not pin a one-off huge scratch (a big index block) for the process lifetime.
  if (scratch.arena.length > 1 << 20 || scratch.seqs.length > 1 << 16) scratch = new BlockColumns(1024, 16384)
  return block
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
