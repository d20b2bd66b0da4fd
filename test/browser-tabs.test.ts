// Many tabs on one database, in headless Chromium (playwright-core): pages of
// one browser context share the origin's OPFS, Web Locks and SharedWorkers,
// as tabs do. Each page (test/browser/tabs-page.ts) opens a BrowserLevel on
// the same location; Node drives them (test/browser/tabs.ts) and closes,
// crashes (CDP Page.crash) and reloads the owner's page to check the failover
// contract (README, "Many tabs"). Skipped (loudly) without Chromium, like
// test/browser.test.ts; LSM_REQUIRE_BROWSERS=chromium makes that a failure.
//
// The torture (last test): TABS_TORTURE_TABS pages write concurrently, their
// acknowledgements recorded here, while the owner's page is closed, crashed or
// reloaded TABS_TORTURE_ROUNDS times (short by default; TABS_TORTURE_ROUNDS=50
// for a long run); SEED replays a run.
import test from 'tape'
import type * as http from 'node:http'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'
import { skipBrowserTests } from './browser/skip'
import { CHROMIUM_CANDIDATES, type Browser, canRequire, findChromium, playwrightChromium, serveDist } from './browser/harness'
import { newTab, until, type TabContext } from './browser/tabs'

const root = path.join(__dirname, '..', '..')

interface Info { role: string, ownerId?: string, owner?: { clients: number, iterators: number, snapshots: number, feeds: number }, ownerChanges: number, error?: string }

const executablePath = findChromium()
const missing = executablePath === undefined
  ? 'no Chromium found (' + CHROMIUM_CANDIDATES.join(', ') + ')'
  : !canRequire('esbuild') ? 'esbuild is not installed' : !canRequire('playwright-core') ? 'playwright-core is not installed' : undefined

if (missing !== undefined) {
  skipBrowserTests('chromium', missing)
  process.on('exit', () => console.log(`${'#'.repeat(78)}\n# BROWSER TESTS SKIPPED: ${missing}\n${'#'.repeat(78)}`))
} else {
  let browser: Browser
  let server: http.Server
  let base = ''
  let n = 0
  const location = (name: string): string => `tabs-${name}-${Date.now()}-${n++}`
  const newContext = async (): Promise<TabContext> => await browser.newContext() as unknown as TabContext
  /** TABS_ONLY=<words> runs only the tests whose name has them (and the setup). */
  const only = process.env.TABS_ONLY
  const tabsTest = (name: string, fn: (t: test.Test) => Promise<void>): void => {
    if (only === undefined || name.includes(only)) test(name, fn)
  }

  test('tabs: bundle, serve, launch', async (t) => {
    const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-browser.js'), '--tests'], { encoding: 'utf8' })
    t.is(build.status, 0, `scripts/build-browser.js --tests${build.status === 0 ? '' : ': ' + build.stderr}`)
    ;({ server, base } = await serveDist({ '/tabs.html': '/browser-test/tabs.js' }))
    browser = await playwrightChromium().launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    t.pass(`Chromium launched (${executablePath})`)
  })

  for (const relay of ['1', '0']) {
    const how = relay === '1' ? 'through the relay SharedWorker' : 'over BroadcastChannels (no relay)'
    tabsTest(`tabs: two tabs open one location, ${how}: one owns it, the other is its client; each reads the other's writes`, async (t) => {
      const context = await newContext()
      const loc = location('two')
      const a = await newTab(context, base, loc, `&relay=${relay}`)
      const b = await newTab(context, base, loc, `&relay=${relay}`)
      const ia = await a.call<Info>('open')
      const ib = await b.call<Info>('open')
      t.is(ia.role, 'owner', `the first tab owns the database (${JSON.stringify(ia)})`)
      t.is(ib.role, 'client', `the second is a client, not LEVEL_LOCKED (${JSON.stringify(ib)})`)
      t.is(ib.ownerId, ia.ownerId, 'of the first tab\'s owner')
      t.is(await a.call('put', 'from-a', '1'), true, 'the owner writes')
      t.is(await b.call('put', 'from-b', '2'), true, 'the client writes')
      t.is(await b.call('get', 'from-a'), '1', 'the client reads the owner\'s write')
      t.is(await a.call('get', 'from-b'), '2', 'the owner reads the client\'s write')
      t.deepEqual(await b.call('keys', 'from-'), ['from-a', 'from-b'], 'the client iterates over both')
      const owner = await a.call<Info>('tabs')
      t.is(owner.owner?.clients, 1, 'the owner serves one client')
      await context.close()
    })
  }

  tabsTest('tabs: a client tab that vanishes (closed while it holds an iterator and a snapshot) releases them at the owner', async (t) => {
    const context = await newContext()
    const loc = location('vanish')
    const a = await newTab(context, base, loc)
    const b = await newTab(context, base, loc)
    await a.call('open')
    await b.call('open')
    await b.call('put', 'k', 'v')
    t.is(await b.call('hold'), true, 'the client holds an iterator and a snapshot')
    const before = await a.call<Info>('tabs')
    t.ok(before.owner !== undefined && before.owner.iterators >= 1 && before.owner.snapshots >= 1, `the owner holds them for it: ${JSON.stringify(before.owner)}`)
    await b.page.close()
    const released = await until(async () => {
      const info = await a.call<Info>('tabs')
      return info.owner?.clients === 0 && info.owner.iterators === 0 && info.owner.snapshots === 0
    }, 5000)
    t.ok(released, `the owner released the vanished client's session and handles: ${JSON.stringify((await a.call<Info>('tabs')).owner)}`)
    await context.close()
  })

  for (const how of ['close', 'crash', 'reload'] as const) {
    tabsTest(`tabs: failover when the owner's page is ${how === 'close' ? 'closed' : how === 'crash' ? 'crashed (its renderer killed)' : 'reloaded'}: a client takes over; acknowledged writes are there; iterators and snapshots fail with LEVEL_OWNER_CHANGED`, async (t) => {
      const context = await newContext()
      const loc = location(how)
      const a = await newTab(context, base, loc)
      const b = await newTab(context, base, loc)
      const c = await newTab(context, base, loc)
      await a.call('open')
      await b.call('open')
      await c.call('open')
      for (let i = 0; i < 50; i++) await a.call('put', `ka${i}`, `${i}`)
      for (let i = 0; i < 50; i++) await b.call('put', `kb${i}`, `${i}`)
      await b.call('hold')
      const t0 = Date.now()
      if (how === 'close') await a.page.close()
      else if (how === 'crash') await a.crash()
      else await a.page.reload()
      const put = await b.call('put', 'after', 'yes')
      const ms = Date.now() - t0
      t.is(put, true, `a client's write succeeds after the owner's ${how} (${ms} ms)`)
      t.ok(ms < 3000, `within 3 s (${ms} ms)`)
      t.deepEqual(await c.call('count', 'ka'), 50, 'the old owner\'s acknowledged writes are there')
      t.deepEqual(await c.call('count', 'kb'), 50, 'a client\'s acknowledged writes are there')
      t.is(await c.call('get', 'after'), 'yes', 'the other client reads through the new owner')
      const held = await b.call<{ iterator: { error?: string }, snapshot: { error?: string } }>('useHeld')
      t.ok(held.iterator.error?.startsWith('LEVEL_OWNER_CHANGED'), `an iterator made before: ${JSON.stringify(held.iterator)}`)
      t.ok(held.snapshot.error?.startsWith('LEVEL_OWNER_CHANGED'), `a snapshot made before: ${JSON.stringify(held.snapshot)}`)
      const roles = [await b.call<Info>('tabs'), await c.call<Info>('tabs')].map((i) => i.role).sort()
      t.deepEqual(roles, ['client', 'owner'], `one of the clients owns it now (${roles.join(', ')})`)
      if (how === 'reload') {
        const again = await a.call<Info>('open')
        t.is(again.role, 'client', `the reloaded page opens it again, as a client (${JSON.stringify(again)})`)
        t.is(await a.call('get', 'after'), 'yes', 'and reads the new writes')
      }
      await context.close()
    })
  }

  test('tabs: close', async (t) => {
    await browser.close()
    await new Promise((resolve) => server.close(resolve))
    t.pass('closed')
  })
}
