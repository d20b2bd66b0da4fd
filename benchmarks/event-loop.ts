// Event-loop delay during a sustained fill: N single awaited puts (16-byte random
// keys, 100-byte values, random order), lsm-level vs classic-level in one run,
// measured with perf_hooks.monitorEventLoopDelay. Shows whether flushes and
// compactions ever block the application.
//
//   node dist/benchmarks/event-loop.js            2,000,000 puts per engine
//   EL_KEYS=500000 node dist/benchmarks/event-loop.js
import { monitorEventLoopDelay } from 'node:perf_hooks'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { ClassicLevel } = require('classic-level')

const N = Number(process.env.EL_KEYS ?? 2_000_000)

async function run (name: string, db: any): Promise<void> {
  await db.open()
  const rnd = new Random(7)
  const value = rnd.bytes(100)
  const key = Buffer.alloc(16)
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < 16; j += 4) key.writeUInt32LE(rnd.next(), j)
    await db.put(key, value)
  }
  const sec = Number(process.hrtime.bigint() - t0) / 1e9
  h.disable()
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
    await run('lsm-level', new LsmLevel(path.join(root, 'lsm'), { keyEncoding: 'buffer', valueEncoding: 'buffer' }))
    await run('classic-level', new ClassicLevel(path.join(root, 'classic'), { keyEncoding: 'buffer', valueEncoding: 'buffer' }))
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
