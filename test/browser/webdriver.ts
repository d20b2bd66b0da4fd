// A small W3C WebDriver client over fetch, for WebKitGTK's WebKitWebDriver
// (test/browser-webkit.test.ts): start the driver under xvfb-run, open a
// session of MiniBrowser with the features a test needs, navigate, run a
// script, and drain a page's TAP lines (window.lsmLines, see storage-page.ts).
import * as fs from 'node:fs'
import * as net from 'node:net'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'

/** What WebKitGTK needs here: the driver, xvfb-run, and MiniBrowser (from libwebkit2gtk-4.1-0); undefined when all are present, else what is missing. */
export function webkitMissing (): string | undefined {
  if (which('WebKitWebDriver') === undefined) return 'WebKitWebDriver is not installed (apt-get install webkit2gtk-driver)'
  if (which('xvfb-run') === undefined) return 'xvfb-run is not installed (apt-get install xvfb)'
  if (miniBrowser() === undefined) return 'no MiniBrowser found (libwebkit2gtk-4.1-0)'
  return undefined
}

function which (command: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' })
  return found.status === 0 ? found.stdout.trim() : undefined
}

export function miniBrowser (): string | undefined {
  const candidates = [process.env.WEBKIT_MINIBROWSER, '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/libexec/webkit2gtk-4.1/MiniBrowser']
  return candidates.find((p): p is string => typeof p === 'string' && p !== '' && fs.existsSync(p))
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** How long a new session (MiniBrowser's launch) may take before the driver is restarted and it is tried again. */
const SESSION_TIMEOUT_MS = 60_000
const SESSION_ATTEMPTS = 3

export class WebDriver {
  private constructor (private base: string, private child: ChildProcess) {}

  /** Starts WebKitWebDriver under xvfb-run on a free port and waits until it answers. */
  static async start (): Promise<WebDriver> {
    const driver = new WebDriver('', undefined as unknown as ChildProcess)
    await driver.launch()
    return driver
  }

  private async launch (): Promise<void> {
    const port = await freePort()
    // Its own process group: stop() ends xvfb-run, the driver and the browsers it started.
    this.child = spawn('xvfb-run', ['-a', 'WebKitWebDriver', `--port=${port}`], { stdio: 'ignore', detached: true })
    this.base = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 20_000
    for (;;) {
      try {
        const status = await this.call('GET', '/status') as { ready?: boolean }
        if (status.ready !== false) return
      } catch {}
      if (Date.now() > deadline || this.child.exitCode !== null) {
        this.stop()
        throw new Error(`WebKitWebDriver did not answer on port ${port}`)
      }
      await sleep(200)
    }
  }

  async call (method: string, path: string, body?: unknown, timeoutMs?: number): Promise<unknown> {
    const res = await fetch(this.base + path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs) })
    const json = await res.json() as { value: unknown }
    const error = json.value as { error?: string, message?: string } | null
    if (!res.ok || (error !== null && typeof error === 'object' && typeof error.error === 'string')) {
      throw new Error(`WebDriver ${method} ${path}: ${String(error?.error)}: ${String(error?.message)}`)
    }
    return json.value
  }

  /**
   * A new session of MiniBrowser with `args` (such as --features=...). A
   * launch that does not answer within SESSION_TIMEOUT_MS (it happened once
   * of a few dozen: no MiniBrowser process, the driver silent) restarts the
   * driver and tries again, up to SESSION_ATTEMPTS times.
   */
  async session (args: string[]): Promise<Session> {
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await this.call('POST', '/session', {
          capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: miniBrowser(), args: ['--automation', ...args] } } }
        }, SESSION_TIMEOUT_MS) as { sessionId: string, capabilities: { browserVersion?: string } }
        return new Session(this, value.sessionId, value.capabilities.browserVersion ?? '?')
      } catch (err) {
        if ((err as Error).name !== 'TimeoutError' || attempt >= SESSION_ATTEMPTS) throw err
        this.stop()
        await this.launch()
      }
    }
  }

  stop (): void {
    try {
      if (this.child.pid !== undefined) process.kill(-this.child.pid, 'SIGTERM')
    } catch {}
  }
}

export class Session {
  constructor (private readonly driver: WebDriver, readonly id: string, readonly browserVersion: string) {}

  async navigate (url: string): Promise<void> {
    await this.driver.call('POST', `/session/${this.id}/url`, { url })
  }

  async execute (script: string, args: unknown[] = []): Promise<unknown> {
    return await this.driver.call('POST', `/session/${this.id}/execute/sync`, { script, args })
  }

  /** Loads `url` and collects its TAP lines until '# done' (or `timeoutMs`). */
  async run (url: string, timeoutMs: number): Promise<string[]> {
    await this.navigate(url)
    const lines: string[] = []
    const deadline = Date.now() + timeoutMs
    while (!lines.includes('# done')) {
      if (Date.now() > deadline) throw new Error(`no '# done' from ${url} in ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}`)
      await sleep(100)
      const got = await this.execute('return window.lsmLines === undefined ? [] : window.lsmLines.splice(0)') as string[]
      for (const line of got) lines.push(...line.split('\n'))
    }
    return lines
  }

  async close (): Promise<void> {
    await this.driver.call('DELETE', `/session/${this.id}`).catch(() => {})
  }
}
