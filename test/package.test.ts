// What `npm pack` puts in the package: the compiled runtime code (index, lib/,
// cli/) with its declarations, the ESM wrapper, the command-line tool and the
// documents; no tests, benchmarks, TypeScript sources or source maps. Needs the
// build, which `npm test` runs first. Runs `npm pack --dry-run` without its
// scripts, so nothing is rebuilt while other tests run.
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'

// dist/test/package.test.js -> the package root
const root = path.resolve(__dirname, '..', '..')

// The npm that runs `npm test` (npm_execpath), else the one on PATH.
function npm (args: string[]): { status: number | null, stdout: string, stderr: string } {
  const cli = process.env.npm_execpath
  const [cmd, argv] = cli !== undefined && /npm-cli\.c?js$/.test(cli)
    ? [process.execPath, [cli, ...args]]
    : ['npm', args]
  const r = spawnSync(cmd, argv, { cwd: root, encoding: 'utf8', timeout: 120_000 })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

const pack = npm(['pack', '--dry-run', '--json', '--ignore-scripts'])
const listed: string[] = pack.status === 0
  ? (JSON.parse(pack.stdout) as Array<{ files: Array<{ path: string }> }>)[0].files.map((f) => f.path).sort()
  : []
interface Manifest { main: string, types: string, bin: Record<string, string>, exports: Record<string, unknown> }
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest

// Every file path named in package.json's "exports" (conditions nest).
function exportTargets (value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(exportTargets)
}

function normal (file: string): string {
  return path.posix.normalize(file)
}

test('npm pack --dry-run lists the package', (t) => {
  t.is(pack.status, 0, 'npm pack exits 0' + (pack.status === 0 ? '' : ': ' + pack.stderr.trim()))
  t.ok(listed.length > 0, `${listed.length} files`)
  t.end()
})

test('the package holds no tests, benchmarks, TypeScript sources or source maps', (t) => {
  const tests = listed.filter((f) => f.startsWith('dist/test/') || f.startsWith('test/'))
  const bench = listed.filter((f) => f.startsWith('dist/benchmarks/') || f.startsWith('benchmarks/'))
  const maps = listed.filter((f) => f.endsWith('.map'))
  const sources = listed.filter((f) => /\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f))
  t.same(tests, [], 'no tests')
  t.same(bench, [], 'no benchmarks')
  t.same(maps, [], 'no source maps')
  t.same(sources, [], 'no TypeScript sources (declarations only)')
  t.end()
})

test('the package holds only runtime code and documents', (t) => {
  const allowed = /^(package\.json|README\.md|CHANGELOG\.md|UPGRADING\.md|LICENSE(\.md)?|index\.mjs|index\.d\.mts|bin\/[^/]+\.js|dist\/node\/(lsm-level|lsm-level-worker|cli)\.js|dist\/(index|browser|browser-in-worker)\.d\.ts|dist\/browser\/lsm-level(-worker|-in-worker|-relay)?\.js|dist\/browser\/package\.json|dist\/(adapters|hosts|lib|cli)\/.+\.d\.ts)$/
  t.same(listed.filter((f) => !allowed.test(f)), [], 'nothing else')
  t.end()
})

test('the package holds its documents and entry points', (t) => {
  for (const doc of ['README.md', 'CHANGELOG.md', 'UPGRADING.md']) t.ok(listed.includes(doc), doc)
  const entries = [manifest.main, manifest.types, ...Object.values(manifest.bin), ...exportTargets(manifest.exports)]
  for (const entry of entries.map(normal)) t.ok(listed.includes(entry), `entry point ${entry}`)
  t.end()
})

test('the runtime code is the Node bundles: no compiled module besides them', (t) => {
  // scripts/build-node.js: one file for the package, one for its worker threads,
  // one for the command line; the modules' declarations type them
  // (dist/index.d.ts), the browser bundles (dist/browser/) dist/browser.d.ts.
  const js = listed.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/browser/') && f.endsWith('.js'))
  t.same(js, ['dist/node/cli.js', 'dist/node/lsm-level-worker.js', 'dist/node/lsm-level.js'], 'dist/node/ holds the three bundles')
  t.ok(listed.includes('dist/index.d.ts') && listed.some((f) => f.startsWith('dist/lib/') && f.endsWith('.d.ts')), 'the declarations are there')
  t.end()
})

test('the bundle is the engine: a database through it flushes and compacts on its worker threads', async (t) => {
  // dist/test/ -> dist/node/
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Level } = require(path.join(__dirname, '..', 'node', 'lsm-level.js')) as typeof import('../index')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bundle-'))
  try {
    const db = new Level(dir, { writeBufferSize: 4096 })
    await db.open()
    for (let i = 0; i < 2000; i++) await db.put(`key ${i}`, `value ${i}`)
    await db.compactRange()
    const stats = db.stats()
    const deeper = db.levels().filter((l) => l.level > 0 && l.files > 0)
    await db.close()
    t.ok(stats.flushes > 1, `memtables flushed (${stats.flushes})`)
    t.ok(deeper.length > 0, 'compacted into tables below level 0')
    const again = new Level(dir)
    t.is(await again.get('key 1999'), 'value 1999', 'reads back after reopening')
    await again.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

// node:crypto (hashing for backups, a stale LOCK's judgement) and node:net
// (multiProcess) load at their first use: a process that requires the package
// and opens, writes and closes a database without them loads neither.
test('require() of the bundle and a plain open, put and close load neither node:crypto nor node:net', (t) => {
  const bundle = path.join(__dirname, '..', 'node', 'lsm-level.js')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bundle-load-'))
  const script = path.join(dir, 'load.js')
  fs.writeFileSync(script, `
const { Level } = require(${JSON.stringify(bundle)})
const db = new Level(${JSON.stringify(path.join(dir, 'db'))})
db.open().then(() => db.put('a', 'b')).then(() => db.close()).then(() => {
  console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13))))
})
`)
  try {
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 })
    t.is(r.status, 0, `the script ran${r.status === 0 ? '' : ': ' + r.stderr}`)
    const loaded = r.status === 0 ? JSON.parse(r.stdout.trim().split('\n').pop()!) as string[] : []
    t.ok(loaded.includes('fs'), `the list of Node modules loaded is there (${loaded.length})`)
    t.notOk(loaded.includes('crypto'), 'node:crypto not loaded')
    t.notOk(loaded.includes('net'), 'node:net not loaded')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
    t.end()
  }
})
