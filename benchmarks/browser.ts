// Browser benchmark (`npm run bench:browser`): lsm-level on the Origin Private
// File System, as BrowserLevel used from a page and as OpfsLevel used inside a
// worker, against browser-level, the Level project's IndexedDB engine, in one
// page of headless Chromium (the distribution's package, driven by
// playwright-core as in test/browser.test.ts), or with BENCH_BROWSER=firefox
// of headless Firefox (the distribution's firefox-esr, driven by puppeteer-core
// over WebDriver BiDi, test/browser/firefox.ts). The page is
// benchmarks/browser-page.ts (it starts benchmarks/browser-worker.ts for
// OpfsLevel), bundled by `npm run build`; this driver serves it, asks it for
// one measurement at a time (page.evaluate), interleaves the engines (their
// order rotated each run) and reports medians and ratios to browser-level.
//
// The browser gets a profile directory on disk (launchPersistentContext): a
// plain new context is incognito-like, and keeps OPFS and IndexedDB in memory.
//
//   BENCH_BROWSER=firefox npm run bench:browser    the same in Firefox (section
//                                                  "browser-firefox" of BENCH_MARKDOWN)
//   BENCH_BROWSER=webkit BENCH_ENGINES=lsm-level,browser-level npm run bench:browser
//                                                  in WebKitGTK's MiniBrowser (section
//                                                  "browser-webkit"; benchmarks/webkit-context.ts)
//   npm run bench:browser                          the default sizes (a few minutes)
//   BENCH_KEYS=20000 BENCH_PUTS=2000 ...           smaller: keys of fillbatch (and
//                                                  of the reads), awaited puts
//   BENCH_GETS=... BENCH_SEEKS=... BENCH_RUNS=...  gets, seeks, runs (default 3)
//   BENCH_SEED=7 ...                               other keys, values and order
//   BENCH_MARKDOWN=BENCHMARKS.md ...               also write the section "browser"
//   BENCH_BASELINE=<checkout>[,<checkout>] ...     also BrowserLevel as built in other
//                                                  checkouts (their dist/), each from a page
//                                                  of its own in the same browser, in the
//                                                  rotation: a change measured in one run
//   BENCH_ONLY=fillrandom,readseq ...              only these workloads (fillbatch too when
//                                                  a read is named: the reads use its database)
//   BENCH_ENGINES=lsm-level,browser-level ...      only these engines (of the table's names)
//   BENCH_TRIPS=2000 ...                           round trips of each kind of the floor, a
//                                                  bare page -> worker -> page message (0: none)
import * as path from 'node:path'
import type { Server } from 'node:http'
import { type Context, type Page, serveDist } from '../test/browser/harness'
import { launchFirefox } from '../test/browser/firefox'
import { launchChromium } from './chromium-launch'
import { launchWebKit } from './webkit-context'
import type { Bench, BenchConfig, EngineName, FloorKind, Workload } from './browser-page'
import { median, rotated } from './child'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, ratio, writeSection } from './report'

const CONFIG: BenchConfig = {
  puts: Number(process.env.BENCH_PUTS ?? 10_000),
  keys: Number(process.env.BENCH_KEYS ?? 100_000),
  gets: Number(process.env.BENCH_GETS ?? 10_000),
  seeks: Number(process.env.BENCH_SEEKS ?? 1_000),
  seed: Number(process.env.BENCH_SEED ?? 1) >>> 0
}
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const TRIPS = Number(process.env.BENCH_TRIPS ?? 2000)
const MARKDOWN = process.env.BENCH_MARKDOWN
const FIREFOX = process.env.BENCH_BROWSER === 'firefox'
const WEBKIT = process.env.BENCH_BROWSER === 'webkit'
const ENV_NAMES = ['BENCH_BROWSER', 'BENCH_PUTS', 'BENCH_KEYS', 'BENCH_GETS', 'BENCH_SEEKS', 'BENCH_RUNS', 'BENCH_SEED', 'BENCH_BASELINE', 'BENCH_ONLY', 'BENCH_ENGINES', 'BENCH_TRIPS']

const listed = (variable: string | undefined): string[] | undefined => variable === undefined || variable === '' ? undefined : variable.split(',').map((name) => name.trim())
/** The other checkouts whose BrowserLevel runs beside this one's (BENCH_BASELINE). */
const BASELINES = listed(process.env.BENCH_BASELINE) ?? []

/** An engine of the run: the page's three, and BrowserLevel of each baseline's build ('baseline 1', ...). */
type RunEngine = EngineName | `baseline ${number}`
const isBaseline = (engine: RunEngine): engine is `baseline ${number}` => engine.startsWith('baseline ')
const ENGINES: readonly RunEngine[] = [
  ...(['lsm-level', 'lsm-level in a worker', 'browser-level'] as const).filter((engine) => listed(process.env.BENCH_ENGINES)?.includes(engine) ?? true),
  ...BASELINES.map((_, i) => `baseline ${i + 1}` as const)
]

/** Durable puts of fillsync (at most). */
const SYNC_PUTS = 1000

/** The workloads (db_bench names), in the order of a run, and what each counts. */
const WORKLOADS: Record<Workload, string> = {
  fillrandom: `${int(CONFIG.puts)} awaited puts into an empty database; puts/s`,
  fillsync: `${int(Math.min(CONFIG.puts, SYNC_PUTS))} awaited puts with \`{ sync: true }\` into an empty database; 1 / the median put's time, /s`,
  fillbatch: `${int(CONFIG.keys)} keys in batches of 1,000 into an empty database; puts/s`,
  readrandom: `${int(CONFIG.gets)} awaited gets of present keys, random order; gets/s`,
  readsync: `readrandom with \`getSync\` (OpfsLevel only; its ratio is to browser-level's readrandom); gets/s`,
  readseq: 'one full scan, `nextv(1000)`; entries/s',
  seekrandom: `${int(CONFIG.seeks)} x (iterator with \`gte\` a random present key, \`nextv(100)\`); ranges/s`
}

/** The workloads of the run (BENCH_ONLY), in their order; the reads need fillbatch's database. */
const ONLY = listed(process.env.BENCH_ONLY)
const READS: readonly Workload[] = ['readrandom', 'readsync', 'readseq', 'seekrandom']
const RUN_WORKLOADS = (Object.keys(WORKLOADS) as Workload[]).filter((w) => ONLY === undefined || ONLY.includes(w) || (w === 'fillbatch' && ONLY.some((o) => READS.includes(o as Workload))))

/** The engines that run `workload`: getSync is OpfsLevel's alone. */
const enginesOf = (workload: Workload): readonly RunEngine[] => workload === 'readsync' ? ENGINES.filter((e) => e === 'lsm-level in a worker') : ENGINES

// page.evaluate() sends a function's source to the page, not its closure: the
// functions below reach the page's `lsmBench` through the page's globalThis.
interface PageGlobal { lsmBench: Bench }

/** `baselines[i]` is the page of BASELINES[i]. */
async function measure (page: Page, baselines: Page[], floors: Array<Record<FloorKind, number>>): Promise<Map<Workload, Map<RunEngine, number[]>>> {
  const results = new Map<Workload, Map<RunEngine, number[]>>()
  for (let run = 0; run < RUNS; run++) {
    if (TRIPS > 0) {
      if (baselines.length > 0) await page.bringToFront()
      const floor = await page.evaluate(async (trips) => await (globalThis as unknown as PageGlobal).lsmBench.floor(trips), TRIPS)
      floors.push(floor)
      console.error(`  run ${run + 1} floor (µs per round trip): ${Object.entries(floor).map(([k, v]) => `${k} ${v.toFixed(1)}`).join('; ')}`)
    }
    for (const workload of RUN_WORKLOADS) {
      for (const engine of rotated(enginesOf(workload), run)) {
        const [on, name] = isBaseline(engine) ? [baselines[Number(engine.slice(9)) - 1], 'lsm-level' as const] : [page, engine]
        if (baselines.length > 0) await on.bringToFront()
        const ops = await on.evaluate(async ([e, w, r]) => await (globalThis as unknown as PageGlobal).lsmBench.run(e, w, r), [name, workload, run] as [EngineName, Workload, number])
        if (!results.has(workload)) results.set(workload, new Map())
        const byEngine = results.get(workload)!
        byEngine.set(engine, [...(byEngine.get(engine) ?? []), ops])
        console.error(`  run ${run + 1} ${workload.padEnd(11)} ${engine.padEnd(21)} ${int(ops).padStart(11)} ops/s`)
      }
    }
    for (const on of [page, ...baselines]) await on.evaluate(async () => await (globalThis as unknown as PageGlobal).lsmBench.finish(), undefined)
  }
  return results
}

/** A page of the benchmark served from `dist` (another server: another origin, so storage of its own), set up. */
async function benchPage (context: Context, dist: string | undefined): Promise<{ page: Page, server: Server }> {
  const { server, base } = await serveDist({ '/bench.html': '/browser-bench/page.js' }, dist)
  const page = await context.newPage()
  page.on('pageerror', (err) => console.error(`page error: ${err.message}`))
  await page.goto(`${base}/bench.html`)
  await page.waitForFunction('globalThis.lsmBench !== undefined')
  await page.evaluate((config) => (globalThis as unknown as PageGlobal).lsmBench.setup(config), CONFIG)
  return { page, server }
}

/** The browser, with its profile on disk: its version, its context, and how to end it. */
async function launch (): Promise<{ version: string, driver: string, context: Context, close: () => Promise<void> }> {
  if (WEBKIT) {
    const webkit = await launchWebKit()
    return { version: `WebKitGTK ${webkit.version} (MiniBrowser; BrowserLevel on its IndexedDB fallback)`, driver: 'WebKitWebDriver under xvfb-run', context: webkit.context, close: webkit.close }
  }
  if (FIREFOX) {
    const firefox = await launchFirefox({}, true)
    return { version: `Mozilla Firefox ${firefox.version.replace(/^firefox\//, '')}`, driver: 'puppeteer-core over WebDriver BiDi', context: firefox.defaultContext, close: firefox.close }
  }
  const chromium = await launchChromium('lsm-browser-bench-')
  return { ...chromium, context: chromium.context }
}

async function main (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const { version, driver, context, close } = await launch()
  console.error(`# browser: ${version}, ${RUNS} runs, ${JSON.stringify(CONFIG)}; ${describeMachine(machine())}`)
  const servers: Server[] = []
  try {
    const { page, server } = await benchPage(context, undefined)
    servers.push(server)
    const baselines: Page[] = []
    for (const checkout of BASELINES) {
      const other = await benchPage(context, path.resolve(checkout, 'dist'))
      servers.push(other.server)
      baselines.push(other.page)
    }
    const floors: Array<Record<FloorKind, number>> = []
    const results = await measure(page, baselines, floors)
    const snapshots = new Map<EngineName, string>()
    if (ONLY === undefined) for (const engine of ['lsm-level', 'browser-level'] as const) snapshots.set(engine, await page.evaluate(async (e) => await (globalThis as unknown as PageGlobal).lsmBench.snapshots(e), engine))
    const md = report(started, startLoad, version, driver, results, snapshots, floors)
    console.log(md)
    if (MARKDOWN !== undefined) {
      const section = FIREFOX ? 'browser-firefox' : WEBKIT ? 'browser-webkit' : 'browser'
      writeSection(MARKDOWN, section, md)
      console.error(`# wrote the section "${section}" of ${MARKDOWN}`)
    }
  } finally {
    await close()
    for (const server of servers) server.close()
  }
}

function report (started: Date, startLoad: string, version: string, driver: string, results: Map<Workload, Map<RunEngine, number[]>>, snapshots: Map<EngineName, string>, floors: Array<Record<FloorKind, number>>): string {
  const lines: string[] = []
  lines.push(WEBKIT ? '### In the browser (WebKit): lsm-level on its IndexedDB fallback against browser-level on IndexedDB' : `### In the browser${FIREFOX ? ' (Firefox)' : ''}: lsm-level on OPFS against browser-level on IndexedDB`)
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}; the browser's profile (OPFS and IndexedDB) in a directory there`)
  lines.push(`- Browser: ${version}, ${WEBKIT ? 'on a virtual X display' : 'headless'}, driven by ${driver}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: keys of 16 random bytes, values of 100 random bytes (seeded LCG, seed ${CONFIG.seed}), the same for every engine, all with the \`'view'\` encoding (Uint8Array keys and values, which both store as they are). ` +
    'BrowserLevel (`lsm-level/browser`, whose engine runs in its worker) and browser-level used from one page, on its main thread; ' +
    'OpfsLevel (`lsm-level/browser/in-worker`) used inside a dedicated worker that the page starts, each workload timed in that worker; default options. ' +
    'The reads use the database that fillbatch filled in the same run; lsm-level\'s are compacted first (untimed).')
  lines.push(`- ${RUNS} runs, each a new database per engine, workload by workload, the engines' order rotated each run; each cell is the median of the ${RUNS}. ` +
    'No separate warmup: the first run is the page\'s first use of each engine\'s paths.')
  BASELINES.forEach((checkout, i) => lines.push(`- Baseline ${i + 1}: BrowserLevel as built at commit ${gitCommit(checkout)}, used from a page of its own in the same browser, in the rotation`))
  lines.push('')
  const baseHeads = BASELINES.map((_, i) => ` baseline ${i + 1} (page) |`).join('')
  const baseRatioHeads = BASELINES.map((_, i) => ` baseline ${i + 1} / browser-level |`).join('')
  lines.push(`| workload | what | lsm-level BrowserLevel (page) | lsm-level OpfsLevel (in a worker) | browser-level |${baseHeads} BrowserLevel / browser-level | OpfsLevel / browser-level |${baseRatioHeads}`)
  lines.push(`|---|---|---:|---:|---:|${'---:|'.repeat(BASELINES.length)}---:|---:|${'---:|'.repeat(BASELINES.length)}`)
  const cell = (workload: Workload, engine: RunEngine): number | undefined => {
    const runs = results.get(workload)?.get(engine)
    return runs === undefined ? undefined : median(runs)
  }
  const shown = (x: number | undefined): string => x === undefined ? '–' : int(x)
  const ratioTo = (x: number | undefined, idb: number | undefined): string => x === undefined || idb === undefined ? '–' : ratio(x / idb)
  for (const workload of results.keys()) {
    const page = cell(workload, 'lsm-level')
    const inWorker = cell(workload, 'lsm-level in a worker')
    const idb = cell(workload === 'readsync' ? 'readrandom' : workload, 'browser-level')
    const idbShown = workload === 'readsync' ? undefined : idb
    const baselines = BASELINES.map((_, i) => cell(workload, `baseline ${i + 1}`))
    const baseCells = baselines.map((x) => ` ${shown(x)} |`).join('')
    const baseRatio = baselines.map((x) => ` ${ratioTo(x, idb)} |`).join('')
    lines.push(`| ${workload} | ${WORKLOADS[workload]} | ${shown(page)} | ${shown(inWorker)} | ${shown(idbShown)} |${baseCells} ${ratioTo(page, idb)} | ${ratioTo(inWorker, idb)} |${baseRatio}`)
  }
  const durable = micros(cell('fillsync', 'lsm-level'))
  if (durable !== undefined) lines.push('', `A durable put from the page (fillsync, BrowserLevel): median ${durable.toFixed(0)} µs (the target in Chromium: at most 1 ms).`)
  if (floors.length > 0) lines.push('', ...floorReport(floors, (workload, engine) => cell(workload, engine)))
  if (snapshots.size > 0) {
    lines.push('')
    lines.push('Explicit snapshots:')
    for (const [engine, what] of snapshots) lines.push(`- ${engine}: ${what}`)
  }
  return lines.join('\n')
}

/** µs per operation at `opsPerSecond`. */
const micros = (opsPerSecond: number | undefined): number | undefined => opsPerSecond === undefined ? undefined : 1e6 / opsPerSecond

/**
 * The floor (medians of the runs' round trips) and the target it sets for an
 * awaited put and get from the page: at most 1.5 x (the round trip over a port
 * with 100 bytes + the engine's own time per operation in a worker).
 */
function floorReport (floors: Array<Record<FloorKind, number>>, cell: (workload: Workload, engine: RunEngine) => number | undefined): string[] {
  const floor = (kind: FloorKind): number => median(floors.map((f) => f[kind]))
  const us = (x: number | undefined): string => x === undefined ? '–' : x.toFixed(1)
  const lines = [
    `The floor: µs per round trip page -> dedicated worker -> page, awaited one at a time (${int(TRIPS)} of each kind per run, median of the runs; benchmarks/browser-page.ts, floor()):`,
    '',
    '| round trip | µs |',
    '|---|---:|'
  ]
  for (const kind of Object.keys(floors[0]) as FloorKind[]) lines.push(`| ${kind} | ${us(floor(kind))} |`)
  const base = floor('worker, 100 bytes')
  lines.push('', 'The target: an awaited put or get from the page costs at most 1.5 x (the floor on the worker\'s postMessage with 100 bytes, the transport BrowserLevel uses, + the engine\'s own time per operation, OpfsLevel in a worker):', '')
  lines.push('| operation | floor µs | engine in a worker µs | target µs | BrowserLevel from the page µs | page / (floor + engine) | target |')
  lines.push('|---|---:|---:|---:|---:|---:|---|')
  for (const [name, workload] of [['put', 'fillrandom'], ['get', 'readrandom']] as const) {
    const engine = micros(cell(workload, 'lsm-level in a worker'))
    const onPage = micros(cell(workload, 'lsm-level'))
    const sum = engine === undefined ? undefined : base + engine
    const met = sum === undefined || onPage === undefined ? '–' : onPage <= 1.5 * sum ? 'met' : 'missed'
    lines.push(`| ${name} (${workload}) | ${us(base)} | ${us(engine)} | ${us(sum === undefined ? undefined : 1.5 * sum)} | ${us(onPage)} | ${sum === undefined || onPage === undefined ? '–' : ratio(onPage / sum)} | ${met} |`)
  }
  return lines
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
