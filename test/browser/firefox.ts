// Firefox for the browser tests and the browser benchmark: the distribution's
// firefox-esr, launched headless by puppeteer-core over WebDriver BiDi
// (playwright-core drives only Playwright's own Firefox builds), with its
// profile in a directory (OPFS as a user's Firefox keeps it, not a private
// window's in memory): for the tests on a RAM-backed file system where there
// is one (see profileParent). Wrapped in the shapes of
// harness.ts (Browser, Context, Page), so that a test written for Chromium runs
// here too. Firefox's own output (its stderr) is kept, its last lines printed
// with a failure.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { canRequire, type Browser, type Context, type Page } from './harness'

export const FIREFOX_CANDIDATES = [process.env.FIREFOX_PATH, '/usr/bin/firefox-esr', '/usr/bin/firefox'].filter((p): p is string => typeof p === 'string' && p !== '')

export function findFirefox (): string | undefined {
  return FIREFOX_CANDIDATES.find((p) => fs.existsSync(p))
}

/** Why the Firefox tests cannot run here, or undefined when they can. */
export function firefoxMissing (): string | undefined {
  if (findFirefox() === undefined) return 'no Firefox found (' + FIREFOX_CANDIDATES.join(', ') + ')'
  if (!canRequire('esbuild')) return 'esbuild is not installed'
  if (!canRequire('puppeteer-core')) return 'puppeteer-core is not installed'
  return undefined
}

// puppeteer-core's typings, as far as they are used.
interface PuppeteerContext { newPage (): Promise<Page>, close (): Promise<void> }
interface PuppeteerBrowser {
  createBrowserContext (): Promise<PuppeteerContext>
  defaultBrowserContext (): PuppeteerContext
  version (): Promise<string>
  close (): Promise<void>
  process (): { stderr: NodeJS.ReadableStream | null, stdout: NodeJS.ReadableStream | null, exitCode: number | null, once (event: 'exit', listener: () => void): void } | null
  readonly connection: { send (method: string, params: object): Promise<unknown> }
}
interface Puppeteer { launch (options: { browser: 'firefox', executablePath: string, headless: boolean, userDataDir: string, protocolTimeout?: number, extraPrefsFirefox?: Record<string, unknown> }): Promise<PuppeteerBrowser> }

export interface Firefox extends Browser {
  /** The context of the profile's directory (its OPFS persists across page loads and contexts' ends). */
  defaultContext: Context
  version: string
  executablePath: string
  /** The last lines Firefox wrote to its stderr and stdout. */
  output (): string[]
}

function contextOf (c: PuppeteerContext): Context {
  return {
    newPage: async () => await c.newPage(),
    close: async () => await c.close(),
    newCDPSession: async () => { throw new Error('no DevTools protocol in Firefox (WebDriver BiDi)') }
  }
}

/**
 * Where the profiles are made: LSM_FIREFOX_PROFILE_DIR if set; else, for the
 * tests, a RAM-backed file system where the machine has one (/dev/shm), on
 * which Firefox keeps OPFS as on a disk (the same code: files, and a metadata
 * database it syncs) without waiting on the disk's syncs (Firefox's compliance
 * suite took 118 s there against over 1,100 s in the temp directory on a busy
 * machine); else, and for the benchmark (onDisk), the temp directory.
 */
function profileParent (onDisk: boolean): string {
  const chosen = process.env.LSM_FIREFOX_PROFILE_DIR
  if (chosen !== undefined && chosen !== '') return chosen
  if (onDisk) return os.tmpdir()
  try {
    fs.accessSync('/dev/shm', fs.constants.W_OK)
    return '/dev/shm'
  } catch {
    return os.tmpdir()
  }
}

/**
 * Asks Firefox to quit and waits for its process to end (up to 3 minutes):
 * puppeteer's close() kills it after 5 s, before a Gecko profile started with
 * MOZ_PROFILER_STARTUP is written to MOZ_PROFILER_SHUTDOWN at its shutdown
 * (benchmarks/gecko-profile-top.ts).
 */
async function quitAndWait (browser: PuppeteerBrowser): Promise<void> {
  const child = browser.process()
  if (child === null || child.exitCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', resolve))
  await browser.connection.send('browser.close', {}).catch(() => {})
  let timer: NodeJS.Timeout | undefined
  await Promise.race([exited, new Promise<void>((resolve) => { timer = setTimeout(resolve, 180_000) })])
  clearTimeout(timer)
}

/**
 * Launches headless Firefox on a new profile (see profileParent; onDisk: in
 * the temp directory); close() ends it and removes the profile. `prefs`:
 * Firefox preferences to set.
 */
export async function launchFirefox (prefs: Record<string, unknown> = {}, onDisk = false): Promise<Firefox> {
  const executablePath = findFirefox()
  if (executablePath === undefined) throw new Error('no Firefox found (' + FIREFOX_CANDIDATES.join(', ') + ')')
  const profile = fs.mkdtempSync(path.join(profileParent(onDisk), 'lsm-firefox-'))
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const puppeteer = require('puppeteer-core') as Puppeteer
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath, headless: true, userDataDir: profile, protocolTimeout: 10 * 60 * 1000, extraPrefsFirefox: prefs })
  const output: string[] = []
  const keep = (chunk: Buffer | string): void => {
    for (const line of String(chunk).split('\n')) if (line.trim() !== '') output.push(line)
    if (output.length > 200) output.splice(0, output.length - 200)
  }
  browser.process()?.stderr?.on('data', keep)
  browser.process()?.stdout?.on('data', keep)
  return {
    executablePath,
    version: await browser.version(),
    defaultContext: contextOf(browser.defaultBrowserContext()),
    newContext: async () => contextOf(await browser.createBrowserContext()),
    close: async () => {
      if (process.env.MOZ_PROFILER_SHUTDOWN !== undefined) await quitAndWait(browser)
      await browser.close()
      fs.rmSync(profile, { recursive: true, force: true })
    },
    output: () => output.slice()
  }
}
