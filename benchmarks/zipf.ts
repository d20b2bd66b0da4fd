// YCSB's key choosers, seeded: the zipfian generator of Gray et al. ("Quickly
// generating billion-record synthetic databases", SIGMOD 1994) as YCSB's
// ZipfianGenerator implements it, and YCSB's ScrambledZipfianGenerator, which
// draws from a zipfian over 10^10 items (constant 0.99) and hashes the draw
// (FNV-1a, 64 bits) into the key space, so that the hot keys are spread over
// the whole key range instead of clustered at its start.
import { Random } from '../test/util/random'

/** YCSB's zipfian constant. */
export const ZIPFIAN_CONSTANT = 0.99

/** The item count YCSB's scrambled generator draws from, and its precomputed zeta(10^10, 0.99). */
const SCRAMBLED_ITEMS = 10_000_000_000
const SCRAMBLED_ZETAN = 26.46902820178302

/** zeta(n, theta) = sum over i in 1..n of 1 / i^theta (O(n): only for modest n). */
export function zeta (n: number, theta: number): number {
  let sum = 0
  for (let i = 1; i <= n; i++) sum += 1 / Math.pow(i, theta)
  return sum
}

/** Zipfian draws over [0, items): item 0 is the most popular, then 1, and so on. */
export class Zipfian {
  private readonly alpha: number
  private readonly eta: number
  private readonly zetan: number
  private readonly half: number

  constructor (private readonly items: number, private readonly rnd: Random, theta = ZIPFIAN_CONSTANT, zetan = zeta(items, theta)) {
    this.zetan = zetan
    this.alpha = 1 / (1 - theta)
    const zeta2 = 1 + Math.pow(0.5, theta)
    this.half = zeta2
    this.eta = (1 - Math.pow(2 / items, 1 - theta)) / (1 - zeta2 / zetan)
  }

  next (): number {
    const u = this.rnd.float()
    const uz = u * this.zetan
    if (uz < 1) return 0
    if (uz < this.half) return 1
    return Math.floor(this.items * Math.pow(this.eta * u - this.eta + 1, this.alpha))
  }
}

const FNV_OFFSET_BASIS_64 = 0xcbf29ce484222325n
const FNV_PRIME_64 = 1099511628211n

/** YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of a long, as a non-negative long. */
export function fnvhash64 (value: number): bigint {
  let val = BigInt(value)
  let hash = BigInt.asIntN(64, FNV_OFFSET_BASIS_64)
  for (let i = 0; i < 8; i++) {
    const octet = val & 0xffn
    val >>= 8n
    hash = BigInt.asIntN(64, (hash ^ octet) * FNV_PRIME_64)
  }
  return hash < 0n ? -hash : hash
}

/** YCSB's ScrambledZipfianGenerator over [0, items): zipfian popularity, hot items spread by a hash. */
export class ScrambledZipfian {
  private readonly zipf: Zipfian
  private readonly n: bigint

  constructor (items: number, rnd: Random) {
    this.zipf = new Zipfian(SCRAMBLED_ITEMS, rnd, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN)
    this.n = BigInt(items)
  }

  next (): number {
    return Number(fnvhash64(this.zipf.next()) % this.n)
  }
}
