// A block decoded into columns (entry layout in block-builder.ts), searched by
// binary search in internal order. The decoders of each entry layout
// (block-v1.ts, block-v2.ts) fill BlockColumns; block-reader.ts picks one.
//
// Columns are reused: an iterator decodes every data block it visits into
// columns of its own, overwriting the previous block, so moving to another
// block allocates nothing; what it hands out is valid until it moves
// (lib/iterators/internal-iterator.ts). decodeBlock (decoded-block.ts) decodes
// into shared columns, then packs them into a DecodedBlock that stays valid.
import { corruption } from '../errors'
import { compareRange } from '../util/coding'

/** Offsets are kept in Int32Arrays: larger decoded blocks are refused (no writer makes them). */
export const MAX_DECODED_BYTES = 0x7fffffff

const EMPTY_CONTENTS = Buffer.alloc(0)

/**
 * A block decoded into columns that a later decode overwrites (growing them as
 * needed). Entry i:
 *
 *   user key   arena[keyOffs[i], keyOffs[i + 1])  (prefix compression undone)
 *   value      contents[valueStarts[i], valueEnds[i])  (in the raw block, in place)
 *   seqs[i], kinds[i]
 *
 * Everything read from it is valid until the next decode into it.
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
export function lowerBoundIn (bytes: Uint8Array, offs: Int32Array, seqs: Float64Array, n: number, userKey: Uint8Array, seq: number): number {
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

/** Paranoid mode: the n decoded entries are strictly increasing in internal order. */
export function checkOrder (name: string, keys: Uint8Array, offs: Int32Array, seqs: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const c = compareRange(keys, offs[i - 1], offs[i], keys, offs[i], offs[i + 1])
    if (c > 0 || (c === 0 && seqs[i - 1] <= seqs[i])) throw corruption(name, 'block entries out of order')
  }
}
