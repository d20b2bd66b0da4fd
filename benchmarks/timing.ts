// How the side-by-side benchmarks time a workload (benchmarks/run.ts,
// json-workload.ts): a loop of awaited single operations with each one's
// latency, tinybench samples of an idempotent operation, or a whole run's wall
// time.
import { Bench } from 'tinybench'

/** Untimed runs of each tinybench operation before it is measured. */
const WARMUP = 1000

/** Operations per second, and for single operations their p50 / p99 latency in µs. */
export interface Row { ops: number, p50?: number, p99?: number }

function percentile (sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

/** A plain loop of `count` awaited operations, each one's latency recorded (µs). */
export async function singleOps (count: number, op: (i: number) => Promise<unknown> | unknown): Promise<Row> {
  const lat = new Float64Array(count)
  const t0 = process.hrtime.bigint()
  let prev = t0
  for (let i = 0; i < count; i++) {
    await op(i)
    const now = process.hrtime.bigint()
    lat[i] = Number(now - prev) / 1000
    prev = now
  }
  const sec = Number(prev - t0) / 1e9
  lat.sort()
  return { ops: count / sec, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) }
}

/** `count` runs of an idempotent operation under tinybench (after a warmup), one latency sample per run. */
export async function tinyOps (count: number, op: (i: number) => unknown, isAsync: boolean): Promise<Row> {
  let i = 0
  const bench = new Bench({ iterations: count, time: 0, warmupIterations: Math.min(WARMUP, count), warmupTime: 0, throws: true })
  if (isAsync) bench.add('op', async () => { await op(i++ % count) }, { async: true })
  else bench.add('op', () => { op(i++ % count) }, { async: false })
  await bench.run()
  const result = bench.tasks[0].result
  if (result.state !== 'completed') throw new Error(`tinybench task ${result.state}`)
  return { ops: 1000 / result.period, p50: result.latency.p50 * 1000, p99: result.latency.p99 * 1000 }
}

/** Whole-run timing of a workload that returns how many operations it did (ops/s only). */
export async function timed (fn: () => Promise<number>): Promise<Row> {
  const t0 = process.hrtime.bigint()
  const ops = await fn()
  return { ops: ops / (Number(process.hrtime.bigint() - t0) / 1e9) }
}

export const seconds = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e9
