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
//   npm run bench:browser                          the default sizes (a few minutes)
//   BENCH_KEYS=20000 BENCH_PUTS=2000 ...           smaller: keys of fillbatch (and
//                                                  of the reads), awaited puts
//   BENCH_GETS=... BENCH_SEEKS=... BENCH_RUNS=...  gets, seeks, runs (default 3)
//   BENCH_SEED=7 ...                               other keys, values and order
//   BENCH_MARKDOWN=BENCHMARKS.md ...               also write the section "browser"
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { findChromium, CHROMIUM_CANDIDATES, type Context, type Page, playwrightChromium, serveDist } from '../test/browser/harness'
import { launchFirefox } from '../test/browser/firefox'
import type { Bench, BenchConfig, EngineName, Workload } from './browser-page'
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
const MARKDOWN = process.env.BENCH_MARKDOWN
const FIREFOX = process.env.BENCH_BROWSER === 'firefox'
const ENV_NAMES = ['BENCH_BROWSER', 'BENCH_PUTS', 'BENCH_KEYS', 'BENCH_GETS', 'BENCH_SEEKS', 'BENCH_RUNS', 'BENCH_SEED']
const ENGINES: readonly EngineName[] = ['lsm-level', 'lsm-level in a worker', 'browser-level']

/** The workloads (db_bench names), in the order of a run, and what each counts. */
const WORKLOADS: Record<Workload, string> = {
  fillrandom: `${int(CONFIG.puts)} awaited puts into an empty database; puts/s`,
  fillbatch: `${int(CONFIG.keys)} keys in batches of 1,000 into an empty database; puts/s`,
  readrandom: `${int(CONFIG.gets)} awaited gets of present keys, random order; gets/s`,
  readsync: `readrandom with \`getSync\` (OpfsLevel only; its ratio is to browser-level's readrandom); gets/s`,
  readseq: 'one full scan, `nextv(1000)`; entries/s',
  seekrandom: `${int(CONFIG.seeks)} x (iterator with \`gte\` a random present key, \`nextv(100)\`); ranges/s`
}

/** The engines that run `workload`: getSync is OpfsLevel's alone. */
const enginesOf = (workload: Workload): readonly EngineName[] => workload === 'readsync' ? ['lsm-level in a worker'] : ENGINES

// page.evaluate() sends a function's source to the page, not its closure: the
// functions below reach the page's `lsmBench` through the page's globalThis.
interface PageGlobal { lsmBench: Bench }

async function measure (page: Page): Promise<Map<Workload, Map<EngineName, number[]>>> {
  const results = new Map<Workload, Map<EngineName, number[]>>()
  for (let run = 0; run < RUNS; run++) {
    for (const workload of Object.keys(WORKLOADS) as Workload[]) {
      for (const engine of rotated(enginesOf(workload), run)) {
        const ops = await page.evaluate(async ([e, w, r]) => await (globalThis as unknown as PageGlobal).lsmBench.run(e, w, r), [engine, workload, run] as [EngineName, Workload, number])
        if (!results.has(workload)) results.set(workload, new Map())
        const byEngine = results.get(workload)!
        byEngine.set(engine, [...(byEngine.get(engine) ?? []), ops])
        console.error(`  run ${run + 1} ${workload.padEnd(11)} ${engine.padEnd(21)} ${int(ops).padStart(11)} ops/s`)
      }
    }
    await page.evaluate(async () => await (globalThis as unknown as PageGlobal).lsmBench.finish(), undefined)
  }
  return results
}

/** The browser, with its profile on disk: its version, its context, and how to end it. */
async function launch (): Promise<{ version: string, driver: string, context: Context, close: () => Promise<void> }> {
  if (FIREFOX) {
    const firefox = await launchFirefox()
    return { version: `Mozilla Firefox ${firefox.version.replace(/^firefox\//, '')}`, driver: 'puppeteer-core over WebDriver BiDi', context: firefox.defaultContext, close: firefox.close }
  }
  const executablePath = findChromium()
  if (executablePath === undefined) throw new Error(`no Chromium found (${CHROMIUM_CANDIDATES.join(', ')}); set CHROMIUM_PATH`)
  const version = execFileSync(executablePath, ['--version'], { encoding: 'utf8' }).trim()
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-browser-bench-'))
  const context = await playwrightChromium().launchPersistentContext(profile, { executablePath, args: ['--no-sandbox'] })
  return {
    version,
    driver: 'playwright-core',
    context,
    close: async () => {
      await context.close()
      fs.rmSync(profile, { recursive: true, force: true })
    }
  }
}

async function main (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const { server, base } = await serveDist({ '/bench.html': '/browser-bench/page.js' })
  const { version, driver, context, close } = await launch()
  console.error(`# browser: ${version}, ${RUNS} runs, ${JSON.stringify(CONFIG)}; ${describeMachine(machine())}`)
  try {
    const page = await context.newPage()
    page.on('pageerror', (err) => console.error(`page error: ${err.message}`))
    await page.goto(`${base}/bench.html`)
    await page.waitForFunction('globalThis.lsmBench !== undefined')
    await page.evaluate((config) => (globalThis as unknown as PageGlobal).lsmBench.setup(config), CONFIG)
    const results = await measure(page)
    const snapshots = new Map<EngineName, string>()
    for (const engine of ['lsm-level', 'browser-level'] as const) snapshots.set(engine, await page.evaluate(async (e) => await (globalThis as unknown as PageGlobal).lsmBench.snapshots(e), engine))
    const md = report(started, startLoad, version, driver, results, snapshots)
    console.log(md)
    if (MARKDOWN !== undefined) {
      const section = FIREFOX ? 'browser-firefox' : 'browser'
      writeSection(MARKDOWN, section, md)
      console.error(`# wrote the section "${section}" of ${MARKDOWN}`)
    }
  } finally {
    await close()
    server.close()
  }
}

function report (started: Date, startLoad: string, version: string, driver: string, results: Map<Workload, Map<EngineName, number[]>>, snapshots: Map<EngineName, string>): string {
  const lines: string[] = []
  lines.push(`### In the browser${FIREFOX ? ' (Firefox)' : ''}: lsm-level on OPFS against browser-level on IndexedDB`)
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}; the browser's profile (OPFS and IndexedDB) in a directory there`)
  lines.push(`- Browser: ${version}, headless, driven by ${driver}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: keys of 16 random bytes, values of 100 random bytes (seeded LCG, seed ${CONFIG.seed}), the same for every engine, all with the \`'view'\` encoding (Uint8Array keys and values, which both store as they are). ` +
    'BrowserLevel (`lsm-level/browser`, whose engine runs in its worker) and browser-level used from one page, on its main thread; ' +
    'OpfsLevel (`lsm-level/browser/in-worker`) used inside a dedicated worker that the page starts, each workload timed in that worker; default options. ' +
    'The reads use the database that fillbatch filled in the same run; lsm-level\'s are compacted first (untimed).')
  lines.push(`- ${RUNS} runs, each a new database per engine, workload by workload, the engines' order rotated each run; each cell is the median of the ${RUNS}. ` +
    'No separate warmup: the first run is the page\'s first use of each engine\'s paths.')
  lines.push('')
  lines.push('| workload | what | lsm-level BrowserLevel (page) | lsm-level OpfsLevel (in a worker) | browser-level | BrowserLevel / browser-level | OpfsLevel / browser-level |')
  lines.push('|---|---|---:|---:|---:|---:|---:|')
  const cell = (workload: Workload, engine: EngineName): number | undefined => {
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
    lines.push(`| ${workload} | ${WORKLOADS[workload]} | ${shown(page)} | ${shown(inWorker)} | ${shown(idbShown)} | ${ratioTo(page, idb)} | ${ratioTo(inWorker, idb)} |`)
  }
  lines.push('')
  lines.push('Explicit snapshots:')
  for (const [engine, what] of snapshots) lines.push(`- ${engine}: ${what}`)
  return lines.join('\n')
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
