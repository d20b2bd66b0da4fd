// The Snappy codec (lib/compression/snappy.ts) beside snappyjs, an independent
// pure-JS implementation, on 4 KiB blocks of JSON documents (benchmarks/json-docs.ts):
// compression and decompression throughput in MB/s of uncompressed data, and the
// ratios ours / theirs; then the cost of a failed attempt, compressing 4 KiB
// blocks of random bytes (what a table of incompressible values pays per block). Rounds alternate the two codecs; each keeps its best round.
// Times are the process's CPU time (process.cpuUsage), not wall time, so that
// other work on a shared machine skews the ratio less.
//
//   node dist/benchmarks/snappy.js        (SNAPPY_ROUNDS=7, SNAPPY_MB=8)
import * as snappyjs from 'snappyjs'
import { snappyCompress, snappyDecompress } from '../lib/compression/snappy'
import { Random } from '../test/util/random'
import { jsonDocuments } from './json-docs'

const BLOCK_BYTES = 4096
const ROUNDS = Number(process.env.SNAPPY_ROUNDS ?? 7)
const TOTAL_MB = Number(process.env.SNAPPY_MB ?? 8)

/** JSON documents cut into blocks of BLOCK_BYTES, TOTAL_MB in all. */
function blocks (): Buffer[] {
  const text = Buffer.concat(jsonDocuments(Math.ceil(TOTAL_MB * 2 ** 20 / 300), 1))
  const out: Buffer[] = []
  for (let p = 0; p + BLOCK_BYTES <= text.length && out.length * BLOCK_BYTES < TOTAL_MB * 2 ** 20; p += BLOCK_BYTES) {
    out.push(Buffer.from(text.subarray(p, p + BLOCK_BYTES)))
  }
  return out
}

interface Codec {
  compress: (b: Buffer) => Uint8Array
  decompress: (b: Buffer) => Uint8Array
}

const CODECS: Record<string, Codec> = {
  'lsm-level': { compress: (b) => snappyCompress(b), decompress: (b) => snappyDecompress(b) },
  snappyjs: { compress: (b) => snappyjs.compress(b), decompress: (b) => snappyjs.uncompress(b) }
}

function mbPerSec (bytes: number, ms: number): number {
  return bytes / 2 ** 20 / (ms / 1000)
}

/** CPU milliseconds to run `fn` over `input`. */
function timeRound (fn: (b: Buffer) => Uint8Array, input: Buffer[]): number {
  const t0 = process.cpuUsage()
  for (const b of input) fn(b)
  const used = process.cpuUsage(t0)
  return (used.user + used.system) / 1000
}

function main (): void {
  const plain = blocks()
  const bytes = plain.length * BLOCK_BYTES
  const best: Record<string, { compress: number, decompress: number, ratio: number }> = {}
  // Every codec decompresses the blocks its own compressor made.
  const packedBy: Record<string, Buffer[]> = {}
  for (const [name, codec] of Object.entries(CODECS)) {
    packedBy[name] = plain.map((b) => Buffer.from(codec.compress(b)))
    best[name] = { compress: 0, decompress: 0, ratio: bytes / packedBy[name].reduce((s, b) => s + b.length, 0) }
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, codec] of Object.entries(CODECS)) {
      best[name].compress = Math.max(best[name].compress, mbPerSec(bytes, timeRound(codec.compress, plain)))
      best[name].decompress = Math.max(best[name].decompress, mbPerSec(bytes, timeRound(codec.decompress, packedBy[name])))
    }
  }
  console.log(`${plain.length} blocks of ${BLOCK_BYTES} B of JSON documents, best of ${ROUNDS} alternating rounds`)
  for (const [name, b] of Object.entries(best)) {
    console.log(`${name.padEnd(10)} compress ${b.compress.toFixed(0).padStart(5)} MB/s  decompress ${b.decompress.toFixed(0).padStart(5)} MB/s  ratio ${b.ratio.toFixed(2)}x`)
  }
  const ours = best['lsm-level']
  const theirs = best.snappyjs
  console.log(`ours / snappyjs: compress ${(ours.compress / theirs.compress).toFixed(2)}x, decompress ${(ours.decompress / theirs.decompress).toFixed(2)}x`)
  const rnd = new Random(2)
  const random = plain.map(() => rnd.bytes(BLOCK_BYTES))
  let fastest = Infinity
  for (let r = 0; r < ROUNDS; r++) fastest = Math.min(fastest, timeRound(CODECS['lsm-level'].compress, random))
  const perBlockUs = fastest * 1000 / random.length
  console.log(`random bytes: lsm-level compress attempt ${perBlockUs.toFixed(2)} µs per ${BLOCK_BYTES} B block (${mbPerSec(bytes, fastest).toFixed(0)} MB/s)`)
}

main()
