// lsm-level in WebKit (Safari's engine): Debian's WebKitGTK MiniBrowser, driven
// through WebKitWebDriver (W3C WebDriver, test/browser/webdriver.ts) under
// xvfb-run, loads the page of test/browser/storage-page.ts. WebKitGTK has no
// OPFS sync access handles (with its OPFS features on, createSyncAccessHandle()
// fails with NotSupportedError; with them off there is no OPFS at all; its
// WebDriver sessions are ephemeral, like Safari's private windows), so
// BrowserLevel's default `storage: 'auto'` must pick the fallback, IndexedDB:
// a put/get/iterator round trip, the data kept across a new page load, and
// db.storage saying 'indexeddb', with OPFS features on and off; the engine
// checks (test/browser/engine-checks.ts; LSM_WEBKIT_RUNS=<n> runs them n times
// in a row, each with its own seed, SEED=<s> making them s, s+1, ...); then the
// abstract-level compliance suite. Without WebKitWebDriver, xvfb-run or
// MiniBrowser the tests are reported as skipped, saying why (with
// LSM_REQUIRE_BROWSERS naming webkit, they fail instead).
import test from 'tape'
import type * as http from 'node:http'
import { skipBrowserTests } from './browser/skip'
import { buildTestPages, canRequire, serveDist, summarize } from './browser/harness'
import { WebDriver, webkitMissing, type Session } from './browser/webdriver'

const RUN_TIMEOUT_MS = 60_000
const COMPLIANCE_TIMEOUT_MS = 10 * 60_000
/** MiniBrowser's OPFS, on: directory and file handles, but no sync access handles. */
const OPFS_FEATURES = '--features=+StorageAPI,+StorageAPIEstimate,+FileSystem,+AccessHandle'

const missing = webkitMissing() ?? (!canRequire('esbuild') ? 'esbuild is not installed' : undefined)

if (missing !== undefined) {
  skipBrowserTests('webkit', missing)
} else {
  let driver: WebDriver
  let server: http.Server
  let base = ''

  test('webkit: bundle, serve, start WebKitWebDriver', async (t) => {
    buildTestPages(t)
    ;({ server, base } = await serveDist({ '/storage.html': '/browser-test/storage.js' }))
    driver = await WebDriver.start()
    t.pass('WebKitWebDriver answers')
  })

  for (const [name, args] of [['OPFS features on', [OPFS_FEATURES]], ['OPFS features off', []]] as const) {
    test(`webkit (${name}): BrowserLevel opens on IndexedDB (db.storage), a round trip, the data kept across a new page load`, async (t) => {
      const session: Session = await driver.session([...args])
      try {
        t.comment(`WebKitGTK ${session.browserVersion}`)
        const location = `webkit-${Date.now()}`
        const wrote = await session.run(`${base}/storage.html?run=write&location=${location}`, RUN_TIMEOUT_MS)
        t.ok(wrote.includes('# storage indexeddb'), `db.storage: ${wrote.find((l) => l.startsWith('# storage')) ?? 'none'}`)
        expectChecks(t, wrote, 4)
        const read = await session.run(`${base}/storage.html?run=read&location=${location}`, RUN_TIMEOUT_MS)
        t.ok(read.includes('# storage indexeddb'), `after a new page load, db.storage: ${read.find((l) => l.startsWith('# storage')) ?? 'none'}`)
        expectChecks(t, read, 4)
        expectChecks(t, await session.run(`${base}/storage.html?run=option`, RUN_TIMEOUT_MS), 1)
      } finally {
        await session.close()
      }
    })
  }

  const runs = Math.max(1, Number(process.env.LSM_WEBKIT_RUNS ?? 1) | 0)
  const seed0 = process.env.SEED !== undefined && process.env.SEED !== '' ? Number(process.env.SEED) >>> 0 : Math.floor(Math.random() * 0x100000000)
  test(`webkit: engine checks on IndexedDB (random writes against a model with reopens, snapshots, range deletes, a burst of flushes)${runs > 1 ? `, ${runs} runs in a row` : ''}`, async (t) => {
    const session = await driver.session([OPFS_FEATURES])
    let passed = 0
    try {
      for (let i = 0; i < runs; i++) {
        const seed = (seed0 + i) >>> 0
        const t0 = Date.now()
        const { pass, fail, failures } = summarize(t, await session.run(`${base}/storage.html?run=engine&seed=${seed}`, COMPLIANCE_TIMEOUT_MS))
        // 8 rounds of 3 checks and the background-work check (25), the snapshot test (6), the range-delete test (6), the burst (3).
        const ok = fail === 0 && pass >= 40
        if (ok) passed++
        else for (const f of failures.slice(0, 20)) t.comment(f)
        t.ok(ok, `run ${i + 1} of ${runs}, SEED=${seed}: ${pass} passed, ${fail} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      }
    } finally {
      await session.close()
    }
    t.comment(`engine checks in WebKitGTK: ${passed} of ${runs} runs passed; SEED=${seed0} replays the first`)
  })

  test('webkit: the abstract-level compliance suite through BrowserLevel (on IndexedDB)', { skip: process.env.LSM_WEBKIT_COMPLIANCE === '0' }, async (t) => {
    const session = await driver.session([OPFS_FEATURES])
    try {
      const t0 = Date.now()
      const { pass, fail, failures } = summarize(t, await session.run(`${base}/storage.html?run=compliance`, COMPLIANCE_TIMEOUT_MS))
      for (const f of failures.slice(0, 20)) t.comment(f)
      t.is(fail, 0, `no failure in WebKit (${pass} passed, ${fail} failed, ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      // BrowserLevel's manifest makes 4,670 assertions of the suite (test/browser.test.ts), less the 2 of
      // its Symbol.asyncDispose tests, which run only where the symbol exists (not in WebKitGTK 2.50);
      // a run that stopped early passes fewer.
      t.ok(pass >= 4668, `the whole suite ran (${pass} assertions passed)`)
    } finally {
      await session.close()
    }
  })

  test('webkit: stop', (t) => {
    driver.stop()
    server.close()
    t.pass('stopped')
    t.end()
  })
}

function expectChecks (t: test.Test, lines: string[], count: number): void {
  const checks = lines.filter((l) => /^(not )?ok /.test(l))
  t.is(checks.length, count, `${count} checks reported by the page`)
  for (const line of checks) t.ok(line.startsWith('ok '), line)
}
