// CRC-32 (the zlib/IEEE polynomial, reflected 0xedb88320) in plain JavaScript,
// for hosts without node:zlib (browsers). Slicing-by-8: eight 256-entry tables
// let one step consume eight bytes with eight lookups. The result equals
// zlib.crc32(data, initial) for every input (test/crc.test.ts checks it).

const POLY = 0xedb88320

function makeTables (): Int32Array[] {
  const t0 = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? (c >>> 1) ^ POLY : c >>> 1
    t0[n] = c
  }
  const tables = [t0]
  for (let i = 1; i < 8; i++) {
    const prev = tables[i - 1]
    const t = new Int32Array(256)
    for (let n = 0; n < 256; n++) t[n] = (prev[n] >>> 8) ^ t0[prev[n] & 0xff]
    tables.push(t)
  }
  return tables
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = makeTables()

/** CRC-32 of `data`, continuing from `initial` (the CRC of the bytes before it), as zlib.crc32. */
export function crc32Js (data: Uint8Array, initial = 0): number {
  let c = ~initial
  let i = 0
  const n = data.length
  for (const end = n - 7; i < end; i += 8) {
    const lo = c ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24))
    c = T7[lo & 0xff] ^ T6[(lo >>> 8) & 0xff] ^ T5[(lo >>> 16) & 0xff] ^ T4[lo >>> 24] ^
      T3[data[i + 4]] ^ T2[data[i + 5]] ^ T1[data[i + 6]] ^ T0[data[i + 7]]
  }
  for (; i < n; i++) c = T0[(c ^ data[i]) & 0xff] ^ (c >>> 8)
  return ~c >>> 0
}
