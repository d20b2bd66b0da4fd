// Larger than the cache (`npm run bench:large`): 5,000,000 keys (~580 MB of
// keys and values) with an 8 MiB block cache, lsm-level vs classic-level. Each
// engine runs in its own child process, one after the other, so that the memory
// figures (peak RSS, peak V8 heap) are that engine's alone.
//
//   npm run bench:large                      5,000,000 keys
//   LARGE_KEYS=500000 npm run bench:large    smaller, while developing
//   LARGE_READS=100000 ...                   operations per read workload (default 200,000)
//   LARGE_SEED=7 ...                         other keys, values and read order (default 1)
//   BENCH_MARKDOWN=BENCHMARKS.md ...         also write the result into that file's section "bench-large"
//
// Per engine: a fill in random key order, in batches of 1,000 puts; lsm-level
// then finishes its background compactions (timed separately; classic-level
// has no way to wait for its own); close; reopen; an untimed check of 1,000
// keys; then single awaited gets of present keys, getSync of present keys,
// awaited gets of absent keys (between present ones), all uniformly random;
// then a full scan. Keys and values are computed from their index (no key
// list is held in memory): 16 bytes and 100 incompressible bytes.
import { fork } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'
import { commandLine, dateLine, describeMachine, dirSize, gitCommit, int, loadNote, machine, mb, micros, ratio, writeSection } from './report'

import { ClassicLevel } from 'classic-level'

const N = Number(process.env.LARGE_KEYS ?? 5_000_000)
const READS = Number(process.env.LARGE_READS ?? 200_000)
const SEED = Number(process.env.LARGE_SEED ?? 1) >>> 0
const CACHE = 8 * 1024 * 1024
/** Other processes competing for the cores when the run started. */
const startLoad = loadNote()
const BATCH = 1000
const KEY_SIZE = 16
const VALUE_SIZE = 100
const ENGINES = ['lsm-level', 'classic-level'] as const
type EngineName = typeof ENGINES[number]
const ENV_NAMES = ['LARGE_KEYS', 'LARGE_READS', 'LARGE_SEED']

/** murmur3's 32-bit finalizer: a bijection on uint32. */
function fmix32 (h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

const SALT = fmix32(SEED ^ 0x5bd1e995)

/** Key #i: 16 pseudo-random bytes; the first 4 are a bijection of i, so keys are distinct (i < 2^30). */
function writeKey (i: number, out: Buffer): Buffer {
  for (let j = 0; j < 4; j++) out.writeUInt32BE(fmix32(((i * 4 + j) ^ SALT) >>> 0), j * 4)
  return out
}

/** The value of key #i: 100 pseudo-random (incompressible) bytes. */
function makeValue (i: number): Buffer {
  const out = Buffer.allocUnsafe(VALUE_SIZE)
  const base = fmix32((i ^ ~SALT) >>> 0)
  for (let j = 0; j < VALUE_SIZE; j += 4) out.writeUInt32LE(fmix32((base + j * 0x9e3779b9) >>> 0), j)
  return out
}

/** Peak memory: RSS, the anonymous part of RSS (Linux; not file pages mapped from the tables), V8 heap used. */
interface Memory { rss: number, rssAnon: number, heapUsed: number }
interface Phase { name: string, ops: number, p50?: number, p99?: number, seconds: number, peak: Memory }
interface ChildResult {
  engine: EngineName
  phases: Phase[]
  bytesOnDisk: number
  maxRssKernel: number
  settleSeconds: number
  reopenSeconds: number
}

// ------------------------------------------------------------------ child: one engine

let peak: Memory = { rss: 0, rssAnon: 0, heapUsed: 0 }
let samples = 0

/** RssAnon from /proc/self/status (NaN where there is none). */
function rssAnon (): number {
  try {
    const m = /^RssAnon:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    return m ? Number(m[1]) * 1024 : NaN
  } catch {
    return NaN
  }
}

/** Cheap (process.memoryUsage) every call; the anonymous RSS every 16th call. */
function sample (): void {
  const m = process.memoryUsage()
  if (m.rss > peak.rss) peak.rss = m.rss
  if (m.heapUsed > peak.heapUsed) peak.heapUsed = m.heapUsed
  if ((samples++ & 15) === 0) {
    const anon = rssAnon()
    if (!(anon <= peak.rssAnon)) peak.rssAnon = anon
  }
}

function percentile (sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

/** A phase: its time and the peak memory seen during it (sampled every 1,024 ops and every 100 ms). */
async function phase (name: string, fn: () => Promise<{ ops: number, lat?: Float64Array }>): Promise<Phase> {
  peak = { rss: 0, rssAnon: 0, heapUsed: 0 }
  samples = 0
  sample()
  const t0 = process.hrtime.bigint()
  const { ops, lat } = await fn()
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  samples = 0
  sample()
  const out: Phase = { name, ops: ops / seconds, seconds, peak }
  if (lat !== undefined) {
    lat.sort()
    out.p50 = percentile(lat, 0.5)
    out.p99 = percentile(lat, 0.99)
  }
  console.error(`  ${name.padEnd(12)} ${int(out.ops).padStart(10)} ops/s  ${seconds.toFixed(1)} s  peak RSS ${mb(peak.rss)} (anonymous ${mb(peak.rssAnon)}), heap ${mb(peak.heapUsed)}`)
  return out
}

/** `count` awaited (or sync) single operations, each one's latency in µs. */
async function singles (count: number, op: (i: number) => unknown): Promise<{ ops: number, lat: Float64Array }> {
  const lat = new Float64Array(count)
  let prev = process.hrtime.bigint()
  for (let i = 0; i < count; i++) {
    await op(i)
    const now = process.hrtime.bigint()
    lat[i] = Number(now - prev) / 1000
    prev = now
    if ((i & 1023) === 0) sample()
  }
  return { ops: count, lat }
}

function open (engine: EngineName, dir: string): any {
  const options = { keyEncoding: 'buffer', valueEncoding: 'buffer', cacheSize: CACHE }
  return engine === 'lsm-level' ? new LsmLevel(dir, options) : new ClassicLevel(dir, options)
}

async function child (engine: EngineName): Promise<ChildResult> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-large-'))
  const dir = path.join(root, engine)
  const timer = setInterval(sample, 100)
  const phases: Phase[] = []
  try {
    let db = open(engine, dir)
    await db.open({ cacheSize: CACHE })
    phases.push(await phase('fill', async () => {
      for (let i = 0; i < N; i += BATCH) {
        const ops = []
        for (let j = i; j < Math.min(N, i + BATCH); j++) ops.push({ type: 'put', key: writeKey(j, Buffer.allocUnsafe(KEY_SIZE)), value: makeValue(j) })
        await db.batch(ops)
        sample()
      }
      return { ops: N }
    }))
    let t0 = process.hrtime.bigint()
    if (engine === 'lsm-level') await db.engine.waitForIdle()
    const settleSeconds = Number(process.hrtime.bigint() - t0) / 1e9
    await db.close()
    t0 = process.hrtime.bigint()
    db = open(engine, dir)
    await db.open({ cacheSize: CACHE })
    const reopenSeconds = Number(process.hrtime.bigint() - t0) / 1e9
    if (engine === 'lsm-level') await db.engine.waitForIdle()

    const rnd = new Random(SEED + 2)
    const key = Buffer.allocUnsafe(KEY_SIZE) // reused: each get completes before the next starts
    for (let n = 0; n < 1000; n++) {
      const i = rnd.int(N)
      const got: Buffer | undefined = await db.get(writeKey(i, key))
      if (got === undefined || !got.equals(makeValue(i))) throw new Error(`${engine}: wrong value for key #${i}`)
    }
    const order = Uint32Array.from({ length: READS }, () => rnd.int(N))
    phases.push(await phase('readrandom', () => singles(READS, (n) => db.get(writeKey(order[n], key)))))
    phases.push(await phase('readrandomsync', () => singles(READS, (n) => db.getSync(writeKey(order[n], key)))))
    phases.push(await phase('readmissing', () => singles(READS, (n) => {
      writeKey(order[n], key)
      key[KEY_SIZE - 1] ^= 1 // right next to a present key
      return db.get(key)
    })))
    phases.push(await phase('readseq', async () => {
      let count = 0
      const it = db.iterator()
      for (;;) {
        const entries = await it.nextv(1000)
        if (entries.length === 0) break
        count += entries.length
        sample()
      }
      await it.close()
      if (count !== N) throw new Error(`${engine}: the scan saw ${count} entries, expected ${N}`)
      return { ops: count }
    }))
    await db.close()
    return { engine, phases, bytesOnDisk: dirSize(dir), maxRssKernel: process.resourceUsage().maxRSS * 1024, settleSeconds, reopenSeconds }
  } finally {
    clearInterval(timer)
    fs.rmSync(root, { recursive: true, force: true })
  }
}

// ------------------------------------------------------------------ parent: both engines, the report

function runChild (engine: EngineName): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = fork(__filename, ['--child', engine], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    let result: ChildResult | undefined
    proc.on('message', (m) => { result = m as ChildResult })
    proc.on('error', reject)
    proc.on('exit', (code) => {
      if (code === 0 && result !== undefined) resolve(result)
      else reject(new Error(`${engine}: child exited with code ${String(code)}`))
    })
  })
}

const WHAT: Record<string, string> = {
  fill: `batches of ${int(BATCH)} puts, random order; puts/s`,
  readrandom: 'awaited get, present keys',
  readrandomsync: '`getSync`, present keys',
  readmissing: 'awaited get, absent keys',
  readseq: 'full scan, `nextv(1000)`; entries/s'
}

function report (results: ChildResult[], started: Date): string {
  const logical = N * (KEY_SIZE + VALUE_SIZE)
  const by = new Map(results.map((r) => [r.engine, r]))
  const lsm = by.get('lsm-level')!
  const classic = by.get('classic-level')!
  const lines: string[] = []
  lines.push('### Larger than the cache: lsm-level vs classic-level')
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(machine())}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: ${int(N)} keys of ${KEY_SIZE} random bytes, values of ${VALUE_SIZE} random (incompressible) bytes: ${mb(logical)} logical; seed ${SEED}; ` +
    `\`cacheSize\` 8 MiB for both, other options default (lsm-level: 4 MiB write buffer); ${int(READS)} operations per read workload, keys drawn uniformly; each engine in its own process`)
  lines.push('')
  lines.push('ops/s, then p50 / p99 latency in µs of single operations; peak memory of the process during each workload: RSS (all of it / its anonymous part, i.e. without file pages mapped from the tables) and V8 heap used.')
  lines.push('')
  lines.push('| workload | what | lsm-level | classic-level | lsm / classic | lsm-level RSS / anonymous / heap | classic-level RSS / anonymous / heap |')
  lines.push('|---|---|---:|---:|---:|---:|---:|')
  for (const p of lsm.phases) {
    const c = classic.phases.find((x) => x.name === p.name)!
    const cell = (x: Phase): string => int(x.ops) + (x.p50 === undefined ? '' : ` (${micros(x.p50)} / ${micros(x.p99!)})`)
    const mem = (x: Phase): string => `${mb(x.peak.rss)} / ${mb(x.peak.rssAnon)} / ${mb(x.peak.heapUsed)}`
    lines.push(`| ${p.name} | ${WHAT[p.name]} | ${cell(p)} | ${cell(c)} | ${ratio(p.ops / c.ops)} | ${mem(p)} | ${mem(c)} |`)
  }
  lines.push('')
  lines.push('| engine | fill (s) | background work left after the fill (s) | reopen (s) | on disk at the end | / logical bytes | peak RSS of the process |')
  lines.push('|---|---:|---:|---:|---:|---:|---:|')
  for (const r of [lsm, classic]) {
    const fill = r.phases.find((x) => x.name === 'fill')!
    const settle = r.engine === 'lsm-level' ? r.settleSeconds.toFixed(1) : 'n/a (cannot be awaited)'
    lines.push(`| ${r.engine} | ${fill.seconds.toFixed(1)} | ${settle} | ${r.reopenSeconds.toFixed(2)} | ${mb(r.bytesOnDisk)} | ${(r.bytesOnDisk / logical).toFixed(3)}x | ${mb(r.maxRssKernel)} |`)
  }
  return lines.join('\n')
}

async function parent (): Promise<void> {
  const started = new Date()
  console.error(`# ${int(N)} keys, ${int(READS)} reads per workload, 8 MiB block cache; ${describeMachine(machine())}`)
  const results: ChildResult[] = []
  for (const e of ENGINES) {
    console.error(`# ${e}`)
    results.push(await runChild(e))
  }
  const md = report(results, started)
  console.log(md)
  const file = process.env.BENCH_MARKDOWN
  if (file !== undefined) {
    writeSection(file, 'bench-large', md)
    console.error(`# wrote the section "bench-large" of ${file}`)
  }
}

if (process.argv[2] === '--child') {
  child(process.argv[3] as EngineName).then((r) => {
    process.send!(r, () => process.exit(0))
  }, (err) => {
    console.error(err)
    process.exit(1)
  })
} else {
  parent().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
