// Checksums for every on-disk record and block: CRC-32 (zlib's polynomial, from
// node:zlib), masked as LevelDB masks its CRCs so that a checksum stored inside
// checksummed data does not checksum to a fixed value.
import * as zlib from 'node:zlib'

const crc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32

export function crc (data: Uint8Array, initial = 0): number {
  return crc32(data, initial)
}

const MASK_DELTA = 0xa282ead8

export function maskCrc (c: number): number {
  return ((((c >>> 15) | (c << 17)) >>> 0) + MASK_DELTA) >>> 0
}

export function unmaskCrc (m: number): number {
  const rot = (m - MASK_DELTA) >>> 0
  return ((rot >>> 17) | (rot << 15)) >>> 0
}
