// Block cache size against classic-level's mmap reads (`node dist/benchmarks/cache-size.js`
// after a build): point reads of a database larger than the cache, and the
// memory they cost.
//
//   CACHE_KEYS=200000 node dist/benchmarks/cache-size.js    keys (default 200,000 of 16 + 100 bytes)
//   CACHE_SIZES_MIB=8,16,32,64 ...                          lsm-level cache sizes to measure
//   CACHE_RUNS=2 ...                                        rounds of all configurations, interleaved
//
// One database per engine is filled in random order, compacted and closed
// (untimed, in this process). Then each configuration (lsm-level at each cache
// size, classic-level with its defaults) runs in a fresh child process: it opens
// the database and calls getSync on every key in a seeded random order, three
// times; reported are the median of those three passes in gets/s and the RSS
// after them. LevelDB reads tables through mmap: blocks its 8 MB block cache
// misses are read from mapped pages with no system call, and every page it has
// touched counts in its RSS. lsm-level reads with pread, into its block cache.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Random } from '../test/util/random'
import { describeMachine, int, loadNote, machine } from './report'
import { LsmLevel } from '../index'
import { ClassicLevel } from 'classic-level'

const N = Number(process.env.CACHE_KEYS ?? 200_000)
const SIZES = (process.env.CACHE_SIZES_MIB ?? '8,16,32,64').split(',').map(Number)
const RUNS = Number(process.env.CACHE_RUNS ?? 2)
const PASSES = 3

interface ChildResult { getsPerSec: number, rssMb: number }

function keys (): Buffer[] {
  const rnd = new Random(41)
  return Array.from({ length: N }, () => rnd.bytes(16))
}

async function open (engine: string, dir: string, cacheSize?: number): Promise<any> {
  const options: Record<string, unknown> = { keyEncoding: 'buffer', valueEncoding: 'buffer' }
  if (cacheSize !== undefined) options.cacheSize = cacheSize
  const db = engine === 'lsm-level' ? new LsmLevel(dir, options) : new ClassicLevel(dir, options)
  await db.open()
  return db
}

async function prepare (engine: string, dir: string): Promise<void> {
  const db = await open(engine, dir)
  const ks = keys()
  const rnd = new Random(42)
  for (let i = 0; i < N; i += 1000) {
    await db.batch(ks.slice(i, i + 1000).map((key) => ({ type: 'put', key, value: rnd.bytes(100) })))
  }
  await db.compactRange(Buffer.alloc(0), Buffer.alloc(17, 0xff))
  await db.close()
}

/** In the child: the passes of getSync over every key. */
async function child (engine: string, dir: string, cacheSize: number | undefined): Promise<ChildResult> {
  const db = await open(engine, dir, cacheSize)
  const ks = keys()
  const rnd = new Random(43)
  for (let i = ks.length - 1; i > 0; i--) {
    const j = rnd.int(i + 1)
    const t = ks[i]; ks[i] = ks[j]; ks[j] = t
  }
  const rates: number[] = []
  for (let pass = 0; pass < PASSES; pass++) {
    const t0 = performance.now()
    let found = 0
    for (const k of ks) if (db.getSync(k) !== undefined) found++
    rates.push(ks.length / ((performance.now() - t0) / 1000))
    if (found !== ks.length) throw new Error(`${engine}: ${found} of ${ks.length} keys found`)
  }
  const rssMb = process.memoryUsage().rss / 1048576
  await db.close()
  return { getsPerSec: rates.sort((a, b) => a - b)[1], rssMb }
}

async function main (): Promise<void> {
  if (process.argv[2] === '--child') {
    const [engine, dir, cache] = process.argv.slice(3)
    const r = await child(engine, dir, cache === '-' ? undefined : Number(cache))
    process.stdout.write(JSON.stringify(r))
    return
  }
  const load = loadNote()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-cache-size-'))
  try {
    const dirs = { 'lsm-level': path.join(root, 'lsm'), 'classic-level': path.join(root, 'classic') }
    for (const [engine, dir] of Object.entries(dirs)) await prepare(engine, dir)
    const configs = [...SIZES.map((mib) => ({ name: `lsm-level, cacheSize ${mib} MiB`, engine: 'lsm-level', cache: String(mib * 1024 * 1024) })),
      { name: 'classic-level, defaults (8 MB)', engine: 'classic-level', cache: '-' }]
    const results = new Map<string, ChildResult[]>(configs.map((c) => [c.name, []]))
    for (let run = 0; run < RUNS; run++) {
      for (const c of configs) {
        const out = execFileSync(process.execPath, [__filename, '--child', c.engine, dirs[c.engine as keyof typeof dirs], c.cache], { encoding: 'utf8' })
        results.get(c.name)!.push(JSON.parse(out) as ChildResult)
        console.error(`run ${run + 1}: ${c.name}: ${int(results.get(c.name)!.at(-1)!.getsPerSec)} gets/s`)
      }
    }
    const classic = results.get(configs.at(-1)!.name)!
    console.log(`${int(N)} keys of 16 + 100 bytes, getSync of every key in random order (median of ${PASSES} passes per process), ${RUNS} fresh processes per configuration, interleaved; ${describeMachine(machine())}; load average ${load} at the start`)
    console.log('| configuration | getSync/s per run | / classic-level (same run) | RSS after (MB) |')
    console.log('|---|---:|---:|---:|')
    for (const c of configs) {
      const rs = results.get(c.name)!
      console.log(`| ${c.name} | ${rs.map((r) => int(r.getsPerSec)).join(', ')} | ${rs.map((r, i) => (r.getsPerSec / classic[i].getsPerSec).toFixed(2) + 'x').join(', ')} | ${rs.map((r) => r.rssMb.toFixed(0)).join(', ')} |`)
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
