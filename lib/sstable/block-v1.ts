// Reading block entries in the layout of table format version 1 (lsm-level
// <= 0.2; block-builder.ts draws it and still writes it when a test asks):
// shared, unshared and value lengths, then the unshared bytes of an encoded
// internal key (user key + 8-byte trailer, lib/keys.ts), prefix-compressed as a
// whole, then the value. Everything that reads version 1 block entries is
// here: dropping them deletes this module and its two calls in block-reader.ts
// (the filter's version 1 layout is read in bloom.ts).
//
// As in block-v2.ts, decodeV1 decodes a whole block into columns and
// seekRawBlockV1 finds one key in a raw block in place; both validate every
// varint, length, restart offset and trailer they read, so damage is a
// corruption error naming the table.
import { corruption } from '../errors'
import { checks } from '../invariants'
import { KIND_DELETE, KIND_VALUE, TRAILER_SIZE, trailerSeq } from '../keys'
import { compareRange, getFixed32, getVarint, varintOut } from '../util/coding'
import { type BlockColumns, MAX_DECODED_BYTES, checkOrder } from './block-columns'
import { type RawBlock, entriesLimit, rawSeekOut } from './raw-block'

/** An entry's header, as read by readEntryHeader (one shared object: no allocation per entry). */
const header = { shared: 0, unshared: 0, valueLen: 0, pos: 0 }

// The internal key being rebuilt (prefix compression undone) by both readers
// (synchronous, never reentrant); see takeKeyScratch.
let keyScratch = new Uint8Array(256)

/** The key scratch, first replaced if a one-off huge key grew it (not pinned for the process lifetime). */
function takeKeyScratch (): Uint8Array {
  if (keyScratch.length > 1 << 16) keyScratch = new Uint8Array(256)
  return keyScratch
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

/** Decodes block `contents` of table `name` into `t`: each internal key rebuilt in the key scratch, then split into user key and trailer. */
export function decodeV1 (name: string, contents: Buffer, t: BlockColumns): void {
  t.length = 0
  t.contents = contents
  const limit = entriesLimit(name, contents)
  const numRestarts = (contents.length - 4 - limit) / 4

  let key = takeKeyScratch()
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
    t.seqs[n] = trailerSeq(key, k)
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

/** seekRawBlock (block-reader.ts) over version 1 entries. */
export function seekRawBlockV1 (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
  const c = block.contents
  const limit = block.limit
  const keyLen = userKey.length
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
    const v = c[pos++]
    if (v >= 128 && !getVarint(c, pos - 1, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
    if (v >= 128) pos = varintOut.pos
    if (unshared < TRAILER_SIZE || unshared > limit - pos) throw corruption(name, `bad restart entry at block offset ${pos}`)
    const t = pos + unshared - TRAILER_SIZE
    let cmp = compareRange(c, pos, t, userKey, 0, keyLen)
    if (cmp === 0) {
      cmp = trailerSeq(c, t) > seq ? -1 : 1 // a larger seq sorts first
    }
    if (cmp < 0) lo = mid
    else hi = mid - 1
  }
  // Scan forward from that restart point.
  let key = takeKeyScratch()
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
      key = keyScratch = bigger
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
      const s = trailerSeq(key, t)
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
