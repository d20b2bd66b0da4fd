// Whole-table Bloom filter over user keys, stored as the table's filter block.
//
// Filter block contents (followed by the usual 5-byte block trailer):
//
//   +-------------------------------------+------------+
//   | bit array (m bytes, m >= 8)         | probes (k) |
//   +-------------------------------------+------------+
//                                          1 B, 1 <= k <= 30
//
// Bit i lives in byte i >> 3 at bit (i & 7). Every key is hashed once, h =
// bloomHash(key) (32 bits). How h picks the k bits depends on the table's
// format version (format.ts); bloomHash, both probe sequences and the layouts are
// part of the on-disk format and must never change.
//
// Table format 1 (classic): the bits span the whole array (8 * m bits). Double
// hashing: delta = rotl(h, 15); probe j tests bit (h + j * delta) mod (8 * m),
// with all arithmetic mod 2^32. A lookup touches k scattered bytes: k cache
// misses once the filters outgrow the CPU caches.
//
// Table format 2 (cache-local): m is a multiple of 64 and the array is cut into
// m / 64 lines of 512 bits, one CPU cache line each. All k bits of a key lie in
// one line: line = floor(h * (m / 64) / 2^32). Within it, g = h; probe j sets
// g = imul(g, 0x9e3779b9) (mod 2^32), then tests bit g >>> 23 (0..511) of the
// line. One cache miss per lookup; about 1.2% false positives at 10 bits per key
// (format 1: about 0.8%).
import { corruption } from '../errors'
import { assert } from '../invariants'
import { FORMAT_VERSION, isV1Layout, supportedVersion } from './format'

const MAX_PROBES = 30

const BLOOM_SEED = 0x5bd1e995

/** The filter's key hash: murmur3_32 with the fixed seed BLOOM_SEED. */
export function bloomHash (key: Uint8Array): number {
  return murmur3(key, BLOOM_SEED)
}

/**
 * MurmurHash3 (x86, 32-bit): fast, well mixed, and plain integer arithmetic
 * (Math.imul), so no crypto and no allocation.
 */
export function murmur3 (key: Uint8Array, seed: number): number {
  return murmur3Range(key, 0, key.length, seed)
}

/** murmur3() of key[off, off + len). */
export function murmur3Range (key: Uint8Array, off: number, len: number, seed: number): number {
  let h = seed | 0
  const end4 = off + (len & ~3)
  let i = off
  for (; i < end4; i += 4) {
    let k = key[i] | (key[i + 1] << 8) | (key[i + 2] << 16) | (key[i + 3] << 24)
    k = Math.imul(k, 0xcc9e2d51)
    k = (k << 15) | (k >>> 17)
    k = Math.imul(k, 0x1b873593)
    h ^= k
    h = (h << 13) | (h >>> 19)
    h = (Math.imul(h, 5) + 0xe6546b64) | 0
  }
  let k = 0
  switch (len & 3) {
    case 3: k ^= key[i + 2] << 16 // falls through
    case 2: k ^= key[i + 1] << 8 // falls through
    case 1:
      k ^= key[i]
      k = Math.imul(k, 0xcc9e2d51)
      k = (k << 15) | (k >>> 17)
      k = Math.imul(k, 0x1b873593)
      h ^= k
  }
  h ^= len
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** Probe count minimizing the false-positive rate for `bitsPerKey` (k = bits * ln 2). */
export function probesFor (bitsPerKey: number): number {
  const k = Math.round(bitsPerKey * 0.69)
  return k < 1 ? 1 : k > MAX_PROBES ? MAX_PROBES : k
}

/** Bits per cache-local line (format 2). */
const LINE_BITS = 512
const LINE_BYTES = LINE_BITS / 8
const GOLDEN = 0x9e3779b9 | 0

/** Collects key hashes while a table is written; `finish` lays out the filter. */
export class BloomBuilder {
  private hashes = new Uint32Array(1024)
  private count = 0

  /** `formatVersion`: the table's (1: classic layout, 2 and 3: cache-local). */
  constructor (private readonly bitsPerKey: number, private readonly formatVersion = FORMAT_VERSION) {
    assert(bitsPerKey > 0, 'BloomBuilder needs bitsPerKey > 0')
    assert(supportedVersion(formatVersion), `no filter layout for table format ${formatVersion}`)
  }

  /** Adds a user key. The caller skips consecutive duplicates (several versions of one key). */
  addKey (userKey: Uint8Array): void {
    this.addKeyRange(userKey, 0, userKey.length)
  }

  /** addKey() of the key src[off, off + len). */
  addKeyRange (src: Uint8Array, off: number, len: number): void {
    if (this.count === this.hashes.length) {
      const next = new Uint32Array(this.hashes.length * 2)
      next.set(this.hashes)
      this.hashes = next
    }
    this.hashes[this.count++] = murmur3Range(src, off, len, BLOOM_SEED)
  }

  keyCount (): number {
    return this.count
  }

  /** Bytes `finish` will produce. */
  estimatedSize (): number {
    return this.arrayBytes() + 1
  }

  private arrayBytes (): number {
    const bytes = bitArrayBytes(this.count, this.bitsPerKey)
    return isV1Layout(this.formatVersion) ? bytes : Math.ceil(bytes / LINE_BYTES) * LINE_BYTES
  }

  finish (): Buffer {
    if (!isV1Layout(this.formatVersion)) return this.finishLocal()
    const bytes = bitArrayBytes(this.count, this.bitsPerKey)
    const bits = bytes * 8
    const k = probesFor(this.bitsPerKey)
    const out = Buffer.alloc(bytes + 1)
    for (let i = 0; i < this.count; i++) {
      let h = this.hashes[i]
      const delta = ((h << 15) | (h >>> 17)) >>> 0
      for (let j = 0; j < k; j++) {
        const bit = h % bits
        out[bit >>> 3] |= 1 << (bit & 7)
        h = (h + delta) >>> 0
      }
    }
    out[bytes] = k
    return out
  }

  private finishLocal (): Buffer {
    const bytes = this.arrayBytes()
    const lines = bytes / LINE_BYTES
    const k = probesFor(this.bitsPerKey)
    const out = Buffer.alloc(bytes + 1)
    for (let i = 0; i < this.count; i++) {
      const h = this.hashes[i]
      const base = Math.floor(h * lines / 4294967296) * LINE_BYTES
      let g = h | 0
      for (let j = 0; j < k; j++) {
        g = Math.imul(g, GOLDEN)
        const bit = g >>> 23
        out[base + (bit >>> 3)] |= 1 << (bit & 7)
      }
    }
    out[bytes] = k
    return out
  }
}

function bitArrayBytes (keys: number, bitsPerKey: number): number {
  // At least 64 bits, so tiny tables do not get a uselessly high false-positive rate.
  const bits = Math.max(64, Math.ceil(keys * bitsPerKey))
  return Math.ceil(bits / 8)
}

/** A decoded filter block. */
export class BloomFilter {
  /** Bytes of the filter block (held in memory while its table is open). */
  get byteLength (): number {
    return this.data.length
  }

  private readonly bits: number
  private readonly probes: number

  /** Lines of LINE_BITS (format 2); 0 for the classic layout. */
  private readonly lines: number

  /**
   * Validates the layout of a filter of a table of `formatVersion`; `contents`
   * must stay unchanged while the filter is used.
   */
  constructor (name: string, private readonly data: Buffer, formatVersion = FORMAT_VERSION) {
    if (data.length < 2) throw corruption(name, 'filter block too short')
    const k = data[data.length - 1]
    if (k < 1 || k > MAX_PROBES) throw corruption(name, `filter block has bad probe count ${k}`)
    this.probes = k
    this.bits = (data.length - 1) * 8
    if (isV1Layout(formatVersion)) {
      this.lines = 0
    } else {
      if ((data.length - 1) % LINE_BYTES !== 0) throw corruption(name, `filter block of ${data.length - 1} bytes is not made of ${LINE_BYTES}-byte lines`)
      this.lines = (data.length - 1) / LINE_BYTES
    }
  }

  /** False means the key is certainly absent; true means it may be present. */
  mayContain (userKey: Uint8Array): boolean {
    if (this.lines > 0) {
      const h = bloomHash(userKey)
      const base = Math.floor(h * this.lines / 4294967296) * LINE_BYTES
      const data = this.data
      let g = h | 0
      for (let j = 0; j < this.probes; j++) {
        g = Math.imul(g, GOLDEN)
        const bit = g >>> 23
        if ((data[base + (bit >>> 3)] & (1 << (bit & 7))) === 0) return false
      }
      return true
    }
    let h = bloomHash(userKey)
    const delta = ((h << 15) | (h >>> 17)) >>> 0
    const bits = this.bits
    const data = this.data
    for (let j = 0; j < this.probes; j++) {
      const bit = h % bits
      if ((data[bit >>> 3] & (1 << (bit & 7))) === 0) return false
      h = (h + delta) >>> 0
    }
    return true
  }
}
