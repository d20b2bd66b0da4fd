// The many-tabs tests, for any browser (test/browser-tabs.test.ts in Chromium,
// test/browser-firefox-tabs.test.ts in Firefox): pages of one browser context
// share the origin's OPFS, Web Locks and SharedWorkers, as tabs do. Each page
// (test/browser/tabs-page.ts) opens a BrowserLevel on the same location; Node
// drives them (test/browser/tabs.ts) and closes, crashes and reloads the
// owner's page to check the failover contract (README, "Many tabs"). A test a
// browser cannot run is reported as skipped, by name, with the reason.
//
// The torture: TABS_TORTURE_TABS pages write concurrently, their
// acknowledgements recorded here, while the owner's page is closed, crashed or
// reloaded TABS_TORTURE_ROUNDS times (short by default; TABS_TORTURE_ROUNDS=50
// for a long run); SEED replays a run. TABS_ONLY=<words> runs some of the tests.
import test from 'tape'
import type * as http from 'node:http'
import { buildTestPages, type Browser, serveDist, summarize } from './harness'
import { allTabs, newTab, until, type Tab, type TabContext } from './tabs'
import { Random, seedFromEnv } from '../util/random'

/** Torture: rounds of owner deaths, and tabs writing (short by default: a long run sets TABS_TORTURE_ROUNDS=50). */
const TORTURE_ROUNDS = Number(process.env.TABS_TORTURE_ROUNDS ?? 6)
const TORTURE_TABS = Number(process.env.TABS_TORTURE_TABS ?? 4)
/**
 * The compliance suite through a client tab (about 2 minutes on 2 busy cores,
 * over 8 at a load average of 20) is taken as hung when it reports no line for this long.
 */
const COMPLIANCE_TIMEOUT_MS = Number(process.env.TABS_COMPLIANCE_TIMEOUT_MS ?? 5 * 60 * 1000)

interface Info { role: string, ownerId?: string, owner?: { clients: number, iterators: number, snapshots: number, feeds: number }, ownerChanges: number, error?: string }

export interface TabEngine {
  /** Short, in locations ('chromium', 'firefox'). */
  name: string
  /** In messages ('Chromium', 'Firefox'). */
  browser: string
  /** The prefix of the tests' names. */
  prefix: string
  launch: () => Promise<Browser>
  /** Why this browser cannot crash one tab's renderer from here; undefined when it can (Tab.crash). */
  crash?: string
  /** Why the compliance suite through a client tab does not run by default here (TABS_COMPLIANCE=1 runs it); undefined: it does. */
  compliance?: string
  /**
   * The assertions the abstract-level suite makes for BrowserLevel's
   * manifest in this browser, all of which must pass through the client tab
   * (4,670 in Chromium; 4,668 in Firefox ESR 140, as test/browser-firefox.test.ts finds).
   */
  suiteAssertions: number
}

/** Registers the many-tabs tests (tape) for one browser. */
export function registerTabTests (engine: TabEngine): void {
  const prefix = engine.prefix
  let browser: Browser
  let server: http.Server
  let base = ''
  let n = 0
  const location = (name: string): string => `${engine.name}-tabs-${name}-${Date.now()}-${n++}`
  const newContext = async (): Promise<TabContext> => await browser.newContext() as unknown as TabContext
  /** TABS_ONLY=<words> runs only the tests whose name has them (and the setup). */
  const only = process.env.TABS_ONLY
  const tabsTest = (name: string, fn: (t: test.Test) => Promise<void>): void => {
    if (only === undefined || name.includes(only)) test(name, fn)
  }
  /** A test this browser cannot run: reported as skipped, by name, with the reason. */
  const skipped = (name: string, why: string): void => {
    if (only === undefined || name.includes(only)) test(`${name} (skipped in ${engine.browser}: ${why})`, { skip: true }, (t) => { t.end() })
  }

  test(`${prefix}: bundle, serve, launch`, async (t) => {
    buildTestPages(t)
    ;({ server, base } = await serveDist({ '/tabs.html': '/browser-test/tabs.js' }))
    browser = await engine.launch()
    t.pass(`${engine.browser} launched`)
  })

  // The compliance suite through a client tab takes minutes (it waits on
  // workers most of the time): it starts first, in a context of its own, and
  // the other tests run beside it; its result is checked last.
  let compliance: Promise<{ lines: string[], seconds: number }> | undefined
  const startCompliance = async (): Promise<{ lines: string[], seconds: number }> => {
    const context = await newContext()
    const helper = await newTab(context, base, 'unused', '&run=owner-helper')
    if (!await until(async () => helper.acks.includes('# helper ready'), 10_000)) throw new Error('the owner tab is not ready')
    const page = await context.newPage()
    const lines: string[] = []
    let done: () => void = () => {}
    const finished = new Promise<void>((resolve) => { done = resolve })
    let timer = setTimeout(done, COMPLIANCE_TIMEOUT_MS)
    await page.exposeFunction('lsmAck', (line: string) => {
      for (const l of line.split('\n')) lines.push(l)
      clearTimeout(timer)
      timer = setTimeout(done, COMPLIANCE_TIMEOUT_MS)
      if (line === '# done') done()
    })
    const t0 = Date.now()
    await page.goto(`${base}/tabs.html?run=compliance-client${process.env.TABS_GREP !== undefined ? '&grep=' + encodeURIComponent(process.env.TABS_GREP) : ''}`)
    await finished
    clearTimeout(timer)
    await context.close()
    return { lines, seconds: (Date.now() - t0) / 1000 }
  }
  const COMPLIANCE = `${prefix}: the abstract-level compliance suite through a client tab (another tab owns each database)`
  const wanted = only === undefined || COMPLIANCE.includes(only)
  const runCompliance = wanted && (engine.compliance === undefined || process.env.TABS_COMPLIANCE === '1')
  if (wanted && !runCompliance) skipped(COMPLIANCE, `${engine.compliance!}; TABS_COMPLIANCE=1 runs it`)
  if (runCompliance) {
    test(`${prefix}: start the compliance suite through a client tab (checked at the end)`, async (t) => {
      compliance = startCompliance()
      compliance.catch(() => {})
      t.pass('started')
    })
  }

  for (const relay of ['1', '0']) {
    const how = relay === '1' ? 'through the relay SharedWorker' : 'over BroadcastChannels (no relay)'
    tabsTest(`${prefix}: two tabs open one location, ${how}: one owns it, the other is its client; each reads the other's writes`, async (t) => {
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

  tabsTest(`${prefix}: a client tab that vanishes (closed while it holds an iterator and a snapshot) releases them at the owner`, async (t) => {
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
    const name = `${prefix}: failover when the owner's page is ${how === 'close' ? 'closed' : how === 'crash' ? 'crashed (its renderer killed)' : 'reloaded'}: a client takes over; acknowledged writes are there; iterators and snapshots fail with LEVEL_OWNER_CHANGED`
    if (how === 'crash' && engine.crash !== undefined) {
      skipped(name, engine.crash)
      continue
    }
    tabsTest(name, async (t) => {
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
      // A write sent before the client learns that the owner is gone may have
      // reached it or not: the contract makes it LEVEL_OUTCOME_UNKNOWN, and the
      // app may write again. Anything else (a hang, another code) fails.
      let put = await b.call('put', 'after', 'yes')
      let unknown = 0
      while (put !== true && unknown < 3 && /^LEVEL_OUTCOME_UNKNOWN/.test(String((put as { error?: string }).error))) {
        unknown++
        put = await b.call('put', 'after', 'yes')
      }
      const ms = Date.now() - t0
      t.is(put, true, `a client's write succeeds after the owner's ${how} (${ms} ms${unknown > 0 ? `; ${unknown} write(s) in flight at the loss were LEVEL_OUTCOME_UNKNOWN first` : ''})`)
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

  tabsTest(`${prefix}: a client's change feed follows the other tabs' writes through the owner, and fails with LEVEL_OWNER_CHANGED after a failover`, async (t) => {
    const context = await newContext()
    const loc = location('feed')
    const a = await newTab(context, base, loc)
    const b = await newTab(context, base, loc)
    const c = await newTab(context, base, loc)
    await a.call('open')
    await b.call('open')
    await c.call('open')
    const following = b.call<string[]>('follow', 3)
    // The feed starts at the owner's current sequence number once it is open: give its first request a moment.
    await new Promise((resolve) => setTimeout(resolve, 200))
    await a.call('put', 'one', '1')
    await c.call('put', 'two', '2')
    await a.call('put', 'three', '3')
    t.deepEqual(await following, ['one', 'two', 'three'], 'the client tab saw the owner\'s and the other client\'s writes, in commit order')
    const broken = b.call<{ error?: string }>('follow', 1)
    await new Promise((resolve) => setTimeout(resolve, 200))
    await a.page.close()
    const result = await broken
    t.ok(result.error?.startsWith('LEVEL_OWNER_CHANGED'), `a feed open across the failover: ${JSON.stringify(result)}`)
    await context.close()
  })

  // A hung owner holds the owner lock and does not answer. Freezing a page
  // (CDP Page.setWebLifecycleState 'frozen') does not freeze its dedicated
  // workers in Chromium 150: such an owner goes on serving. So a page plays
  // one: it takes the lock and announces an owner that never answers.
  for (const answer of [false, true]) {
    tabsTest(`${prefix}: an owner that holds the lock but ${answer ? 'never answers a connection' : 'never announces itself'}: an open fails with LEVEL_OWNER_UNREACHABLE naming the database, within a bounded time; once the lock is let go, the tab opens it`, async (t) => {
      const context = await newContext()
      const loc = location('hung')
      const hung = await newTab(context, base, loc)
      const b = await newTab(context, base, loc, '&ownerTimeoutMs=1000')
      t.is(await hung.call('playHungOwner', answer), true, 'a page holds the owner lock')
      const t0 = Date.now()
      const opened = await b.call<{ error?: string }>('open')
      const ms = Date.now() - t0
      t.ok(opened.error?.includes('LEVEL_OWNER_UNREACHABLE') === true && opened.error.includes(loc), `the open: ${JSON.stringify(opened)}`)
      t.ok(ms < 4000, `within a bounded time (${ms} ms with ownerTimeoutMs 1000)`)
      await hung.call('releaseHungOwner')
      const again = await b.call<{ role?: string, error?: string }>('open')
      t.is(again.role, 'owner', `once the lock is let go, the tab opens the database as its owner (${JSON.stringify(again)})`)
      t.is(await b.call('put', 'k', 'v'), true, 'and writes')
      await context.close()
    })
  }

  tabsTest(`${prefix}: torture: tabs write concurrently while the owner's page is ${engine.crash === undefined ? 'closed, crashed or reloaded' : 'closed or reloaded'}; every acknowledged write is there, in-flight writes fail only with LEVEL_OUTCOME_UNKNOWN, no tab is stuck`, async (t) => {
    const seed = seedFromEnv()
    t.comment(`SEED=${seed} (SEED=${seed} replays the schedule); TABS_TORTURE_ROUNDS=${TORTURE_ROUNDS}, TABS_TORTURE_TABS=${TORTURE_TABS}`)
    const random = new Random(seed)
    const context = await newContext()
    const loc = location('torture')
    interface Writer { tab: Tab, prefix: string }
    const writers: Writer[] = []
    let generation = 0
    const start = async (tab?: Tab): Promise<Writer> => {
      const prefix = `w${generation++}-`
      const relay = random.int(4) === 0 ? '0' : '1'
      if (tab === undefined) tab = await newTab(context, base, loc, `&relay=${relay}`)
      else await tab.page.waitForFunction('window.lsmTabs !== undefined')
      const opened = await tab.call<{ role?: string, error?: string }>('open')
      if (opened.error !== undefined) throw new Error(`open: ${opened.error}`)
      tab.call('startWriting', prefix).catch(() => {})
      return { tab, prefix }
    }
    for (let i = 0; i < TORTURE_TABS; i++) writers.push(await start())
    const badCodes: string[] = []
    for (let round = 0; round < TORTURE_ROUNDS; round++) {
      await new Promise((resolve) => setTimeout(resolve, 200 + random.int(600)))
      const roles = await Promise.all(writers.map(async (w) => (await w.tab.call<{ role?: string }>('tabs')).role))
      const i = roles.indexOf('owner')
      if (i < 0) {
        t.fail(`round ${round}: no owner among the tabs (${roles.join(', ')})`)
        break
      }
      const hows = engine.crash === undefined ? ['close', 'crash', 'reload'] as const : ['close', 'reload'] as const
      const how = hows[random.int(hows.length)]
      const victim = writers[i]
      const survivors = writers.filter((w) => w !== victim)
      if (how === 'close') await victim.tab.page.close()
      else if (how === 'crash') await victim.tab.crash()
      else await victim.tab.page.reload()
      // Writes go on: more acknowledgements on the survivors than the lines already on their way (the failover time itself: npm run bench:browser-tabs).
      await new Promise((resolve) => setTimeout(resolve, 100))
      const acksBefore = survivors.map((w) => w.tab.acks.length)
      const recovered = await until(async () => survivors.some((w, j) => w.tab.acks.slice(acksBefore[j]).filter((l) => l.startsWith('ack ')).length >= 5), 10_000)
      if (!recovered) {
        t.fail(`round ${round}: writes did not go on within 10 s after the owner's ${how}`)
        break
      }
      t.comment(`round ${round}: owner ${how}; the other tabs write on`)
      if (how === 'reload') writers[i] = await start(victim.tab)
      else writers[i] = await start()
      // A crashed page's lines stop where it died.
      for (const line of victim.tab.acks) if (line.startsWith('err ') && !line.endsWith(' LEVEL_OUTCOME_UNKNOWN')) badCodes.push(line)
    }
    const stopped = await Promise.all(writers.map(async (w) => await Promise.race([w.tab.call('stopWriting').then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 15_000))])))
    t.ok(stopped.every((s) => s === true), `every tab's writer stopped (no hung promise): ${JSON.stringify(stopped)}`)
    for (const w of writers) for (const line of w.tab.acks) if (line.startsWith('err ') && !line.endsWith(' LEVEL_OUTCOME_UNKNOWN')) badCodes.push(line)
    t.deepEqual(badCodes.slice(0, 10), [], 'writes failed only with LEVEL_OUTCOME_UNKNOWN')
    // Every tab ever opened: its acknowledged keys.
    const acked = new Set<string>()
    for (const tab of allTabs) for (const line of tab.acks) if (line.startsWith('ack ')) acked.add(line.slice(4))
    const checker = await newTab(context, base, loc)
    const opened = await checker.call<{ role?: string, error?: string }>('open')
    t.ok(opened.error === undefined, `a new tab opens the database (${JSON.stringify(opened)})`)
    const present = new Set(await checker.call<string[]>('keys', 'w'))
    const lost = [...acked].filter((k) => !present.has(k))
    t.is(lost.length, 0, `every acknowledged write is there: ${acked.size} acknowledged, ${present.size} present, lost: ${lost.slice(0, 5).join(', ')}`)
    for (const w of writers) {
      const info = await w.tab.call<{ role?: string, error?: string }>('tabs')
      t.ok(info.role === 'owner' || info.role === 'client', `a surviving tab answers: ${JSON.stringify(info.role ?? info.error)}`)
    }
    await context.close()
  })

  if (runCompliance) {
    test(COMPLIANCE, async (t) => {
      const { lines, seconds } = await compliance!
      const { pass, fail, failures } = summarize(t, lines)
      if (!lines.includes('# done')) t.comment(`timed out after ${lines.filter((l) => l.startsWith('ok ')).length} assertions; last lines: ${lines.slice(-5).join(' | ')}`)
      for (const f of failures.slice(0, 20)) t.comment(f)
      // Why a client's deferred open failed, which the suite shows only as "Database is not open" later.
      for (const l of lines) if (l.startsWith('# a client\'s open')) t.comment(l.slice(2))
      t.is(fail, 0, `no failure through the client tab (${pass} passed, ${fail} failed, ${seconds.toFixed(1)} s)`)
      t.ok(lines.includes('# done'), 'the suite ended: no test left a promise hanging')
      // Every test of the suite, none skipped: a run that stopped early (a hung promise) passes fewer.
      if (process.env.TABS_GREP === undefined) t.is(pass, engine.suiteAssertions, `the whole suite ran: ${pass} assertions passed of the ${engine.suiteAssertions} it makes in ${engine.browser}`)
      else t.comment(`TABS_GREP=${process.env.TABS_GREP}: ${pass} assertions passed (the whole suite's count is not required)`)
      const roles = lines.find((l) => l.startsWith('# roles '))
      t.ok(roles !== undefined && !/"owner"|"none"/.test(roles), `every open was a client's: ${String(roles)}`)
    })
  }

  test(`${prefix}: close`, async (t) => {
    await browser.close()
    await new Promise((resolve) => server.close(resolve))
    t.pass('closed')
  })
}
