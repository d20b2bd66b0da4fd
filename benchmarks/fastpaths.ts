// Focused side-by-side benchmark of the single-operation fast paths (puts, gets,
// getSync, gets in flight, batches), for profiling and for comparing a change
// against classic-level and memory-level in the same process. Random,
// incompressible 100-byte values and 16-byte keys; reads run on a database that
// was closed, reopened and (lsm-level) left to finish its compactions.
//
//   node dist/benchmarks/fastpaths.js
//   FP_KEYS=200000 FP_ENGINES=lsm-level FP_ONLY=readrandom node --cpu-prof dist/benchmarks/fastpaths.js
//
// FP_ENGINES: comma-separated subset of lsm-level,classic-level,memory-level.
// FP_ONLY: comma-separated subset of the workloads below. FP_ROUNDS: repeat the
// read workloads (engines interleaved) and keep each engine's best round.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import * as inspector from 'node:inspector'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'

const N = Number(process.env.FP_KEYS ?? 200_000)
const ROUNDS = Number(process.env.FP_ROUNDS ?? 1)
const ALL = ['lsm-level', 'classic-level', 'memory-level']
const ENGINES = process.env.FP_ENGINES ? process.env.FP_ENGINES.split(',') : ALL
const ONLY = process.env.FP_ONLY ? new Set(process.env.FP_ONLY.split(',')) : undefined
const want = (w: string): boolean => ONLY === undefined || ONLY.has(w)
const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' }

function make (name: string, dir: string): any {
  if (name === 'lsm-level') return new LsmLevel(dir, BUF)
  if (name === 'classic-level') return new ClassicLevel(dir, BUF)
  return new MemoryLevel(BUF)
}

function randomBuffers (n: number, size: number, seed: number): Buffer[] {
  const rnd = new Random(seed)
  const out = new Array<Buffer>(n)
  for (let i = 0; i < n; i++) {
    const b = Buffer.allocUnsafe(size)
    for (let j = 0; j < size; j += 4) b.writeUInt32LE(rnd.next(), j)
    out[i] = b
  }
  return out
}

const results = new Map<string, Map<string, number>>()
function record (workload: string, engine: string, opsPerSec: number): void {
  if (!results.has(workload)) results.set(workload, new Map())
  const m = results.get(workload)!
  m.set(engine, Math.max(m.get(engine) ?? 0, opsPerSec))
}

const PROFILE_DIR = process.env.FP_PROFILE
let session: inspector.Session | undefined
function post (method: string, params?: object): Promise<any> {
  return new Promise((resolve, reject) => session!.post(method, params ?? {}, (err, res) => err ? reject(err) : resolve(res)))
}

async function timed (count: number, fn: () => Promise<void>, label?: string): Promise<number> {
  if (PROFILE_DIR && label) {
    if (!session) { session = new inspector.Session(); session.connect(); await post('Profiler.enable') }
    await post('Profiler.start')
  }
  const t0 = process.hrtime.bigint()
  await fn()
  const ops = count / (Number(process.hrtime.bigint() - t0) / 1e9)
  if (PROFILE_DIR && label) {
    const { profile } = await post('Profiler.stop')
    fs.mkdirSync(PROFILE_DIR, { recursive: true })
    fs.writeFileSync(path.join(PROFILE_DIR, label + '.cpuprofile'), JSON.stringify(profile))
  }
  return ops
}

async function settle (name: string, db: any, dir: string): Promise<any> {
  if (name === 'memory-level') return db
  if (name === 'lsm-level') await db.engine.waitForIdle()
  await db.close()
  const again = make(name, dir)
  await again.open()
  if (name === 'lsm-level') await again.engine.waitForIdle()
  return again
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-fastpaths-'))
  const keys = randomBuffers(N, 16, 1)
  const values = randomBuffers(N, 100, 2)
  const missing = keys.map((k) => { const m = Buffer.from(k); m[15] ^= 1; return m })
  const rnd = new Random(3)
  const order = Array.from({ length: N }, () => rnd.next() % N)
  console.log(`# ${N} keys of 16 B, random values of 100 B; Node ${process.version}; ${os.cpus().length} cores; engines ${ENGINES.join(', ')}`)
  const dbs = new Map<string, any>()
  try {
    for (const e of ENGINES) {
      const db = make(e, path.join(root, e))
      await db.open()
      const ops = await timed(N, async () => { for (let i = 0; i < N; i++) await db.put(keys[i], values[i]) }, 'fillrandom-' + e)
      record('fillrandom', e, ops)
      dbs.set(e, await settle(e, db, path.join(root, e)))
    }
    const reads: Array<[string, (db: any, label: string) => Promise<number>]> = [
      ['readrandom', (db, label) => timed(N, async () => { for (let i = 0; i < N; i++) await db.get(keys[order[i]]) }, label)],
      ['readmissing', (db, label) => timed(N, async () => { for (let i = 0; i < N; i++) await db.get(missing[order[i]]) }, label)],
      ['readrandomsync', (db, label) => timed(N, async () => { for (let i = 0; i < N; i++) db.getSync(keys[order[i]]) }, label)],
      ['readrandom64', (db, label) => timed(N, async () => {
        let next = 0
        await Promise.all(Array.from({ length: 64 }, async () => {
          while (next < N) { const i = next++; await db.get(keys[order[i]]) }
        }))
      }, label)],
      ['getmany100', (db, label) => timed(N, async () => {
        for (let i = 0; i < N; i += 100) await db.getMany(order.slice(i, i + 100).map((j) => keys[j]))
      }, label)],
      ['readwhilewriting', (db, label) => timed(N, async () => {
        for (let i = 0; i < N; i++) {
          if (i % 20 === 0) await db.put(keys[order[i]], values[i])
          else await db.get(keys[order[i]])
        }
      }, label)]
    ]
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, fn] of reads) {
        if (!want(name)) continue
        for (const e of ENGINES) record(name, e, await fn(dbs.get(e), `${name}-${e}`))
      }
    }
    if (process.env.FP_STATS && dbs.has('lsm-level')) {
      const st = dbs.get('lsm-level').stats()
      console.log('# lsm-level after reads:', JSON.stringify({ levels: st.levels.map((l: any) => l.files), blockCache: st.blockCache, bloom: st.bloom }))
    }
    for (const e of ENGINES) await dbs.get(e).close()
    dbs.clear()
    if (want('fillbatch')) {
      for (const e of ENGINES) {
        const db = make(e, path.join(root, e + '-batch'))
        await db.open()
        record('fillbatch', e, await timed(N, async () => {
          for (let i = 0; i < N; i += 1000) {
            const ops = []
            for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: values[j] })
            await db.batch(ops)
          }
        }, 'fillbatch-' + e))
        await db.close()
      }
    }
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => {})
    fs.rmSync(root, { recursive: true, force: true })
  }
  const cols = ENGINES.slice()
  const hasClassic = cols.includes('classic-level') && cols.includes('lsm-level')
  const hasMemory = cols.includes('memory-level') && cols.includes('lsm-level')
  console.log('| workload | ' + cols.join(' | ') + (hasClassic ? ' | lsm/classic' : '') + (hasMemory ? ' | lsm/memory' : '') + ' |')
  for (const [w, r] of results) {
    const cells = cols.map((e) => r.has(e) ? Math.round(r.get(e)!).toLocaleString('en-US') : 'n/a')
    const lsm = r.get('lsm-level') ?? 0
    if (hasClassic) cells.push((lsm / r.get('classic-level')!).toFixed(2) + 'x')
    if (hasMemory) cells.push((lsm / r.get('memory-level')!).toFixed(2) + 'x')
    console.log(`| ${w} | ${cells.join(' | ')} |`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
