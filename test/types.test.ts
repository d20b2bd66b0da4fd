// The published typings, as a TypeScript user sees them: test/types/consumer.ts
// (and consumer-esm.mts) import 'lsm-level' by name and must compile; every
// marked line of test/types/negative/bad.ts must be a type error. Needs the
// build (dist/index.d.ts), which `npm test` runs first.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'

// dist/test/types.test.js -> the package root
const root = path.resolve(__dirname, '..', '..')
const tsc = path.join(path.dirname(require.resolve('typescript/package.json', { paths: [root] })), 'bin', 'tsc')

function typeCheck (project: string): { status: number | null, output: string } {
  const r = spawnSync(process.execPath, [tsc, '-p', project, '--noEmit', '--pretty', 'false'], {
    cwd: root, encoding: 'utf8', timeout: 120_000
  })
  return { status: r.status, output: (r.stdout ?? '') + (r.stderr ?? '') }
}

test('a TypeScript consumer compiles: options, sync writes (also on sublevels), extensions, iterators, snapshots, ESM import', (t) => {
  t.ok(fs.existsSync(path.join(root, 'dist', 'index.d.ts')), 'dist/index.d.ts is built')
  const r = typeCheck('test/types/tsconfig.json')
  t.is(r.status, 0, 'tsc exit code 0')
  t.is(r.output.trim(), '', 'no diagnostics')
  t.end()
})

test('wrong options and types fail to compile, each on its line', (t) => {
  const file = 'test/types/negative/bad.ts'
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n')
  const expected = lines.flatMap((line, i) => line.includes('// ERROR') ? [i + 1] : [])
  t.ok(expected.length >= 5, `${expected.length} lines marked ERROR`)
  const r = typeCheck('test/types/negative/tsconfig.json')
  t.not(r.status, 0, 'tsc fails')
  const errorLines = new Set([...r.output.matchAll(/bad\.ts\((\d+),\d+\): error TS\d+/g)].map((m) => Number(m[1])))
  for (const line of expected) t.ok(errorLines.has(line), `line ${line} is an error: ${lines[line - 1].trim()}`)
  for (const line of errorLines) t.ok(expected.includes(line), `error on line ${line} was expected`)
  t.end()
})
