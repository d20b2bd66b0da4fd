// The Snappy block codec (lib/compression/snappy.ts): seeded round trips over
// many sizes and kinds of data, hand-built blocks for every element form, every
// truncation and random corruption of real blocks (a 'Snappy:' Error, never a
// RangeError nor output of the wrong length), and interoperability with an
// independent implementation (snappyjs) both ways. Replay a run with SEED=<n>.
import test from 'tape'
import * as snappyjs from 'snappyjs'
import { snappyCompress, snappyDecompress, snappyMaxCompressedLength, snappyUncompressedLength } from '../lib/compression/snappy'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()

const SIZES = [0, 1, 2, 3, 4, 5, 14, 15, 16, 17, 31, 32, 33, 60, 61, 100, 255, 256, 257, 1000, 4096, 16384, 65535, 65536, 65537, 200000]

const WORDS = ['"id"', '"name"', '"status"', '"created"', ':', ',', '{', '}', 'open', 'closed', 'alice', 'bob', '2026-12-02T07:', '"total":', '1', '42', ' ']

/** Data generators, from incompressible to highly repetitive. */
const KINDS: Record<string, (rnd: Random, n: number) => Buffer> = {
  random: (rnd, n) => rnd.bytes(n),
  zeros: (_rnd, n) => Buffer.alloc(n),
  pattern: (rnd, n) => {
    const unit = rnd.bytes(1 + rnd.int(9))
    const out = Buffer.alloc(n)
    for (let i = 0; i < n; i++) out[i] = unit[i % unit.length]
    return out
  },
  words: (rnd, n) => {
    let s = ''
    while (s.length < n) s += rnd.pick(WORDS)
    return Buffer.from(s.slice(0, n), 'latin1')
  },
  // Runs of fresh random bytes and repeats from anywhere earlier (near and far offsets).
  mixed: (rnd, n) => {
    const out = Buffer.alloc(n)
    let p = 0
    while (p < n) {
      const len = Math.min(n - p, 1 + rnd.int(rnd.int(4) === 0 ? 3000 : 80))
      if (p > 0 && rnd.int(2) === 0) {
        const from = rnd.int(p)
        for (let i = 0; i < len; i++) out[p + i] = out[from + i]
      } else {
        rnd.bytes(len).copy(out, p)
      }
      p += len
    }
    return out
  },
  // Low-entropy bytes: few distinct symbols, random order.
  fewSymbols: (rnd, n) => {
    const out = Buffer.alloc(n)
    for (let i = 0; i < n; i++) out[i] = 97 + rnd.int(3)
    return out
  }
}

function snappyError (fn: () => unknown): Error | undefined {
  try {
    fn()
    return undefined
  } catch (err) {
    return err as Error
  }
}

function isSnappyError (err: Error | undefined): boolean {
  return err !== undefined && !(err instanceof RangeError) && !(err instanceof TypeError) && err.message.startsWith('Snappy: ')
}

test('snappy: round trips of every size and kind of data', (t) => {
  const rnd = new Random(seed)
  let failures = 0
  for (const [kind, make] of Object.entries(KINDS)) {
    for (const n of SIZES) {
      const src = make(rnd, n)
      const block = snappyCompress(src)
      const back = snappyDecompress(block)
      const ok = block.length <= snappyMaxCompressedLength(n) && snappyUncompressedLength(block) === n &&
        Buffer.from(back.buffer, back.byteOffset, back.length).equals(src)
      if (!ok && failures++ < 5) t.fail(`${kind}, ${n} bytes: round trip differs`)
    }
  }
  t.equal(failures, 0, 'every round trip returns the input')
  t.end()
})

test('snappy: compressible data shrinks, incompressible data grows by at most the bound', (t) => {
  const rnd = new Random(seed + 1)
  const n = 65536
  t.ok(snappyCompress(KINDS.zeros(rnd, n)).length < n / 20, 'zeros shrink more than 20x')
  t.ok(snappyCompress(KINDS.pattern(rnd, n)).length < n / 10, 'a repeated pattern shrinks more than 10x')
  t.ok(snappyCompress(KINDS.words(rnd, n)).length < n * 0.6, 'text from a small vocabulary shrinks below 60%')
  const random = snappyCompress(KINDS.random(rnd, n)).length
  t.ok(random > n && random <= snappyMaxCompressedLength(n), `random bytes: ${random} bytes, within the bound`)
  t.end()
})

test('snappy: hand-built blocks of every element form', (t) => {
  const lit = Buffer.from('abcdefgh')
  const cases: Array<[string, number[], Buffer]> = [
    ['empty block', [0x00], Buffer.alloc(0)],
    ['short literal', [8, 7 << 2, ...lit], lit],
    ['literal, 1-byte length', [61, 60 << 2, 60, ...Buffer.alloc(61, 0x61)], Buffer.alloc(61, 0x61)],
    ['literal, 2-byte length', [0x80, 0x02, 61 << 2, 0xff, 0x00, ...Buffer.alloc(256, 7)], Buffer.alloc(256, 7)],
    ['literal, 3-byte length', [3, 62 << 2, 2, 0, 0, 1, 2, 3], Buffer.from([1, 2, 3])],
    ['literal, 4-byte length', [2, 63 << 2, 1, 0, 0, 0, 9, 9], Buffer.from([9, 9])],
    // 'ab' then a copy of 6 at offset 2 (overlapping: repeats the pattern).
    ['copy, 1-byte offset, overlapping', [8, 1 << 2, 0x61, 0x62, 0x01 | ((6 - 4) << 2), 2], Buffer.from('abababab')],
    ['copy, 2-byte offset', [12, 3 << 2, ...Buffer.from('wxyz'), 0x02 | (7 << 2), 4, 0], Buffer.from('wxyzwxyzwxyz')],
    ['copy, 4-byte offset', [6, 2 << 2, 5, 6, 7, 0x03 | (2 << 2), 3, 0, 0, 0], Buffer.from([5, 6, 7, 5, 6, 7])],
    ['copy, 11-bit offset', [0x8f, 0x0e, 61 << 2, 0x03, 0x07, ...Buffer.alloc(0x704, 1), 0x01 | (7 << 2) | (7 << 5), 0x04], Buffer.alloc(0x70f, 1)]
  ]
  for (const [what, bytes, expected] of cases) {
    const out = snappyDecompress(Buffer.from(bytes))
    t.ok(Buffer.from(out).equals(expected), what)
  }
  t.end()
})

test('snappy: malformed headers and elements throw a Snappy error', (t) => {
  const cases: Array<[string, number[]]> = [
    ['no bytes', []],
    ['truncated length', [0x80]],
    ['length of 6 bytes', [0x80, 0x80, 0x80, 0x80, 0x80, 0x00]],
    ['length above 2^32 - 1', [0x80, 0x80, 0x80, 0x80, 0x10]],
    ['declares more than the block can hold', [0xff, 0xff, 0x03, 0x00, 0x61]],
    ['fewer bytes than declared', [3, 1 << 2, 1, 2]],
    ['more bytes than declared', [1, 1 << 2, 1, 2]],
    ['copy at offset 0', [5, 0, 9, 0x01, 0]],
    ['copy before the start', [5, 0, 9, 0x01, 2]],
    ['copy past the declared length', [5, 0, 9, 0x01 | (4 << 2), 1]],
    ['truncated 2-byte copy', [5, 0, 9, 0x02 | (3 << 2), 1]],
    ['truncated 4-byte copy', [5, 0, 9, 0x03 | (3 << 2), 1, 0, 0]],
    ['truncated literal length', [70, 61 << 2, 0x45]],
    ['literal past the end of the block', [10, 9 << 2, 1, 2, 3]]
  ]
  for (const [what, bytes] of cases) {
    const err = snappyError(() => snappyDecompress(Buffer.from(bytes)))
    t.ok(isSnappyError(err), `${what}: ${err?.message ?? 'no error'}`)
  }
  t.ok(isSnappyError(snappyError(() => snappyUncompressedLength(Buffer.from([0xff])))), 'snappyUncompressedLength checks the header')
  t.end()
})

test('snappy: every truncation of a block throws', (t) => {
  const rnd = new Random(seed + 2)
  let wrong = 0
  let checked = 0
  for (const kind of Object.keys(KINDS)) {
    const block = snappyCompress(KINDS[kind](rnd, 1 + rnd.int(3000)))
    for (let len = 0; len < block.length; len++) {
      checked++
      const err = snappyError(() => snappyDecompress(block.subarray(0, len)))
      if (!isSnappyError(err) && wrong++ < 5) t.fail(`${kind}: truncation to ${len} of ${block.length}: ${err?.message ?? 'no error'}`)
    }
  }
  t.equal(wrong, 0, `${checked} truncations all threw a Snappy error`)
  t.end()
})

test('snappy: random corruption throws a Snappy error or gives the declared length, nothing else', (t) => {
  const rnd = new Random(seed + 3)
  let wrong = 0
  let threw = 0
  const trials = 20000
  for (let i = 0; i < trials; i++) {
    const kind = rnd.pick(Object.keys(KINDS))
    const block = Buffer.from(snappyCompress(KINDS[kind](rnd, 1 + rnd.int(2000))))
    const flips = 1 + rnd.int(4)
    for (let f = 0; f < flips; f++) block[rnd.int(block.length)] ^= 1 + rnd.int(255)
    let out: Uint8Array | undefined
    const err = snappyError(() => { out = snappyDecompress(block) })
    if (err !== undefined) {
      threw++
      if (!isSnappyError(err) && wrong++ < 5) t.fail(`trial ${i}: ${String(err)}`)
    } else if (out?.length !== snappyUncompressedLength(block) && wrong++ < 5) {
      t.fail(`trial ${i}: output of ${out?.length} bytes, declared ${snappyUncompressedLength(block)}`)
    }
  }
  t.equal(wrong, 0, `${trials} corrupted blocks: ${threw} threw a Snappy error, the rest gave the declared length`)
  t.ok(threw > trials / 2, 'most corruptions are detected')
  t.end()
})

test('snappy: interoperates with an independent implementation (snappyjs)', (t) => {
  const rnd = new Random(seed + 4)
  let wrong = 0
  for (const [kind, make] of Object.entries(KINDS)) {
    for (const n of SIZES) {
      const src = make(rnd, n)
      const theirs = snappyjs.compress(Buffer.from(src))
      if (!Buffer.from(snappyDecompress(theirs)).equals(src) && wrong++ < 5) t.fail(`${kind}, ${n}: their block, our decompressor`)
      const ours = Buffer.from(snappyCompress(src))
      if (!Buffer.from(snappyjs.uncompress(ours)).equals(src) && wrong++ < 5) t.fail(`${kind}, ${n}: our block, their decompressor`)
    }
  }
  t.equal(wrong, 0, 'blocks decode the same in both implementations, both ways')
  t.end()
})

test('snappy: compresses into and decompresses into a given buffer', (t) => {
  const rnd = new Random(seed + 5)
  const src = KINDS.words(rnd, 5000)
  const dst = Buffer.alloc(snappyMaxCompressedLength(src.length))
  const block = snappyCompress(src, dst)
  t.equal(block.buffer, dst.buffer, 'the block is a view of the given buffer')
  const into = Buffer.alloc(src.length)
  const out = snappyDecompress(block, into)
  t.equal(out, into, 'decompressed into the given buffer of the declared length')
  t.ok(into.equals(src), 'with the input')
  const small = snappyDecompress(block, Buffer.alloc(10))
  t.ok(Buffer.from(small).equals(src), 'a buffer of another length is not used')
  t.end()
})
