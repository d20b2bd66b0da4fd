// Event-loop delay during a sustained fill: N single awaited puts (16-byte random
// keys, 100-byte values, random order), lsm-level vs classic-level in one run,
// measured with perf_hooks.monitorEventLoopDelay. Shows whether flushes and
// compactions ever block the application.
//
//   node dist/benchmarks/event-loop.js            2,000,000 puts per engine
//   EL_KEYS=500000 node dist/benchmarks/event-loop.js
//   EL_TRACE=1 ...   also lists the longest gaps between 1 ms timer ticks, with
//                    the garbage collections that overlap them and what the
//                    engine was doing (to find what blocks the loop)
//   EL_ONLY=lsm-level  one engine
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

import { ClassicLevel } from 'classic-level'

const N = Number(process.env.EL_KEYS ?? 2_000_000)
const TRACE = process.env.EL_TRACE === '1'

interface Gap { at: number, ms: number, state: string, waitMs: number }

/** Time this thread spent runnable but waiting for a CPU, in ms (Linux; 0 elsewhere). */
function runQueueWaitMs (): number {
  try {
    return Number(fs.readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[1]) / 1e6
  } catch {
    return 0
  }
}

/** Gaps over 8 ms between 1 ms timer ticks, and GC entries, to line them up afterwards. */
function startTrace (db: any): { stop: () => void } {
  const gaps: Gap[] = []
  const gcs: Array<{ start: number, ms: number, kind: number }> = []
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, ms: e.duration, kind: (e as any).detail?.kind ?? (e as any).kind })
  })
  obs.observe({ entryTypes: ['gc'] })
  let last = performance.now()
  let lastWait = runQueueWaitMs()
  const timer = setInterval(() => {
    const now = performance.now()
    const wait = runQueueWaitMs()
    const waited = wait - lastWait
    lastWait = wait
    if (now - last > 8) {
      let state = ''
      if (typeof db.stats === 'function') {
        const s = db.stats()
        state = `flushes ${s.flushes}, compactions ${s.compactions.done}+${s.compactions.trivialMoves} (running ${s.compactions.running}), L0 ${s.levels[0].files}, mem ${(s.memtableBytes / 1e6).toFixed(1)} MB`
      }
      gaps.push({ at: last, ms: now - last, state, waitMs: waited })
    }
    last = now
  }, 1)
  return {
    stop: () => {
      clearInterval(timer)
      obs.disconnect()
      gaps.sort((a, b) => b.ms - a.ms)
      const gcTotal = gcs.reduce((s, g) => s + g.ms, 0)
      const waitTotal = gaps.reduce((s, g) => s + g.waitMs, 0)
      const gapTotal = gaps.reduce((s, g) => s + g.ms, 0)
      console.log(`#   trace: ${gaps.length} gaps > 8 ms (${gapTotal.toFixed(0)} ms, of which ${waitTotal.toFixed(0)} ms waiting for a CPU); ${gcs.length} GCs, ${gcTotal.toFixed(0)} ms in total, longest ${Math.max(0, ...gcs.map((g) => g.ms)).toFixed(1)} ms`)
      for (const g of gaps.slice(0, 15)) {
        const inside = gcs.filter((x) => x.start < g.at + g.ms && x.start + x.ms > g.at)
        const gcMs = inside.reduce((s, x) => s + x.ms, 0)
        console.log(`#   gap ${g.ms.toFixed(1)} ms at ${(g.at / 1000).toFixed(2)} s: waiting for a CPU ${g.waitMs.toFixed(1)} ms, GC ${gcMs.toFixed(1)} ms (${inside.map((x) => `kind ${x.kind} ${x.ms.toFixed(1)}`).join(', ')}) | ${g.state}`)
      }
    }
  }
}

async function run (name: string, db: any): Promise<void> {
  await db.open()
  const rnd = new Random(7)
  const value = rnd.bytes(100)
  const key = Buffer.alloc(16)
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const trace = TRACE ? startTrace(db) : undefined
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < 16; j += 4) key.writeUInt32LE(rnd.next(), j)
    await db.put(key, value)
  }
  const sec = Number(process.hrtime.bigint() - t0) / 1e9
  h.disable()
  trace?.stop()
  const ms = (ns: number): string => (ns / 1e6).toFixed(1)
  let extra = ''
  if (name === 'lsm-level') {
    const s = db.stats()
    extra = ` | stalls ${s.stallMs} ms, ${s.flushes} flushes, ${s.compactions.done} compactions (+${s.compactions.trivialMoves} moves), write amp ${s.writeAmplification.toFixed(2)}`
  }
  console.log(`| ${name} | ${Math.round(N / sec).toLocaleString('en-US')} | ${ms(h.percentile(50))} | ${ms(h.percentile(99))} | ${ms(h.max)} |${extra}`)
  await db.close()
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-el-'))
  console.log(`# ${N.toLocaleString('en-US')} awaited puts, 16 B random keys, 100 B values; Node ${process.version}`)
  console.log('| engine | puts/s | loop delay p50 ms | p99 ms | max ms |')
  console.log('|---|---:|---:|---:|---:|')
  try {
    const only = process.env.EL_ONLY
    if (only === undefined || only === 'lsm-level') await run('lsm-level', new LsmLevel(path.join(root, 'lsm'), { keyEncoding: 'buffer', valueEncoding: 'buffer' }))
    if (only === undefined || only === 'classic-level') await run('classic-level', new ClassicLevel(path.join(root, 'classic'), { keyEncoding: 'buffer', valueEncoding: 'buffer' }))
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
