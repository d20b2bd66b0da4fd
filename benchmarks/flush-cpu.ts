// The CPU time of the first flushes of a fresh process: what a bulk load's
// first flushes cost while V8 has not compiled the table writer yet. Each run
// is a new `node` child that fills FLUSH_COUNT memtables of 26,000 entries (16-byte
// random keys, 100-byte random values: a full default write buffer of
// fresh.ts's data) and runs the flush job on each, as the flush thread does
// (lib/compaction/job.ts runFlushJob, to the node file system), timing each by
// this thread's CPU time (Linux: /proc/thread-self/schedstat), not wall time,
// so that other work on a shared machine moves the figures less.
// With a second compiled checkout (its dist/ directory), runs alternate the two.
//
//   node dist/benchmarks/flush-cpu.js [OTHER_DIST] (FLUSH_RUNS=5, FLUSH_COUNT=5)
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'

const RUNS = Number(process.env.FLUSH_RUNS ?? 5)
const COUNT = Number(process.env.FLUSH_COUNT ?? 5)
const ENTRIES = 26_000

/** A child: flushes COUNT memtables with the modules of `root` (a dist/ directory); prints the CPU ms of each. */
async function child (root: string): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  require(path.join(root, 'hosts/node/crc.js'))
  const { MemTable } = require(path.join(root, 'lib/memtable/memtable.js'))
  const { runFlushJob } = require(path.join(root, 'lib/compaction/job.js'))
  const { nodeFileSystem } = require(path.join(root, 'hosts/node/node-fs.js'))
  const { Random } = require(path.join(__dirname, '..', 'test', 'util', 'random.js'))
  /* eslint-enable @typescript-eslint/no-require-imports */
  const cpuMs = (): number => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-flush-cpu-'))
  const rnd = new Random(1)
  const states = []
  for (let m = 0; m < COUNT; m++) {
    const mem = new MemTable()
    for (let i = 0; i < ENTRIES; i++) mem.add(m * ENTRIES + i + 1, 1, rnd.bytes(16), rnd.bytes(100))
    states.push(mem.entriesState())
  }
  const table = { blockSize: 4096, blockRestartInterval: 16, bloomBitsPerKey: 10, compression: false }
  const out: number[] = []
  try {
    for (let m = 0; m < COUNT; m++) {
      const t0 = cpuMs()
      await runFlushJob({ dir, entries: states[m], table, smallestSnapshot: 2 ** 48 - 1, rangeTombstones: [], floorBase: 0, fileNumber: m + 1 }, nodeFileSystem)
      out.push(cpuMs() - t0)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.stdout.write(JSON.stringify(out))
}

function parent (): void {
  if (!fs.existsSync('/proc/thread-self/schedstat')) {
    console.log('flush-cpu: needs /proc/thread-self/schedstat (Linux); skipped')
    return
  }
  const roots: Array<[string, string]> = [['this checkout', path.join(__dirname, '..')]]
  if (process.argv[2] !== undefined) roots.push([process.argv[2], path.resolve(process.argv[2])])
  const totals = new Map<string, number[]>()
  for (let run = 0; run < RUNS; run++) {
    for (const [name, root] of run % 2 === 0 ? roots : [...roots].reverse()) {
      const ms: number[] = JSON.parse(execFileSync(process.execPath, [__filename, '--child', root], { encoding: 'utf8' }))
      const total = ms.reduce((a, b) => a + b, 0)
      totals.set(name, [...(totals.get(name) ?? []), total])
      console.log(`run ${run + 1} ${name}: ${ms.map((x) => x.toFixed(0)).join(' ')} ms (${total.toFixed(0)} in all)  load ${os.loadavg()[0].toFixed(1)}`)
    }
  }
  for (const [name, list] of totals) {
    const sorted = [...list].sort((a, b) => a - b)
    console.log(`${name}: ${COUNT} flushes of ${ENTRIES} entries, CPU ${sorted[0].toFixed(0)}-${sorted[sorted.length - 1].toFixed(0)} ms, median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)}`)
  }
}

if (process.argv[2] === '--child') {
  child(process.argv[3]).catch((err) => { console.error(err); process.exit(1) })
} else {
  parent()
}
