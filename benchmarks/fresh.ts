// Fresh-process benchmark (`npm run bench:fresh`): what a program that never
// warms up gets (a CLI, a test run, a serverless function, an app at start).
// Each engine x workload runs in its own new `node` child with no warmup; 3
// runs, interleaved workload by workload, the engines' order rotated each run.
// Reported per workload: ops/s (median of 3), the ratios of lsm-level to
// classic-level and memory-level, and in that child the time of the package's
// require() and of open(). The warmed comparison is `npm run bench` (run.ts).
//
//   npm run bench:fresh                        200,000 keys (several minutes)
//   BENCH_KEYS=50000 npm run bench:fresh       smaller
//   BENCH_ONLY=readrandom,fillbatch ...        a subset of the workloads
//   BENCH_RUNS=5 ...                           more runs (default 3)
//   BENCH_SEED=7 ...                           other keys, values and orders (default 1)
//   BENCH_MARKDOWN=BENCHMARKS.md ...           also write the section "fresh" of that file
//
// Data as in run.ts (same seeds, same Random): 16-byte random keys, 100-byte
// random values. The fills start from an empty database; the reads from a copy
// of one filled in batches, fully compacted and closed by a preparation child
// (not timed; memory-level, which keeps nothing on disk, is filled in the
// measured child before the clock starts, with batches).
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Random } from '../test/util/random'
import { childSpec, compactAll, ENGINES, type EngineName, loadEngine, median, millis, reply, rotated, runChild, settled } from './child'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, ratio, writeSection } from './report'

const N = Number(process.env.BENCH_KEYS ?? 200_000)
const SEED = Number(process.env.BENCH_SEED ?? 1) >>> 0
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const SEEK_OPS = Math.min(N, Number(process.env.BENCH_SEEK_OPS ?? 10_000))
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
const MARKDOWN = process.env.BENCH_MARKDOWN
const ENV_NAMES = ['BENCH_KEYS', 'BENCH_SEED', 'BENCH_RUNS', 'BENCH_SEEK_OPS', 'BENCH_ONLY']
const KEY_SIZE = 16
const VALUE_SIZE = 100

/** The workloads (db_bench names, as in run.ts) and what each counts. */
const WORKLOADS: Record<string, string> = {
  fillbatch: 'batches of 1,000 puts; puts/s',
  fillrandom: 'awaited put, random keys',
  readrandom: 'awaited get, present keys',
  readrandomsync: '`getSync`, present keys',
  readrandom64: '64 gets in flight',
  readseq: 'one full scan, `nextv(1000)`; entries/s',
  seekrandom: 'seek, then `nextv(100)`; ranges/s',
  readwhilewriting: 'awaited ops, 95% get / 5% put'
}
const FILLS = new Set(['fillbatch', 'fillrandom'])

interface Spec { mode: 'prepare' | 'measure', engine: EngineName, workload: string, dir: string }
interface Measured { requireMs: number, openMs: number, ops: number }

/** The data set of run.ts: keys, values and the access order, from the same seeds. */
interface Data { keys: Buffer[], value: (i: number) => Buffer, order: Uint32Array }

function dataSet (): Data {
  const rndKeys = new Random(SEED)
  const keys = Array.from({ length: N }, () => rndKeys.bytes(KEY_SIZE))
  const pool = new Random(SEED + 1).bytes(N * VALUE_SIZE)
  const value = (i: number): Buffer => pool.subarray((i % N) * VALUE_SIZE, (i % N + 1) * VALUE_SIZE)
  const rndOrder = new Random(SEED + 2)
  const order = Uint32Array.from({ length: N }, () => rndOrder.int(N))
  return { keys, value, order }
}

async function fillInBatches (db: any, keys: Buffer[], value: (i: number) => Buffer): Promise<void> {
  for (let i = 0; i < N; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: value(j) })
    await db.batch(ops)
  }
}

// ------------------------------------------------------------------ child

async function child (spec: Spec): Promise<void> {
  const data = dataSet()
  const { keys, value } = data
  const engine = loadEngine(spec.engine)
  const db = engine.make(spec.dir)
  let t0 = process.hrtime.bigint()
  await db.open()
  const openMs = millis(t0)
  if (spec.mode === 'prepare') {
    await fillInBatches(db, keys, value)
    await compactAll(spec.engine, db, KEY_SIZE)
    await db.close()
    reply({})
    return
  }
  if (spec.engine === 'memory-level' && !FILLS.has(spec.workload)) await fillInBatches(db, keys, value)
  t0 = process.hrtime.bigint()
  const count = await WORKLOAD_RUNS[spec.workload](db, data)
  const ops = count / (millis(t0) / 1000)
  await settled(spec.engine, db)
  await verify(spec.workload, db, keys, value)
  await db.close()
  reply({ requireMs: engine.requireMs, openMs, ops } satisfies Measured)
}

type Run = (db: any, data: Data) => Promise<number>

const WORKLOAD_RUNS: Record<string, Run> = {
  fillbatch: async (db, { keys, value }) => { await fillInBatches(db, keys, value); return N },
  fillrandom: async (db, { keys, value }) => {
    for (let i = 0; i < N; i++) await db.put(keys[i], value(i))
    return N
  },
  readrandom: async (db, { keys, order }) => {
    for (let i = 0; i < N; i++) await db.get(keys[order[i]])
    return N
  },
  readrandomsync: async (db, { keys, order }) => {
    for (let i = 0; i < N; i++) db.getSync(keys[order[i]])
    return N
  },
  readrandom64: async (db, { keys, order }) => {
    let next = 0
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next < N) { const i = next++; await db.get(keys[order[i]]) }
    }))
    return N
  },
  readseq: async (db) => {
    let n = 0
    const it = db.iterator()
    for (;;) { const batch = await it.nextv(1000); if (batch.length === 0) break; n += batch.length }
    await it.close()
    if (n !== N) throw new Error(`readseq saw ${n} entries, expected ${N}`)
    return n
  },
  seekrandom: async (db, { keys, order }) => {
    for (let i = 0; i < SEEK_OPS; i++) {
      const it = db.iterator({ gte: keys[order[i]] })
      await it.nextv(100)
      await it.close()
    }
    return SEEK_OPS
  },
  readwhilewriting: async (db, { keys, value, order }) => {
    for (let i = 0; i < N; i++) {
      if (i % 20 === 0) await db.put(keys[order[i]], value(i + 1))
      else await db.get(keys[order[i]])
    }
    return N
  }
}

/** Untimed, after the workload: the database holds what was written (sampled keys). */
async function verify (workload: string, db: any, keys: Buffer[], value: (i: number) => Buffer): Promise<void> {
  if (workload === 'readwhilewriting') return // some values were overwritten
  const rnd = new Random(SEED + 99)
  for (let j = 0; j < 100; j++) {
    const i = rnd.int(N)
    const got: Buffer | undefined = await db.get(keys[i])
    if (got === undefined || !got.equals(value(i))) throw new Error(`${workload}: wrong value for key #${i}`)
  }
}

// ------------------------------------------------------------------ parent

async function parent (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-fresh-'))
  const script = __filename
  const workloads = Object.keys(WORKLOADS).filter((w) => ONLY === undefined || ONLY.has(w))
  const results = new Map<string, Map<EngineName, Measured[]>>()
  console.error(`# fresh processes: ${int(N)} keys of ${KEY_SIZE} + ${VALUE_SIZE} B, seed ${SEED}, ${RUNS} runs; ${describeMachine(machine())}`)
  try {
    const prepared = new Map<EngineName, string>()
    if (workloads.some((w) => !FILLS.has(w))) {
      for (const e of ENGINES) {
        if (e === 'memory-level') continue
        const dir = path.join(root, `${e}-prepared`)
        runChild(script, { mode: 'prepare', engine: e, workload: '', dir } satisfies Spec)
        prepared.set(e, dir)
      }
    }
    for (let run = 0; run < RUNS; run++) {
      for (const w of workloads) {
        for (const e of rotated(ENGINES, run)) {
          const dir = path.join(root, `${e}-${w}-${run}`)
          if (!FILLS.has(w) && prepared.has(e)) fs.cpSync(prepared.get(e)!, dir, { recursive: true })
          const m = runChild<Measured>(script, { mode: 'measure', engine: e, workload: w, dir } satisfies Spec)
          fs.rmSync(dir, { recursive: true, force: true })
          if (!results.has(w)) results.set(w, new Map())
          const byEngine = results.get(w)!
          if (!byEngine.has(e)) byEngine.set(e, [])
          byEngine.get(e)!.push(m)
          console.error(`  run ${run + 1} ${w.padEnd(18)} ${e.padEnd(14)} ${int(m.ops).padStart(11)} ops/s  require ${m.requireMs.toFixed(1)} ms  open ${m.openMs.toFixed(1)} ms`)
        }
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const md = report(started, startLoad, results)
  console.log(md)
  if (MARKDOWN !== undefined) {
    writeSection(MARKDOWN, 'fresh', md)
    console.error(`# wrote the section "fresh" of ${MARKDOWN}`)
  }
}

function report (started: Date, startLoad: string, results: Map<string, Map<EngineName, Measured[]>>): string {
  const lines: string[] = []
  lines.push('### Fresh processes: each engine and workload in a new `node` child, no warmup')
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: ${int(N)} keys of ${KEY_SIZE} bytes, values of ${VALUE_SIZE} random bytes, seed ${SEED} (as in the warmed benchmark); ${int(SEEK_OPS)} seeks. ` +
    `Fills start empty; reads start from a copy of a database filled and compacted by a preparation child (memory-level: filled in the child before the clock starts). Default options.`)
  lines.push(`- ${RUNS} runs, interleaved workload by workload, the engines' order rotated each run; each cell is the median of the ${RUNS}. ` +
    'require and open: milliseconds in that child (median).')
  lines.push('')
  lines.push('| workload | what | lsm-level | classic-level | memory-level | lsm / classic | lsm / memory | require lsm / classic (ms) | open lsm / classic (ms) |')
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const [w, byEngine] of results) {
    const ops = (e: EngineName): number | undefined => byEngine.has(e) ? median(byEngine.get(e)!.map((m) => m.ops)) : undefined
    const ms = (e: EngineName, f: 'requireMs' | 'openMs'): string => byEngine.has(e) ? median(byEngine.get(e)!.map((m) => m[f])).toFixed(1) : 'n/a'
    const lsm = ops('lsm-level')!
    const rel = (e: EngineName): string => ops(e) === undefined ? 'n/a' : ratio(lsm / ops(e)!)
    const cell = (e: EngineName): string => ops(e) === undefined ? 'n/a' : int(ops(e)!)
    lines.push(`| ${w} | ${WORKLOADS[w]} | ${cell('lsm-level')} | ${cell('classic-level')} | ${cell('memory-level')} | ${rel('classic-level')} | ${rel('memory-level')} | ` +
      `${ms('lsm-level', 'requireMs')} / ${ms('classic-level', 'requireMs')} | ${ms('lsm-level', 'openMs')} / ${ms('classic-level', 'openMs')} |`)
  }
  return lines.join('\n')
}

const spec = childSpec<Spec>()
;(spec === undefined ? parent() : child(spec)).catch((err) => {
  console.error(err)
  process.exit(1)
})
