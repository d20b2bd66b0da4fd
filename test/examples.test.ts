// The runnable programs in examples/ (each must exit 0 and print what it
// promises), and the package's two entry points: require('lsm-level') and
// import { Level } from 'lsm-level' (index.mjs, through package.json "exports").
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'

// dist/test/examples.test.js -> the package root
const root = path.resolve(__dirname, '..', '..')

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-examples-test-'))
test.onFinish(() => fs.rmSync(tmpRoot, { recursive: true, force: true }))

// Each child gets its own empty TMPDIR (os.tmpdir() honours it), so what it leaves behind can be seen.
function run (args: string[], tmp = fs.mkdtempSync(path.join(tmpRoot, 'run-'))): { status: number | null, stdout: string, stderr: string, tmp: string } {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp } })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', tmp }
}

const examples: Record<string, RegExp[]> = {
  'basic.js': [
    /^get fruit:apple -> \{"color":"red","price":3\}$/m,
    /^get fruit:kiwi -> undefined$/m,
    /^iterate fruit:apple red 3\niterate fruit:banana yellow 1\niterate fruit:cherry red 9$/m,
    /^last two keys: veg:carrot, fruit:cherry$/m
  ],
  'sublevels.js': [
    /^email linus@example\.com -> user u2 Linus$/m,
    /^users: u1$/m,
    /^emails: ada@example\.com$/m,
    /^all keys: !emails!ada@example\.com !users!u1$/m
  ],
  'snapshots-stats.js': [
    /^now: 2 snapshot: 1$/m,
    /^flushes > 0: true$/m,
    /^after compactRange: L\d:\d+$/m, // one level holds everything after a full compaction
    /^write amplification: \d+\.\d\d$/m,
    /^tables at level 0: 0$/m,
    /^approximate size > 0: true$/m,
    /^key01234 = 4$/m
  ],
  'durable.js': [
    /^100 concurrent sync puts done in (<1|\d+) ms$/m,
    /^order:1 = paid$/m,
    /^order:2 = paid$/m,
    /^order:3 = undefined$/m,
    /^events: 100$/m
  ]
}

test('examples/ holds exactly the examples this test checks', (t) => {
  const found = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.js')).sort()
  t.same(found, Object.keys(examples).sort())
  t.end()
})

for (const [file, patterns] of Object.entries(examples)) {
  test(`examples/${file}`, (t) => {
    const r = run([path.join('examples', file)])
    t.is(r.status, 0, `exit code 0${r.stderr ? ': ' + r.stderr : ''}`)
    for (const p of patterns) t.match(r.stdout, p, `prints ${p.source}`)
    t.same(fs.readdirSync(r.tmp), [], 'removes its temporary directory')
    t.end()
  })
}

// A program that opens a database in a temporary directory, writes, reads and closes it.
function roundTrip (load: string): string {
  return `${load}
const fs = require('node:fs'), os = require('node:os'), path = require('node:path')
;(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-entry-'))
  try {
    const db = new Level(dir, { valueEncoding: 'json' })
    await db.put('k', { n: 42 }, { sync: true })
    const v = await db.get('k')
    await db.close()
    console.log('got', v.n, typeof LsmLevel, Level === LsmLevel, Default === Level)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})().catch((err) => { console.error(err); process.exitCode = 1 })
`
}

test('require(\'lsm-level\') (CommonJS)', (t) => {
  const src = roundTrip("const { Level, LsmLevel, default: Default } = require('lsm-level')")
  const r = run(['-e', src])
  t.is(r.status, 0, `exit code 0${r.stderr ? ': ' + r.stderr : ''}`)
  t.is(r.stdout.trim(), 'got 42 function true true')
  t.end()
})

// Runs a program file under the runtime running this test: under node and Bun
// that is `<runtime> file`; under Deno (whose process.execPath is the deno
// binary) `deno run -A file`.
function runFile (file: string): ReturnType<typeof run> {
  const deno = (globalThis as any).Deno !== undefined
  return run(deno ? ['run', '-A', file] : [file])
}

// A file, not `--input-type=module -e`: Deno runs an -e program as a script,
// where import statements are a syntax error.
test('import { Level } from \'lsm-level\' (ES module, index.mjs): the same class as require(\'lsm-level\')', (t) => {
  const r = runFile(path.join('test', 'fixtures', 'esm-entry.mjs'))
  t.is(r.status, 0, `exit code 0${r.stderr ? ': ' + r.stderr : ''}`)
  t.is(r.stdout.trim(), 'got 42 function true true\nsame class as require: true')
  t.same(fs.readdirSync(r.tmp), [], 'removes its temporary directory')
  t.end()
})

test('package.json exports and files', (t) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
  t.same(pkg.exports['.'], {
    // A browser bundle gets BrowserLevel from the root (test/bundlers.test.ts builds one).
    browser: { types: './dist/browser.d.ts', default: './dist/browser/lsm-level.js' },
    import: { types: './index.d.mts', default: './index.mjs' },
    require: { types: './dist/index.d.ts', default: './dist/node/lsm-level.js' }
  })
  t.ok(pkg.files.includes('index.mjs') && pkg.files.includes('index.d.mts'), 'index.mjs and its typings are published')
  t.end()
})
