// Lists the abstract-level compliance tests that pass without asserting anything.
//
// A tape test whose function never reaches an assertion still passes: a test
// that builds its checks but never runs them (the suite's "seek() respects
// range" pushed functions into its promise list instead of calling them) looks
// green. This tool runs the suite against lsm-level, classic-level and
// memory-level in one private tape harness, counts the assertions of every
// test (its 'result' events), and prints the tests whose count is zero, per
// engine (comments, t.comment(), are not assertions). Run after a build:
//
//   node dist/test/compliance-audit.js [lsm-level] [classic-level] [memory-level]
//
// It is not part of `npm test` (the suite runs three times, about a minute);
// test/documented-semantics.test.ts asserts what the zero-assertion tests meant
// to check. The suite runs a second time on a sublevel of each database: those
// tests are listed with "(sublevel)".
import tape from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { LsmLevel } from '../index'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

/** A private tape harness: a `test` function with its own stream. */
type Harness = ReturnType<typeof tape.createHarness>

type Factory = (options?: Record<string, unknown>) => unknown

/** One test of one engine's run: where the suite registers it, and what it asserted. */
interface Counted {
  engine: string
  /** The suite's file and line that registered the test, e.g. iterator-test.js:187. */
  source: string
  name: string
  /** Registered by the suite's second run, on a sublevel of the database. */
  sublevel: boolean
  assertions: number
  skipped: boolean
}

/** tape's Test object, as far as this tool uses it. */
interface TapeTest {
  /** 'result' carries an assertion (an object) or a comment (a string). */
  on: (event: 'result', listener: (result: object | string) => void) => void
  _skip?: boolean
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-compliance-audit-'))
let dirs = 0
const dir = (): string => path.join(root, String(dirs++))

const ENGINES: Record<string, Factory> = {
  'lsm-level': (options) => new LsmLevel(dir(), options),
  'classic-level': (options) => new ClassicLevel(dir(), options),
  'memory-level': (options) => new MemoryLevel(options)
}

/** The suite file and line in the caller's stack (the suite's call to `test`). */
function suiteSource (): string {
  const m = /abstract-level[\\/]test[\\/](.+?):(\d+):\d+/.exec(new Error().stack ?? '')
  return m ? `${m[1]}:${m[2]}` : '?'
}

/**
 * Registers the suite for one engine on the harness, through a `test` function
 * that prefixes the engine's name and counts each test's assertions. The first
 * test's name coming round again marks the start of the sublevel run.
 */
function register (harness: Harness, engine: string, factory: Factory, counted: Counted[]): void {
  let first: string | undefined
  let sublevel = false
  const test = (name: string, ...rest: unknown[]): TapeTest => {
    if (first === undefined) first = name
    else if (name === first) sublevel = true
    const entry: Counted = { engine, source: suiteSource(), name, sublevel, assertions: 0, skipped: false }
    counted.push(entry)
    const t = (harness as unknown as (...args: unknown[]) => TapeTest)(`[${engine}${sublevel ? ', sublevel' : ''}] ${name}`, ...rest)
    entry.skipped = t._skip === true
    t.on('result', (result) => { if (typeof result === 'object') entry.assertions++ })
    return t
  }
  suite({ test, factory })
}

/** The suite's setup and teardown tests open or close its shared database: nothing to assert. */
const isFixture = (c: Counted): boolean => / (setup|teardown)$/.test(c.name)

/** A table cell: the assertions on the database / on a sublevel, "-" where the suite did not run the test. */
function cell (runs: Counted[]): string {
  const count = (sublevel: boolean): string => {
    const mine = runs.filter((c) => c.sublevel === sublevel)
    return mine.length === 0 ? '-' : mine.map((c) => c.skipped ? 'skip' : String(c.assertions)).join('+')
  }
  return `${count(false)} / ${count(true)}`
}

function report (counted: Counted[], engines: string[], failures: number): void {
  for (const engine of engines) {
    const mine = counted.filter((c) => c.engine === engine)
    const zero = mine.filter((c) => c.assertions === 0 && !c.skipped)
    const fixtures = zero.filter(isFixture).length
    console.log(`${engine}: ${mine.length} tests (database and sublevel runs), ${mine.reduce((n, c) => n + c.assertions, 0)} assertions, ` +
      `${mine.filter((c) => c.skipped).length} skipped, ${zero.length} with zero assertions (${fixtures} of them setup/teardown)`)
  }
  // One row per test (suite file, line and name) that asserted nothing on some engine, setup and teardown aside.
  const rows = new Map<string, Counted[]>()
  for (const c of counted) {
    if (isFixture(c)) continue
    const key = `${c.source} | ${c.name}`
    rows.set(key, [...(rows.get(key) ?? []), c])
  }
  console.log(`\n| suite file:line | test | ${engines.join(' | ')} |\n|---|---|${engines.map(() => '---|').join('')}`)
  for (const [key, runs] of rows) {
    if (!runs.some((c) => c.assertions === 0 && !c.skipped)) continue
    console.log(`| ${key} | ${engines.map((e) => cell(runs.filter((c) => c.engine === e))).join(' | ')} |`)
  }
  console.log('\ncells: assertions on the database / on a sublevel; "-": the suite does not run the test on that engine')
  console.log(`failed assertions: ${failures}`)
}

function main (): void {
  const wanted = process.argv.slice(2)
  const engines = wanted.length > 0 ? wanted : Object.keys(ENGINES)
  for (const e of engines) if (!(e in ENGINES)) throw new Error(`unknown engine ${e}: one of ${Object.keys(ENGINES).join(', ')}`)
  const harness = tape.createHarness()
  const counted: Counted[] = []
  for (const engine of engines) register(harness, engine, ENGINES[engine], counted)
  let failures = 0
  const stream = harness.createStream({ objectMode: true })
  stream.on('data', (row: { type?: string, ok?: boolean, name?: string }) => {
    if (row.type === 'assert' && row.ok === false) {
      failures++
      console.log(`not ok: ${row.name ?? ''}`)
    }
  })
  stream.on('end', () => {
    report(counted, engines, failures)
    fs.rmSync(root, { recursive: true, force: true })
  })
}

main()
