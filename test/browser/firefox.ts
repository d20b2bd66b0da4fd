// Firefox for the browser tests and the browser benchmark: the distribution's
// firefox-esr, launched headless by puppeteer-core over WebDriver BiDi
// (playwright-core drives only Playwright's own Firefox builds), with its
// profile on disk (OPFS as a user's Firefox keeps it). Wrapped in the shapes of
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
  process (): { stderr: NodeJS.ReadableStream | null, stdout: NodeJS.ReadableStream | null } | null
}
interface Puppeteer { launch (options: { browser: 'firefox', executablePath: string, headless: boolean, userDataDir: string, protocolTimeout?: number, extraPrefsFirefox?: Record<string, unknown> }): Promise<PuppeteerBrowser> }

export interface Firefox extends Browser {
  /** The context of the profile on disk (its OPFS persists across page loads and contexts' ends). */
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

/** Launches headless Firefox on a new profile on disk; close() ends it and removes the profile. `prefs`: Firefox preferences to set. */
export async function launchFirefox (prefs: Record<string, unknown> = {}): Promise<Firefox> {
  const executablePath = findFirefox()
  if (executablePath === undefined) throw new Error('no Firefox found (' + FIREFOX_CANDIDATES.join(', ') + ')')
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-firefox-'))
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
      await browser.close()
      fs.rmSync(profile, { recursive: true, force: true })
    },
    output: () => output.slice()
  }
}
