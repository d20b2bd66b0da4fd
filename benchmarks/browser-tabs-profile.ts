// CPU profiles of a client tab's awaited puts and gets (BrowserLevel in a tab
// that is not the owner: its page, its own worker, a MessagePort from the
// relay to the owner tab's worker, the engine there), in headless Chromium
// through the DevTools protocol: Profiler.start/stop on the client page, its
// engine worker and the owner tab's engine worker (through each page's
// Target.setAutoAttach). The pages are the many-tabs benchmark's
// (benchmarks/browser-tabs-page.ts); prints each thread's idle share and self
// time by function.
//
//   node dist/benchmarks/browser-tabs-profile.js   BENCH_OPS awaited puts, then as many gets (2000)
//   BENCH_PROFILE_DIR=<dir> ...                     also write the three .cpuprofile files there
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { findChromium, playwrightChromium, serveDist, type Page } from '../test/browser/harness'
import { devtoolsSessions, type Send } from './devtools-sessions'

interface PageGlobal { lsmTabsBench: Record<string, (...args: unknown[]) => Promise<unknown>> }
interface Profile { nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number } }>, samples: number[], timeDeltas: number[] }
interface Context { newPage (): Promise<Page>, close (): Promise<void>, newCDPSession (page: Page): Promise<unknown> }

const OPS = Number(process.env.BENCH_OPS ?? 2000)

/** The thread's idle share, and self time by function, the `top` largest, as lines. */
function selfTimes (profile: Profile, ops: number, top = 14): string[] {
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
  const idle = [...self].filter(([key]) => key.startsWith('(idle)')).reduce((sum, [, us]) => sum + us, 0)
  return [`sampled ${(total / 1000).toFixed(0)} ms, idle ${(100 * idle / total).toFixed(1)}%, busy ${((total - idle) / ops).toFixed(0)} µs per operation`,
    ...[...self].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([key, us]) => `${(us / 1000).toFixed(1).padStart(8)} ms ${(100 * us / total).toFixed(1).padStart(5)}% ${(us / ops).toFixed(1).padStart(6)} µs/op  ${key}`)]
}

/** A tab of the many-tabs benchmark, with `location` open in it. */
async function tab (context: Context, base: string, location: string): Promise<{ page: Page, role: string }> {
  const page = await context.newPage()
  await page.goto(`${base}/tabs-bench.html`)
  await page.waitForFunction('globalThis.lsmTabsBench !== undefined')
  const role = await call<string>(page, 'open', 'lsm', location)
  return { page, role }
}

async function call<R> (page: Page, method: string, ...args: unknown[]): Promise<R> {
  return await page.evaluate(async ([m, a]) => await (globalThis as unknown as PageGlobal).lsmTabsBench[m](...a), [method, args] as [string, unknown[]]) as R
}

async function main (): Promise<void> {
  const executablePath = findChromium()
  if (executablePath === undefined) throw new Error('no Chromium found; set CHROMIUM_PATH')
  const { server, base } = await serveDist({ '/tabs-bench.html': '/browser-bench/tabs.js' })
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-tabs-profile-'))
  const context = await playwrightChromium().launchPersistentContext(profileDir, { executablePath, args: ['--no-sandbox'] }) as unknown as Context
  try {
    const location = `profile-tabs-${Date.now()}`
    const owner = await tab(context, base, location)
    const client = await tab(context, base, location)
    if (owner.role !== 'owner' || client.role !== 'client') throw new Error(`the tabs opened as ${owner.role} and ${client.role}`)
    // Untimed: the client's line to the owner, warmed.
    await call(client.page, 'puts', 99, 200)
    const ownerSessions = await devtoolsSessions(context, owner.page)
    const clientSessions = await devtoolsSessions(context, client.page)
    const threads: Array<[string, Send]> = [['the client page', clientSessions.page], ['the client tab\'s worker', clientSessions.worker], ['the owner tab\'s worker', ownerSessions.worker]]
    for (const [, send] of threads) {
      await send('Profiler.enable')
      await send('Profiler.setSamplingInterval', { interval: 100 })
      await send('Profiler.start')
    }
    const puts = await call<number>(client.page, 'puts', 1, OPS)
    const gets = await call<number>(client.page, 'gets', 1, OPS)
    const profiles: Array<[string, Profile]> = []
    for (const [name, send] of threads) profiles.push([name, (await send('Profiler.stop')).profile as Profile])
    console.log(`# a client tab: ${OPS} awaited puts ${puts.toFixed(0)}/s (${(1e6 / puts).toFixed(0)} µs each), ${OPS} awaited gets ${gets.toFixed(0)}/s (${(1e6 / gets).toFixed(0)} µs each); ${new Date().toISOString()}, load ${os.loadavg()[0].toFixed(1)}`)
    for (const [name, profile] of profiles) console.log(`# ${name}`, ...selfTimes(profile, 2 * OPS).map((l) => '\n' + l))
    const out = process.env.BENCH_PROFILE_DIR
    if (out !== undefined) profiles.forEach(([name, profile], i) => fs.writeFileSync(path.join(out, `tabs-${i}-${name.replace(/\W+/g, '-')}.cpuprofile`), JSON.stringify(profile)))
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
