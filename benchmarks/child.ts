// Fresh processes for the benchmarks that measure what a program pays before it
// is warm (benchmarks/fresh.ts, open.ts): the parent runs each measurement in a
// new `node` child of the same script and reads back one JSON line; the child
// loads the engine's package itself, timed, so nothing is compiled or cached
// before the measurement starts.
//
// Nothing here imports an engine: the parent and the child's harness stay free
// of the code being measured until loadEngine() requires it.
import { spawnSync } from 'node:child_process'
import * as path from 'node:path'

export const ENGINES = ['lsm-level', 'classic-level', 'memory-level'] as const
/**
 * The engines, and 'lsm-baseline': another build of lsm-level, the bundle in the
 * directory `BENCH_BASELINE` names (e.g. a copy of an older build's dist/node),
 * run beside this one to measure a change; and 'sqlite': SQLite as a key/value
 * table (benchmarks/sqlite-kv.ts), where it is installed.
 */
export type EngineName = typeof ENGINES[number] | 'lsm-baseline' | 'sqlite'

/** lsm-level, this build or the baseline. */
export const isLsm = (name: EngineName): boolean => name === 'lsm-level' || name === 'lsm-baseline'

/** The flag that marks a child process; the JSON spec follows it. */
const CHILD_FLAG = '--child'

/** The spec the parent passed, in a child; undefined in the parent. */
export function childSpec<T> (): T | undefined {
  const at = process.argv.indexOf(CHILD_FLAG)
  return at < 0 ? undefined : JSON.parse(process.argv[at + 1]) as T
}

/**
 * Runs `script` (this benchmark's compiled file) in a new node process with
 * `spec`, and returns the JSON the child printed last on stdout. `nodeArgs`
 * go before the script (e.g. --cpu-prof). Throws with the child's stderr if it failed.
 */
export function runChild<R> (script: string, spec: unknown, nodeArgs: string[] = []): R {
  const res = spawnSync(process.execPath, [...nodeArgs, script, CHILD_FLAG, JSON.stringify(spec)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  if (res.status !== 0) throw new Error(`child ${JSON.stringify(spec)} failed (${res.status ?? res.signal}):\n${res.stderr}`)
  const lines = res.stdout.trim().split('\n')
  return JSON.parse(lines[lines.length - 1]) as R
}

/** The child's answer to the parent: one JSON line. Then the child exits (engines may keep timers). */
export function reply (result: unknown): void {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

export interface Loaded {
  /** A new, unopened database over `dir` with buffer keys and values, and `options` of the engine. */
  make (dir: string, options?: Record<string, unknown>): any
  /** Milliseconds the package's require() took in this process. */
  requireMs: number
}

/**
 * Requires the engine's package (lsm-level: this checkout's bundle, dist/node/lsm-level.js, what the package loads;
 * lsm-baseline: lsm-level.js in the directory BENCH_BASELINE names), timed.
 */
export function loadEngine (name: EngineName): Loaded {
  const t0 = process.hrtime.bigint()
  /* eslint-disable @typescript-eslint/no-require-imports */
  const ctor = name === 'sqlite'
    ? require('./sqlite-kv').SqliteKv
    : isLsm(name)
      ? require(name === 'lsm-level' ? path.join(__dirname, '..', 'node', 'lsm-level.js') : path.resolve(process.env.BENCH_BASELINE!, 'lsm-level.js')).LsmLevel
      : name === 'classic-level' ? require('classic-level').ClassicLevel : require('memory-level').MemoryLevel
  /* eslint-enable @typescript-eslint/no-require-imports */
  const requireMs = millis(t0)
  const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' }
  return {
    requireMs,
    make: (dir, options = {}) => name === 'memory-level' ? new ctor({ ...BUF, ...options }) : new ctor(dir, { ...BUF, ...options })
  }
}

export const millis = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6

/** The middle value (of 3 runs: the second smallest). */
export function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/** The engines in the order of run `run`: rotated by one each run, so none always goes first. */
export function rotated<T> (items: readonly T[], run: number): T[] {
  const k = run % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}

/** lsm-level's background work done (flushes, compactions): others have none to wait for. */
export async function settled (name: EngineName, db: any): Promise<void> {
  if (isLsm(name)) await db.engine.waitForIdle()
}

/** A full compaction: classic-level wants both bounds, below and above every key of `keySize` bytes. */
export async function compactAll (name: EngineName, db: any, keySize: number): Promise<void> {
  if (name === 'memory-level') return
  await settled(name, db)
  if (isLsm(name)) await db.compactRange()
  else await db.compactRange(Buffer.from([0]), Buffer.alloc(keySize + 1, 0xff))
  await settled(name, db)
}
