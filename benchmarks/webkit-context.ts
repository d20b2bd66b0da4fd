// The browser benchmark's pages in WebKitGTK (BENCH_BROWSER=webkit): the page
// interface benchmarks/browser.ts uses (goto, evaluate, waitForFunction) over
// W3C WebDriver (test/browser/webdriver.ts: WebKitWebDriver under xvfb-run),
// each page a MiniBrowser session of its own. WebKitGTK gives OPFS no sync
// access handles, so BrowserLevel runs on its fallback storage, IndexedDB
// (README, "Fallback storage"), and so does OpfsLevel in a worker (its
// `storage: 'auto'`).
import type { Context, Page } from '../test/browser/harness'
import { WebDriver, webkitMissing, type Session } from '../test/browser/webdriver'

/** How long one evaluate() may take (a workload's run). */
const SCRIPT_TIMEOUT_MS = 30 * 60 * 1000

class WebKitPage {
  constructor (private readonly session: Session, private readonly driver: WebDriver) {}

  async goto (url: string): Promise<void> {
    await this.session.navigate(url)
  }

  /** Runs `fn(arg)` in the page (its source, not its closure), awaiting what it returns. */
  async evaluate<R, A> (fn: (arg: A) => R | Promise<R>, arg: A): Promise<R> {
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${fn.toString()})(arguments[0])).then((value) => done({ value }), (err) => done({ error: String(err && err.stack || err) }))`
    const out = await this.driver.call('POST', `/session/${this.session.id}/execute/async`, { script, args: [arg] }, SCRIPT_TIMEOUT_MS + 10_000) as { value?: R, error?: string }
    if (out.error !== undefined) throw new Error(`in WebKit's page: ${out.error}`)
    return out.value as R
  }

  async waitForFunction (expression: string): Promise<void> {
    const deadline = Date.now() + 60_000
    while (await this.session.execute(`return Boolean(${expression})`) !== true) {
      if (Date.now() > deadline) throw new Error(`WebKit's page: ${expression} not true in 60 s`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  on (): void {}

  async close (): Promise<void> {
    await this.session.close()
  }
}

/** A Context whose pages are MiniBrowser sessions; its version is MiniBrowser's as the driver reports it. */
export async function launchWebKit (): Promise<{ version: string, context: Context, close: () => Promise<void> }> {
  const missing = webkitMissing()
  if (missing !== undefined) throw new Error(missing)
  const driver = await WebDriver.start()
  const sessions: Session[] = []
  let version = '?'
  const context = {
    async newPage (): Promise<Page> {
      const session = await driver.session([])
      version = session.browserVersion
      sessions.push(session)
      await driver.call('POST', `/session/${session.id}/timeouts`, { script: SCRIPT_TIMEOUT_MS })
      return new WebKitPage(session, driver) as unknown as Page
    },
    async close (): Promise<void> {
      for (const s of sessions) await s.close()
    },
    async newCDPSession (): Promise<never> {
      throw new Error('no DevTools protocol in WebKit')
    }
  }
  // A first page tells the version.
  const first = await context.newPage()
  await first.close()
  sessions.length = 0
  return {
    version,
    context,
    close: async () => {
      await context.close()
      driver.stop()
    }
  }
}
