// checkpoint() of a large database, idle and under a write storm (the target:
// a checkpoint holds the event loop at most 50 ms under any load):
//
//   node dist/benchmarks/checkpoint.js
//   CHECKPOINT_MB=165 ...     database size (default 165)
//   CHECKPOINT_RUNS=9 ...     checkpoints per phase (default 9)
//
// The database is filled in key order (batches of 1,000 puts, 16-byte keys,
// 100 incompressible bytes of value) and its compactions finished. Then:
//   idle   CHECKPOINT_RUNS checkpoints, nothing else running;
//   storm  a loop of single awaited puts (random keys over the same key space)
//          runs in the same process; after 1 s of it, CHECKPOINT_RUNS
//          checkpoints, 300 ms apart, while it goes on.
// Each checkpoint goes to a fresh directory and is timed from the call to its
// resolution; "longest turn" is the longest gap between two runs of a
// setImmediate probe during it (how long the event loop was held at once).
// Printed: median and max of each, what the checkpoints copied, the storm's
// rate, the load average.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { dirBytes, key, value } from './checkpoint-data'
import { Random } from '../test/util/random'

const CHECKPOINT_MB = Number(process.env.CHECKPOINT_MB ?? 165)
const RUNS = Number(process.env.CHECKPOINT_RUNS ?? 9)
const ENTRY_BYTES = 116

interface Timing { ms: number, longestTurnMs: number, made: Record<string, unknown> }

/** One checkpoint into a fresh directory, timed, with the event loop probed meanwhile. */
async function timedCheckpoint (db: LsmLevel<Buffer, Buffer>, target: string): Promise<Timing> {
  let probing = true
  let last = performance.now()
  let longestTurnMs = 0
  const probe = (): void => {
    const now = performance.now()
    if (now - last > longestTurnMs) longestTurnMs = now - last
    last = now
    if (probing) setImmediate(probe)
  }
  setImmediate(probe)
  const t0 = performance.now()
  const made = await db.checkpoint(target)
  const ms = performance.now() - t0
  probing = false
  const { sequence, linked, copied, ...rest } = made as unknown as Record<string, unknown>
  return { ms, longestTurnMs: Math.max(longestTurnMs, performance.now() - last), made: { linked, copied, ...rest } }
}

function summary (label: string, runs: Timing[]): void {
  const sorted = (xs: number[]): number[] => xs.slice().sort((a, b) => a - b)
  const ms = sorted(runs.map((r) => r.ms))
  const turns = sorted(runs.map((r) => r.longestTurnMs))
  const med = (xs: number[]): string => xs[xs.length >> 1].toFixed(1)
  const max = (xs: number[]): string => xs[xs.length - 1].toFixed(1)
  console.log(`  ${label.padEnd(6)} checkpoint median ${med(ms)} ms, max ${max(ms)} ms; longest turn median ${med(turns)} ms, max ${max(turns)} ms`)
  for (const r of runs) console.log(`           ${r.ms.toFixed(1)} ms (turn ${r.longestTurnMs.toFixed(1)} ms) ${JSON.stringify(r.made)}`)
}

async function fill (db: LsmLevel<Buffer, Buffer>, n: number): Promise<void> {
  const ops = Array.from({ length: 1000 }, () => ({ type: 'put' as const, key: Buffer.alloc(0) as Buffer, value: value(0) }))
  for (let i = 0; i < n; i += 1000) {
    for (let j = 0; j < 1000; j++) { ops[j].key = key(i + j); ops[j].value = value(i + j) }
    await db.batch(ops)
  }
  await db.engine.waitForIdle()
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-checkpoint-bench-'))
  try {
    const location = path.join(root, 'db')
    const db = new LsmLevel<Buffer, Buffer>(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await db.open()
    const n = Math.ceil(CHECKPOINT_MB * 1024 * 1024 / ENTRY_BYTES)
    const t0 = Date.now()
    await fill(db, n)
    const { bytes, tables } = dirBytes(location)
    console.log(`checkpoint: ${n} keys, ${(bytes / 1e6).toFixed(0)} MB in ${tables} tables (filled in ${((Date.now() - t0) / 1000).toFixed(0)} s); load average ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}`)
    let made = 0
    const target = (): string => path.join(root, `cp${made++}`)

    const idle: Timing[] = []
    for (let i = 0; i < RUNS; i++) idle.push(await timedCheckpoint(db, target()))
    summary('idle', idle)

    const rnd = new Random(23)
    let storming = true
    let puts = 0
    const storm = (async () => {
      while (storming) {
        const i = rnd.int(n)
        await db.put(key(i), value(i + puts))
        puts++
      }
    })()
    const s0 = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const stormed: Timing[] = []
    for (let i = 0; i < RUNS; i++) {
      stormed.push(await timedCheckpoint(db, target()))
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
    storming = false
    await storm
    const stormS = (Date.now() - s0) / 1000
    summary('storm', stormed)
    console.log(`  storm: ${puts} single awaited puts in ${stormS.toFixed(1)} s (${Math.round(puts / stormS)} puts/s); load average ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}`)
    await db.close()
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
