// Runs every test file (dist/test/*.test.js) in its own process, one after the
// other, and prints a summary line: "N passed, N failed" (", N skipped" when
// files registered skipped tests, which it lists: a browser test that cannot
// run here). Exits non-zero on any failure. `node dist/test/run.js wal memtable` runs only files matching a name.
// Each process preloads util/assertion-guard.js, which fails a test that makes
// no assertion.
import { spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as path from 'node:path'

const dir = __dirname
const filters = process.argv.slice(2)
const files = fs.readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()

let passed = 0
let failed = 0
const failures: string[] = []
/** Tests a file registered as skipped (tape prints "# SKIP <name>"), with the file's name. */
const skips: string[] = []
const started = Date.now()

for (const file of files) {
  const t0 = Date.now()
  const r = spawnSync(process.execPath, ['--expose-gc', '--require', path.join(dir, 'util', 'assertion-guard.js'), path.join(dir, file)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, LSM_PARANOID: process.env.LSM_PARANOID ?? '1' }
  })
  const out = r.stdout ?? ''
  // Failures and diagnostics are worth seeing; the stream of "ok" lines is not.
  for (const line of out.split('\n')) {
    if (line.startsWith('ok ')) continue
    if (line.trim() !== '') process.stdout.write(line + '\n')
  }
  const pass = Number(/^# pass\s+(\d+)/m.exec(out)?.[1] ?? 0)
  const fail = Number(/^# fail\s+(\d+)/m.exec(out)?.[1] ?? 0)
  const skipped = [...out.matchAll(/^# SKIP (.*)$/gm)].map((m) => `${file}: ${m[1]}`)
  skips.push(...skipped)
  passed += pass
  failed += fail
  const crashed = r.status !== 0 && fail === 0
  if (crashed) {
    failed++
    failures.push(`${file} (exit ${r.status ?? r.signal})`)
  } else if (fail > 0) {
    failures.push(file)
  }
  console.log(`== ${file}: ${pass} passed, ${fail} failed${skipped.length > 0 ? `, ${skipped.length} skipped` : ''}${crashed ? ', crashed' : ''} (${((Date.now() - t0) / 1000).toFixed(1)} s)`)
}

console.log(`\n${files.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s`)
if (skips.length > 0) console.log(`skipped (${skips.length}):\n` + skips.map((s) => '  ' + s).join('\n'))
if (failures.length > 0) console.log('failing: ' + failures.join(', '))
console.log(`${passed} passed, ${failed} failed${skips.length > 0 ? `, ${skips.length} skipped` : ''}`)
process.exit(failed > 0 || files.length === 0 ? 1 : 0)
