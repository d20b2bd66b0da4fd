// Reading blocks (layout in block-builder.ts): a block is decoded once into
// parallel arrays, then searched by binary search in internal order. Decoding
// validates every varint, length and restart offset, so a damaged block (read
// with checksums off, or damaged in a way the CRC cannot see) is a corruption
// error naming the table, never a wrong key or a RangeError.
import { corruption } from '../errors'
import { checks } from '../invariants'
import { compareInternal, KIND_DELETE, KIND_VALUE, TRAILER_SIZE, trailerSeq } from '../keys'
import { getFixed32, getVarint, varintOut } from '../util/coding'
import type { InternalIterator } from '../iterators/internal-iterator'

/**
 * Memory per decoded entry beyond its bytes: two Buffer views (key, value) and
 * four array slots. Measured on Node 20 (heapUsed + arrayBuffers after GC):
 * ~223 B per entry, so the block cache's byte budget is honest about live memory.
 */
const ENTRY_OVERHEAD = 232

export class DecodedBlock {
  /**
   * User keys are materialized once (prefix compression is undone at decode);
   * values are views into the block's own buffer. Neither may be mutated.
   */
  constructor (
    readonly userKeys: Buffer[],
    readonly seqs: number[],
    readonly kinds: number[],
    readonly values: Buffer[],
    /** Approximate memory held, for the block cache. */
    readonly charge: number
  ) {}

  get length (): number {
    return this.seqs.length
  }

  /** Index of the first entry >= (userKey, seq); `length` if none. */
  lowerBound (userKey: Uint8Array, seq: number): number {
    let lo = 0
    let hi = this.seqs.length
    const keys = this.userKeys
    const seqs = this.seqs
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareInternal(keys[mid], seqs[mid], userKey, seq) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Index of the first entry > (userKey, seq); `length` if none. */
  upperBound (userKey: Uint8Array, seq: number): number {
    let lo = 0
    let hi = this.seqs.length
    const keys = this.userKeys
    const seqs = this.seqs
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareInternal(keys[mid], seqs[mid], userKey, seq) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

// Scratch space reused by every decode (decoding is synchronous, never reentrant).
let keyScratch = Buffer.allocUnsafeSlow(256)
let arenaScratch = Buffer.allocUnsafeSlow(16384)

/** Decodes block `contents` of table `name`. Throws corruption on any damage. */
export function decodeBlock (name: string, contents: Buffer): DecodedBlock {
  const size = contents.length
  if (size < 4) throw corruption(name, 'block too short for its restart count')
  const numRestarts = getFixed32(contents, size - 4)
  // The restart array must fit: 4 bytes each plus the count.
  if (numRestarts > (size - 4) / 4) throw corruption(name, `block restart count ${numRestarts} exceeds block size ${size}`)
  const limit = size - 4 - numRestarts * 4 // end of the entries

  const userKeys: Buffer[] = []
  const seqs: number[] = []
  const kinds: number[] = []
  const values: Buffer[] = []

  // The key being reconstructed, and the user keys gathered into a shared
  // scratch arena; at the end they are copied into one exact-size buffer so all
  // keys of a block are a single allocation.
  let key = keyScratch
  let keyLen = 0
  const keyEnds: number[] = []
  let keyBytes = 0

  let nextRestart = 0
  let pos = 0
  while (pos < limit) {
    const entryStart = pos
    if (!getVarint(contents, pos, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
    const shared = varintOut.value
    if (!getVarint(contents, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
    const unshared = varintOut.value
    if (!getVarint(contents, varintOut.pos, limit)) throw corruption(name, `bad entry header at block offset ${pos}`)
    const valueLen = varintOut.value
    pos = varintOut.pos
    if (shared > keyLen) throw corruption(name, `entry shares ${shared} bytes with a ${keyLen}-byte key`)
    if (unshared > limit - pos || valueLen > limit - pos - unshared) {
      throw corruption(name, `entry at block offset ${entryStart} runs past the end of the block`)
    }
    if (nextRestart < numRestarts && getFixed32(contents, limit + nextRestart * 4) === entryStart) {
      if (shared !== 0) throw corruption(name, `restart entry at block offset ${entryStart} shares bytes`)
      nextRestart++
    } else if (entryStart === 0) {
      throw corruption(name, 'first block entry is not a restart point')
    }
    const newLen = shared + unshared
    if (newLen < TRAILER_SIZE) throw corruption(name, `key of ${newLen} bytes is shorter than its trailer`)
    if (newLen > key.length) {
      const bigger = Buffer.allocUnsafe(Math.max(newLen, key.length * 2))
      key.copy(bigger, 0, 0, shared)
      key = bigger
    }
    contents.copy(key, shared, pos, pos + unshared)
    keyLen = newLen
    pos += unshared

    const t = keyLen - TRAILER_SIZE
    const kind = key[t]
    if ((kind !== KIND_DELETE && kind !== KIND_VALUE) || key[t + 7] !== 0) {
      throw corruption(name, `bad key trailer at block offset ${entryStart}`)
    }
    if (keyBytes + t > arenaScratch.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(keyBytes + t, arenaScratch.length * 2))
      arenaScratch.copy(bigger, 0, 0, keyBytes)
      arenaScratch = bigger
    }
    key.copy(arenaScratch, keyBytes, 0, t)
    keyBytes += t
    keyEnds.push(keyBytes)
    seqs.push(trailerSeq(key, t))
    kinds.push(kind)
    values.push(contents.subarray(pos, pos + valueLen))
    pos += valueLen
  }
  if (nextRestart !== numRestarts) throw corruption(name, 'block restart array does not match its entries')
  keyScratch = key

  const arena = Buffer.allocUnsafeSlow(keyBytes)
  arenaScratch.copy(arena, 0, 0, keyBytes)
  if (arenaScratch.length > 1 << 20) arenaScratch = Buffer.allocUnsafeSlow(16384) // do not pin a huge one-off
  let start = 0
  for (let i = 0; i < keyEnds.length; i++) {
    userKeys.push(arena.subarray(start, keyEnds[i]))
    start = keyEnds[i]
  }

  if (checks.paranoid) {
    for (let i = 1; i < seqs.length; i++) {
      if (compareInternal(userKeys[i - 1], seqs[i - 1], userKeys[i], seqs[i]) >= 0) {
        throw corruption(name, 'block entries out of order')
      }
    }
  }
  const charge = size + keyBytes + seqs.length * ENTRY_OVERHEAD
  return new DecodedBlock(userKeys, seqs, kinds, values, charge)
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
    return this.block.userKeys[this.pos]
  }

  seq (): number {
    return this.block.seqs[this.pos]
  }

  kind (): number {
    return this.block.kinds[this.pos]
  }

  value (): Buffer {
    return this.block.values[this.pos]
  }

  close (): void {
    this.pos = -1
  }
}
