// The time of each `nextv(1000)` of a full scan from a page (BrowserLevel,
// its engine in the page's worker): 20,000 keys with values of 100 random
// bytes, put in batches and compacted, in a new database each run, on the
// many-tabs benchmark's page (benchmarks/browser-tabs-page.ts, its `scan`).
// What the browser benchmark's readseq row is made of, batch by batch.
//
//   node dist/benchmarks/browser-scan-probe.js       in Chromium
//   BENCH_BROWSER=firefox|webkit ...                 in Firefox or WebKitGTK
//   BENCH_RUNS=3 BENCH_KEYS=20000 ...                runs (a new database each), keys
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { findChromium, playwrightChromium, serveDist, type Context, type Page } from '../test/browser/harness'
import { launchFirefox } from '../test/browser/firefox'
import { launchWebKit } from './webkit-context'

const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const KEYS = Number(process.env.BENCH_KEYS ?? 20_000)
const BROWSER = process.env.BENCH_BROWSER ?? 'chromium'

interface PageGlobal { lsmTabsBench: Record<string, (...args: unknown[]) => Promise<unknown>> }

async function launch (): Promise<{ context: Context, close: () => Promise<void> }> {
  if (BROWSER === 'webkit') return await launchWebKit()
  if (BROWSER === 'firefox') {
    const firefox = await launchFirefox({}, true)
    return { context: firefox.defaultContext, close: firefox.close }
  }
  const executablePath = findChromium()
  if (executablePath === undefined) throw new Error('no Chromium found; set CHROMIUM_PATH')
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-scan-probe-'))
  const context = await playwrightChromium().launchPersistentContext(profile, { executablePath, args: ['--no-sandbox'] })
  return { context, close: async () => { await context.close(); fs.rmSync(profile, { recursive: true, force: true }) } }
}

async function main (): Promise<void> {
  const { server, base } = await serveDist({ '/tabs-bench.html': '/browser-bench/tabs.js' })
  const { context, close } = await launch()
  try {
    const page: Page = await context.newPage()
    await page.goto(`${base}/tabs-bench.html`)
    await page.waitForFunction('globalThis.lsmTabsBench !== undefined')
    const call = async <R>(method: string, ...args: unknown[]): Promise<R> =>
      await page.evaluate(async ([m, a]) => await (globalThis as unknown as PageGlobal).lsmTabsBench[m](...a), [method, args] as [string, unknown[]]) as R
    console.log(`# ${BROWSER}, ${new Date().toISOString()}, load ${os.loadavg()[0].toFixed(1)}`)
    for (let run = 0; run < RUNS; run++) {
      // relay: false, so that no SharedWorker is needed (the page is the database's only tab).
      await call('open', 'lsm-broadcast', `scan-probe-${run}-${Date.now()}`)
      const times = await call<number[]>('scan', run + 1, KEYS)
      const total = times.reduce((sum, ms) => sum + ms, 0)
      console.log(`run ${run + 1}: ${total.toFixed(0)} ms, ${(KEYS / total * 1000).toFixed(0)} entries/s; ms per nextv: ${times.map((ms) => ms.toFixed(0)).join(' ')}`)
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
