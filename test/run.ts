// Runs every test file (dist/test/*.test.js) in its own process and prints a
// summary line: "N passed, N failed" (", N skipped" when tests or assertions
// were skipped, each listed above it with its file, its name and the reason:
// a browser test that cannot run here, say). Exits non-zero on any failure.
// `node dist/test/run.js wal memtable` runs only files matching a name;
// `--quick` leaves out the browser files and the slow ones (SLOW).
//
// Files run one at a time, in name order: tests that depend on the CPU they
// get (reader processes that must see writes, a browser's limit of workers)
// failed when browser files ran beside Node files on 2 cores. LSM_TEST_LANES=2
// opts into two lanes: the browser files (test/browser*.test.ts, bundlers) are
// one lane's queue and the Node files the other's, so that one browser runs at
// a time while Node files run beside it; a lane whose queue is empty takes the
// next file of the other's. Each queue then starts with its longest files
// (LONGEST), so that the lanes end close together. Each file's output is
// buffered and printed whole when it ends, with its counts and time.
//
// Each process preloads util/assertion-guard.js, which fails a test that makes
// no assertion. A file that runs longer than LSM_TEST_FILE_TIMEOUT_S seconds
// (default 1800) is killed, with its children, and counted as failed. The
// summary ends with the last lines of each failing file's output, so that a
// log cut to its end still says what failed. A file still running
// LSM_TEST_EXIT_GRACE_S seconds (default 60) after its last test ended (the
// guard prints a line then; tape's summary waits for the process's exit)
// holds something open (a child process, a server, a database a failed test
// left open): it is killed and counted as failed, not left to the timeout.
import { spawn } from 'node:child_process'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { tapSkips } from './util/tap-skips'
import { TESTS_ENDED } from './util/tests-ended'

/** The test files' directory: this one, or LSM_TEST_DIR (the runner's own test runs it on fixture files). */
const dir = process.env.LSM_TEST_DIR ?? __dirname
/** `--quick` (npm run test:quick): every file but the browser files and the slow ones (SLOW), for a contributor's loop. */
const quick = process.argv.includes('--quick')
const filters = process.argv.slice(2).filter((a) => a !== '--quick')
/** Files that drive a browser: the longest ones, and heavy on both cores. */
const isBrowserFile = (f: string): boolean => f.startsWith('browser') || f.startsWith('bundlers')
/**
 * The files `--quick` leaves out besides the browser files: the long system
 * tests (crashes, kills, many processes, the model, the other compliance
 * suites) and each file that took more than 25 s in a serial run on 2 busy
 * cores (2026-12-06, docs/TESTING.md "The quick loop"). compliance-default
 * stays in, slow as it is: the loop runs one compliance suite.
 */
const SLOW = [
  'backup', 'backup-generations', 'batch-path', 'checkpoint', 'cli', 'compaction', 'compliance-multi-process', 'compliance-remote',
  'compliance-tiered', 'compliance-tiny', 'corruption', 'crash-sweep', 'engine', 'kill', 'model', 'multi-process', 'multi-process-torture',
  'readers', 'replica', 'sstable', 'stats', 'table-format', 'wal'
]
const baseName = (f: string): string => f.replace(/\.test\.js$/, '')
const files = fs.readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => !quick || (!isBrowserFile(f) && !SLOW.includes(baseName(f))))
  .sort()

const lanes = Math.max(1, Number(process.env.LSM_TEST_LANES ?? 1) | 0)
/** The longest files, longest first (minutes each on 2 cores); the others follow in name order. */
const LONGEST = ['browser-firefox', 'browser', 'browser-tabs', 'browser-firefox-tabs', 'engine', 'crash-sweep', 'model', 'compliance-default', 'compaction']
const rank = (f: string): number => {
  const i = LONGEST.indexOf(baseName(f))
  return i < 0 ? LONGEST.length : i
}
const byLength = (list: string[]): string[] => list.slice().sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
const queues = lanes === 1 ? [files.slice()] : [byLength(files.filter(isBrowserFile)), byLength(files.filter((f) => !isBrowserFile(f)))]

let passed = 0
let failed = 0
const failures: string[] = []
/** The skipped tests and assertions (util/tap-skips.ts), each with its file's name. */
const skips: string[] = []
const started = Date.now()

interface Outcome { status: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, timedOut: boolean, heldOpen: boolean }

const FILE_TIMEOUT_MS = Math.max(1, Number(process.env.LSM_TEST_FILE_TIMEOUT_S ?? 1800)) * 1000
/** How long a file may run on after tape's summary (its exit handlers, its temp directories' removal). */
const EXIT_GRACE_MS = Math.max(1, Number(process.env.LSM_TEST_EXIT_GRACE_S ?? 60)) * 1000
/** The last lines of each failing file's output, printed again at the end. */
const failureTails: string[] = []
const TAIL_LINES = 60
/** The process groups of the files running now, ended with the runner (they do not get its terminal's signals). */
const running = new Set<number>()
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    for (const pid of running) { try { process.kill(-pid, 'SIGKILL') } catch {} }
    process.exit(130)
  })
}

/** Runs one test file to its end, its output kept, not printed. */
async function runFile (file: string): Promise<Outcome> {
  return await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', '--require', path.join(__dirname, 'util', 'assertion-guard.js'), path.join(dir, file)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LSM_PARANOID: process.env.LSM_PARANOID ?? '1' },
      // Its own process group: a timeout kills the browsers and workers it started, too.
      detached: true
    })
    running.add(child.pid!)
    let timedOut = false
    let heldOpen = false
    const killGroup = (): void => {
      try { process.kill(-child.pid!, 'SIGKILL') } catch { child.kill('SIGKILL') }
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, FILE_TIMEOUT_MS)
    let graceTimer: NodeJS.Timeout | undefined
    const out: Buffer[] = []
    const err: Buffer[] = []
    /** The output's last characters: where tape's summary appears. */
    let end = ''
    child.stdout.on('data', (b: Buffer) => {
      out.push(b)
      end = (end + b.toString('latin1')).slice(-1000)
      if (graceTimer === undefined && end.includes(TESTS_ENDED)) {
        graceTimer = setTimeout(() => {
          heldOpen = true
          killGroup()
        }, EXIT_GRACE_MS)
      }
    })
    child.stderr.on('data', (b: Buffer) => err.push(b))
    child.on('error', (e) => err.push(Buffer.from(`could not start ${file}: ${e.message}\n`)))
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      clearTimeout(graceTimer)
      running.delete(child.pid!)
      resolve({ status, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), timedOut, heldOpen })
    })
  })
}

/** Prints a finished file's output (failures, skips and diagnostics; not the stream of passing "ok" lines) and counts it. */
function report (file: string, r: Outcome, seconds: number): void {
  const out = r.stdout
  const lines: string[] = []
  for (const line of out.split('\n')) {
    if ((line.startsWith('ok ') && !line.includes(' # SKIP')) || line === TESTS_ENDED) continue
    if (line.trim() !== '') lines.push(line)
  }
  if (lines.length > 0) process.stdout.write(lines.join('\n') + '\n')
  if (r.stderr !== '') process.stderr.write(r.stderr.endsWith('\n') ? r.stderr : r.stderr + '\n')
  const found = tapSkips(out)
  // Tape counts a skipped assertion as a pass: here it is a skip only (a
  // file that crashed before tape's summary has neither).
  const pass = Math.max(0, Number(/^# pass\s+(\d+)/m.exec(out)?.[1] ?? 0) - found.filter((s) => s.kind === 'assertion').length)
  const fail = Number(/^# fail\s+(\d+)/m.exec(out)?.[1] ?? 0)
  const skipped = found.map((s) => `${file}: ${s.text}`)
  skips.push(...skipped)
  passed += pass
  failed += fail
  const crashed = (r.status !== 0 && fail === 0) || r.heldOpen
  const why = r.timedOut
    ? `timed out after ${FILE_TIMEOUT_MS / 1000} s`
    : r.heldOpen ? `still running ${EXIT_GRACE_MS / 1000} s after its tests ended: something held it open` : `exit ${r.status ?? r.signal}`
  if (crashed) {
    failed++
    failures.push(`${file} (${why})`)
  } else if (fail > 0) {
    failures.push(file)
  }
  if (crashed || fail > 0) {
    const tail = [...lines.slice(-TAIL_LINES), ...r.stderr.split('\n').filter((l) => l.trim() !== '').slice(-20).map((l) => 'stderr: ' + l)]
    failureTails.push(`-- ${file} (${why}), its last lines:\n${tail.join('\n')}`)
  }
  console.log(`== ${file}: ${pass} passed, ${fail} failed${skipped.length > 0 ? `, ${skipped.length} skipped` : ''}${crashed ? `, crashed (${why})` : ''} (${seconds.toFixed(1)} s)`)
}

/** The next file for lane `i`: the first of its own queue, or else the first of another's. */
function next (i: number): string | undefined {
  const own = queues[i % queues.length]
  if (own.length > 0) return own.shift()
  return queues.find((q) => q.length > 0)?.shift()
}

async function lane (i: number): Promise<void> {
  for (let file = next(i); file !== undefined; file = next(i)) {
    const t0 = Date.now()
    const r = await runFile(file)
    report(file, r, (Date.now() - t0) / 1000)
  }
}

async function main (): Promise<void> {
  await Promise.all(Array.from({ length: Math.min(lanes, Math.max(files.length, 1)) }, async (_, i) => await lane(i)))
  console.log(`\n${files.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s${lanes > 1 ? ` (${lanes} lanes)` : ''}`)
  if (skips.length > 0) console.log(`skipped (${skips.length}):\n` + skips.map((s) => '  ' + s).join('\n'))
  if (failureTails.length > 0) console.log('\nfailing files, again:\n' + failureTails.join('\n'))
  if (failures.length > 0) console.log('failing: ' + failures.join(', '))
  console.log(`${passed} passed, ${failed} failed${skips.length > 0 ? `, ${skips.length} skipped` : ''}`)
  process.exit(failed > 0 || files.length === 0 ? 1 : 0)
}

void main()
