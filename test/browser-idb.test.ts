// The fallback storage (files in memory persisted to IndexedDB) in headless
// Chromium, forced with `storage: 'indexeddb'` (Chromium has OPFS sync access
// handles, so 'auto' picks OPFS there), through the page of
// test/browser/storage-page.ts: a round trip and db.storage, the data kept
// across a new page load, a database stored in IndexedDB found there again by
// 'auto', 'auto' on a new location choosing OPFS, an invalid option, and the
// abstract-level compliance suite. The same page runs in WebKitGTK, where
// 'auto' picks IndexedDB (test/browser-webkit.test.ts). Skipped, saying why,
// without Chromium (see test/browser.test.ts).
import test from 'tape'
import type * as http from 'node:http'
import { skipBrowserTests } from './browser/skip'
import { buildTestPages, chromiumMissing, type Browser, type CDPSession, type Context, findChromium, type Page, playwrightChromium, serveDist, summarize } from './browser/harness'

const RUN_TIMEOUT_MS = 60_000
const COMPLIANCE_TIMEOUT_MS = 10 * 60_000

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** What the test does when the page says `line`, before it lets the page go on (window.lsmGo()). */
interface Cue { line: string, then: () => Promise<void> }

/**
 * Loads `url` in a page of `context` and collects its TAP lines
 * (window.lsmLines) until '# done'. `prepare` runs before the page loads
 * (CDP settings for it); `cue`, when the page says its line.
 */
async function run (context: Context, url: string, timeoutMs = RUN_TIMEOUT_MS, prepare?: (page: Page) => Promise<void>, cue?: Cue): Promise<string[]> {
  const page = await context.newPage()
  const lines: string[] = []
  page.on('pageerror', (err) => lines.push(`not ok - page error: ${err.message}`))
  try {
    await prepare?.(page)
    await page.goto(url)
    const deadline = Date.now() + timeoutMs
    while (!lines.includes('# done') && !lines.some((l) => l.startsWith('not ok - page error'))) {
      if (Date.now() > deadline) throw new Error(`no '# done' from ${url} in ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}`)
      await sleep(100)
      const got = await page.evaluate(() => {
        const w = globalThis as unknown as { lsmLines?: string[] }
        return w.lsmLines === undefined ? [] : w.lsmLines.splice(0)
      }, undefined)
      for (const line of got) lines.push(...line.split('\n'))
      if (cue !== undefined && got.includes(cue.line)) {
        await cue.then()
        await page.evaluate(() => { (globalThis as unknown as { lsmGo: () => void }).lsmGo() }, undefined)
      }
    }
    return lines
  } finally {
    await page.close()
  }
}

function expectChecks (t: test.Test, lines: string[], count: number): void {
  const checks = lines.filter((l) => /^(not )?ok /.test(l))
  t.is(checks.length, count, `${count} checks reported by the page`)
  for (const line of checks) t.ok(line.startsWith('ok '), line)
}

const storageLine = (lines: string[]): string => lines.find((l) => l.startsWith('# storage')) ?? 'none'

const executablePath = findChromium()
const missing = chromiumMissing()

if (missing !== undefined) {
  skipBrowserTests('chromium', missing)
} else {
  let browser: Browser
  let server: http.Server
  let base = ''
  /** IDB_ONLY=<words>: only the tests whose name has them (and the setup and the close). */
  const only = process.env.IDB_ONLY
  const idbTest = (name: string, fn: (t: test.Test) => Promise<void>): void => {
    if (only === undefined || name.includes(only)) test(name, fn)
  }

  test('browser-idb: bundle, serve, launch', async (t) => {
    buildTestPages(t)
    ;({ server, base } = await serveDist({ '/storage.html': '/browser-test/storage.js' }))
    browser = await playwrightChromium().launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    t.pass(`Chromium launched (${executablePath})`)
  })

  idbTest("browser-idb: storage: 'indexeddb': a round trip, db.storage, the data kept across a new page load; 'auto' finds it there; 'auto' elsewhere is OPFS", async (t) => {
    const context = await browser.newContext()
    const location = `idb-${Date.now()}`
    const wrote = await run(context, `${base}/storage.html?run=write&location=${location}&storage=indexeddb`)
    t.is(storageLine(wrote), '# storage indexeddb', "db.storage is 'indexeddb'")
    expectChecks(t, wrote, 4)
    const read = await run(context, `${base}/storage.html?run=read&location=${location}&storage=indexeddb`)
    t.is(storageLine(read), '# storage indexeddb', "after a new page load, db.storage is 'indexeddb'")
    expectChecks(t, read, 4)
    const found = await run(context, `${base}/storage.html?run=read&location=${location}`)
    t.is(storageLine(found), '# storage indexeddb', "'auto' opens a database stored in IndexedDB from there")
    expectChecks(t, found, 4)
    const opfs = await run(context, `${base}/storage.html?run=write&location=opfs-${location}`)
    t.is(storageLine(opfs), '# storage opfs', "'auto' on a new location, where sync access handles work: 'opfs'")
    expectChecks(t, opfs, 4)
    expectChecks(t, await run(context, `${base}/storage.html?run=option`), 1)
    await context.close()
  })

  idbTest("browser-idb: the abstract-level compliance suite through BrowserLevel with storage: 'indexeddb'", async (t) => {
    const context = await browser.newContext()
    const t0 = Date.now()
    const { pass, fail, failures } = summarize(t, await run(context, `${base}/storage.html?run=compliance&storage=indexeddb`, COMPLIANCE_TIMEOUT_MS))
    await context.close()
    for (const f of failures.slice(0, 20)) t.comment(f)
    t.is(fail, 0, `no failure (${pass} passed, ${fail} failed, ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
    // BrowserLevel's manifest makes 4,670 assertions of the suite (test/browser.test.ts); a run that stopped early passes fewer.
    t.ok(pass >= 4670, `the whole suite ran (${pass} assertions passed)`)
  })

  idbTest('browser-idb: a write without sync that does not fit in the quota (a CDP quota of 4 MB): close() fails with LEVEL_DATABASE_NOT_CLOSED / LEVEL_STORAGE_FULL, a second close() succeeds; with the quota raised, every write acknowledged with sync is there', async (t) => {
    const context = await browser.newContext()
    const location = `idb-full-${Date.now()}`
    const quota = 4 * 1000 * 1000
    let cdp: CDPSession | undefined
    const lines = await run(context, `${base}/storage.html?run=full-close&location=${location}&storage=indexeddb&mib=8`, RUN_TIMEOUT_MS, async (page) => {
      cdp = await context.newCDPSession(page)
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: base, quotaSize: quota })
    }, {
      line: '# raise the quota',
      then: async () => { await cdp!.send('Storage.overrideQuotaForOrigin', { origin: base, quotaSize: 50 * quota }) }
    })
    for (const line of lines.filter((l) => l.startsWith('# '))) t.comment(line.slice(2))
    expectChecks(t, lines, 5)
    expectChecks(t, await run(context, `${base}/storage.html?run=full-reopen&location=${location}&storage=indexeddb`), 2)
    await context.close()
  })

  // Opt-in (LSM_BROWSER_IDB_MIB=16,64,256): what a database of each size costs on each storage, for the README's limits.
  const sizes = (process.env.LSM_BROWSER_IDB_MIB ?? '').split(',').filter((s) => s !== '').map(Number)
  test('browser-idb: databases of LSM_BROWSER_IDB_MIB MiB on IndexedDB and on OPFS: writes, close, open, gets', { skip: sizes.length === 0 }, async (t) => {
    for (const mib of sizes) {
      for (const storage of ['indexeddb', 'opfs']) {
        const context = await browser.newContext()
        const lines = await run(context, `${base}/storage.html?run=size&mib=${mib}&storage=${storage}`, 30 * 60_000)
        await context.close()
        expectChecks(t, lines, 1)
        for (const line of lines.filter((l) => l.startsWith('# size'))) t.comment(line.slice(2))
      }
    }
  })

  test('browser-idb: close', async (t) => {
    await browser.close()
    server.close()
    t.pass('closed')
  })
}
