// Import throughput (`node dist/benchmarks/import.js` after a build): a LevelDB
// database written by classic-level, moved over with LsmLevel.importLevelDB.
// The import runs in a child process of its own, so that its peak RSS is the
// import's alone.
//
//   IMPORT_MB=150 node dist/benchmarks/import.js     source size on disk, per workload (default 150)
//   IMPORT_DIR=/path ...                            where the sources are kept between runs
//                                                  (default: the temp directory; rebuilt if missing)
//
// Workloads (sources written in batches of 1,000 puts in scattered key order,
// closed without a manual compaction, so they hold level-0 tables, several
// levels and a log, as a live database does):
//   json     JSON order documents (benchmarks/json-docs.ts), Snappy on
//            (classic-level's default)
//   random   16-byte keys, 100 incompressible bytes, compression off
// The import runs with its defaults (new tables Snappy-compressed, a 4 MiB
// memory bound for the log replay). Reported: source bytes read, time, MB/s
// of source data, CPU time, peak RSS.
import { fork } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'
import { jsonDocuments } from './json-docs'
import { dirSize, loadNote, mb } from './report'

import { ClassicLevel } from 'classic-level'

const TARGET_BYTES = Number(process.env.IMPORT_MB ?? 150) * 1024 * 1024
const ROOT = process.env.IMPORT_DIR ?? path.join(os.tmpdir(), 'lsm-level-import-bench')
const BATCH = 1000
const WORKLOADS = ['json', 'random'] as const
type Workload = typeof WORKLOADS[number]

/** A unique key per index, in scattered order (multiplication by an odd constant is a bijection mod 2^32). */
function key (i: number): Buffer {
  return Buffer.from(`k${String((Math.imul(i, 0x9e3779b1) >>> 0)).padStart(10, '0')}_${String(i).padStart(5, '0')}`.slice(0, 16))
}

async function writeSource (workload: Workload, dir: string): Promise<void> {
  fs.rmSync(dir, { recursive: true, force: true })
  const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', compression: workload === 'json' })
  await db.open()
  const rnd = new Random(1)
  for (let i = 0, round = 0; ; round++) {
    const values = workload === 'json' ? jsonDocuments(BATCH, round + 1) : Array.from({ length: BATCH }, () => rnd.bytes(100))
    await db.batch(values.map((value) => ({ type: 'put' as const, key: key(i++), value })))
    if (round % 50 === 0 && dirSize(dir) >= TARGET_BYTES) break
  }
  await db.close()
}

interface ChildResult {
  report: Awaited<ReturnType<typeof LsmLevel.importLevelDB>>
  maxRssBytes: number
  /** CPU time of the import process (user + system): the figure to trust when other processes share the cores. */
  cpuMs: number
}

async function runChild (src: string, dest: string): Promise<void> {
  fs.rmSync(dest, { recursive: true, force: true })
  const cpu = process.cpuUsage()
  const report = await LsmLevel.importLevelDB(src, dest)
  const used = process.cpuUsage(cpu)
  const result: ChildResult = { report, maxRssBytes: process.resourceUsage().maxRSS * 1024, cpuMs: (used.user + used.system) / 1000 }
  process.send?.(result)
  fs.rmSync(dest, { recursive: true, force: true })
}

async function importInChild (src: string, dest: string): Promise<ChildResult> {
  return await new Promise((resolve, reject) => {
    const child = fork(__filename, ['child', src, dest])
    let result: ChildResult | undefined
    child.on('message', (m) => { result = m as ChildResult })
    child.on('error', reject)
    child.on('exit', (code) => result !== undefined && code === 0 ? resolve(result) : reject(new Error(`import child exited with ${String(code)}`)))
  })
}

async function main (): Promise<void> {
  if (process.argv[2] === 'child') return await runChild(process.argv[3], process.argv[4])
  console.log(`import benchmark: sources of ${mb(TARGET_BYTES)} in ${ROOT}; ${loadNote()}`)
  fs.mkdirSync(ROOT, { recursive: true })
  for (const workload of WORKLOADS) {
    const src = path.join(ROOT, `${workload}-${TARGET_BYTES}`)
    if (!fs.existsSync(path.join(src, 'CURRENT'))) {
      const t0 = Date.now()
      await writeSource(workload, src)
      console.log(`${workload}: wrote the source with classic-level in ${((Date.now() - t0) / 1000).toFixed(1)}s`)
    }
    const files = fs.readdirSync(src)
    const { report, maxRssBytes, cpuMs } = await importInChild(src, path.join(ROOT, `${workload}-imported`))
    const mbPerS = report.bytesRead / 1e6 / (report.ms / 1000)
    console.log(`${workload}: source ${mb(dirSize(src))} (${files.filter((n) => n.endsWith('.ldb')).length} tables, ${files.filter((n) => n.endsWith('.log')).length} logs); ` +
      `read ${mb(report.bytesRead)}, ${report.entries} entries, ${report.keys} keys in ${(report.ms / 1000).toFixed(2)}s: ` +
      `${mbPerS.toFixed(1)} MB/s of source data (CPU ${(cpuMs / 1000).toFixed(2)}s: ${(report.bytesRead / 1e6 / (cpuMs / 1000)).toFixed(1)} MB per CPU second); peak RSS ${mb(maxRssBytes)}`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
