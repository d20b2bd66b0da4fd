// The test runner (test/run.ts) counts and lists every skip tape prints: a
// skipped test ("# SKIP <name>"; test.skip's too, which util/assertion-guard.ts
// registers), a skipped assertion ("ok N <msg> # SKIP"), and the skips of a
// browser page's run, which test/browser/harness.ts's summarize() skips again
// in Node's output. The runner runs a directory of fixture files here
// (LSM_TEST_DIR), and its summary must name each skip once, with a count equal
// to the list's length. `--quick` must leave out the browser files and the
// slow ones.
import test from 'tape'
import { spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { tempDir } from './util/temp'

const TAPE = JSON.stringify(require.resolve('tape'))
const HARNESS = JSON.stringify(path.join(__dirname, 'browser', 'harness.js'))

const FIXTURES: Record<string, string> = {
  'forms.test.js': `const test = require(${TAPE})
test('a passing test', (t) => { t.pass('one'); t.end() })
test('a skipped test', { skip: true }, (t) => { t.end() })
test('a test skipped for a reason', { skip: 'no browser here' }, (t) => { t.end() })
test('a test with skipped assertions', (t) => {
  t.pass('two')
  t.skip('an emulator is missing')
  t.ok(true, 'a check not run', { skip: 'needs root' })
  t.end()
})
test.skip('registered with test.skip', (t) => { t.end() })
`,
  // A page's TAP lines, as a browser test receives them.
  'page.test.js': `const test = require(${TAPE})
const { summarize } = require(${HARNESS})
test('a page run', (t) => {
  const lines = ['TAP version 13', '# page test', 'ok 1 fine', 'ok 2 a page check # SKIP no sync handles', '# SKIP a page test not run', '', '1..2', '# tests 2', '# pass  2', '', '# ok', '# done']
  const { pass, fail } = summarize(t, lines)
  t.is(pass, 1, 'the page passed one assertion (its skipped one is not a pass)')
  t.is(fail, 0, 'and failed none')
  t.end()
})
`,
  // TAP from another producer: a skipped test as "ok N <name> # SKIP".
  'raw.test.js': `console.log(['TAP version 13', '# raw', 'ok 1 a raw test # SKIP', 'ok 2 a raw pass', '', '1..2', '# tests 2', '# pass  2', '', '# ok'].join('\\n'))
`
}

const EXPECTED_SKIPS = [
  'forms.test.js: a skipped test',
  'forms.test.js: a test skipped for a reason no browser here',
  'forms.test.js: a test with skipped assertions: an emulator is missing',
  'forms.test.js: a test with skipped assertions: a check not run (needs root)',
  'forms.test.js: registered with test.skip',
  'page.test.js: a page run: in the page: page test: a page check (no sync handles)',
  'page.test.js: a page run: in the page: a page test not run',
  'raw.test.js: raw: a raw test'
]

test('runner: every form of tape skip is counted and listed, the count equal to the list', (t) => {
  const dir = tempDir('lsm-runner-')
  for (const [name, text] of Object.entries(FIXTURES)) fs.writeFileSync(path.join(dir, name), text)
  const r = spawnSync(process.execPath, [path.join(__dirname, 'run.js')], { env: { ...process.env, LSM_TEST_DIR: dir }, encoding: 'utf8', timeout: 120_000 })
  const out = r.stdout
  t.is(r.status, 0, `the runner exits 0 (stderr: ${r.stderr.trim().slice(-500)})`)
  const lines = out.split('\n')
  const last = lines.filter((l) => l.trim() !== '').at(-1) ?? ''
  t.is(last, `5 passed, 0 failed, ${EXPECTED_SKIPS.length} skipped`, 'the summary line: skipped assertions are skips, not passes')
  const header = lines.findIndex((l) => /^skipped \(\d+\):$/.test(l))
  t.ok(header >= 0, 'the summary lists the skips')
  const count = Number(/^skipped \((\d+)\):$/.exec(lines[header] ?? '')?.[1])
  const listed: string[] = []
  for (let i = header + 1; header >= 0 && i < lines.length && lines[i].startsWith('  '); i++) listed.push(lines[i].slice(2))
  t.deepEqual(listed, EXPECTED_SKIPS, 'each skip, with its file, its test and its reason')
  t.is(count, listed.length, 'the list\'s count is its length')
  t.is(Number(/(\d+) skipped$/.exec(last)?.[1]), listed.length, 'and the summary line\'s')
  t.ok(out.includes('== forms.test.js: 2 passed, 0 failed, 5 skipped'), 'the file\'s line counts its skips')
  t.end()
})

test('runner: --quick leaves out the browser files and the slow ones', (t) => {
  const dir = tempDir('lsm-runner-')
  const failing = `const test = require(${TAPE})\ntest('not in the quick loop', (t) => { t.fail('ran'); t.end() })\n`
  fs.writeFileSync(path.join(dir, 'browser-fake.test.js'), failing)
  fs.writeFileSync(path.join(dir, 'crash-sweep.test.js'), failing)
  fs.writeFileSync(path.join(dir, 'unit.test.js'), `const test = require(${TAPE})\ntest('a unit test', (t) => { t.pass('ran'); t.end() })\n`)
  const r = spawnSync(process.execPath, [path.join(__dirname, 'run.js'), '--quick'], { env: { ...process.env, LSM_TEST_DIR: dir }, encoding: 'utf8', timeout: 120_000 })
  t.is(r.status, 0, 'the runner exits 0')
  t.deepEqual([...r.stdout.matchAll(/^== ([\w.-]+):/gm)].map((m) => m[1]), ['unit.test.js'], 'only the unit file ran')
  t.end()
})

test('runner: a file held open after its tests ended is killed after a grace and counted as failed, not left to the timeout', (t) => {
  const dir = tempDir('lsm-runner-')
  // A failed test that skipped its cleanup: a server still listening keeps the process alive.
  fs.writeFileSync(path.join(dir, 'held.test.js'), `const test = require(${TAPE})
const server = require('node:net').createServer().listen(0)
test('a test that leaves a server open', (t) => { t.ok(server, 'listening'); t.end() })
`)
  fs.writeFileSync(path.join(dir, 'unit.test.js'), `const test = require(${TAPE})\ntest('a unit test', (t) => { t.pass('ran'); t.end() })\n`)
  const t0 = Date.now()
  const r = spawnSync(process.execPath, [path.join(__dirname, 'run.js')], { env: { ...process.env, LSM_TEST_DIR: dir, LSM_TEST_EXIT_GRACE_S: '2' }, encoding: 'utf8', timeout: 120_000 })
  const ms = Date.now() - t0
  t.is(r.status, 1, 'the runner exits 1')
  t.ok(r.stdout.includes('failing: held.test.js (still running 2 s after its tests ended: something held it open)'), 'the held file is named as failing, with the reason')
  t.ok(r.stdout.includes('== unit.test.js: 1 passed, 0 failed'), 'the next file ran')
  t.ok(ms < 60_000, `in ${ms} ms: the grace, not the file timeout`)
  t.end()
})
