// The data of the checkpoint benchmarks: 16-byte keys in order, incompressible
// 100-byte values (slices of random bytes: compression is on by default), and
// a database directory's size.
import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import * as path from 'node:path'

const POOL = randomBytes(1024 * 1024)

export function value (i: number): Buffer {
  const at = (i * 7919) % (POOL.length - 100)
  return POOL.subarray(at, at + 100)
}

export function key (i: number): Buffer {
  const k = Buffer.alloc(16)
  k.write(String(i).padStart(16, '0'))
  return k
}

/** Bytes of the files in `dir`, and how many are tables. */
export function dirBytes (dir: string): { bytes: number, tables: number } {
  let bytes = 0
  let tables = 0
  for (const n of fs.readdirSync(dir)) {
    bytes += fs.statSync(path.join(dir, n)).size
    if (n.endsWith('.sst')) tables++
  }
  return { bytes, tables }
}
