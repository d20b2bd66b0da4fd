// A small seeded PRNG for tests, so a failing run can be replayed with SEED=<n>.
//
// xorshift128 (Marsaglia) with its 128-bit state filled from the seed by a
// splitmix32-style mixer; plenty for test data, not for anything cryptographic.

export class Random {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor (seed: number) {
    let s = seed >>> 0
    const mix = (): number => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = mix()
    this.b = mix()
    this.c = mix()
    this.d = mix()
    if ((this.a | this.b | this.c | this.d) === 0) this.d = 1
  }

  /** A uint32. */
  next (): number {
    let t = this.d
    const s = this.a
    this.d = this.c
    this.c = this.b
    this.b = s
    t ^= t << 11
    t ^= t >>> 8
    this.a = (t ^ s ^ (s >>> 19)) >>> 0
    return this.a
  }

  /** A float in [0, 1). */
  float (): number {
    return (this.next() * 0x200000 + (this.next() >>> 11)) / 2 ** 53
  }

  /** An integer in [0, n) (n < 2^53). */
  int (n: number): number {
    return Math.floor(this.float() * n)
  }

  bytes (n: number): Buffer {
    const out = Buffer.allocUnsafe(n)
    let i = 0
    for (; i + 4 <= n; i += 4) out.writeUInt32LE(this.next(), i)
    for (; i < n; i++) out[i] = this.next() & 0xff
    return out
  }

  pick<T> (a: readonly T[]): T {
    return a[this.int(a.length)]
  }
}

/** The seed to use: env SEED if set, else a random one. Printed (as a TAP comment) so a failure can be replayed. */
export function seedFromEnv (): number {
  const env = process.env.SEED
  const seed = env !== undefined && env !== '' ? Number(env) >>> 0 : Math.floor(Math.random() * 0x100000000)
  console.log(`# SEED=${seed}`)
  return seed
}
