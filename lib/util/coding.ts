// Byte coding helpers shared by every on-disk format.
//
// All fixed-width integers are little-endian. Varints are LevelDB's: 7 bits per
// byte, low groups first, high bit set on every byte but the last. Numbers above
// 2^32 are handled by `putVarint` / `getVarint` up to Number.MAX_SAFE_INTEGER.

/** Bytes needed by `putVarint(n)`. */
export function varintLength (n: number): number {
  let len = 1
  while (n >= 128) {
    n = Math.floor(n / 128)
    len++
  }
  return len
}

/** Writes `n` (0 <= n <= 2^53) as a varint at `buf[pos]`; returns the new position. */
export function putVarint (buf: Uint8Array, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n & 127) | 128
    n = Math.floor(n / 128)
  }
  buf[pos++] = n
  return pos
}

/** Result slot for `getVarint`, reused to avoid an allocation per call. */
export const varintOut = { value: 0, pos: 0 }

/**
 * Reads a varint at `buf[pos]`, bounded by `end`. Sets `varintOut.value` and
 * `varintOut.pos`; returns false if the varint is truncated or too long (the
 * caller turns that into a corruption error).
 */
export function getVarint (buf: Uint8Array, pos: number, end: number): boolean {
  let result = 0
  let mul = 1
  for (let i = 0; i < 8 && pos < end; i++) {
    const b = buf[pos++]
    result += (b & 127) * mul
    if (b < 128) {
      varintOut.value = result
      varintOut.pos = pos
      return true
    }
    mul *= 128
  }
  return false
}

export function putFixed32 (buf: Uint8Array, pos: number, n: number): number {
  buf[pos] = n & 0xff
  buf[pos + 1] = (n >>> 8) & 0xff
  buf[pos + 2] = (n >>> 16) & 0xff
  buf[pos + 3] = (n >>> 24) & 0xff
  return pos + 4
}

export function getFixed32 (buf: Uint8Array, pos: number): number {
  return (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 0x1000000
}

/** 64-bit little-endian field holding a number below 2^53. */
export function putFixed64 (buf: Uint8Array, pos: number, n: number): number {
  putFixed32(buf, pos, n >>> 0)
  putFixed32(buf, pos + 4, Math.floor(n / 0x100000000))
  return pos + 8
}

export function getFixed64 (buf: Uint8Array, pos: number): number {
  return getFixed32(buf, pos) + getFixed32(buf, pos + 4) * 0x100000000
}

/** Bytewise comparison of two byte ranges; the one ordering of user keys. */
export function compareBytes (a: Uint8Array, b: Uint8Array): number {
  const len = a.length < b.length ? a.length : b.length
  for (let i = 0; i < len; i++) {
    const d = a[i] - b[i]
    if (d !== 0) return d
  }
  return a.length - b.length
}

/**
 * Bytewise comparison of a[aStart, aEnd) with b[bStart, bEnd): the ordering of
 * user keys (compareBytes above) over ranges, without making views.
 */
export function compareRange (a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
  const aLen = aEnd - aStart
  const bLen = bEnd - bStart
  const len = aLen < bLen ? aLen : bLen
  for (let i = 0; i < len; i++) {
    const d = a[aStart + i] - b[bStart + i]
    if (d !== 0) return d
  }
  return aLen - bLen
}

/** A growable byte buffer for building blocks and records. */
export class ByteWriter {
  buf: Buffer
  pos = 0

  constructor (initialCapacity = 256) {
    this.buf = Buffer.allocUnsafe(initialCapacity)
  }

  ensure (extra: number): void {
    const need = this.pos + extra
    if (need <= this.buf.length) return
    let cap = this.buf.length * 2
    while (cap < need) cap *= 2
    const next = Buffer.allocUnsafe(cap)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  varint (n: number): void {
    this.ensure(10)
    this.pos = putVarint(this.buf, this.pos, n)
  }

  fixed32 (n: number): void {
    this.ensure(4)
    this.pos = putFixed32(this.buf, this.pos, n)
  }

  fixed64 (n: number): void {
    this.ensure(8)
    this.pos = putFixed64(this.buf, this.pos, n)
  }

  byte (n: number): void {
    this.ensure(1)
    this.buf[this.pos++] = n
  }

  bytes (b: Uint8Array, start = 0, end = b.length): void {
    const len = end - start
    this.ensure(len)
    const buf = this.buf
    const pos = this.pos
    if (len <= 16) {
      // By hand: no view to make, and cheaper than TypedArray.set for a few bytes.
      for (let i = 0; i < len; i++) buf[pos + i] = b[start + i]
    } else {
      buf.set(start === 0 && end === b.length ? b : b.subarray(start, end), pos)
    }
    this.pos = pos + len
  }

  /** Length-prefixed (varint) byte string. */
  lengthPrefixed (b: Uint8Array): void {
    this.varint(b.length)
    this.bytes(b)
  }

  reset (): void {
    this.pos = 0
  }

  /** A copy of the bytes written so far. */
  toBuffer (): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos))
  }

  /** A view of the bytes written so far; invalid after the next write or reset. */
  view (): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}
