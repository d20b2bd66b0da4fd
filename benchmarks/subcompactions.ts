// Subcompactions on and off (`node dist/benchmarks/subcompactions.js` after a
// build): lsm-level's option `subcompactions` (a large compaction split in two
// halves on the two worker threads), on a fill that waits for compaction.
//
//   SUB_DOCS=200000 node dist/benchmarks/subcompactions.js   JSON documents (default 200,000, ~77 MB)
//   SUB_RUNS=3 ...                                          fresh processes per setting, interleaved
//
// Each run is a fresh child process: it fills the documents (benchmarks/
// json-docs.ts, seeded, 16-byte random keys) in batches of 1,000 puts, timed,
// with the stall time the engine counted; then compactRange() over everything,
// timed. classic-level runs the same in its own children, for scale.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { ClassicLevel } from 'classic-level'
import { Random } from '../test/util/random'
import { jsonDocuments } from './json-docs'
import { describeMachine, int, loadNote, machine } from './report'

const DOCS = Number(process.env.SUB_DOCS ?? 200_000)
const RUNS = Number(process.env.SUB_RUNS ?? 3)
const BATCH = 1000

interface ChildResult { fillPutsPerSec: number, stallMs?: number, compactMs: number, split?: number, compactions?: number }

const CONFIGS = [
  { name: 'lsm-level, subcompactions on', engine: 'lsm', options: { subcompactions: true } },
  { name: 'lsm-level, subcompactions off', engine: 'lsm', options: { subcompactions: false } },
  { name: 'classic-level', engine: 'classic', options: {} }
] as const

async function child (engine: string, options: object, dir: string): Promise<ChildResult> {
  const docs = jsonDocuments(DOCS, 1)
  const rnd = new Random(2)
  const keys = docs.map(() => rnd.bytes(16))
  const db: any = engine === 'lsm'
    ? new LsmLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', ...options })
    : new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const t0 = performance.now()
  for (let i = 0; i < DOCS; i += BATCH) {
    const ops = []
    for (let j = i; j < Math.min(DOCS, i + BATCH); j++) ops.push({ type: 'put', key: keys[j], value: docs[j] })
    await db.batch(ops)
  }
  const fillMs = performance.now() - t0
  const t1 = performance.now()
  await db.compactRange(Buffer.alloc(0), Buffer.alloc(17, 0xff))
  const compactMs = performance.now() - t1
  const s = engine === 'lsm' ? db.stats() : undefined
  await db.close()
  return { fillPutsPerSec: DOCS / (fillMs / 1000), stallMs: s?.stallMs, compactMs, split: s?.compactions.split, compactions: s?.compactions.done }
}

async function main (): Promise<void> {
  if (process.argv[2] === '--child') {
    const [engine, options, dir] = process.argv.slice(3)
    process.stdout.write(JSON.stringify(await child(engine, JSON.parse(options), dir)))
    return
  }
  const load = loadNote()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-subcompactions-'))
  const results = new Map<string, ChildResult[]>(CONFIGS.map((c) => [c.name, []]))
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const c of CONFIGS) {
        const dir = path.join(root, `run-${run}-${c.engine}-${results.get(c.name)!.length}`)
        const out = execFileSync(process.execPath, [__filename, '--child', c.engine, JSON.stringify(c.options), dir], { encoding: 'utf8' })
        fs.rmSync(dir, { recursive: true, force: true })
        const r = JSON.parse(out) as ChildResult
        results.get(c.name)!.push(r)
        console.error(`run ${run + 1}: ${c.name}: fill ${int(r.fillPutsPerSec)} puts/s, compactRange ${int(r.compactMs)} ms`)
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const on = results.get(CONFIGS[0].name)!
  const off = results.get(CONFIGS[1].name)!
  console.log(`${int(DOCS)} JSON documents, batches of ${BATCH} puts, then compactRange(); ${RUNS} fresh processes per setting, interleaved; ${describeMachine(machine())}; load average ${load} at the start`)
  console.log('| setting | fill, puts/s per run | stalls (ms) | compactRange (ms) | compactions split / done |')
  console.log('|---|---:|---:|---:|---:|')
  for (const c of CONFIGS) {
    const rs = results.get(c.name)!
    const list = (f: (r: ChildResult) => number | undefined): string => rs.map((r) => { const v = f(r); return v === undefined ? '-' : int(v) }).join(', ')
    console.log(`| ${c.name} | ${list((r) => r.fillPutsPerSec)} | ${list((r) => r.stallMs)} | ${list((r) => r.compactMs)} | ${rs.map((r) => r.split === undefined ? '-' : `${r.split} / ${r.compactions!}`).join(', ')} |`)
  }
  console.log(`on / off, same run: fill ${on.map((r, i) => (r.fillPutsPerSec / off[i].fillPutsPerSec).toFixed(2) + 'x').join(', ')}; compactRange time ${on.map((r, i) => (r.compactMs / off[i].compactMs).toFixed(2) + 'x').join(', ')}`)
}

main().catch((err) => { console.error(err); process.exit(1) })
