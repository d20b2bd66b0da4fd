// Many-tabs benchmark (`npm run bench:browser-tabs`): awaited puts and gets
// from a tab that owns an lsm-level database (BrowserLevel, its engine in the
// tab's worker), from a tab that is its client (through the relay's port, and
// over BroadcastChannels), and from a tab on browser-level (IndexedDB, which
// lets every tab open a database), in headless Chromium with a profile on
// disk (or with BENCH_BROWSER=firefox in headless Firefox, test/browser/firefox.ts);
// each run also measures the floor under them (bare round trips, the tabs
// page's floor()); then the failover time: from the owner tab's death (closed
// or its renderer killed; in Firefox closed only) to the first write that
// succeeds on a client tab.
//
//   npm run bench:browser-tabs                    default sizes (a minute or two)
//   BENCH_OPS=2000 BENCH_RUNS=3 BENCH_FAILOVERS=20 awaited ops per measure, runs, failover rounds (0: none)
//   BENCH_TRIPS=2000 ...                          round trips of each kind of the floor (0: none)
//   BENCH_ROLES='owner tab,client tab (relay),browser-level tab' ...  only these tabs
//   BENCH_BROWSER=firefox ...                     in Firefox (section "browser-tabs-firefox")
//   BENCH_MARKDOWN=BENCHMARKS.md ...              also write the section "browser-tabs"
import { type Page, serveDist } from '../test/browser/harness'
import { launchFirefox } from '../test/browser/firefox'
import { launchChromium } from './chromium-launch'
import { median, rotated } from './child'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, ratio, writeSection } from './report'

const OPS = Number(process.env.BENCH_OPS ?? 2000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const FAILOVERS = Number(process.env.BENCH_FAILOVERS ?? 20)
const TRIPS = Number(process.env.BENCH_TRIPS ?? 2000)
const MARKDOWN = process.env.BENCH_MARKDOWN
const FIREFOX = process.env.BENCH_BROWSER === 'firefox'
const ENV_NAMES = ['BENCH_BROWSER', 'BENCH_OPS', 'BENCH_RUNS', 'BENCH_FAILOVERS', 'BENCH_TRIPS', 'BENCH_ROLES']

type Role = 'owner tab' | 'client tab (relay)' | 'client tab (BroadcastChannel)' | 'browser-level tab'
const ALL_ROLES: Role[] = ['owner tab', 'client tab (relay)', 'client tab (BroadcastChannel)', 'browser-level tab']
const CHOSEN = process.env.BENCH_ROLES?.split(',').map((r) => r.trim())
/** The tabs of the run (BENCH_ROLES), in their order; the owner tab always, first (it opens the database first). */
const ROLES = ALL_ROLES.filter((r) => r === 'owner tab' || CHOSEN === undefined || CHOSEN.includes(r))

interface PageGlobal { lsmTabsBench: Record<string, (...args: unknown[]) => Promise<unknown>> }
interface Context { newPage (): Promise<Page>, close (): Promise<void> }

async function benchPage (context: Context, base: string): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (err) => console.error(`page error: ${err.message}`))
  await page.goto(`${base}/tabs-bench.html`)
  await page.waitForFunction('globalThis.lsmTabsBench !== undefined')
  return page
}

async function call<R> (page: Page, method: string, ...args: unknown[]): Promise<R> {
  return await page.evaluate(async ([m, a]) => await (globalThis as unknown as PageGlobal).lsmTabsBench[m](...a), [method, args] as [string, unknown[]]) as R
}

/** The floor's kinds of round trip (the tabs page's floor()). */
type FloorKind = 'worker' | 'worker, then a port to a second worker' | 'worker, then a port to another tab\'s worker' | 'a port to another tab\'s worker'

/** Each role's puts/s and gets/s, per run; the floor of each run goes to `floors`. */
async function throughput (context: Context, base: string, floors: Array<Record<FloorKind, number>>): Promise<Map<string, number[]>> {
  const results = new Map<string, number[]>()
  for (let run = 0; run < RUNS; run++) {
    const location = `bench-tabs-${Date.now()}`
    const pages = new Map<Role, Page>()
    for (const role of ROLES) {
      const page = await benchPage(context, base)
      const engine = role === 'browser-level tab' ? 'idb' : role === 'client tab (BroadcastChannel)' ? 'lsm-broadcast' : 'lsm'
      const got = await call<string>(page, 'open', engine, location)
      console.error(`  run ${run + 1}: ${role} opened as ${got}`)
      pages.set(role, page)
    }
    if (TRIPS > 0) {
      const floor = await call<Record<FloorKind, number>>(pages.get('owner tab')!, 'floor', TRIPS)
      const client = pages.get('client tab (relay)')
      if (client !== undefined) {
        await call(pages.get('owner tab')!, 'floorServe', `${location}-floor`)
        const { across, straight } = await call<{ across: number, straight: number }>(client, 'floorAcross', `${location}-floor`, TRIPS)
        floor['worker, then a port to another tab\'s worker'] = across
        floor['a port to another tab\'s worker'] = straight
      }
      floors.push(floor)
      console.error(`  run ${run + 1} floor (µs per round trip, 100 bytes each way): ${Object.entries(floor).map(([k, v]) => `${k} ${v.toFixed(1)}`).join('; ')}`)
    }
    for (const op of ['puts', 'gets'] as const) {
      for (const role of rotated(ROLES, run)) {
        const ops = await call<number>(pages.get(role)!, op, run * 10 + ROLES.indexOf(role) + 1, OPS)
        const name = `${op} ${role}`
        results.set(name, [...(results.get(name) ?? []), ops])
        console.error(`  run ${run + 1} ${op} ${role.padEnd(30)} ${int(ops).padStart(9)} ops/s`)
      }
    }
    for (const page of pages.values()) await page.close()
  }
  return results
}

/** Milliseconds from the owner tab's death to a client tab's first successful write, per round (close and crash alternately). */
async function failovers (context: Context, base: string): Promise<{ close: number[], crash: number[] }> {
  const out = { close: [] as number[], crash: [] as number[] }
  const location = `bench-failover-${Date.now()}`
  let owner = await benchPage(context, base)
  await call(owner, 'open', 'lsm', location)
  let client = await benchPage(context, base)
  await call(client, 'open', 'lsm', location)
  for (let round = 0; round < FAILOVERS; round++) {
    // A new tab becomes the next round's client.
    const next = await benchPage(context, base)
    await call(next, 'open', 'lsm', location)
    for (let i = 0; i < 100; i++) await call(client, 'put1', i)
    const how = round % 2 === 0 || FIREFOX ? 'close' : 'crash'
    if (how === 'close') {
      await owner.close()
    } else {
      const crashed = new Promise<void>((resolve) => (owner as unknown as { once (e: 'crash', f: () => void): void }).once('crash', resolve))
      await owner.goto('chrome://crash').catch(() => {})
      await crashed
      await owner.close().catch(() => {})
    }
    const t0 = Date.now()
    for (;;) {
      const result = await call<string>(client, 'put1', round)
      if (result === 'ok') break
      if (Date.now() - t0 > 10_000) throw new Error(`no successful write 10 s after the owner's ${how}: ${result}`)
    }
    out[how].push(Date.now() - t0)
    console.error(`  failover ${round + 1} (${how}): ${Date.now() - t0} ms`)
    owner = client
    client = next
  }
  await owner.close()
  await client.close()
  return out
}

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]
}

/** The browser, with its profile on disk: its version and driver, its context, and how to end it. */
async function launch (): Promise<{ version: string, driver: string, context: Context, close: () => Promise<void> }> {
  if (FIREFOX) {
    const firefox = await launchFirefox({}, true)
    return { version: `Mozilla Firefox ${firefox.version.replace(/^firefox\//, '')}`, driver: 'puppeteer-core over WebDriver BiDi', context: firefox.defaultContext, close: firefox.close }
  }
  const chromium = await launchChromium('lsm-tabs-bench-')
  return { ...chromium, context: chromium.context as unknown as Context }
}

async function main (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const { server, base } = await serveDist({ '/tabs-bench.html': '/browser-bench/tabs.js' })
  const { version, driver, context, close } = await launch()
  try {
    const floors: Array<Record<FloorKind, number>> = []
    const results = await throughput(context, base, floors)
    const times = FAILOVERS > 0 ? await failovers(context, base) : { close: [], crash: [] }
    const lines: string[] = []
    lines.push(`### In the browser${FIREFOX ? ' (Firefox)' : ''}: many tabs on one database`)
    lines.push('')
    lines.push(dateLine(started, startLoad))
    lines.push(`- Machine: ${describeMachine(machine())}; the browser's profile on disk there`)
    lines.push(`- Browser: ${version}, headless, driven by ${driver}; the tabs are pages of one browser context`)
    lines.push(`- Commit: ${gitCommit()}`)
    lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
    lines.push(`- Each tab opens the same location; ${int(OPS)} awaited puts (16-byte keys, 100-byte values, 'view' encodings), then as many awaited gets of those keys, timed in the tab; ` +
      `the tabs take turns (order rotated each run); median of ${RUNS} runs, a new database each run. browser-level: its own database, from its own tab.`)
    lines.push('')
    lines.push('| from | puts/s | gets/s | puts / browser-level | gets / browser-level |')
    lines.push('|---|---:|---:|---:|---:|')
    const cell = (op: string, role: Role): number => median(results.get(`${op} ${role}`) ?? [0])
    for (const role of ROLES) {
      lines.push(`| ${role} | ${int(cell('puts', role))} | ${int(cell('gets', role))} | ${ratio(cell('puts', role) / cell('puts', 'browser-level tab'))} | ${ratio(cell('gets', role) / cell('gets', 'browser-level tab'))} |`)
    }
    if (floors.length > 0) {
      const floor = (kind: FloorKind): number => median(floors.map((f) => f[kind]))
      const us = (opsPerSecond: number): string => (1e6 / opsPerSecond).toFixed(0)
      lines.push('')
      lines.push(`The floor (the owner tab's floor(): ${int(TRIPS)} awaited round trips of each kind per run, 100 bytes each way, median of the runs), and each tab's µs per operation:`)
      lines.push('')
      lines.push('| round trip | µs |')
      lines.push('|---|---:|')
      for (const kind of Object.keys(floors[0]) as FloorKind[]) lines.push(`| ${kind} | ${floor(kind).toFixed(1)} |`)
      lines.push('')
      lines.push('| from | µs per put | µs per get |')
      lines.push('|---|---:|---:|')
      for (const role of ROLES) lines.push(`| ${role} | ${us(cell('puts', role))} | ${us(cell('gets', role))} |`)
    }
    lines.push('')
    const all = [...times.close, ...times.crash]
    if (all.length > 0) lines.push(`Failover, from the owner tab's death (its page closed, or its renderer killed by chrome://crash; timed from when Node saw it) to the first awaited put that succeeds on a client tab, over ${all.length} rounds (a third tab open each time, so that the next round has a client):`)
    if (all.length > 0) lines.push('', '| owner | rounds | p50 ms | p99 ms | max ms |', '|---|---:|---:|---:|---:|')
    for (const [name, xs] of [['closed', times.close], ['crashed', times.crash], ['all', all]] as const) {
      if (xs.length > 0) lines.push(`| ${name} | ${xs.length} | ${percentile(xs, 0.5)} | ${percentile(xs, 0.99)} | ${Math.max(...xs)} |`)
    }
    const md = lines.join('\n')
    console.log(md)
    if (MARKDOWN !== undefined) {
      const section = FIREFOX ? 'browser-tabs-firefox' : 'browser-tabs'
      writeSection(MARKDOWN, section, md)
      console.error(`# wrote the section "${section}" of ${MARKDOWN}`)
    }
  } finally {
    await close()
    server.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
