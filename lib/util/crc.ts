// Checksums for every on-disk record and block: CRC-32 (zlib's polynomial),
// masked as LevelDB masks its CRCs so that a checksum stored inside checksummed
// data does not checksum to a fixed value. The implementation is pure
// JavaScript (lib/util/crc32-table.ts) unless the host supplies its own with
// the same results: on Node, hosts/node/crc.ts installs zlib.crc32
// (on the main thread and on the worker threads).
import { crc32Js } from './crc32-table'

export type Crc32 = (data: Uint8Array, initial?: number) => number

let crc32: Crc32 = crc32Js

/** Replaces the CRC-32 implementation; it must return what crc32Js returns. */
export function useCrc32 (implementation: Crc32): void {
  crc32 = implementation
}

/** Which CRC-32 is in use on this thread: the pure-JavaScript one, or the host's. */
export function crcImplementation (): 'javascript' | 'host' {
  return crc32 === crc32Js ? 'javascript' : 'host'
}

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
