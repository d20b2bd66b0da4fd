// What the browser tests (test/browser*.test.ts) and the browser benchmark
// (benchmarks/browser.ts) share: finding the distribution's Chromium, serving
// dist/ (the bundles of scripts/build-browser.js) with a page or two on a
// local HTTP server, playwright-core, required only when a run needs it (its
// typings are declared here, as far as they are used), a page that reports TAP
// lines, and reading them.
import * as fs from 'node:fs'
import * as http from 'node:http'
import * as path from 'node:path'
import type { AddressInfo } from 'node:net'
import { spawnSync } from 'node:child_process'
import { tapSkips } from '../util/tap-skips'

const root = path.join(__dirname, '..', '..', '..')

export const CHROMIUM_CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].filter((p): p is string => typeof p === 'string' && p !== '')

export function findChromium (): string | undefined {
  return CHROMIUM_CANDIDATES.find((p) => fs.existsSync(p))
}

export interface Page {
  exposeFunction (name: string, fn: (line: string) => void): Promise<void>
  /** `timeout`: ms for the load (30,000 by default in playwright-core and puppeteer-core; 0 waits without bound). */
  goto (url: string, options?: { timeout?: number }): Promise<unknown>
  reload (): Promise<unknown>
  evaluate<R, A> (fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>
  waitForFunction (expression: string): Promise<unknown>
  on (event: 'pageerror', fn: (err: Error) => void): void
  on (event: 'console', fn: (message: { type (): string, text (): string }) => void): void
  close (): Promise<void>
  /** Makes this the browser's active tab (a background tab's timers may be throttled). */
  bringToFront (): Promise<void>
}
/** A Chrome DevTools Protocol session (Chromium only). */
export interface CDPSession { send (method: string, params?: object): Promise<unknown> }
export interface Context { newPage (): Promise<Page>, close (): Promise<void>, newCDPSession (page: Page): Promise<CDPSession> }
export interface Browser { newContext (): Promise<Context>, close (): Promise<void> }
interface LaunchOptions { executablePath: string, args?: string[] }
export interface Chromium {
  launch (options: LaunchOptions): Promise<Browser>
  /** A browser whose profile (and so its OPFS and IndexedDB) lives on disk in userDataDir. */
  launchPersistentContext (userDataDir: string, options: LaunchOptions): Promise<Context>
}

export function playwrightChromium (): Chromium {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('playwright-core') as { chromium: Chromium }).chromium
}

const MIME: Record<string, string> = { '.js': 'text/javascript', '.map': 'application/json', '.html': 'text/html' }

/**
 * Serves the files of dist/ (or of another build's `dist`) and, at each path of
 * `pages` (such as '/test.html'), an HTML page that loads the module script it maps to.
 */
export async function serveDist (pages: Record<string, string>, dist = path.join(root, 'dist')): Promise<{ server: http.Server, base: string }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const script = pages[url.pathname]
    if (script !== undefined) {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(`<!doctype html><meta charset="utf-8"><script type="module" src="${script}"></script>`)
      return
    }
    const file = path.join(dist, path.normalize(url.pathname))
    if (!file.startsWith(dist + path.sep) || !fs.existsSync(file)) {
      res.writeHead(404)
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream' })
    fs.createReadStream(file).pipe(res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

/** Why the Chromium tests cannot run here, or undefined when they can. */
export function chromiumMissing (): string | undefined {
  if (findChromium() === undefined) return 'no Chromium found (' + CHROMIUM_CANDIDATES.join(', ') + ')'
  if (!canRequire('esbuild')) return 'esbuild is not installed'
  if (!canRequire('playwright-core')) return 'playwright-core is not installed'
  return undefined
}

/** Bundles the test pages into dist/ (scripts/build-browser.js --tests): a browser file's first check. */
export function buildTestPages (t: { is: (actual: unknown, expected: unknown, message: string) => void }): void {
  const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-browser.js'), '--tests'], { encoding: 'utf8' })
  t.is(build.status, 0, `scripts/build-browser.js --tests${build.status === 0 ? '' : ': ' + build.stderr}`)
}

/** Whether a package can be required here (the browser tests skip without theirs). */
export function canRequire (name: string): boolean {
  try {
    require.resolve(name)
    return true
  } catch {
    return false
  }
}

/**
 * The counts of tape's summary in a page's TAP lines and the failing lines
 * with the test name before them; the page's skips (util/tap-skips.ts) are
 * skipped again through `t`, so that Node's output, and the runner's list of
 * skips, names them. A skipped assertion is not counted as passed.
 */
export function summarize (t: { skip: (message: string) => void }, lines: string[]): { pass: number, fail: number, failures: string[] } {
  const text = lines.join('\n')
  const failures: string[] = []
  let name = ''
  lines.forEach((line, i) => {
    if (line.startsWith('# ')) name = line
    if (line.startsWith('not ok')) failures.push([name, line, ...lines.slice(i + 1, i + 8)].join('\n'))
  })
  const skips = tapSkips(lines)
  for (const skip of skips) t.skip(`in the page: ${skip.text}`)
  const skippedAssertions = skips.filter((s) => s.kind === 'assertion').length
  const pass = Math.max(0, Number(/^# pass\s+(\d+)/m.exec(text)?.[1] ?? 0) - skippedAssertions)
  return { pass, fail: Number(/^# fail\s+(\d+)/m.exec(text)?.[1] ?? 0), failures }
}

/** A page whose TAP lines are collected: run() loads a URL (a new page load) and resolves with its lines at '# done'. */
export interface ReportingPage {
  page: Page
  run: (url: string) => Promise<string[]>
  /** The page's last console errors and warnings (for a failure's diagnosis). */
  console: () => string[]
}

/**
 * A new page of `context` that reports through window.lsmReport. A run that
 * reports no line for `idleMs` rejects with its last lines: a hang, told apart
 * from a run that is slow on a busy machine but goes on.
 */
export async function reportingPage (context: Context, idleMs: number): Promise<ReportingPage> {
  const page = await context.newPage()
  /** For LSM_PAGE_TRACE: the run's query and start. */
  let trace = { query: '', t0: Date.now() }
  let lines: string[] = []
  const messages: string[] = []
  let done: (() => void) | undefined
  let progressed: (() => void) | undefined
  await page.exposeFunction('lsmReport', (line: string) => {
    for (const l of line.split('\n')) {
      lines.push(l)
      if (process.env.LSM_PAGE_TRACE === '1' && l.startsWith('# ')) process.stderr.write(`[${trace.query} ${((Date.now() - trace.t0) / 1000).toFixed(1)} s] ${l}\n`)
    }
    progressed?.()
    if (line === '# done') done?.()
  })
  page.on('pageerror', (err) => {
    lines.push(`not ok - page error: ${err.message}`)
    done?.()
  })
  page.on('console', (message) => {
    const type = message.type()
    if (type !== 'error' && type !== 'warn' && type !== 'warning') return
    messages.push(`${type}: ${message.text()}`)
    if (messages.length > 50) messages.shift()
  })
  const run = async (url: string): Promise<string[]> => {
    lines = []
    const t0 = Date.now()
    trace = { query: new URL(url).search.slice(1), t0 }
    const finished = new Promise<void>((resolve, reject) => {
      const hung = (): void => reject(new Error(`no line from ${url} in ${idleMs} ms (no '# done' after ${((Date.now() - t0) / 1000).toFixed(0)} s); last lines:\n${lines.slice(-10).join('\n')}`))
      let timer = setTimeout(hung, idleMs)
      progressed = () => {
        clearTimeout(timer)
        timer = setTimeout(hung, idleMs)
      }
      done = () => {
        clearTimeout(timer)
        progressed = undefined
        resolve()
      }
    })
    // Together: a run that goes idle while the navigation still waits (a page
    // that never finishes loading) fails the run, rather than rejecting a
    // promise nobody awaits yet.
    // The load itself is bounded by idleMs too, not the driver's 30 s: on a
    // busy machine, pages loading side by side took longer than that.
    await Promise.all([page.goto(url, { timeout: idleMs }), finished])
    return lines
  }
  return { page, run, console: () => messages.slice() }
}
