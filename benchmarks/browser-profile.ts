// CPU profiles of BrowserLevel's awaited gets and puts from a page, in
// headless Chromium through the DevTools protocol: Profiler.start/stop on the
// page and, through Target.setAutoAttach, on the page's engine worker
// (lsm-level-worker.js). The page is the browser benchmark's
// (benchmarks/browser-page.ts); prints each thread's self time by function.
//
//   node dist/benchmarks/browser-profile.js     BENCH_GETS / BENCH_PUTS (3000 each)
//   BENCH_PROFILE_DIR=<dir> ...                 also write page.cpuprofile and worker.cpuprofile there
//   BENCH_PROFILE_SCANS=3 BENCH_KEYS=50000 ...  full scans (nextv(1000)) of BENCH_KEYS keys instead
//   BENCH_PROFILE_SYNC=1 BENCH_PUTS=1000 ...    awaited durable puts ({ sync: true }; at most 1,000) instead
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { findChromium, playwrightChromium, serveDist, type Page } from '../test/browser/harness'
import type { Bench } from './browser-page'
import { devtoolsSessions } from './devtools-sessions'

interface PageGlobal { lsmBench: Bench }
interface Profile { nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number } }>, samples: number[], timeDeltas: number[] }

const GETS = Number(process.env.BENCH_GETS ?? 3000)
const PUTS = Number(process.env.BENCH_PUTS ?? 3000)
const SCANS = Number(process.env.BENCH_PROFILE_SCANS ?? 0)
const KEYS = Number(process.env.BENCH_KEYS ?? 0)
const SYNC = process.env.BENCH_PROFILE_SYNC === '1'

/** Self time by function, the `top` largest, as lines. */
function selfTimes (profile: Profile, top = 20): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<string, number>()
  let total = 0
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame
    const key = `${frame.functionName === '' ? '(anonymous)' : frame.functionName} ${frame.url.split('/').pop() ?? ''}:${frame.lineNumber}`
    const dt = profile.timeDeltas[i] ?? 0
    total += dt
    self.set(key, (self.get(key) ?? 0) + dt)
  })
  return [`sampled ${(total / 1000).toFixed(0)} ms`, ...[...self].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([key, us]) => `${(us / 1000).toFixed(1).padStart(8)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${key}`)]
}

async function main (): Promise<void> {
  const executablePath = findChromium()
  if (executablePath === undefined) throw new Error('no Chromium found; set CHROMIUM_PATH')
  const { server, base } = await serveDist({ '/bench.html': '/browser-bench/page.js' })
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-browser-profile-'))
  const context = await playwrightChromium().launchPersistentContext(profileDir, { executablePath, args: ['--no-sandbox'] })
  try {
    const page: Page = await context.newPage()
    await page.goto(`${base}/bench.html`)
    await page.waitForFunction('globalThis.lsmBench !== undefined')
    const run = async (workload: 'fillbatch' | 'readrandom' | 'fillrandom' | 'fillsync' | 'readseq', n: number): Promise<number> =>
      await page.evaluate(async ([w, r]) => await (globalThis as unknown as PageGlobal).lsmBench.run('lsm-level', w, r), [workload, n] as ['fillrandom', number])
    await page.evaluate(async (c) => await (globalThis as unknown as PageGlobal).lsmBench.setup(c), { puts: PUTS, keys: Math.max(GETS, KEYS, 1000), gets: GETS, seeks: 1, seed: 1 })
    // Untimed: starts the engine's worker and fills the database the gets read.
    await run('fillbatch', 0)
    const devtools = await devtoolsSessions(context, page)
    for (const send of [devtools.page, devtools.worker]) {
      await send('Profiler.enable')
      await send('Profiler.setSamplingInterval', { interval: 100 })
      await send('Profiler.start')
    }
    if (SCANS > 0) {
      const rates: number[] = []
      for (let i = 0; i < SCANS; i++) rates.push(await run('readseq', 0))
      console.log(`# ${SCANS} full scans of ${Math.max(GETS, KEYS, 1000)} keys: ${rates.map((r) => r.toFixed(0)).join(', ')} entries/s`)
    }
    if (SYNC) console.log(`# ${Math.min(PUTS, 1000)} awaited durable puts: the median put ${(1e6 / await run('fillsync', 1)).toFixed(0)} µs`)
    const gets = SCANS > 0 || SYNC ? 0 : await run('readrandom', 0)
    const puts = SCANS > 0 || SYNC ? 0 : await run('fillrandom', 1)
    const pageProfile = (await devtools.page('Profiler.stop')).profile as Profile
    const workerProfile = (await devtools.worker('Profiler.stop')).profile as Profile
    if (!SYNC) console.log(`# ${GETS} awaited gets: ${gets.toFixed(0)}/s; ${PUTS} awaited puts: ${puts.toFixed(0)}/s`)
    console.log(`# ${new Date().toISOString()}, load ${os.loadavg()[0].toFixed(1)}`)
    console.log('# the page', ...selfTimes(pageProfile).map((l) => '\n' + l))
    console.log('# the engine worker', ...selfTimes(workerProfile).map((l) => '\n' + l))
    const out = process.env.BENCH_PROFILE_DIR
    if (out !== undefined) {
      fs.writeFileSync(path.join(out, 'page.cpuprofile'), JSON.stringify(pageProfile))
      fs.writeFileSync(path.join(out, 'worker.cpuprofile'), JSON.stringify(workerProfile))
    }
  } finally {
    await context.close()
    server.close()
    fs.rmSync(profileDir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
