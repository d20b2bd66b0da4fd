// The Snappy raw block format (what LevelDB writes into its tables), written
// for this engine from the published format description: no native code, so it
// runs wherever lsm-level runs.
//
// A block:
//
//   +---------------------------------+----------------------------------+
//   | uncompressed length (varint,    | elements, back to back, until    |
//   | 7 bits a byte, low group first, | the uncompressed length is       |
//   | at most 5 bytes, < 2^32)        | produced exactly                 |
//   +---------------------------------+----------------------------------+
//
// Every element starts with a tag byte; its low 2 bits say what it is:
//
//   00 literal   bits 7..2 = m. m < 60: the next m + 1 bytes are the literal.
//                m = 60..63: the next m - 59 bytes (little-endian) hold
//                length - 1, then the literal's bytes follow.
//   01 copy      length = 4 + bits 4..2 (4..11); offset = bits 7..5 as the high
//                3 bits and the next byte as the low 8 (an 11-bit offset).
//   10 copy      length = 1 + bits 7..2 (1..64); offset = next 2 bytes, little-endian.
//   11 copy      length = 1 + bits 7..2 (1..64); offset = next 4 bytes, little-endian.
//
// A copy repeats `length` bytes starting `offset` bytes back in the output; it
// may overlap what it writes (offset < length repeats a pattern). An offset of
// 0, or one reaching before the start of the output, is invalid.
//
// The compressor is a greedy single-pass matcher: a hash of the next 4 bytes
// finds the last position with the same hash; on a 4-byte match it extends the
// match as far as it goes and emits a copy, otherwise it moves on, taking
// longer strides through data that keeps failing to match (so incompressible
// input costs little).

/** Bytes of input that the matcher leaves to the final literal (loads of 4 bytes stay inside the input). */
const INPUT_MARGIN = 15
const MAX_HASH_BITS = 14
const MIN_HASH_BITS = 8
/** One table for the whole module: compression is synchronous, so calls never overlap. */
const hashTable = new Int32Array(1 << MAX_HASH_BITS)
/** A literal or copy element produces at most 64 bytes from 3 bytes of block: the most a block of n bytes can declare. */
const MAX_EXPANSION = 64 / 3

function fail (message: string): Error {
  return new Error(`Snappy: ${message}`)
}

/** The most bytes that `snappyCompress` writes for `n` bytes of input. */
export function snappyMaxCompressedLength (n: number): number {
  return 32 + n + Math.floor(n / 6)
}

/** Result of readHeader: the declared length and the position after it. */
const headerOut = { length: 0, pos: 0 }

/** Reads the header into headerOut; throws if it is malformed or declares more than the rest of `src` can produce. */
function readHeader (src: Uint8Array): void {
  let length = 0
  let mul = 1
  for (let pos = 0; pos < 5 && pos < src.length; pos++) {
    const b = src[pos]
    length += (b & 127) * mul
    if (b < 128) {
      if (length > 0xffffffff) throw fail('uncompressed length does not fit in 32 bits')
      if (length > (src.length - pos - 1) * MAX_EXPANSION) {
        throw fail(`declares ${length} bytes, more than a block of ${src.length} bytes can hold`)
      }
      headerOut.length = length
      headerOut.pos = pos + 1
      return
    }
    mul *= 128
  }
  throw fail(src.length < 5 ? 'truncated length header' : 'length header longer than 5 bytes')
}

/**
 * The uncompressed length a Snappy block declares; throws (plain Error with a
 * clear message) if the header is malformed or declares more than the block
 * could produce (so the length is safe to allocate).
 */
export function snappyUncompressedLength (src: Uint8Array): number {
  readHeader(src)
  return headerOut.length
}

/**
 * Decompresses a whole Snappy block (into `dst` when it is given and exactly the
 * declared length, else into a fresh Buffer that owns its memory). Throws a plain
 * Error ('Snappy: ...') on malformed input: never reads or writes out of bounds,
 * never returns output of another length than declared.
 */
export function snappyDecompress (src: Uint8Array, dst?: Uint8Array): Uint8Array {
  readHeader(src)
  const length = headerOut.length
  const out = dst !== undefined && dst.length === length ? dst : allocate(length)
  const written = decodeElements(src, headerOut.pos, out)
  if (written !== length) throw fail(`produced ${written} bytes, the header declares ${length}`)
  return out
}

function allocate (length: number): Uint8Array {
  try {
    return Buffer.allocUnsafeSlow(length)
  } catch (err) {
    throw fail(`cannot allocate ${length} bytes (${(err as Error).message})`)
  }
}

/**
 * Decodes the elements of `src` from `ip` into `out`, which must be filled
 * exactly; returns the bytes written. Throws on any element that would read
 * past `src` or write past `out`, and on bad offsets.
 */
function decodeElements (src: Uint8Array, ip: number, out: Uint8Array): number {
  const srcEnd = src.length
  const outEnd = out.length
  const srcView = new DataView(src.buffer, src.byteOffset, src.length)
  const outView = new DataView(out.buffer, out.byteOffset, out.length)
  let op = 0
  while (ip < srcEnd) {
    const tag = src[ip++]
    const type = tag & 3
    if (type === 0) {
      let len = (tag >>> 2) + 1
      if (len <= 16 && outEnd - op >= 16 && srcEnd - ip >= 16) {
        // A short literal with room around it (the common case): 16 bytes in
        // four words, the bytes past the literal overwritten by what follows.
        outView.setInt32(op, srcView.getInt32(ip, true), true)
        outView.setInt32(op + 4, srcView.getInt32(ip + 4, true), true)
        outView.setInt32(op + 8, srcView.getInt32(ip + 8, true), true)
        outView.setInt32(op + 12, srcView.getInt32(ip + 12, true), true)
        ip += len
        op += len
        continue
      }
      if (len > 60) {
        const extra = len - 60
        if (ip + extra > srcEnd) throw fail('truncated literal length')
        len = src[ip] + 1
        if (extra > 1) len += src[ip + 1] * 0x100
        if (extra > 2) len += src[ip + 2] * 0x10000
        if (extra > 3) len += src[ip + 3] * 0x1000000
        ip += extra
      }
      if (len > srcEnd - ip) throw fail('literal runs past the end of the block')
      if (len > outEnd - op) throw fail('literal runs past the declared length')
      if (len > 64) {
        out.set(src.subarray(ip, ip + len), op)
      } else if (len + 3 <= outEnd - op && len + 3 <= srcEnd - ip) {
        // Whole words, rounded up: the bytes written past the literal lie inside
        // the output and are overwritten by what follows.
        for (let i = 0; i < len; i += 4) outView.setInt32(op + i, srcView.getInt32(ip + i, true), true)
      } else {
        for (let i = 0; i < len; i++) out[op + i] = src[ip + i]
      }
      ip += len
      op += len
      continue
    }
    let len: number
    let offset: number
    if (type === 1) {
      if (ip >= srcEnd) throw fail('truncated copy')
      len = ((tag >>> 2) & 7) + 4
      offset = ((tag >>> 5) << 8) | src[ip++]
    } else if (type === 2) {
      if (ip + 2 > srcEnd) throw fail('truncated copy')
      len = (tag >>> 2) + 1
      offset = src[ip] | (src[ip + 1] << 8)
      ip += 2
    } else {
      if (ip + 4 > srcEnd) throw fail('truncated copy')
      len = (tag >>> 2) + 1
      offset = (src[ip] | (src[ip + 1] << 8) | (src[ip + 2] << 16)) + src[ip + 3] * 0x1000000
      ip += 4
    }
    if (offset === 0 || offset > op) throw fail(`copy offset ${offset} at output position ${op} is invalid`)
    if (len > outEnd - op) throw fail('copy runs past the declared length')
    let from = op - offset
    const end = op + len
    if (len <= 16 && offset >= 16 && outEnd - op >= 16) {
      // A short copy from at least 16 bytes back, with room: four words, as for literals.
      outView.setInt32(op, outView.getInt32(from, true), true)
      outView.setInt32(op + 4, outView.getInt32(from + 4, true), true)
      outView.setInt32(op + 8, outView.getInt32(from + 8, true), true)
      outView.setInt32(op + 12, outView.getInt32(from + 12, true), true)
      op = end
    } else if (offset >= 4 && len + 3 <= outEnd - op) {
      // Word by word, rounded up as for literals. With offset >= 4 every word
      // read lies before the word written, so an overlapping copy still repeats
      // what it has just written, as the format requires.
      for (; op < end; op += 4, from += 4) outView.setInt32(op, outView.getInt32(from, true), true)
      op = end
    } else {
      // Byte by byte: an overlapping copy repeats the bytes it has just written.
      while (op < end) out[op++] = out[from++]
    }
  }
  return op
}

function hash32 (v: number, shift: number): number {
  return Math.imul(v, 0x1e35a7bd) >>> shift
}

/**
 * Compresses `src` into a Snappy block: into `dst` when it is given and holds at
 * least snappyMaxCompressedLength(src.length) bytes (returning the written
 * subarray), else into a fresh Buffer.
 */
export function snappyCompress (src: Uint8Array, dst?: Uint8Array): Uint8Array {
  const max = snappyMaxCompressedLength(src.length)
  const out = dst !== undefined && dst.length >= max ? dst : Buffer.allocUnsafe(max)
  let op = writeHeader(out, src.length)
  op = compressBody(src, out, op)
  return out.subarray(0, op)
}

function writeHeader (out: Uint8Array, n: number): number {
  let op = 0
  while (n >= 128) {
    out[op++] = (n & 127) | 128
    n = Math.floor(n / 128)
  }
  out[op++] = n
  return op
}

/** Sizes the hash table to the input (small inputs clear a small table) and clears it; returns the hash shift. */
function resetHashTable (n: number): number {
  let bits = MIN_HASH_BITS
  while (bits < MAX_HASH_BITS && (1 << bits) < n) bits++
  hashTable.fill(0, 0, 1 << bits)
  return 32 - bits
}

/** The matcher (see the top of this file): writes the elements for all of `src` at `out[op]`; returns the end. */
function compressBody (src: Uint8Array, out: Uint8Array, op: number): number {
  const n = src.length
  let nextEmit = 0
  if (n >= INPUT_MARGIN) {
    const shift = resetHashTable(n)
    const table = hashTable
    const ipLimit = n - INPUT_MARGIN
    // Loads of 4 bytes (little-endian, as signed ints: only compared and hashed).
    const view = new DataView(src.buffer, src.byteOffset, n)
    let ip = 1
    let nextHash = hash32(view.getInt32(ip, true), shift)
    outer: for (;;) {
      // Find a 4-byte match, striding further the longer none is found.
      let skip = 32
      let nextIp = ip
      let candidate: number
      do {
        ip = nextIp
        const h = nextHash
        nextIp = ip + (skip++ >>> 5)
        if (nextIp > ipLimit) break outer
        nextHash = hash32(view.getInt32(nextIp, true), shift)
        candidate = table[h]
        table[h] = ip
      } while (view.getInt32(ip, true) !== view.getInt32(candidate, true))
      op = emitLiteral(src, nextEmit, ip, out, op)
      // Emit copies for as long as the position after one match starts another.
      do {
        const base = ip
        let matched = 4
        while (ip + matched + 4 <= n && view.getInt32(candidate + matched, true) === view.getInt32(ip + matched, true)) matched += 4
        while (ip + matched < n && src[candidate + matched] === src[ip + matched]) matched++
        ip += matched
        op = emitCopy(out, op, base - candidate, matched)
        nextEmit = ip
        if (ip >= ipLimit) break outer
        table[hash32(view.getInt32(ip - 1, true), shift)] = ip - 1
        const h = hash32(view.getInt32(ip, true), shift)
        candidate = table[h]
        table[h] = ip
      } while (view.getInt32(ip, true) === view.getInt32(candidate, true))
      ip++
      nextHash = hash32(view.getInt32(ip, true), shift)
    }
  }
  return nextEmit < n ? emitLiteral(src, nextEmit, n, out, op) : op
}

function emitLiteral (src: Uint8Array, start: number, end: number, out: Uint8Array, op: number): number {
  const len = end - start
  if (len === 0) return op
  const n = len - 1
  if (n < 60) {
    out[op++] = n << 2
  } else if (n < 0x100) {
    out[op++] = 60 << 2
    out[op++] = n
  } else if (n < 0x10000) {
    out[op++] = 61 << 2
    out[op++] = n & 0xff
    out[op++] = n >>> 8
  } else if (n < 0x1000000) {
    out[op++] = 62 << 2
    out[op++] = n & 0xff
    out[op++] = (n >>> 8) & 0xff
    out[op++] = n >>> 16
  } else {
    out[op++] = 63 << 2
    out[op++] = n & 0xff
    out[op++] = (n >>> 8) & 0xff
    out[op++] = (n >>> 16) & 0xff
    out[op++] = n >>> 24
  }
  if (len < 32) {
    for (let i = 0; i < len; i++) out[op + i] = src[start + i]
  } else {
    out.set(src.subarray(start, end), op)
  }
  return op + len
}

/** Emits copies for a match of `len` >= 4 bytes at `offset`, in pieces of at most 64 bytes that leave no piece under 4. */
function emitCopy (out: Uint8Array, op: number, offset: number, len: number): number {
  while (len >= 68) {
    op = emitCopyPiece(out, op, offset, 64)
    len -= 64
  }
  if (len > 64) {
    op = emitCopyPiece(out, op, offset, 60)
    len -= 60
  }
  return emitCopyPiece(out, op, offset, len)
}

function emitCopyPiece (out: Uint8Array, op: number, offset: number, len: number): number {
  if (len < 12 && offset < 2048) {
    out[op++] = 1 | ((len - 4) << 2) | ((offset >>> 8) << 5)
    out[op++] = offset & 0xff
  } else if (offset < 0x10000) {
    out[op++] = 2 | ((len - 1) << 2)
    out[op++] = offset & 0xff
    out[op++] = offset >>> 8
  } else {
    out[op++] = 3 | ((len - 1) << 2)
    out[op++] = offset & 0xff
    out[op++] = (offset >>> 8) & 0xff
    out[op++] = (offset >>> 16) & 0xff
    out[op++] = offset >>> 24
  }
  return op
}
