// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78): the checksum of every
// LevelDB log record and table block. It is not zlib's CRC-32 (lib/util/crc.ts),
// which lsm-level's own files use; LevelDB masks it the same way (maskCrc).
//
// Table-driven, eight bytes per step ("slicing-by-8"): TABLES[k][b] is the CRC
// of byte b followed by k zero bytes, so eight table lookups fold eight input
// bytes at once. Check value: crc32c("123456789") = 0xe3069283.

const POLY = 0x82f63b78

function makeTables (): Uint32Array[] {
  const tables: Uint32Array[] = []
  const t0 = new Uint32Array(256)
  for (let b = 0; b < 256; b++) {
    let c = b
    for (let i = 0; i < 8; i++) c = (c & 1) !== 0 ? (c >>> 1) ^ POLY : c >>> 1
    t0[b] = c >>> 0
  }
  tables.push(t0)
  for (let k = 1; k < 8; k++) {
    const prev = tables[k - 1]
    const t = new Uint32Array(256)
    for (let b = 0; b < 256; b++) t[b] = ((prev[b] >>> 8) ^ t0[prev[b] & 0xff]) >>> 0
    tables.push(t)
  }
  return tables
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = makeTables()

/** CRC-32C of buf[start, end), continuing from `initial` (the CRC of the bytes before). */
export function crc32c (buf: Uint8Array, start = 0, end = buf.length, initial = 0): number {
  let c = ~initial
  let i = start
  for (; i + 8 <= end; i += 8) {
    c ^= buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24)
    c = T7[c & 0xff] ^ T6[(c >>> 8) & 0xff] ^ T5[(c >>> 16) & 0xff] ^ T4[c >>> 24] ^
      T3[buf[i + 4]] ^ T2[buf[i + 5]] ^ T1[buf[i + 6]] ^ T0[buf[i + 7]]
  }
  for (; i < end; i++) c = T0[(c ^ buf[i]) & 0xff] ^ (c >>> 8)
  return ~c >>> 0
}
