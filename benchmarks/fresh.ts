// Fresh-process benchmark (`npm run bench:fresh`): what a program that never
// warms up gets (a CLI, a test run, a serverless function, an app at start).
// Each engine x workload runs in its own new `node` child with no warmup; 3
// runs, interleaved workload by workload, the engines' order rotated each run.
// Reported per row: the measure (median of 3), the ratios of lsm-level to
// classic-level, memory-level and SQLite (where installed: npm run
// bench:sqlite-install), the project's target where it has one, and
// in that child the time of the package's require() and of open(). The warmed
// comparison is `npm run bench` (run.ts).
//
//   npm run bench:fresh                        200,000 keys (10-15 minutes)
//   BENCH_KEYS=50000 npm run bench:fresh       smaller
//   BENCH_ONLY=readrandom,fillbatch ...        a subset of the workloads
//   BENCH_RUNS=5 ...                           more runs (default 3)
//   BENCH_SEED=7 ...                           other keys, values and orders (default 1)
//   BENCH_BASELINE=DIR ...                     also run the lsm-level bundle in DIR (another build's dist/node) as "lsm-baseline"
//   BENCH_CPU_PROF=DIR ...                     lsm-level's children run with --cpu-prof (DIR/workload-engine-run/, a file per
//                                              thread), and main-timed.cpuprofile there covers the timed part alone
//   BENCH_MARKDOWN=BENCHMARKS.md ...           also write the section "fresh" of that file
//
// Data as in run.ts (same seeds, same Random): 16-byte random keys, 100-byte
// random values; the JSON rows: the order documents of json-docs.ts (200,000 of
// ~386 bytes) under 12-byte ids, utf8 encodings, in a seeded random order. The
// fills start from an empty database; the reads from a copy of one filled in
// batches, fully compacted and closed by a preparation child (not timed;
// memory-level, which keeps nothing on disk, is filled in the measured child
// before the clock starts, with batches). The open rows time open() of a copy
// of the compacted database, of a database whose writer was killed with 30,000
// puts (3.5 MB) only in its log, and of one whose writer made those puts and
// closed it cleanly (a preparation child per run and engine, its close() timed:
// the row closeopen adds that close to the open, as a flush at close moves cost
// from the open into the close); the memory rows fill 1,000,000 keys in
// batches of 1,000 and sample the child's RSS during the fill and after 5 s idle.
import * as fs from 'node:fs'
import * as inspector from 'node:inspector'
import * as os from 'node:os'
import * as path from 'node:path'
import { Random } from '../test/util/random'
import { childSpec, compactAll, ENGINES, type EngineName, isLsm, loadEngine, median, millis, reply, rotated, runChild, settled } from './child'
import { jsonDocuments } from './json-docs'
import { sqliteLibrary, sqliteVersion } from './sqlite-kv'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, mb, ratio, writeSection } from './report'

const N = Number(process.env.BENCH_KEYS ?? 200_000)
const SEED = Number(process.env.BENCH_SEED ?? 1) >>> 0
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const SEEK_OPS = Math.min(N, Number(process.env.BENCH_SEEK_OPS ?? 10_000))
const JSON_GETS = Math.min(N, 50_000)
const SYNC_PUTS = 20_000
const SYNC_WRITERS = 64
const LOG_PUTS = Math.min(N, 30_000)
const RSS_KEYS = Number(process.env.BENCH_FILL_KEYS ?? 1_000_000)
const IDLE_MS = 5000
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
const BASELINE = process.env.BENCH_BASELINE
const CPU_PROF = process.env.BENCH_CPU_PROF
const MARKDOWN = process.env.BENCH_MARKDOWN
const ENV_NAMES = ['BENCH_KEYS', 'BENCH_SEED', 'BENCH_RUNS', 'BENCH_SEEK_OPS', 'BENCH_FILL_KEYS', 'BENCH_ONLY', 'BENCH_BASELINE']
const KEY_SIZE = 16
const VALUE_SIZE = 100
const UTF8 = { keyEncoding: 'utf8', valueEncoding: 'utf8' }

/** The database a workload's child starts from: empty, or a copy of one a preparation child made. */
type Start = 'empty' | 'random' | 'json' | 'log' | 'logclean'

/** Starts a preparation child makes anew for each run and engine (it reports its close() time), rather than once. */
const PER_RUN: ReadonlySet<Start> = new Set(['logclean'])

/** What a workload's child reports: one or more rows (name -> value), with require() and open() times. */
/** cpuMs: the child's CPU time (user + system, every thread) from open() to the workload's end and its background work settled. */
interface Measured { requireMs: number, openMs: number, cpuMs: number, rows: Record<string, number> }

/**
 * A row of the report. unit 'rate': things per second, higher is better; 'ms'
 * and 'MB': a cost, lower is better. target: the project's target for lsm-level /
 * classic-level ("vs": memory-level's), in the row's unit's direction.
 */
interface Row { what: string, unit: 'rate' | 'ms' | 'MB', target?: number, vs?: 'classic-level' | 'memory-level', sqliteTarget?: number }

interface Workload {
  start: Start
  /** Keys and values as utf8 strings (the JSON rows); else buffers. */
  utf8?: true
  /** The engines it runs on (default: all). */
  engines?: readonly EngineName[]
  rows: Record<string, Row>
  run: Run
}

/** The data sets, from the same seeds as run.ts: keys, values, the access order; JSON ids and documents. */
interface Data { keys: Buffer[], value: (i: number) => Buffer, order: Uint32Array }
interface JsonData { ids: string[], docs: string[], order: Uint32Array }

function dataSet (): Data {
  const rndKeys = new Random(SEED)
  const keys = Array.from({ length: N }, () => rndKeys.bytes(KEY_SIZE))
  const pool = new Random(SEED + 1).bytes(N * VALUE_SIZE)
  const value = (i: number): Buffer => pool.subarray((i % N) * VALUE_SIZE, (i % N + 1) * VALUE_SIZE)
  const rndOrder = new Random(SEED + 2)
  const order = Uint32Array.from({ length: N }, () => rndOrder.int(N))
  return { keys, value, order }
}

function jsonDataSet (): JsonData {
  const docs = jsonDocuments(N, SEED).map((d) => d.toString('utf8'))
  const ids = docs.map((_, i) => `ord_${String(i).padStart(8, '0')}`)
  const rnd = new Random(SEED + 3)
  const order = Uint32Array.from({ length: N }, (_, i) => i)
  for (let i = N - 1; i > 0; i--) {
    const j = rnd.int(i + 1)
    const t = order[i]
    order[i] = order[j]
    order[j] = t
  }
  return { ids, docs, order }
}

async function fillInBatches (db: any, keys: Buffer[], value: (i: number) => Buffer): Promise<void> {
  for (let i = 0; i < N; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: value(j) })
    await db.batch(ops)
  }
}

/** The JSON documents in their random order, in batches of 100. */
async function fillJson (db: any, { ids, docs, order }: JsonData): Promise<void> {
  for (let i = 0; i < N; i += 100) {
    const ops = []
    for (let j = i; j < Math.min(N, i + 100); j++) ops.push({ type: 'put', key: ids[order[j]], value: docs[order[j]] })
    await db.batch(ops)
  }
}

// ------------------------------------------------------------------ child

interface Context { db: any, engine: EngineName, openMs: number, closeMs?: number }
type Run = (ctx: Context) => Promise<Record<string, number>>

const PERSISTENT: readonly EngineName[] = ['lsm-level', 'classic-level', 'lsm-baseline']

/** The workloads (db_bench names, as in run.ts, where they have one). */
const WORKLOADS: Record<string, Workload> = {
  fillbatch: {
    start: 'empty',
    rows: { fillbatch: { what: 'batches of 1,000 puts; puts/s', unit: 'rate', target: 1.5, sqliteTarget: 1.5 } },
    run: async ({ db }) => {
      const { keys, value } = dataSet()
      const t0 = await startClock()
      await fillInBatches(db, keys, value)
      return { fillbatch: N / seconds(t0) }
    }
  },
  fillrandom: {
    start: 'empty',
    rows: { fillrandom: { what: 'awaited put, random keys', unit: 'rate', target: 0.8, vs: 'memory-level', sqliteTarget: 1.5 } },
    run: async ({ db }) => {
      const { keys, value } = dataSet()
      const t0 = await startClock()
      for (let i = 0; i < N; i++) await db.put(keys[i], value(i))
      return { fillrandom: N / seconds(t0) }
    }
  },
  fillsync64: {
    start: 'empty',
    engines: PERSISTENT,
    rows: { fillsync64: { what: `${SYNC_WRITERS} writers of \`sync: true\` puts (${int(SYNC_PUTS)} in all); puts/s`, unit: 'rate', target: 5 } },
    run: async ({ db }) => {
      const { keys, value } = dataSet()
      let next = 0
      const t0 = await startClock()
      await Promise.all(Array.from({ length: SYNC_WRITERS }, async () => {
        while (next < SYNC_PUTS) { const i = next++; await db.put(keys[i], value(i), { sync: true }) }
      }))
      return { fillsync64: SYNC_PUTS / seconds(t0) }
    }
  },
  readrandom: {
    start: 'random',
    rows: { readrandom: { what: 'awaited get, present keys', unit: 'rate', target: 1, vs: 'memory-level' } },
    run: async ({ db }) => {
      const { keys, order } = dataSet()
      const t0 = await startClock()
      for (let i = 0; i < N; i++) await db.get(keys[order[i]])
      return { readrandom: N / seconds(t0) }
    }
  },
  readrandomsync: {
    start: 'random',
    rows: { readrandomsync: { what: '`getSync`, present keys (SQLite: a prepared statement\'s get)', unit: 'rate', sqliteTarget: 1.5 } },
    run: async ({ db }) => {
      const { keys, order } = dataSet()
      const t0 = await startClock()
      for (let i = 0; i < N; i++) db.getSync(keys[order[i]])
      return { readrandomsync: N / seconds(t0) }
    }
  },
  readrandom64: {
    start: 'random',
    rows: { readrandom64: { what: '64 gets in flight', unit: 'rate', target: 3 } },
    run: async ({ db }) => {
      const { keys, order } = dataSet()
      let next = 0
      const t0 = await startClock()
      await Promise.all(Array.from({ length: 64 }, async () => {
        while (next < N) { const i = next++; await db.get(keys[order[i]]) }
      }))
      return { readrandom64: N / seconds(t0) }
    }
  },
  readseq: {
    start: 'random',
    rows: { readseq: { what: 'one full scan, `nextv(1000)`; entries/s', unit: 'rate', target: 2.5, sqliteTarget: 1.5 } },
    run: async ({ db }) => {
      let n = 0
      const t0 = await startClock()
      const it = db.iterator()
      for (;;) { const batch = await it.nextv(1000); if (batch.length === 0) break; n += batch.length }
      await it.close()
      const s = seconds(t0)
      if (n !== N) throw new Error(`readseq saw ${n} entries, expected ${N}`)
      return { readseq: n / s }
    }
  },
  seekrandom: {
    start: 'random',
    rows: { seekrandom: { what: 'seek, then `nextv(100)`; ranges/s', unit: 'rate' } },
    run: async ({ db }) => {
      const { keys, order } = dataSet()
      const t0 = await startClock()
      for (let i = 0; i < SEEK_OPS; i++) {
        const it = db.iterator({ gte: keys[order[i]] })
        await it.nextv(100)
        await it.close()
      }
      return { seekrandom: SEEK_OPS / seconds(t0) }
    }
  },
  readwhilewriting: {
    start: 'random',
    rows: { readwhilewriting: { what: 'awaited ops, 95% get / 5% put', unit: 'rate' } },
    run: async ({ db }) => {
      const { keys, value, order } = dataSet()
      const t0 = await startClock()
      for (let i = 0; i < N; i++) {
        if (i % 20 === 0) await db.put(keys[order[i]], value(i + 1))
        else await db.get(keys[order[i]])
      }
      return { readwhilewriting: N / seconds(t0) }
    }
  },
  jsonfill: {
    start: 'empty',
    utf8: true,
    rows: { jsonfill: { what: 'JSON documents (utf8), batches of 100; documents/s', unit: 'rate', target: 1.2 } },
    run: async ({ db }) => {
      const data = jsonDataSet()
      const t0 = await startClock()
      await fillJson(db, data)
      return { jsonfill: N / seconds(t0) }
    }
  },
  jsonreadrandom: {
    start: 'json',
    utf8: true,
    rows: { jsonreadrandom: { what: `JSON: awaited gets, ${int(JSON_GETS)} random documents`, unit: 'rate', target: 3 } },
    run: async ({ db }) => {
      const { ids, order } = jsonDataSet()
      const t0 = await startClock()
      for (let i = 0; i < JSON_GETS; i++) await db.get(ids[order[i]])
      return { jsonreadrandom: JSON_GETS / seconds(t0) }
    }
  },
  jsonreadseq: {
    start: 'json',
    utf8: true,
    rows: { jsonreadseq: { what: 'JSON: one full scan, `for await` over `iterator()`, cold; entries/s', unit: 'rate', target: 1.5 } },
    run: async ({ db }) => {
      let n = 0
      const t0 = await startClock()
      for await (const entry of db.iterator()) if (entry[1].length > 0) n++
      const s = seconds(t0)
      if (n !== N) throw new Error(`jsonreadseq saw ${n} entries, expected ${N}`)
      return { jsonreadseq: n / s }
    }
  },
  opencompacted: {
    start: 'random',
    engines: PERSISTENT,
    rows: { opencompacted: { what: `\`open()\` of the compacted ${int(N)}-key database; ms`, unit: 'ms', target: 1.5 } },
    run: async ({ openMs }) => ({ opencompacted: openMs })
  },
  openlog: {
    start: 'log',
    engines: PERSISTENT,
    rows: { openlog: { what: `\`open()\` with ${int(LOG_PUTS)} puts (${mb(LOG_PUTS * (KEY_SIZE + VALUE_SIZE))}) only in the log; ms`, unit: 'ms', target: 1.5 } },
    run: async ({ openMs }) => ({ openlog: openMs })
  },
  openclean: {
    start: 'logclean',
    engines: PERSISTENT,
    rows: {
      openclean: { what: `\`open()\` after a clean \`close()\` with ${int(LOG_PUTS)} awaited puts (${mb(LOG_PUTS * (KEY_SIZE + VALUE_SIZE))}) in the log; ms`, unit: 'ms', target: 1.5 },
      closeopen: { what: 'the writer\'s `close()` plus that `open()`; ms', unit: 'ms' }
    },
    run: async ({ openMs, closeMs }) => ({ openclean: openMs, closeopen: closeMs! + openMs })
  },
  rss: {
    start: 'empty',
    rows: {
      rssfill: { what: `RSS, max during a ${int(RSS_KEYS)}-key fill in batches of 1,000 and ${IDLE_MS / 1000} s idle`, unit: 'MB', target: 1.3 },
      rssidle: { what: `RSS after the fill and ${IDLE_MS / 1000} s idle`, unit: 'MB', target: 1.3 }
    },
    run: async ({ db }) => {
      // Values from a 1 MiB pool (a pool of the fill's size would be most of the RSS measured).
      const pool = new Random(SEED + 1).bytes(1024 * 1024 + VALUE_SIZE)
      const rnd = new Random(SEED)
      let max = process.memoryUsage.rss()
      for (let i = 0; i < RSS_KEYS; i += 1000) {
        const ops = []
        for (let j = i; j < Math.min(RSS_KEYS, i + 1000); j++) {
          const at = (j * VALUE_SIZE) % (1024 * 1024)
          ops.push({ type: 'put', key: rnd.bytes(KEY_SIZE), value: pool.subarray(at, at + VALUE_SIZE) })
        }
        await db.batch(ops)
        max = Math.max(max, process.memoryUsage.rss())
      }
      // Idle: whatever the engine does in the background meanwhile (flushes, compactions) it does.
      const idleUntil = Date.now() + IDLE_MS
      while (Date.now() < idleUntil) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        max = Math.max(max, process.memoryUsage.rss())
      }
      return { rssfill: max, rssidle: process.memoryUsage.rss() }
    }
  }
}

/**
 * Starts a workload's clock; with BENCH_CPU_PROF, also a CPU profile of this
 * thread (the child's --cpu-prof profiles cover its whole life, data set
 * included: this one covers only the timed part, written as main-timed.cpuprofile).
 */
async function startClock (): Promise<bigint> {
  if (profileDir !== undefined) {
    profiler = new inspector.Session()
    profiler.connect()
    await post('Profiler.enable')
    await post('Profiler.start')
  }
  return process.hrtime.bigint()
}

/** Seconds since `t0`; ends the timed profile, if one runs. */
function seconds (t0: bigint): number {
  const s = millis(t0) / 1000
  if (profiler !== undefined) {
    const session = profiler
    profiler = undefined
    session.post('Profiler.stop', (err, result) => {
      if (err === null) fs.writeFileSync(path.join(profileDir!, 'main-timed.cpuprofile'), JSON.stringify(result.profile))
      session.disconnect()
    })
  }
  return s
}

/** The directory of this child's timed profile (BENCH_CPU_PROF), set by measure(). */
let profileDir: string | undefined
let profiler: inspector.Session | undefined
const post = (method: string): Promise<void> => new Promise((resolve, reject) => profiler!.post(method, (err) => err === null ? resolve() : reject(err)))

/** The options a database is written with: utf8 for the JSON database; for the log, a write buffer that holds it. */
function prepareOptions (start: Start): Record<string, unknown> {
  if (start === 'json') return UTF8
  if (start === 'log' || start === 'logclean') return { writeBufferSize: 64 * 1024 * 1024 }
  return {}
}

interface Spec { mode: 'prepare' | 'measure', engine: EngineName, start: Start, workload: string, dir: string, profileDir?: string, closeMs?: number }

/** What a preparation child reports: for a PER_RUN start, its close() time. */
interface Prepared { closeMs?: number }

async function prepare (spec: Spec): Promise<void> {
  const engine = loadEngine(spec.engine)
  const db = engine.make(spec.dir, prepareOptions(spec.start))
  await db.open()
  if (spec.start === 'log') {
    // Single puts, each its own log record; each is in the OS once its put resolved.
    const { keys, value } = dataSet()
    for (let i = 0; i < LOG_PUTS; i++) await db.put(keys[i], value(i))
    process.kill(process.pid, 'SIGKILL')
  }
  if (spec.start === 'logclean') {
    // The same puts; then the lifecycle of a CLI or a test run: a clean close, timed.
    const { keys, value } = dataSet()
    for (let i = 0; i < LOG_PUTS; i++) await db.put(keys[i], value(i))
    const t0 = process.hrtime.bigint()
    await db.close()
    reply({ closeMs: millis(t0) } satisfies Prepared)
    return
  }
  if (spec.start === 'json') await fillJson(db, jsonDataSet())
  else {
    const { keys, value } = dataSet()
    await fillInBatches(db, keys, value)
  }
  await compactAll(spec.engine, db, KEY_SIZE)
  await db.close()
  reply({})
}

async function measure (spec: Spec): Promise<void> {
  profileDir = spec.profileDir
  if (profileDir !== undefined) fs.mkdirSync(profileDir, { recursive: true })
  const workload = WORKLOADS[spec.workload]
  const engine = loadEngine(spec.engine)
  const db = engine.make(spec.dir, workload.utf8 === true ? UTF8 : {})
  // No await between the constructor and this clock: abstract-level starts the open on the next tick.
  const t0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  await db.open()
  const openMs = millis(t0)
  if (spec.engine === 'memory-level' && workload.start === 'random') {
    const { keys, value } = dataSet()
    await fillInBatches(db, keys, value)
  }
  if (spec.engine === 'memory-level' && workload.start === 'json') await fillJson(db, jsonDataSet())
  const rows = await workload.run({ db, engine: spec.engine, openMs, closeMs: spec.closeMs })
  await settled(spec.engine, db)
  const cpu = process.cpuUsage(cpu0)
  await verify(spec.workload, workload.start, db)
  await db.close()
  reply({ requireMs: engine.requireMs, openMs, cpuMs: (cpu.user + cpu.system) / 1000, rows } satisfies Measured)
}

/** Untimed, after the workload: the database holds what was written (sampled keys). */
async function verify (workload: string, start: Start, db: any): Promise<void> {
  if (workload === 'readwhilewriting' || workload === 'rss') return // overwritten values; random keys not kept
  const rnd = new Random(SEED + 99)
  if (WORKLOADS[workload].utf8 === true) {
    const { ids, docs } = jsonDataSet()
    for (let j = 0; j < 100; j++) {
      const i = rnd.int(N)
      if (await db.get(ids[i]) !== docs[i]) throw new Error(`${workload}: wrong document for ${ids[i]}`)
    }
    return
  }
  const { keys, value } = dataSet()
  const count = workload === 'fillsync64' ? SYNC_PUTS : start === 'log' || start === 'logclean' ? LOG_PUTS : N
  for (let j = 0; j < 100; j++) {
    const i = rnd.int(count)
    const got: Buffer | undefined = await db.get(keys[i])
    if (got === undefined || !got.equals(value(i))) throw new Error(`${workload}: wrong value for key #${i}`)
  }
}

// ------------------------------------------------------------------ parent

/** Results: row -> engine -> the runs' values; and the require() and open() times per workload and engine. */
interface Results {
  rows: Map<string, Map<EngineName, number[]>>
  times: Map<string, Map<EngineName, Array<{ requireMs: number, openMs: number }>>>
}

function push<K, V> (map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

async function parent (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-fresh-'))
  const script = __filename
  const engines: EngineName[] = [...ENGINES, ...(BASELINE === undefined ? [] : ['lsm-baseline' as const]), ...(sqliteLibrary() === undefined ? [] : ['sqlite' as const])]
  if (!engines.includes('sqlite')) console.error('# SQLite is not installed: `npm run bench:sqlite-install` adds it (better-sqlite3, compiled here: about 2 minutes)')
  const enginesOf = (w: string): EngineName[] => engines.filter((e) => (WORKLOADS[w].engines ?? engines).includes(e))
  const workloads = Object.keys(WORKLOADS).filter((w) => ONLY === undefined || ONLY.has(w))
  const results: Results = { rows: new Map(), times: new Map() }
  console.error(`# fresh processes: ${int(N)} keys of ${KEY_SIZE} + ${VALUE_SIZE} B, seed ${SEED}, ${RUNS} runs; ${describeMachine(machine())}`)
  try {
    const prepared = new Map<string, string>()
    for (const start of new Set(workloads.map((w) => WORKLOADS[w].start))) {
      if (start === 'empty' || PER_RUN.has(start)) continue
      for (const e of engines) {
        if (e === 'memory-level') continue
        const dir = path.join(root, `${e}-${start}-prepared`)
        try {
          runChild(script, { mode: 'prepare', engine: e, start, workload: '', dir } satisfies Spec)
        } catch (err) {
          // The log's writer kills itself once its puts are written.
          if (start !== 'log' || !/SIGKILL/.test((err as Error).message)) throw err
        }
        prepared.set(`${e}-${start}`, dir)
      }
    }
    for (let run = 0; run < RUNS; run++) {
      for (const w of workloads) {
        const { start } = WORKLOADS[w]
        for (const e of rotated(enginesOf(w), run)) {
          const dir = path.join(root, `${e}-${w}-${run}`)
          let closeMs: number | undefined
          if (PER_RUN.has(start)) closeMs = runChild<Prepared>(script, { mode: 'prepare', engine: e, start, workload: '', dir } satisfies Spec).closeMs
          else if (start !== 'empty' && e !== 'memory-level') fs.cpSync(prepared.get(`${e}-${start}`)!, dir, { recursive: true })
          const profileDir = CPU_PROF !== undefined && isLsm(e) ? path.join(CPU_PROF, `${w}-${e}-${run}`) : undefined
          const profile = profileDir !== undefined ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
          const m = runChild<Measured>(script, { mode: 'measure', engine: e, start, workload: w, dir, profileDir, closeMs } satisfies Spec, profile)
          fs.rmSync(dir, { recursive: true, force: true })
          if (!results.times.has(w)) results.times.set(w, new Map())
          push(results.times.get(w)!, e, { requireMs: m.requireMs, openMs: m.openMs })
          for (const [row, value] of Object.entries(m.rows)) {
            if (!results.rows.has(row)) results.rows.set(row, new Map())
            push(results.rows.get(row)!, e, value)
          }
          const shown = Object.entries(m.rows).map(([row, v]) => `${row} ${format(unitOf(row), v)}`).join(', ')
          console.error(`  run ${run + 1} ${w.padEnd(16)} ${e.padEnd(14)} ${shown}  require ${m.requireMs.toFixed(1)} ms  open ${m.openMs.toFixed(1)} ms  cpu ${m.cpuMs.toFixed(0)} ms`)
        }
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const md = report(started, startLoad, engines, results)
  console.log(md)
  if (MARKDOWN !== undefined) {
    writeSection(MARKDOWN, 'fresh', md)
    console.error(`# wrote the section "fresh" of ${MARKDOWN}`)
  }
}

/** The workload that reports a row, and the row's definition. */
function rowDef (row: string): { workload: string, def: Row } {
  for (const [w, wl] of Object.entries(WORKLOADS)) if (row in wl.rows) return { workload: w, def: wl.rows[row] }
  throw new Error(`no workload reports ${row}`)
}
const unitOf = (row: string): Row['unit'] => rowDef(row).def.unit

function format (unit: Row['unit'], x: number): string {
  if (unit === 'ms') return x.toFixed(1) + ' ms'
  if (unit === 'MB') return mb(x)
  return int(x)
}

function report (started: Date, startLoad: string, engines: EngineName[], results: Results): string {
  const baseline = engines.includes('lsm-baseline')
  const sqlite = engines.includes('sqlite')
  const lines: string[] = []
  lines.push('### Fresh processes: each engine and workload in a new `node` child, no warmup')
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: ${int(N)} keys of ${KEY_SIZE} bytes, values of ${VALUE_SIZE} random bytes, seed ${SEED} (as in the warmed benchmark); ${int(SEEK_OPS)} seeks; ` +
    `the JSON rows: ${int(N)} order documents (benchmarks/json-docs.ts) under 12-byte ids, utf8 encodings, in a random order. ` +
    'Fills start empty; reads and opens start from a copy of a database filled and compacted by a preparation child (memory-level: filled in the child before the clock starts). Default options.')
  lines.push(`- ${RUNS} runs, interleaved workload by workload, the engines' order rotated each run; each cell is the median of the ${RUNS}. ` +
    'Rates: higher is better; ms and MB: lower is better, and the ratios are of those costs. Target: the project\'s, for lsm / classic unless marked "memory" or "sqlite". ' +
    'require and open: milliseconds in that child (median).' + (baseline ? ` lsm-baseline: the bundle in ${BASELINE}.` : ''))
  lines.push(sqlite
    ? `- SQLite: ${sqliteVersion()}, one \`WITHOUT ROWID\` table of BLOB keys and values, WAL mode, \`synchronous=NORMAL\` (a commit reaches the OS, no fsync, as lsm-level's \`sync: false\`); each awaited call a prepared statement behind a resolved promise, a batch one transaction, a scan one \`SELECT ... ORDER BY k\` stepped as read (benchmarks/sqlite-kv.ts).`
    : '- SQLite: not installed here (`npm run bench:sqlite-install`).')
  lines.push('')
  const head = ['workload', 'what', 'lsm-level', 'classic-level', 'memory-level', ...(sqlite ? ['sqlite'] : []), ...(baseline ? ['lsm-baseline'] : []),
    'lsm / classic', 'lsm / memory', ...(sqlite ? ['lsm / sqlite'] : []), ...(baseline ? ['lsm / baseline'] : []),
    'target', 'require lsm / classic (ms)', 'open lsm / classic (ms)']
  lines.push(`| ${head.join(' | ')} |`)
  lines.push(`|---|---|${head.slice(2).map(() => '---:').join('|')}|`)
  for (const [row, byEngine] of results.rows) {
    const { workload, def } = rowDef(row)
    const value = (e: EngineName): number | undefined => byEngine.has(e) ? median(byEngine.get(e)!) : undefined
    const cell = (e: EngineName): string => value(e) === undefined ? 'n/a' : format(def.unit, value(e)!).replace(/ (ms|MB)$/, '')
    const lsm = value('lsm-level')!
    const rel = (e: EngineName): string => value(e) === undefined ? 'n/a' : ratio(lsm / value(e)!)
    const times = results.times.get(workload)!
    const ms = (e: EngineName, f: 'requireMs' | 'openMs'): string => times.has(e) ? median(times.get(e)!.map((t) => t[f])).toFixed(1) : 'n/a'
    let target = ''
    if (def.target !== undefined) {
      const against = value(def.vs ?? 'classic-level')
      const met = against !== undefined && (def.unit === 'rate' ? lsm / against >= def.target : lsm / against <= def.target)
      target = `${def.unit === 'rate' ? '>=' : '<='} ${def.target}x${def.vs === 'memory-level' ? ' memory' : ''}: ${met ? 'met' : '**missed**'}`
    }
    if (def.sqliteTarget !== undefined && value('sqlite') !== undefined) {
      const met = lsm / value('sqlite')! >= def.sqliteTarget
      target += `${target === '' ? '' : '; '}>= ${def.sqliteTarget}x sqlite: ${met ? 'met' : '**missed**'}`
    }
    const what = def.unit === 'rate' ? def.what : `${def.what}${def.unit === 'MB' ? '; MB' : ''}`
    lines.push(`| ${row} | ${what} | ${cell('lsm-level')} | ${cell('classic-level')} | ${cell('memory-level')} | ${sqlite ? cell('sqlite') + ' | ' : ''}${baseline ? cell('lsm-baseline') + ' | ' : ''}` +
      `${rel('classic-level')} | ${rel('memory-level')} | ${sqlite ? rel('sqlite') + ' | ' : ''}${baseline ? rel('lsm-baseline') + ' | ' : ''}${target} | ` +
      `${ms('lsm-level', 'requireMs')} / ${ms('classic-level', 'requireMs')} | ${ms('lsm-level', 'openMs')} / ${ms('classic-level', 'openMs')} |`)
  }
  return lines.join('\n')
}

const spec = childSpec<Spec>()
;(spec === undefined ? parent() : spec.mode === 'prepare' ? prepare(spec) : measure(spec)).catch((err) => {
  console.error(err)
  process.exit(1)
})
