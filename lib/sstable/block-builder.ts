// Builds data and index blocks. Two entry layouts exist, chosen by the table's
// format version (FORMAT_VERSION in format.ts, recorded in the footer); every
// block of a table (data and index) uses its table's layout. The block framing
// is the same in both:
//
//   +---------+---------+-----+-------------+-------------+-----+---------------+
//   | entry 0 | entry 1 | ... | restart 0   | restart 1   | ... | restart count |
//   +---------+---------+-----+-------------+-------------+-----+---------------+
//                               fixed32 each: offset of an entry     fixed32
//
// Version 2 entry (written by this code, in tables of format 2 and 3; read by block-v2.ts):
//
//   +-----------------+-------------------+--------------------+--------------+-----------+-------+
//   | shared (varint) | unshared (varint) | value len (varint) | tag (varint) | key delta | value |
//   +-----------------+-------------------+--------------------+--------------+-----------+-------+
//                                                                             unshared B  value len B
//
//   Keys are USER keys: `shared` counts leading bytes shared with the previous
//   entry's user key, `key delta` holds the rest. tag = seq * 2 + kind
//   (kind: KIND_DELETE 0, KIND_VALUE 1; seq <= MAX_SEQ = 2^48 - 1, so the tag is
//   below 2^49: at most 7 varint bytes, and an exact JS number). Small seqs
//   cost little: seq < 2^6 takes 1 byte, < 2^13 2 bytes, < 2^20 3 bytes,
//   instead of version 1's fixed 8-byte trailer. A tag above 2^49 - 1 is damage.
//
// Version 1 entry (read by block-v1.ts; written only when a test asks for it):
//
//   +-----------------+-------------------+--------------------+-------------+-------+
//   | shared (varint) | unshared (varint) | value len (varint) | key delta   | value |
//   +-----------------+-------------------+--------------------+-------------+-------+
//                                                               unshared B    value len B
//
//   Keys are encoded internal keys (lib/keys.ts: userKey + 8-byte trailer),
//   prefix-compressed as a whole (`shared` may reach into the trailer).
//
// Every `restartInterval`-th entry is a restart point: shared = 0, and its
// offset is listed in the restart array, so a reader can start decoding there.
// Restart offsets are strictly increasing and each names an entry; a block with
// no entries has restart count 0.
//
// The block is stored (as is, or Snappy-compressed in format 3) followed by
// the 5-byte trailer of format.ts.
import { assert } from '../invariants'
import { writeTrailer, TRAILER_SIZE } from '../keys'
import { ByteWriter, putVarint } from '../util/coding'
import { FORMAT_VERSION, isV1Layout, supportedVersion } from './format'

export const DEFAULT_RESTART_INTERVAL = 16

export class BlockBuilder {
  private readonly out = new ByteWriter(4096)
  private restarts: number[] = []
  private counter = 0
  private entries = 0
  // Keys of the previous and current entry (swapped per add): user keys in
  // version 2, encoded internal keys in version 1.
  private prevKey = Buffer.allocUnsafe(64)
  private prevLen = 0
  private curKey = Buffer.allocUnsafe(64)

  constructor (
    private readonly restartInterval = DEFAULT_RESTART_INTERVAL,
    readonly formatVersion: number = FORMAT_VERSION
  ) {
    assert(Number.isInteger(restartInterval) && restartInterval >= 1, 'restartInterval must be an integer >= 1')
    assert(supportedVersion(formatVersion), `no block layout for table format ${formatVersion}`)
  }

  /** REQUIRES: keys added in increasing internal order (checked by the table builder). */
  add (userKey: Uint8Array, seq: number, kind: number, value: Uint8Array): void {
    this.addRange(userKey, 0, userKey.length, seq, kind, value, 0, value.length)
  }

  /** add() of the user key src[keyOff, keyOff + userKeyLen) and the value valueSrc[valueOff, valueOff + valueLen). */
  addRange (src: Uint8Array, keyOff: number, userKeyLen: number, seq: number, kind: number, valueSrc: Uint8Array, valueOff: number, valueLen: number): void {
    const v2 = !isV1Layout(this.formatVersion)
    const keyLen = v2 ? userKeyLen : userKeyLen + TRAILER_SIZE
    if (this.curKey.length < keyLen) this.curKey = Buffer.allocUnsafe(Math.max(keyLen, this.curKey.length * 2))
    const cur = this.curKey
    if (userKeyLen <= 64) for (let i = 0; i < userKeyLen; i++) cur[i] = src[keyOff + i]
    else cur.set(src.subarray(keyOff, keyOff + userKeyLen), 0)
    if (!v2) writeTrailer(cur, userKeyLen, seq, kind)

    let shared = 0
    if (this.counter < this.restartInterval && this.entries > 0) {
      const prev = this.prevKey
      const max = this.prevLen < keyLen ? this.prevLen : keyLen
      while (shared < max && prev[shared] === cur[shared]) shared++
    } else {
      this.restarts.push(this.out.pos)
      this.counter = 0
    }
    const w = this.out
    w.varint(shared)
    w.varint(keyLen - shared)
    w.varint(valueLen)
    if (v2) w.varint(seq * 2 + kind)
    w.bytes(cur, shared, keyLen)
    w.bytes(valueSrc, valueOff, valueOff + valueLen)

    this.curKey = this.prevKey
    this.prevKey = cur
    this.prevLen = keyLen
    this.counter++
    this.entries++
  }

  /**
   * addRange() for version 2 blocks, when the caller already knows `common`:
   * how many leading bytes the user key shares with the previous entry's
   * (ignored at a restart point). The key bytes go from `src` straight into the
   * block: no copy of the key is kept, so a block built this way must be built
   * with addV2 only (TableBuilder's data blocks).
   */
  addV2 (src: Uint8Array, keyOff: number, keyLen: number, common: number, seq: number, kind: number, valueSrc: Uint8Array, valueOff: number, valueLen: number): void {
    let shared = common
    if (this.counter >= this.restartInterval || this.entries === 0) {
      this.restarts.push(this.out.pos)
      this.counter = 0
      shared = 0
    }
    const w = this.out
    // Four varints (at most 10 bytes each: the tag is below 2^49), the key delta, the value.
    w.ensure(40 + keyLen + valueLen)
    const buf = w.buf
    let pos = w.pos
    pos = putSmallVarint(buf, pos, shared)
    pos = putSmallVarint(buf, pos, keyLen - shared)
    pos = putSmallVarint(buf, pos, valueLen)
    pos = putVarint(buf, pos, seq * 2 + kind)
    w.pos = pos
    w.bytes(src, keyOff + shared, keyOff + keyLen)
    w.bytes(valueSrc, valueOff, valueOff + valueLen)
    this.counter++
    this.entries++
  }

  empty (): boolean {
    return this.entries === 0
  }

  entryCount (): number {
    return this.entries
  }

  /** Size of the block contents if finished now. */
  estimatedSize (): number {
    return this.out.pos + this.restarts.length * 4 + 4
  }

  /**
   * Appends the restart array and returns the writer holding the contents (from
   * offset 0 to `pos`); the caller may append the block trailer to it. Valid until
   * `reset`.
   */
  finish (): ByteWriter {
    const w = this.out
    for (const r of this.restarts) w.fixed32(r)
    w.fixed32(this.restarts.length)
    return w
  }

  reset (): void {
    this.out.reset()
    this.restarts = []
    this.counter = 0
    this.entries = 0
    this.prevLen = 0
  }
}

/**
 * putVarint for a non-negative int32 (lengths), without the floating-point
 * path. Kept apart from putVarint: giving putVarint an int32 loop of its own
 * made table building slower (~240 -> ~285 ns per entry, measured).
 */
function putSmallVarint (buf: Uint8Array, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n & 127) | 128
    n >>>= 7
  }
  buf[pos++] = n
  return pos
}
