// lsm-level in a second browser: headless Firefox (the distribution's
// firefox-esr, test/browser/firefox.ts, driven over WebDriver BiDi by
// puppeteer-core), one browser and one page for the whole file, its profile
// a directory (OPFS as a user's Firefox keeps it; on a RAM-backed file system
// where there is one, see test/browser/firefox.ts). The same page as the Chromium
// test (test/browser/page.ts, bundled by scripts/build-browser.js --tests):
// the abstract-level compliance suite with default options through the main
// thread's database on OPFS; the data surviving a new page load; a second tab
// on an open database; the engine checks (test/browser/engine-checks.ts); and
// OpfsLevel in a dedicated worker (getSync, the lock, many tables under a bound
// of open handles); an open past Firefox's limit of workers per site. The many-tabs tests: test/browser-firefox-tabs.test.ts.
//
// Runs wherever Firefox is found; without it (or esbuild or puppeteer-core)
// its tests are reported as skipped and it says so loudly on its last lines;
// LSM_REQUIRE_BROWSERS=firefox (CI) makes that a failure.
//
// Long mode: LSM_FIREFOX_RUNS=<n> runs the engine checks n times in a row
// (each with its own seed; SEED=<s> makes them s, s+1, ...) and reports how
// many passed; FIREFOX_ONLY=<words> runs only the tests whose name has them;
// FIREFOX_FULL=1 also runs the compliance suite through OpfsLevel in a worker
// (reported as skipped otherwise, for its time).
// A failed run prints its failures, the page's console errors and Firefox's
// last lines of output.
import test from 'tape'
import type * as http from 'node:http'
import { buildTestPages, type ReportingPage, reportingPage, serveDist, summarize } from './browser/harness'
import { type Firefox, firefoxMissing, launchFirefox } from './browser/firefox'
import { skipBrowserTests } from './browser/skip'

/**
 * A page run that reports no line for this long is taken as hung (the
 * compliance suite takes 5 minutes or more on 2 cores, over 10 at a load
 * average of 20, reporting all the while: each of its opens costs Firefox
 * about a second there).
 */
const RUN_TIMEOUT_MS = 5 * 60 * 1000
const RUNS = Math.max(1, Number(process.env.LSM_FIREFOX_RUNS ?? 1) | 0)
const only = process.env.FIREFOX_ONLY
const firefoxTest = (name: string, fn: (t: test.Test) => Promise<void>): void => {
  if (only === undefined || name.includes(only)) test(name, fn)
}

const missing = firefoxMissing()

if (missing !== undefined) {
  skipBrowserTests('firefox', missing)
  // Registered last: the loud message ends the file's output.
  process.on('exit', () => {
    const bar = '#'.repeat(78)
    console.log(`${bar}\n# FIREFOX TESTS SKIPPED: ${missing}\n# Install it (apt-get install firefox-esr) to run them; .ci/run does.\n${bar}`)
  })
} else {
  let firefox: Firefox
  let server: http.Server
  let base = ''
  let page: ReportingPage

  /** Prints what a failed run needs for its diagnosis: the failures, the page's console, Firefox's output. */
  const diagnose = (t: test.Test, failures: string[], lines: string[]): void => {
    for (const f of failures.slice(0, 20)) t.comment(f)
    if (failures.length === 0 && lines.length > 0) t.comment(`the page's last lines:\n${lines.slice(-15).join('\n')}`)
    const messages = page.console()
    if (messages.length > 0) t.comment(`the page's last console errors and warnings:\n${messages.slice(-20).join('\n')}`)
    const output = firefox.output()
    if (output.length > 0) t.comment(`Firefox's last lines of output:\n${output.slice(-20).join('\n')}`)
  }

  /** Loads `query` in the page; a run that times out or throws is a failure with its diagnosis, not a crash of the file. */
  const run = async (t: test.Test, query: string): Promise<string[]> => {
    try {
      return await page.run(`${base}/test.html?${query}`)
    } catch (err) {
      t.fail(`the page run ${query}: ${(err as Error).message}`)
      diagnose(t, [], [])
      return []
    }
  }

  test('firefox: bundle, serve, launch', async (t) => {
    buildTestPages(t)
    ;({ server, base } = await serveDist({ '/test.html': '/browser-test/page.js' }))
    firefox = await launchFirefox()
    page = await reportingPage(firefox.defaultContext, RUN_TIMEOUT_MS)
    t.pass(`Firefox launched (${firefox.executablePath}, ${firefox.version})`)
  })

  firefoxTest('firefox: the abstract-level compliance suite (default options) through the main thread\'s database, on OPFS', async (t) => {
    const t0 = Date.now()
    const lines = await run(t, 'run=compliance&config=default')
    const { pass, fail, failures } = summarize(t, lines)
    t.is(fail, 0, `no failure in the browser (${pass} passed, ${fail} failed, ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
    // 4,668 assertions pass in Firefox ESR 140 (4,670 in Chromium); a run that stopped early passes fewer.
    t.ok(pass >= 4668, `the whole suite ran (${pass} assertions passed)`)
    if (fail > 0 || pass < 4668) diagnose(t, failures, lines)
  })

  firefoxTest('firefox: data survives a new page load (OPFS in the profile), synced write included', async (t) => {
    const location = `persist-${Date.now()}`
    const wrote = summarize(t, await run(t, `run=persist-write&location=${location}`))
    t.is(wrote.failures.length, 0, 'wrote the data set' + (wrote.failures[0] !== undefined ? `: ${wrote.failures[0]}` : ''))
    const lines = await run(t, `run=persist-read&location=${location}`)
    const read = lines.filter((l) => /^(not )?ok /.test(l))
    t.is(read.length, 2, 'two checks reported by the new page')
    for (const line of read) t.ok(line.startsWith('ok '), line)
    if (read.length !== 2 || read.some((l) => l.startsWith('not ok'))) diagnose(t, [], lines)
  })

  firefoxTest('firefox: a second tab opens a database another tab holds open (as its client), and opens it again once the first is closed', async (t) => {
    const second = await reportingPage(firefox.defaultContext, RUN_TIMEOUT_MS)
    const location = `tabs-${Date.now()}`
    const held = await page.run(`${base}/test.html?run=two-tabs&location=${location}&hold=1`)
    t.ok(held.includes('# opened'), 'the first tab opened the database and holds it')
    const shared = await second.run(`${base}/test.html?run=two-tabs&location=${location}&hold=0`)
    t.ok(shared.includes('# opened'), `the second tab opens it too: ${shared.filter((l) => l.startsWith('# open')).join(' ')}`)
    // The first tab lets go of it by loading another page.
    await page.page.goto('about:blank')
    const after = await second.run(`${base}/test.html?run=two-tabs&location=${location}&hold=0`)
    t.ok(after.includes('# opened'), `once the first tab has left it, the second opens it: ${after.filter((l) => l.startsWith('# open')).join(' ')}`)
    await second.page.close()
  })

  const seed0 = process.env.SEED !== undefined && process.env.SEED !== '' ? Number(process.env.SEED) >>> 0 : Math.floor(Math.random() * 0x100000000)
  firefoxTest(`firefox: engine checks (random writes against a model with reopens, snapshots, range deletes, a burst of flushes)${RUNS > 1 ? `, ${RUNS} runs in a row` : ''}`, async (t) => {
    let passedRuns = 0
    let inARow = 0
    for (let i = 0; i < RUNS; i++) {
      const seed = (seed0 + i) >>> 0
      const t0 = Date.now()
      const lines = await run(t, `run=engine&seed=${seed}`)
      const { pass, fail, failures } = summarize(t, lines)
      const ok = fail === 0 && pass >= 40
      // 8 rounds of 3 checks and the background-work check (25), the snapshot test (6), the range-delete test (6), the burst (3).
      t.ok(ok, `run ${i + 1} of ${RUNS}, SEED=${seed}: ${pass} passed, ${fail} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      if (ok) {
        passedRuns++
        inARow++
      } else {
        inARow = 0
        diagnose(t, failures, lines)
      }
    }
    t.comment(`engine checks in Firefox: ${passedRuns} of ${RUNS} runs passed (the last ${inARow} in a row); SEED=${seed0} replays the first`)
  })

  const WORKER_COMPLIANCE = 'firefox: OpfsLevel in a dedicated worker: the abstract-level compliance suite (default options) on OPFS'
  if (process.env.FIREFOX_FULL !== '1') {
    if (only === undefined || WORKER_COMPLIANCE.includes(only)) test(`${WORKER_COMPLIANCE} (skipped: minutes more, as the suite above; FIREFOX_FULL=1 runs it)`, { skip: true }, (t) => { t.end() })
  } else {
    firefoxTest(WORKER_COMPLIANCE, async (t) => {
      const t0 = Date.now()
      const lines = await run(t, 'run=in-worker&what=compliance')
      const { pass, fail, failures } = summarize(t, lines)
      t.is(fail, 0, `no failure in the worker (${pass} passed, ${fail} failed, ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      t.ok(pass >= 5170, `the whole suite ran (${pass} assertions passed)`)
      if (fail > 0 || pass < 5170) diagnose(t, failures, lines)
    })
  }

  firefoxTest('firefox: OpfsLevel in a worker: getSync = get through flushes and a compaction; a second database there gets LEVEL_LOCKED; a failed open holds nothing', async (t) => {
    const lines = await run(t, 'run=in-worker&what=checks')
    const { pass, fail, failures } = summarize(t, lines)
    t.is(fail, 0, `no failure in the worker (${pass} passed)`)
    t.ok(pass >= 9, `every check ran (${pass} assertions passed)`)
    if (fail > 0 || pass < 9) diagnose(t, failures, lines)
  })

  firefoxTest('firefox: OpfsLevel is LEVEL_NOT_SUPPORTED on a page; a page\'s BrowserLevel gets LEVEL_LOCKED while a worker\'s OpfsLevel holds the location', async (t) => {
    const lines = await run(t, `run=in-worker-lock&location=in-worker-lock-${Date.now()}`)
    const checks = lines.filter((l) => /^(not )?ok /.test(l))
    t.is(checks.length, 3, 'three checks reported by the page')
    for (const line of checks) t.ok(line.startsWith('ok '), line)
    if (checks.length !== 3 || checks.some((l) => l.startsWith('not ok'))) diagnose(t, [], lines)
  })

  firefoxTest('firefox: a database of many tables keeps at most maxOpenHandles (16 here) sync access handles open, and reads every key, before and after a reopen', async (t) => {
    const lines = await run(t, 'run=in-worker&what=many-tables&bound=16')
    const checks = lines.filter((l) => /^(not )?ok /.test(l))
    t.is(checks.length, 5, 'five checks reported by the worker')
    for (const line of checks) t.ok(line.startsWith('ok '), line)
    if (checks.length !== 5 || checks.some((l) => l.startsWith('not ok'))) diagnose(t, [], lines)
  })

  firefoxTest('firefox: at the browser\'s limit of workers per site (6 here), an open fails with LEVEL_DATABASE_NOT_OPEN after workerStartTimeoutMs, not hangs; with one worker free, 12 databases open at once in it', async (t) => {
    // A browser of its own: the limit is a preference of the profile.
    const capped = await launchFirefox({ 'dom.workers.maxPerDomain': 6 })
    try {
      const cappedPage = await reportingPage(capped.defaultContext, 60 * 1000)
      const lines = await cappedPage.run(`${base}/test.html?run=worker-cap&location=cap-${Date.now()}&count=12&timeout=3000`)
      const checks = lines.filter((l) => /^(not )?ok /.test(l))
      t.is(checks.length, 4, 'four checks reported by the page')
      for (const line of checks) t.ok(line.startsWith('ok '), line)
    } catch (err) {
      t.fail(`the page run: ${(err as Error).message}`)
    } finally {
      await capped.close()
    }
  })

  test('firefox: close', async (t) => {
    await firefox.close()
    await new Promise((resolve) => server.close(resolve))
    t.pass('closed')
  })
}
