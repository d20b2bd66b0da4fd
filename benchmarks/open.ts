// Open benchmark (`npm run bench:open`): what a fresh process pays before its
// first operation, lsm-level beside classic-level, and the memory each engine
// holds. Every measurement runs in a new `node` child (benchmarks/child.ts); 3
// runs, interleaved, the engines' order rotated each run; medians reported.
//
//   open() of:
//     empty      a new database (created by the open)
//     compacted  200,000 keys (16 + 100 bytes) filled in batches, fully compacted, closed
//     log        30,000 puts (3.5 MB) still only in the log: written with a 64 MiB
//                write buffer, then the process killed (SIGKILL, no close), so
//                the open must replay the log
//     tables     the 200,000 keys in about 2,000 small tables (target table size
//                12 KiB: lsm-level's targetFileSize, classic-level's maxFileSize;
//                LevelDB raises a maxFileSize below 1 MiB to 1 MiB, so
//                classic-level holds the same keys in about 25 tables)
//   each from a fresh copy of a database a preparation child made; reported:
//   open() time, the first get after it, RSS and heapUsed right after open.
//
//   memory: a 1,000,000-key fill in batches of 1,000, RSS sampled after every
//   batch (the maximum reported), then 5 s idle and RSS again (lsm-level,
//   classic-level, memory-level).
//
//   npm run bench:open                          (a few minutes)
//   BENCH_KEYS=50000 BENCH_LOG_PUTS=10000 ...   smaller databases
//   BENCH_FILL_KEYS=200000 ...                  a smaller memory fill
//   BENCH_ONLY=log,memory ...                   a subset (empty, compacted, log, tables, memory)
//   BENCH_RUNS=5 ...                            more runs (default 3)
//   BENCH_MARKDOWN=BENCHMARKS.md ...            also write the section "open" of that file
//   BENCH_CPU_PROF=DIR ...                      the open children run with --cpu-prof (DIR/engine-database-run/, a file per thread)
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Random } from '../test/util/random'
import { childSpec, compactAll, ENGINES, type EngineName, loadEngine, median, millis, reply, rotated, runChild } from './child'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, mb, ratio, writeSection } from './report'

const N = Number(process.env.BENCH_KEYS ?? 200_000)
const LOG_PUTS = Number(process.env.BENCH_LOG_PUTS ?? 30_000)
const FILL_KEYS = Number(process.env.BENCH_FILL_KEYS ?? 1_000_000)
const SEED = Number(process.env.BENCH_SEED ?? 1) >>> 0
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const IDLE_MS = 5000
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
const MARKDOWN = process.env.BENCH_MARKDOWN
const CPU_PROF = process.env.BENCH_CPU_PROF
const ENV_NAMES = ['BENCH_KEYS', 'BENCH_LOG_PUTS', 'BENCH_FILL_KEYS', 'BENCH_SEED', 'BENCH_RUNS', 'BENCH_ONLY']
const KEY_SIZE = 16
const VALUE_SIZE = 100
const SMALL_TABLE = 12 * 1024
const PERSISTENT: EngineName[] = ['lsm-level', 'classic-level']

type Scenario = 'empty' | 'compacted' | 'log' | 'tables'
const SCENARIOS: Record<Scenario, string> = {
  empty: 'a new, empty database',
  compacted: `${int(N)} keys, fully compacted`,
  log: `${int(LOG_PUTS)} puts (${mb(LOG_PUTS * (KEY_SIZE + VALUE_SIZE))}) only in the log, the writer killed`,
  tables: `${int(N)} keys in small tables (${SMALL_TABLE / 1024} KiB; classic-level: 1 MiB, its minimum)`
}

type Spec =
  | { mode: 'prepare', engine: EngineName, scenario: Scenario, dir: string }
  | { mode: 'open', engine: EngineName, scenario: Scenario, dir: string }
  | { mode: 'memory', engine: EngineName, dir: string }

interface Opened { requireMs: number, openMs: number, firstGetMs: number, rss: number, heapUsed: number, files: number }
interface Memory { requireMs: number, rssBefore: number, rssMaxDuringFill: number, rssAfterIdle: number, heapAfterIdle: number, fillSeconds: number }

/**
 * Keys and values as in run.ts (same seeds, same Random), drawn as one buffer
 * each: key i is bytes [16i, 16i + 16) of Random(SEED)'s stream, which is what
 * run.ts's per-key draws give.
 */
const keysUpTo = (count: number): Buffer => new Random(SEED).bytes(count * KEY_SIZE)
const key = (keys: Buffer, i: number): Buffer => keys.subarray(i * KEY_SIZE, (i + 1) * KEY_SIZE)
const valuesUpTo = (count: number): Buffer => new Random(SEED + 1).bytes(count * VALUE_SIZE)
const value = (values: Buffer, i: number): Buffer => values.subarray(i * VALUE_SIZE, (i + 1) * VALUE_SIZE)

/** The options a scenario's database is written with: small tables, or a write buffer that holds the whole log. */
function writeOptions (engine: EngineName, scenario: Scenario): Record<string, unknown> {
  if (scenario === 'tables') return engine === 'lsm-level' ? { targetFileSize: SMALL_TABLE } : { maxFileSize: SMALL_TABLE }
  if (scenario === 'log') return { writeBufferSize: 64 * 1024 * 1024 }
  return {}
}

/** Keys in the database a scenario opens. */
const keysIn = (scenario: Scenario): number => scenario === 'empty' ? 0 : scenario === 'log' ? LOG_PUTS : N

// ------------------------------------------------------------------ children

async function prepare (engine: EngineName, scenario: Scenario, dir: string): Promise<void> {
  const count = keysIn(scenario)
  const keys = keysUpTo(count)
  const values = valuesUpTo(count)
  const db = loadEngine(engine).make(dir, writeOptions(engine, scenario))
  await db.open()
  if (scenario === 'log') {
    // Single puts, each its own log record; each is in the OS once its put resolved.
    for (let i = 0; i < count; i++) await db.put(key(keys, i), value(values, i))
    process.kill(process.pid, 'SIGKILL')
  }
  for (let i = 0; i < count; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(count, i + 1000); j++) ops.push({ type: 'put', key: key(keys, j), value: value(values, j) })
    await db.batch(ops)
  }
  await compactAll(engine, db, KEY_SIZE)
  await db.close()
  reply({})
}

async function open (engine: EngineName, scenario: Scenario, dir: string): Promise<void> {
  const count = keysIn(scenario)
  const keys = keysUpTo(Math.max(count, 1))
  const loaded = loadEngine(engine)
  const db = loaded.make(dir)
  let t0 = process.hrtime.bigint()
  await db.open()
  const openMs = millis(t0)
  const { rss, heapUsed } = process.memoryUsage()
  const last = key(keys, Math.max(count - 1, 0))
  t0 = process.hrtime.bigint()
  const got: Buffer | undefined = await db.get(last)
  const firstGetMs = millis(t0)
  // Untimed: the open found what was written (the last key; the log's every key).
  const values = valuesUpTo(count)
  const checked = scenario === 'log' ? count : Math.min(count, 1)
  for (let i = count - checked; i < count; i++) {
    const v: Buffer | undefined = i === count - 1 ? got : await db.get(key(keys, i))
    if (v === undefined || !v.equals(value(values, i))) throw new Error(`${engine} ${scenario}: wrong value for key #${i}`)
  }
  if (count === 0 && got !== undefined) throw new Error(`${engine}: a value in an empty database`)
  await db.close()
  const files = fs.readdirSync(dir).filter((n) => n.endsWith('.sst') || n.endsWith('.ldb')).length
  reply({ requireMs: loaded.requireMs, openMs, firstGetMs, rss, heapUsed, files } satisfies Opened)
}

async function memory (engine: EngineName, dir: string): Promise<void> {
  const rssBefore = process.memoryUsage.rss()
  const loaded = loadEngine(engine)
  const db = loaded.make(dir)
  await db.open()
  // Values from a 1 MiB pool (a pool of the fill's size would be most of the RSS measured).
  const pool = new Random(SEED + 1).bytes(1024 * 1024 + VALUE_SIZE)
  const rnd = new Random(SEED)
  let rssMaxDuringFill = process.memoryUsage.rss()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < FILL_KEYS; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(FILL_KEYS, i + 1000); j++) {
      const at = (j * VALUE_SIZE) % (1024 * 1024)
      ops.push({ type: 'put', key: rnd.bytes(KEY_SIZE), value: pool.subarray(at, at + VALUE_SIZE) })
    }
    await db.batch(ops)
    rssMaxDuringFill = Math.max(rssMaxDuringFill, process.memoryUsage.rss())
  }
  const fillSeconds = millis(t0) / 1000
  // Idle: whatever the engine does in the background meanwhile (flushes, compactions) it does.
  const idleUntil = Date.now() + IDLE_MS
  while (Date.now() < idleUntil) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    rssMaxDuringFill = Math.max(rssMaxDuringFill, process.memoryUsage.rss())
  }
  const { rss: rssAfterIdle, heapUsed: heapAfterIdle } = process.memoryUsage()
  await db.close()
  reply({ requireMs: loaded.requireMs, rssBefore, rssMaxDuringFill, rssAfterIdle, heapAfterIdle, fillSeconds } satisfies Memory)
}

// ------------------------------------------------------------------ parent

async function parent (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-open-'))
  const script = __filename
  const want = (what: string): boolean => ONLY === undefined || ONLY.has(what)
  const scenarios = (Object.keys(SCENARIOS) as Scenario[]).filter(want)
  const opened = new Map<Scenario, Map<EngineName, Opened[]>>()
  const memories = new Map<EngineName, Memory[]>()
  console.error(`# open and memory: ${int(N)} keys, ${int(LOG_PUTS)} puts in the log, a ${int(FILL_KEYS)}-key fill, ${RUNS} runs; ${describeMachine(machine())}`)
  try {
    const prepared = new Map<string, string>()
    for (const s of scenarios) {
      if (s === 'empty') continue
      for (const e of PERSISTENT) {
        const dir = path.join(root, `${e}-${s}-prepared`)
        try {
          runChild(script, { mode: 'prepare', engine: e, scenario: s, dir } satisfies Spec)
        } catch (err) {
          // The log scenario's child kills itself once its puts are written.
          if (s !== 'log' || !/SIGKILL/.test((err as Error).message)) throw err
        }
        prepared.set(`${e}-${s}`, dir)
      }
    }
    for (let run = 0; run < RUNS; run++) {
      for (const s of scenarios) {
        for (const e of rotated(PERSISTENT, run)) {
          const dir = path.join(root, `${e}-${s}-${run}`)
          if (s !== 'empty') fs.cpSync(prepared.get(`${e}-${s}`)!, dir, { recursive: true })
          const profile = CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', path.join(CPU_PROF, `${e}-${s}-${run}`)]
          const m = runChild<Opened>(script, { mode: 'open', engine: e, scenario: s, dir } satisfies Spec, profile)
          fs.rmSync(dir, { recursive: true, force: true })
          if (!opened.has(s)) opened.set(s, new Map())
          const byEngine = opened.get(s)!
          byEngine.set(e, [...(byEngine.get(e) ?? []), m])
          console.error(`  run ${run + 1} open ${s.padEnd(10)} ${e.padEnd(14)} open ${m.openMs.toFixed(1)} ms, first get ${m.firstGetMs.toFixed(2)} ms, RSS ${mb(m.rss)}, heap ${mb(m.heapUsed)}, ${m.files} tables`)
        }
      }
      if (want('memory')) {
        for (const e of rotated(ENGINES, run)) {
          const dir = path.join(root, `${e}-fill-${run}`)
          const m = runChild<Memory>(script, { mode: 'memory', engine: e, dir } satisfies Spec)
          fs.rmSync(dir, { recursive: true, force: true })
          memories.set(e, [...(memories.get(e) ?? []), m])
          console.error(`  run ${run + 1} memory ${e.padEnd(14)} RSS ${mb(m.rssBefore)} before, max ${mb(m.rssMaxDuringFill)} during, ${mb(m.rssAfterIdle)} after ${IDLE_MS / 1000} s idle; fill ${m.fillSeconds.toFixed(1)} s`)
        }
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const md = report(started, startLoad, opened, memories)
  console.log(md)
  if (MARKDOWN !== undefined) {
    writeSection(MARKDOWN, 'open', md)
    console.error(`# wrote the section "open" of ${MARKDOWN}`)
  }
}

function report (started: Date, startLoad: string, opened: Map<Scenario, Map<EngineName, Opened[]>>, memories: Map<EngineName, Memory[]>): string {
  const lines: string[] = []
  lines.push('### Open and memory: fresh processes, lsm-level beside classic-level')
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Each measurement in a new \`node\` child, from a fresh copy of a database a preparation child wrote (keys of ${KEY_SIZE} bytes, values of ${VALUE_SIZE} random bytes, seed ${SEED}); ` +
    `${RUNS} runs interleaved, the engines' order rotated each run; medians. RSS and heapUsed are the child's right after open() resolved (the harness itself: a few MB).`)
  if (opened.size > 0) {
    lines.push('')
    lines.push('| database | lsm-level open (ms) | classic-level open (ms) | lsm / classic | first get after open (ms) lsm / classic | RSS after open lsm / classic | heapUsed lsm / classic | tables lsm / classic |')
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|')
    for (const [s, byEngine] of opened) {
      const med = (e: EngineName, f: keyof Opened): number => median(byEngine.get(e)!.map((m) => m[f]))
      const pair = (f: keyof Opened, fmt: (x: number) => string): string => `${fmt(med('lsm-level', f))} / ${fmt(med('classic-level', f))}`
      lines.push(`| ${s}: ${SCENARIOS[s]} | ${med('lsm-level', 'openMs').toFixed(1)} | ${med('classic-level', 'openMs').toFixed(1)} | ${ratio(med('lsm-level', 'openMs') / med('classic-level', 'openMs'))} | ` +
        `${pair('firstGetMs', (x) => x.toFixed(2))} | ${pair('rss', mb)} | ${pair('heapUsed', mb)} | ${pair('files', int)} |`)
    }
    const req = (e: EngineName): number => median([...opened.values()].flatMap((m) => m.get(e)!.map((o) => o.requireMs)))
    lines.push('')
    lines.push(`require() of the package in those children (median of all): lsm-level ${req('lsm-level').toFixed(1)} ms, classic-level ${req('classic-level').toFixed(1)} ms (${ratio(req('lsm-level') / req('classic-level'))}).`)
  }
  if (memories.size > 0) {
    lines.push('')
    lines.push(`A ${int(FILL_KEYS)}-key fill in batches of 1,000 (values from a 1 MiB pool), then ${IDLE_MS / 1000} s idle; RSS of the child:`)
    lines.push('')
    lines.push('| engine | before require | max during fill and idle | after idle | heapUsed after idle | fill (s) | max / classic | after idle / classic |')
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|')
    const med = (e: EngineName, f: keyof Memory): number => median(memories.get(e)!.map((m) => m[f]))
    for (const e of ENGINES) {
      if (!memories.has(e)) continue
      lines.push(`| ${e} | ${mb(med(e, 'rssBefore'))} | ${mb(med(e, 'rssMaxDuringFill'))} | ${mb(med(e, 'rssAfterIdle'))} | ${mb(med(e, 'heapAfterIdle'))} | ${med(e, 'fillSeconds').toFixed(1)} | ` +
        `${ratio(med(e, 'rssMaxDuringFill') / med('classic-level', 'rssMaxDuringFill'))} | ${ratio(med(e, 'rssAfterIdle') / med('classic-level', 'rssAfterIdle'))} |`)
    }
  }
  return lines.join('\n')
}

const spec = childSpec<Spec>()
function childWork (spec: Spec): Promise<void> {
  if (spec.mode === 'prepare') return prepare(spec.engine, spec.scenario, spec.dir)
  if (spec.mode === 'open') return open(spec.engine, spec.scenario, spec.dir)
  return memory(spec.engine, spec.dir)
}

;(spec === undefined ? parent() : childWork(spec)).catch((err) => {
  console.error(err)
  process.exit(1)
})
