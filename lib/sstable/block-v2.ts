// Reading block entries in the layout of table format version 2 (drawn in
// block-builder.ts, which writes it): shared, unshared and value lengths, a
// varint tag = seq * 2 + kind, the user key's unshared bytes, the value. Two
// readers: decodeV2 decodes a whole block into columns (iterators, index
// blocks), seekRawBlockV2 finds one key in a raw block in place (point
// lookups). Both validate every varint, length and restart offset they read,
// so a damaged block (read with checksums off, or damaged in a way the CRC
// cannot see) is a corruption error naming the table, never a wrong key or a
// RangeError.
import { corruption } from '../errors'
import { checks } from '../invariants'
import { MAX_SEQ } from '../keys'
import { compareRange, getFixed32, getVarint, varintOut } from '../util/coding'
import { type BlockColumns, MAX_DECODED_BYTES, checkOrder } from './block-columns'
import { type RawBlock, entriesLimit, rawSeekOut } from './raw-block'

/** Largest valid tag: seq MAX_SEQ, kind 1. */
const MAX_TAG = MAX_SEQ * 2 + 1

/** An entry's header, as read by readEntryHeader (one shared object: no allocation per entry). */
const header = { shared: 0, unshared: 0, valueLen: 0, pos: 0, seq: 0, kind: 0 }

/**
 * Reads the four varints that start the entry at `pos` (shared,
 * unshared and value lengths, tag) into `header`, with `header.pos` at the key's
 * unshared bytes and the tag split into seq and kind; the key bytes and the
 * value must fit before `limit`, and the tag must be at most MAX_TAG. Damage is
 * corruption.
 */
function readEntryHeader (c: Uint8Array, pos: number, limit: number, name: string): void {
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

/** Decodes block `contents` of table `name` into `t`: user keys rebuilt straight into the arena, seq and kind from the tag. */
export function decodeV2 (name: string, contents: Buffer, t: BlockColumns): void {
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
    readEntryHeader(contents, pos, limit, name)
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

/** seekRawBlock (block-reader.ts) over version 2 entries. */
export function seekRawBlockV2 (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
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
    // lengths of one varint byte, a value length of one or two): readEntryHeader
    // (a call, and its results through a shared object) costs about a third of a
    // cached point read otherwise. Anything else, and anything out of bounds,
    // goes to readEntryHeader, which reads every form and reports damage.
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
      readEntryHeader(c, pos, limit, name)
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
