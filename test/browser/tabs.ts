// Driving tabs of test/browser/tabs-page.ts from Node (test/browser-tabs.test.ts,
// benchmarks): open a page on a location, call its window.lsmTabs methods,
// collect the acknowledgements of its writer, crash it through the DevTools
// chrome://crash.
import type { Page } from './harness'

export interface CdpSession { send (method: string, params?: object): Promise<unknown> }
export interface TabContext {
  newPage (): Promise<Page>
  newCDPSession (page: Page): Promise<CdpSession>
  close (): Promise<void>
}

export interface Tab {
  page: Page
  /** Lines from the page's writer ('ack <key>', 'err <key> <code>'), in order. */
  acks: string[]
  call<R = unknown> (method: string, ...args: unknown[]): Promise<R>
  crash (): Promise<void>
}

/** Every tab newTab made, in order (the torture reads the acknowledgements of all of them). */
export const allTabs: Tab[] = []

/** A tab on `location` (not yet opened: call('open')); `query` adds to the page's query string. */
export async function newTab (context: TabContext, base: string, location: string, query = ''): Promise<Tab> {
  const page = await context.newPage()
  const acks: string[] = []
  // The page's lines come on its console: an exposed function broke playwright-core when its page closed with a call in flight.
  ;(page as unknown as { on (e: 'console', f: (m: { text (): string }) => void): void }).on('console', (m) => {
    const text = m.text()
    if (text.startsWith('lsm: ')) acks.push(text.slice(5))
  })
  await page.goto(`${base}/tabs.html?location=${encodeURIComponent(location)}${query}`)
  await page.waitForFunction('window.lsmTabs !== undefined')
  const tab: Tab = {
    page,
    acks,
    call: async <R>(method: string, ...args: unknown[]): Promise<R> => {
      return await page.evaluate(async ([m, a]) => {
        const tabs = (globalThis as unknown as { lsmTabs: Record<string, (...x: unknown[]) => unknown> }).lsmTabs
        return await tabs[m](...a)
      }, [method, args] as [string, unknown[]]) as R
    },
    crash: async () => {
      // The browser kills this tab's renderer process (its workers with it),
      // without unloading the page. CDP's Page.crash took the whole headless
      // browser down with it (Chromium 156).
      const crashed = new Promise<void>((resolve) => (page as unknown as { once (e: 'crash', f: () => void): void }).once('crash', resolve))
      await page.goto('chrome://crash').catch(() => {})
      await crashed
    }
  }
  allTabs.push(tab)
  return tab
}

/** Polls `check` every 25 ms until it returns true or `ms` passed; resolves to whether it did. */
export async function until (check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check().catch(() => false)) return true
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
