// Side-by-side benchmark: lsm-level, classic-level and memory-level in one run,
// interleaved per workload, with LevelDB's db_bench workload names. Prints ops/s
// and the ratio to classic-level. (The performance issue grows this into the full
// set with latency percentiles; this is the foundation's fill-and-read subset.)
//
//   npm run bench                 default: 100,000 keys
//   BENCH_KEYS=200000 npm run bench
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { ClassicLevel } = require('classic-level')
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { MemoryLevel } = require('memory-level')

const N = Number(process.env.BENCH_KEYS ?? 100_000)
const VALUE_SIZE = 100
const SEED = Number(process.env.SEED ?? 42)

interface Engine {
  name: string
  make: (dir: string) => any
}

const engines: Engine[] = [
  { name: 'lsm-level', make: (dir) => new LsmLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' }) },
  { name: 'classic-level', make: (dir) => new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' }) },
  { name: 'memory-level', make: () => new MemoryLevel({ keyEncoding: 'buffer', valueEncoding: 'buffer' }) }
]

function makeKeys (n: number, seed: number): Buffer[] {
  const rnd = new Random(seed)
  const keys: Buffer[] = []
  for (let i = 0; i < n; i++) keys.push(rnd.bytes(16))
  return keys
}

function seqKeys (n: number): Buffer[] {
  const keys: Buffer[] = []
  for (let i = 0; i < n; i++) {
    const k = Buffer.alloc(16)
    k.writeUInt32BE(i, 12)
    keys.push(k)
  }
  return keys
}

const values = makeKeys(1024, SEED + 1).map((k) => Buffer.concat([k, k, k, k, k, k, k]).subarray(0, VALUE_SIZE))

type Result = Record<string, Record<string, number>>
const results: Result = {}

function record (workload: string, engine: string, opsPerSec: number): void {
  results[workload] ??= {}
  results[workload][engine] = opsPerSec
}

async function timed (fn: () => Promise<number>): Promise<number> {
  const t0 = process.hrtime.bigint()
  const ops = await fn()
  const sec = Number(process.hrtime.bigint() - t0) / 1e9
  return ops / sec
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bench-'))
  const random = makeKeys(N, SEED)
  const sequential = seqKeys(N)
  const missing = makeKeys(N, SEED + 7)
  const order = makeKeys(N, SEED + 3).map((b) => b.readUInt32BE(0) % N)
  console.log(`# ${N} keys of 16 B, values of ${VALUE_SIZE} B; Node ${process.version}; ${os.cpus().length} cores`)
  try {
    for (const e of engines) {
      const dir = path.join(root, e.name)
      // fillseq
      let db = e.make(dir + '-seq')
      await db.open()
      record('fillseq', e.name, await timed(async () => {
        for (let i = 0; i < N; i++) await db.put(sequential[i], values[i & 1023])
        return N
      }))
      await db.close()
      // fillrandom
      db = e.make(dir)
      await db.open()
      record('fillrandom', e.name, await timed(async () => {
        for (let i = 0; i < N; i++) await db.put(random[i], values[i & 1023])
        return N
      }))
      // reads from a reopened database with its compactions finished
      if (e.name === 'lsm-level') await db.engine.waitForIdle()
      if (e.name !== 'memory-level') { await db.close(); db = e.make(dir); await db.open() }
      record('readrandom', e.name, await timed(async () => {
        for (let i = 0; i < N; i++) await db.get(random[order[i]])
        return N
      }))
      record('readmissing', e.name, await timed(async () => {
        for (let i = 0; i < N; i++) await db.get(missing[i])
        return N
      }))
      record('readrandomsync', e.name, await timed(async () => {
        for (let i = 0; i < N; i++) db.getSync(random[order[i]])
        return N
      }))
      record('readseq', e.name, await timed(async () => {
        let n = 0
        for await (const _ of db.iterator()) n++ // eslint-disable-line @typescript-eslint/no-unused-vars
        return n
      }))
      await db.close()
      // fillbatch
      db = e.make(dir + '-batch')
      await db.open()
      record('fillbatch', e.name, await timed(async () => {
        for (let i = 0; i < N; i += 1000) {
          const ops = []
          for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: random[j], value: values[j & 1023] })
          await db.batch(ops)
        }
        return N
      }))
      await db.close()
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const names = engines.map((e) => e.name)
  console.log('\n| workload | ' + names.map((n) => `${n} ops/s`).join(' | ') + ' | lsm / classic |')
  console.log('|---|' + names.map(() => '---:').join('|') + '|---:|')
  for (const [w, r] of Object.entries(results)) {
    const ratio = r['lsm-level'] / r['classic-level']
    console.log(`| ${w} | ${names.map((n) => Math.round(r[n]).toLocaleString('en-US')).join(' | ')} | ${ratio.toFixed(2)}x |`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
