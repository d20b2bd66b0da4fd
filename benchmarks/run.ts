// Side-by-side benchmark (`npm run bench`): lsm-level, classic-level and
// memory-level in one run, interleaved workload by workload, with LevelDB's
// db_bench names. Prints ops/s, p50/p99 latency of single operations, and the
// ratio to classic-level.
//
//   npm run bench                        100,000 keys (a few minutes)
//   BENCH_KEYS=200000 npm run bench      the size the performance issue asks for
//   BENCH_ONLY=readrandom,readseq ...    a subset
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
const SYNC_OPS = Number(process.env.BENCH_SYNC_OPS ?? 2000)
const VALUE_SIZE = 100
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
const ENGINES = ['lsm-level', 'classic-level', 'memory-level'] as const
type EngineName = typeof ENGINES[number]

const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' }

function make (name: EngineName, dir: string): any {
  if (name === 'lsm-level') return new LsmLevel(dir, BUF)
  if (name === 'classic-level') return new ClassicLevel(dir, BUF)
  return new MemoryLevel(BUF)
}

function randomKeys (n: number, seed: number): Buffer[] {
  const rnd = new Random(seed)
  return Array.from({ length: n }, () => rnd.bytes(16))
}

const values = randomKeys(1024, 2).map((k) => Buffer.concat(Array(7).fill(k)).subarray(0, VALUE_SIZE))

interface Row { ops: number, p50?: number, p99?: number }
const results = new Map<string, Map<EngineName, Row>>()

function percentile (sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

/** Times `count` awaited single operations, recording each one's latency. */
async function singleOps (count: number, op: (i: number) => Promise<unknown> | unknown): Promise<Row> {
  const lat = new Float64Array(count)
  const t0 = process.hrtime.bigint()
  let prev = t0
  for (let i = 0; i < count; i++) {
    await op(i)
    const now = process.hrtime.bigint()
    lat[i] = Number(now - prev) / 1000
    prev = now
  }
  const sec = Number(prev - t0) / 1e9
  lat.sort()
  return { ops: count / sec, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) }
}

async function timed (fn: () => Promise<number>): Promise<Row> {
  const t0 = process.hrtime.bigint()
  const ops = await fn()
  return { ops: ops / (Number(process.hrtime.bigint() - t0) / 1e9) }
}

function record (workload: string, engine: EngineName, row: Row): void {
  if (!results.has(workload)) results.set(workload, new Map())
  results.get(workload)!.set(engine, row)
}

/** Closes and reopens a database, and lets lsm-level finish its compactions: reads start from a settled tree. */
async function settle (name: EngineName, db: any, dir: string): Promise<any> {
  if (name === 'memory-level') return db
  if (name === 'lsm-level') await db.engine.waitForIdle()
  await db.close()
  const again = make(name, dir)
  await again.open()
  if (name === 'lsm-level') await again.engine.waitForIdle()
  return again
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bench-'))
  const keys = randomKeys(N, 1)
  const missing = keys.map((k) => { const m = Buffer.from(k); m[15] ^= 1; return m }) // between present keys
  const order = randomKeys(N, 3).map((b) => b.readUInt32BE(0) % N)
  const sequential = Array.from({ length: N }, (_, i) => { const k = Buffer.alloc(16); k.writeUInt32BE(i, 12); return k })
  const want = (w: string): boolean => ONLY === undefined || ONLY.has(w)
  console.log(`# ${N.toLocaleString('en-US')} keys of 16 B, values of ${VALUE_SIZE} B; Node ${process.version}; ${os.cpus().length} cores; ${os.cpus()[0]?.model ?? ''}`)
  const dbs = new Map<EngineName, any>()
  try {
    if (want('fillseq')) {
      for (const e of ENGINES) {
        const db = make(e, path.join(root, e + '-seq'))
        await db.open()
        record('fillseq', e, await singleOps(N, (i) => db.put(sequential[i], values[i & 1023])))
        await db.close()
      }
    }
    for (const e of ENGINES) {
      const db = make(e, path.join(root, e))
      await db.open()
      record('fillrandom', e, await singleOps(N, (i) => db.put(keys[i], values[i & 1023])))
      dbs.set(e, await settle(e, db, path.join(root, e)))
    }
    const reads: Array<[string, (db: any, e: EngineName) => Promise<Row>]> = [
      ['readrandom', (db) => singleOps(N, (i) => db.get(keys[order[i]]))],
      ['readmissing', (db) => singleOps(N, (i) => db.get(missing[order[i]]))],
      ['readrandomsync', (db) => singleOps(N, (i) => db.getSync(keys[order[i]]))],
      ['readrandom64', (db) => timed(async () => {
        let next = 0
        await Promise.all(Array.from({ length: 64 }, async () => {
          while (next < N) { const i = next++; await db.get(keys[order[i]]) }
        }))
        return N
      })],
      ['readseq', (db) => timed(async () => {
        let n = 0
        const it = db.iterator()
        for (;;) { const batch = await it.nextv(1000); if (batch.length === 0) break; n += batch.length }
        await it.close()
        return n
      })],
      ['seekrandom', (db) => singleOps(Math.min(N, 5000), async (i) => {
        const it = db.iterator({ gte: keys[order[i]] })
        await it.nextv(100)
        await it.close()
      })],
      ['readwhilewriting', (db) => singleOps(N, (i) => i % 20 === 0 ? db.put(keys[order[i]], values[i & 1023]) : db.get(keys[order[i]]))]
    ]
    for (const [name, fn] of reads) {
      if (!want(name)) continue
      for (const e of ENGINES) record(name, e, await fn(dbs.get(e), e))
    }
    for (const e of ENGINES) await dbs.get(e).close()
    dbs.clear()
    if (want('fillbatch')) {
      for (const e of ENGINES) {
        const db = make(e, path.join(root, e + '-batch'))
        await db.open()
        record('fillbatch', e, await timed(async () => {
          for (let i = 0; i < N; i += 1000) {
            const ops = []
            for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: values[j & 1023] })
            await db.batch(ops)
          }
          return N
        }))
        await db.close()
      }
    }
    for (const writers of [1, 64]) {
      const name = `fillsync${writers === 1 ? '' : ' (64 writers)'}`
      if (!want('fillsync')) continue
      for (const e of ENGINES) {
        if (e === 'memory-level') continue
        const db = make(e, path.join(root, `${e}-sync${writers}`))
        await db.open()
        record(name, e, await timed(async () => {
          let next = 0
          await Promise.all(Array.from({ length: writers }, async () => {
            while (next < SYNC_OPS) { const i = next++; await db.put(keys[i], values[i & 1023], { sync: true }) }
          }))
          return SYNC_OPS
        }))
        await db.close()
      }
    }
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => {})
    fs.rmSync(root, { recursive: true, force: true })
  }
  const fmt = (r: Row | undefined): string => r === undefined ? 'n/a' : Math.round(r.ops).toLocaleString('en-US')
  const lat = (r: Row | undefined): string => r?.p50 === undefined ? '' : ` (${r.p50.toFixed(1)} / ${r.p99!.toFixed(1)} µs)`
  console.log('\nops/s, and p50 / p99 latency of single awaited operations\n')
  console.log('| workload | ' + ENGINES.join(' | ') + ' | lsm / classic | lsm / memory |')
  console.log('|---|' + ENGINES.map(() => '---:').join('|') + '|---:|---:|')
  for (const [w, r] of results) {
    const lsm = r.get('lsm-level')!
    const ratio = (other: EngineName): string => r.get(other) ? (lsm.ops / r.get(other)!.ops).toFixed(2) + 'x' : 'n/a'
    console.log(`| ${w} | ${ENGINES.map((e) => fmt(r.get(e)) + lat(r.get(e))).join(' | ')} | ${ratio('classic-level')} | ${ratio('memory-level')} |`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
