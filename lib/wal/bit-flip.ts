// Finding a single flipped bit in a damaged log record (lib/wal/log-format.ts).
//
// Recovery must tell damage a crash can leave from damage it cannot
// (lib/recovery.ts). A crash only loses bytes: what was not written reads as
// zeros (logs are extended with zeros ahead of their records), or, at the very
// end of a file, as garbage. It never changes one bit of a record and leaves
// the rest of it, and the records after it, intact. So when the damaged stretch
// of a log is exactly one record that becomes valid by flipping one bit back,
// and that bit's byte is not zero now, the damage was not a crash.
//
// The search is cheap because CRC-32 is linear: for two messages of the same
// length, crc(a) ^ crc(b) is the raw CRC (no initial value, no final xor) of
// a ^ b. The stored checksum gives crc(original), so the "syndrome"
// crc(damaged) ^ crc(original) is the raw CRC of the error, and a one-bit error
// at byte j, bit b is found by comparing the syndrome with the raw CRC of each
// single-bit message: 8 table steps per byte of the record, no re-checksumming.
// A random (multi-byte) error matches one of the 8n single-bit patterns with
// odds of 8n / 2^32, so the search is limited to MAX_SEARCH bytes.
import { getFixed32 } from '../util/coding'
import { crc, unmaskCrc } from '../util/crc'
import { HEADER_SIZE, RECORD_FULL, recordChecksum } from './log-format'

/** Longest damaged stretch searched (odds of a false match below 2^-10 up to here). */
export const MAX_SEARCH = 256 * 1024

/** A bit whose flip makes a damaged record valid. */
export interface BitFlip {
  /** Index of the damaged byte in the record (0 is the first header byte). */
  at: number
  /** The bit, 0 (least significant) to 7. */
  bit: number
  /** The damaged byte's value as it is now. */
  byte: number
}

// The CRC-32 table of zlib's (reflected) polynomial: TABLE[i] is the raw
// register after shifting in byte i from a zero register.
const TABLE = new Int32Array(256)
for (let i = 0; i < 256; i++) {
  let r = i
  for (let k = 0; k < 8; k++) r = (r & 1) !== 0 ? (r >>> 1) ^ 0xedb88320 : r >>> 1
  TABLE[i] = r
}

/**
 * If `record` (a header and payload spanning exactly these bytes) becomes a
 * valid RECORD_FULL record by flipping one bit, that bit; otherwise undefined.
 */
export function findBitFlip (record: Uint8Array): BitFlip | undefined {
  if (record.length < HEADER_SIZE || record.length > MAX_SEARCH) return undefined
  const payload = record.subarray(HEADER_SIZE)
  const stored = getFixed32(record, 0)
  const length = getFixed32(record, 4)
  const type = record[8]
  const flip = (at: number, bit: number): BitFlip => ({ at, bit, byte: record[at] })
  // The length field: the flip must make it span the record exactly.
  if (type === RECORD_FULL && recordChecksum(RECORD_FULL, payload) === stored) {
    const diff = (length ^ payload.length) >>> 0
    if (!isOneBit(diff)) return undefined // more than one bit of the length is wrong
    const i = 31 - Math.clz32(diff) // the bit's index in the little-endian field
    return flip(4 + (i >>> 3), i & 7)
  }
  if (length !== payload.length) return undefined
  // The type byte.
  if (isOneBit(type ^ RECORD_FULL)) {
    return recordChecksum(RECORD_FULL, payload) === stored ? flip(8, 31 - Math.clz32(type ^ RECORD_FULL)) : undefined
  }
  if (type !== RECORD_FULL) return undefined
  const actual = crc(payload, crc(Uint8Array.of(RECORD_FULL)))
  // The stored checksum: its masked form differs in one bit.
  for (let i = 0; i < 32; i++) {
    if (unmaskCrc((stored ^ (1 << i)) >>> 0) === actual) return flip(i >>> 3, i & 7)
  }
  // The payload: the raw CRC of a one-bit error followed by k zero bytes, for
  // k = 0, 1, ... (the payload's last byte first), one register per bit.
  const syndrome = (actual ^ unmaskCrc(stored)) | 0
  const regs = new Int32Array(8)
  for (let b = 0; b < 8; b++) regs[b] = TABLE[1 << b]
  for (let j = payload.length - 1; j >= 0; j--) {
    for (let b = 0; b < 8; b++) {
      if (regs[b] === syndrome) return flip(HEADER_SIZE + j, b)
      const r = regs[b]
      regs[b] = (r >>> 8) ^ TABLE[r & 0xff]
    }
  }
  return undefined
}

function isOneBit (x: number): boolean {
  return x !== 0 && ((x & (x - 1)) >>> 0) === 0
}
