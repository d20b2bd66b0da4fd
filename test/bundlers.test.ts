// lsm-level in the browser through real bundlers: a small app (below) that
// imports it (`Level` from the package's root, and the subpath) is built with
// Vite and with webpack 5 as an application would (the package linked into the app's node_modules, its exports followed; no
// polyfill, no alias, no copy of the worker by hand), each build is served
// and loaded in headless Chromium, and the app runs put, get, an iterator and,
// after a reload of the page, reads its data back. Both bundlers must find
// BrowserLevel's worker themselves (new Worker(new URL(..., import.meta.url))).
// About 30 s here (LSM_BUNDLERS_FULL=1 adds webpack's minification, 30-40 s).
// Skipped, saying why, without Chromium, playwright-core, vite or webpack;
// LSM_REQUIRE_BROWSERS=chromium makes that a failure.
import test from 'tape'
import * as fs from 'node:fs'
import * as http from 'node:http'
import * as os from 'node:os'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { skipBrowserTests } from './browser/skip'
import { type Browser, canRequire, findChromium, playwrightChromium, summarize } from './browser/harness'

const root = path.join(__dirname, '..', '..')
const RUN_TIMEOUT_MS = 60 * 1000

/** The app: one page; ?phase=write writes and reads, ?phase=read (a new page load) reads what was written. */
// The package's root, as an app moving from \`level\` writes it: the \`browser\`
// export condition, which both bundlers apply to a browser build, gives
// BrowserLevel; the subpath gives the same class.
const APP_MAIN = `import { Level } from 'lsm-level'
import { BrowserLevel } from 'lsm-level/browser'

const report = (line) => globalThis.lsmReport(line)
const phase = new URLSearchParams(location.search).get('phase')
const expected = JSON.stringify([['a', '1'], ['b', '2'], ['c', '3']])

async function main () {
  if (Level !== BrowserLevel) {
    report('not ok 1 lsm-level resolved to ' + (Level && Level.name) + ', not BrowserLevel')
    report('# done')
    return
  }
  const db = new Level('bundled-app')
  await db.open()
  if (phase === 'write') {
    await db.put('a', '1')
    await db.batch([{ type: 'put', key: 'c', value: '3' }, { type: 'put', key: 'b', value: '2' }])
    const a = await db.get('a')
    const all = JSON.stringify(await db.iterator().all())
    report((a === '1' && all === expected ? 'ok' : 'not ok') + ' 1 put, get, iterator: ' + a + ' ' + all)
  } else {
    const all = JSON.stringify(await db.iterator().all())
    report((all === expected ? 'ok' : 'not ok') + ' 1 after a reload: ' + all)
  }
  await db.close()
}

main().then(() => report('# done'), (err) => {
  report('not ok 1 ' + (err.stack || err.message) + (err.cause ? ' cause: ' + err.cause.message : ''))
  report('# done')
})
`

/** A temporary app directory with lsm-level linked in as an installed package. */
function makeApp (): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bundlers-'))
  fs.mkdirSync(path.join(dir, 'src'))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'lsm-level'), 'dir')
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
  fs.writeFileSync(path.join(dir, 'src', 'main.js'), APP_MAIN)
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="/src/main.js"></script>\n')
  return dir
}

/** Builds the app with Vite's command line (as `npx vite build`); returns the output directory. */
function buildWithVite (app: string): string {
  const out = path.join(app, 'dist-vite')
  const vite = path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js')
  const r = spawnSync(process.execPath, [vite, 'build', app, '--outDir', out, '--logLevel', 'warn'], { cwd: app, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`vite build failed: ${r.stderr}${r.stdout}`)
  return out
}

/**
 * Builds the app with webpack 5's Node API, production mode; returns the
 * output directory. Terser's minification takes most of webpack's time (27-41
 * s here under load): it is left out unless LSM_BUNDLERS_FULL=1.
 */
async function buildWithWebpack (app: string): Promise<string> {
  const out = path.join(app, 'dist-webpack')
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const webpack = require('webpack') as (config: object, callback: (err: Error | null, stats?: { hasErrors (): boolean, toString (o: object): string }) => void) => void
  await new Promise<void>((resolve, reject) => {
    webpack({ mode: 'production', context: app, entry: './src/main.js', output: { path: out, filename: 'main.js' }, devtool: false, optimization: { minimize: process.env.LSM_BUNDLERS_FULL === '1' } }, (err, stats) => {
      if (err !== null) reject(err)
      else if (stats?.hasErrors() === true) reject(new Error(`webpack build failed: ${stats.toString({ all: false, errors: true })}`))
      else resolve()
    })
  })
  fs.writeFileSync(path.join(out, 'index.html'), '<!doctype html><meta charset="utf-8"><script src="./main.js"></script>\n')
  return out
}

const MIME: Record<string, string> = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html' }

async function serve (dir: string): Promise<{ server: http.Server, base: string }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const file = path.join(dir, url.pathname === '/' ? 'index.html' : path.normalize(url.pathname))
    if (!file.startsWith(dir + path.sep) || !fs.existsSync(file)) {
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

/** Loads `url` in `page` and resolves with the lines the app reported, up to '# done'. */
async function runApp (browser: Browser, base: string): Promise<string[]> {
  const context = await browser.newContext()
  const page = await context.newPage()
  let lines: string[] = []
  let done = (): void => {}
  await page.exposeFunction('lsmReport', (line: string) => {
    lines.push(line)
    if (line === '# done') done()
  })
  page.on('pageerror', (err) => {
    lines.push(`not ok - page error: ${err.message}`)
    done()
  })
  const out: string[] = []
  for (const phase of ['write', 'read']) {
    lines = []
    const finished = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no '# done' from the ${phase} phase in ${RUN_TIMEOUT_MS} ms: ${lines.join(' | ')}`)), RUN_TIMEOUT_MS)
      done = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    await page.goto(`${base}/?phase=${phase}`)
    await finished
    out.push(...lines.filter((l) => l !== '# done'))
  }
  await context.close()
  return out
}

const executablePath = findChromium()
const missing = executablePath === undefined
  ? 'no Chromium found'
  : ['playwright-core', 'vite', 'webpack'].find((name) => !canRequire(`${name}/package.json`))

if (missing !== undefined) {
  skipBrowserTests('chromium', missing.startsWith('no ') ? missing : `${missing} is not installed`)
} else {
  let browser: Browser
  let app = ''

  test('bundlers: an app importing lsm-level/browser', async (t) => {
    const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-browser.js')], { encoding: 'utf8' })
    t.is(build.status, 0, `scripts/build-browser.js${build.status === 0 ? '' : ': ' + build.stderr}`)
    app = makeApp()
    browser = await playwrightChromium().launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    t.pass(`the app in ${path.basename(app)}; Chromium launched`)
  })

  for (const bundler of ['vite', 'webpack'] as const) {
    test(`bundlers: built with ${bundler === 'vite' ? 'Vite' : 'webpack 5'}, the app runs put, get, an iterator and a reload round trip in Chromium`, async (t) => {
      const t0 = Date.now()
      const out = bundler === 'vite' ? buildWithVite(app) : await buildWithWebpack(app)
      const built = Date.now() - t0
      const files = fs.readdirSync(out, { recursive: true }).map(String).filter((f) => f.endsWith('.js'))
      t.ok(files.length >= 2, `${bundler} emitted the app and the database's worker as separate files (${files.join(', ')}; ${built} ms)`)
      const { server, base } = await serve(out)
      try {
        const lines = await runApp(browser, base)
        const { failures } = summarize(t, lines)
        const checks = lines.filter((l) => /^(not )?ok /.test(l))
        t.is(checks.length, 2, `two checks reported by the app${failures.length > 0 ? ': ' + failures.join(' | ') : ''}`)
        for (const line of checks) t.ok(line.startsWith('ok '), line)
      } finally {
        await new Promise((resolve) => server.close(resolve))
      }
    })
  }

  test('bundlers: close', async (t) => {
    await browser.close()
    fs.rmSync(app, { recursive: true, force: true })
    t.pass('closed')
  })
}
