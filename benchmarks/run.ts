// Side-by-side benchmark (`npm run bench`): lsm-level, classic-level and
// memory-level in one run, interleaved workload by workload, with LevelDB's
// db_bench names and YCSB's core workloads A, B and C. Prints ops/s, p50/p99
// latency of single operations, the ratios to classic-level and to
// memory-level, the space on disk after a fill and a full compaction, and each
// target of the performance issue with its measured ratio. Then the same for
// compressible data: JSON documents (json-workload.ts), with lsm-level's
// compression on and off.
//
//   npm run bench                          200,000 keys (a few minutes)
//   npm run bench:md                       the same, and writes its section of BENCHMARKS.md
//   BENCH_KEYS=50000 npm run bench         smaller
//   BENCH_ONLY=readrandom,ycsb-a ...       a subset (fillrandom always runs: the reads need it)
//   BENCH_ONLY=json ...                    only the JSON documents
//   BENCH_JSON_DOCS=50000 ...              fewer JSON documents (default: BENCH_KEYS)
//   BENCH_SEED=7 ...                       other keys, values and access orders (default 1)
//   BENCH_MARKDOWN=FILE ...                write the result as Markdown into FILE's section
//
// Data: 16-byte random keys, 100-byte random (incompressible) values, all from
// a seeded PRNG; then seeded JSON documents (json-docs.ts). Reads start from a database that was filled in random order,
// fully compacted (`compactRange()` over everything, which also waits for
// lsm-level's background work), closed and reopened.
//
// Timing: the read-only single-operation workloads run under tinybench (one
// sample per operation, after a warmup of 1,000; ops/s = 1 / mean latency);
// fills, mixed workloads and YCSB are a plain loop of awaited operations, each
// operation counted once (ops/s = operations / wall time; p50/p99 from the
// time of each operation); concurrent workloads report ops/s only.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'
import { ScrambledZipfian } from './zipf'
import { type Row, seconds, singleOps, timed, tinyOps } from './timing'
import { type JsonResult, jsonReport, jsonTargets, runJsonWorkload } from './json-workload'
import { commandLine, dateLine, describeMachine, dirSize, gitCommit, int, loadNote, machine, mb, micros, ratio, writeSection } from './report'

import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'

const N = Number(process.env.BENCH_KEYS ?? 200_000)
const SEED = Number(process.env.BENCH_SEED ?? 1) >>> 0
const SYNC_OPS = Number(process.env.BENCH_SYNC_OPS ?? 2000)
const SEEK_OPS = Math.min(N, Number(process.env.BENCH_SEEK_OPS ?? 10_000))
const YCSB_OPS = Number(process.env.BENCH_YCSB_OPS ?? N)
const MARKDOWN = process.env.BENCH_MARKDOWN
/** Other processes competing for the cores when the run started. */
const startLoad = loadNote()
const JSON_DOCS = Number(process.env.BENCH_JSON_DOCS ?? N)
const ENV_NAMES = ['BENCH_KEYS', 'BENCH_SEED', 'BENCH_SYNC_OPS', 'BENCH_SEEK_OPS', 'BENCH_YCSB_OPS', 'BENCH_ONLY', 'BENCH_LSM_OPTIONS', 'BENCH_JSON_DOCS']
const KEY_SIZE = 16
const VALUE_SIZE = 100
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
/** The random-value workloads run unless BENCH_ONLY names only the JSON one. */
const RANDOM_VALUES = ONLY === undefined || [...ONLY].some((w) => w !== 'json')
const ENGINES = ['lsm-level', 'classic-level', 'memory-level'] as const
type EngineName = typeof ENGINES[number]
type Persistent = Exclude<EngineName, 'memory-level'>

const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' }
// BENCH_LSM_OPTIONS: JSON merged into lsm-level's options, for experiments
// (e.g. '{"blockSize":1024}'). Runs that set it are not the default comparison.
const LSM_OPTIONS = process.env.BENCH_LSM_OPTIONS ? JSON.parse(process.env.BENCH_LSM_OPTIONS) : {}

function make (name: EngineName, dir: string): any {
  if (name === 'lsm-level') return new LsmLevel(dir, { ...BUF, ...LSM_OPTIONS })
  if (name === 'classic-level') return new ClassicLevel(dir, BUF)
  return new MemoryLevel(BUF)
}

const results = new Map<string, Map<EngineName, Row>>()
function record (workload: string, engine: EngineName, row: Row): void {
  if (!results.has(workload)) results.set(workload, new Map())
  results.get(workload)!.set(engine, row)
  const lat = row.p50 === undefined ? '' : ` (p50 ${micros(row.p50)} µs, p99 ${micros(row.p99!)} µs)`
  console.error(`  ${workload.padEnd(22)} ${engine.padEnd(14)} ${int(row.ops).padStart(11)} ops/s${lat}`)
}

interface Space { bytes: number, compactSeconds: number }
const space = new Map<Persistent, Space>()

/**
 * After the random fill: a full compaction (lsm-level: its background work
 * first), the directory's size once closed, then a reopen (lsm-level: and
 * whatever background work the reopen starts), so reads start from a settled tree.
 */
async function settle (name: EngineName, db: any, dir: string): Promise<any> {
  if (name === 'memory-level') return db
  const t0 = process.hrtime.bigint()
  if (name === 'lsm-level') await db.engine.waitForIdle()
  // classic-level requires both bounds: below and above every 16-byte key.
  if (name === 'lsm-level') await db.compactRange()
  else await db.compactRange(Buffer.from([0]), Buffer.alloc(KEY_SIZE + 1, 0xff))
  if (name === 'lsm-level') await db.engine.waitForIdle()
  const compactSeconds = seconds(t0)
  await db.close()
  space.set(name, { bytes: dirSize(dir), compactSeconds })
  const again = make(name, dir)
  await again.open()
  if (name === 'lsm-level') await again.engine.waitForIdle()
  return again
}

/** Untimed: the settled database holds what was written (present keys, absent keys, the count by scanning). */
async function verify (name: EngineName, db: any, keys: Buffer[], missing: Buffer[], value: (i: number) => Buffer): Promise<void> {
  const rnd = new Random(SEED + 99)
  for (let j = 0; j < 1000; j++) {
    const i = rnd.int(N)
    const got: Buffer | undefined = await db.get(keys[i])
    if (got === undefined || !got.equals(value(i))) throw new Error(`${name}: wrong value for key #${i}`)
    if (await db.get(missing[i]) !== undefined) throw new Error(`${name}: a value for absent key #${i}`)
  }
}

interface Ycsb { name: string, reads: number }
const YCSB: Ycsb[] = [
  { name: 'ycsb-a', reads: 0.5 },
  { name: 'ycsb-b', reads: 0.95 },
  { name: 'ycsb-c', reads: 1 }
]

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bench-'))
  const started = new Date()
  const want = (w: string): boolean => ONLY === undefined || ONLY.has(w)

  // The data set, seeded: keys, absent keys right next to them, values, access orders.
  const rndKeys = new Random(SEED)
  const keys = Array.from({ length: N }, () => rndKeys.bytes(KEY_SIZE))
  const missing = keys.map((k) => { const m = Buffer.from(k); m[KEY_SIZE - 1] ^= 1; return m }) // between present keys
  const pool = new Random(SEED + 1).bytes(N * VALUE_SIZE)
  const value = (i: number): Buffer => pool.subarray((i % N) * VALUE_SIZE, (i % N + 1) * VALUE_SIZE)
  const rndOrder = new Random(SEED + 2)
  const order = Uint32Array.from({ length: N }, () => rndOrder.int(N))
  const sequential = Array.from({ length: N }, (_, i) => { const k = Buffer.alloc(KEY_SIZE); k.writeUInt32BE(i, KEY_SIZE - 4); return k })
  const logicalBytes = N * (KEY_SIZE + VALUE_SIZE)

  console.error(`# ${int(N)} keys of ${KEY_SIZE} B, random values of ${VALUE_SIZE} B, seed ${SEED}; ${describeMachine(machine())}`)
  const dbs = new Map<EngineName, any>()
  let jsonResult: JsonResult | undefined
  try {
    if (RANDOM_VALUES) {
      // Untimed: let the JIT compile each engine's paths before the first timed workload.
      for (const e of ENGINES) {
        const db = make(e, path.join(root, e + '-warmup'))
        await db.open()
        for (let i = 0; i < Math.min(N, 5000); i++) await db.put(keys[i], value(i))
        for (let i = 0; i < Math.min(N, 5000); i++) await db.get(keys[i])
        // The batch path too (fillbatch has no warmup of its own).
        for (let i = 0; i < Math.min(N, 5000); i += 1000) {
          const ops = []
          for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: value(j) })
          await db.batch(ops)
        }
        // Iterators too, after a reopen (lsm-level's memtable is then a table):
        // full scans and seeks (the timed scans would otherwise measure the JIT).
        await db.close()
        await db.open()
        for (let r = 0; r < 10; r++) {
          const it = db.iterator()
          while ((await it.nextv(1000)).length > 0) { /* read to the end */ }
          await it.close()
        }
        for (let i = 0; i < Math.min(N, 500); i++) {
          const it = db.iterator({ gte: keys[i] })
          await it.nextv(100)
          await it.close()
        }
        await db.close()
      }
      if (want('fillseq')) {
        for (const e of ENGINES) {
          const db = make(e, path.join(root, e + '-seq'))
          await db.open()
          record('fillseq', e, await singleOps(N, (i) => db.put(sequential[i], value(i))))
          await db.close()
        }
      }
      for (const e of ENGINES) {
        const dir = path.join(root, e)
        const db = make(e, dir)
        await db.open()
        record('fillrandom', e, await singleOps(N, (i) => db.put(keys[i], value(i))))
        dbs.set(e, await settle(e, db, dir))
        await verify(e, dbs.get(e), keys, missing, value)
      }
      const readAll = async (db: any): Promise<number> => {
        let n = 0
        const it = db.iterator()
        for (;;) { const batch = await it.nextv(1000); if (batch.length === 0) break; n += batch.length }
        await it.close()
        if (n !== N) throw new Error(`readseq saw ${n} entries, expected ${N}`)
        return n
      }
      const workloads: Array<[string, (db: any, e: EngineName) => Promise<Row>]> = [
        ['readrandom', (db) => tinyOps(N, (i) => db.get(keys[order[i]]), true)],
        ['readmissing', (db) => tinyOps(N, (i) => db.get(missing[order[i]]), true)],
        ['readrandomsync', (db) => tinyOps(N, (i) => db.getSync(keys[order[i]]), false)],
        ['readrandom64', (db) => timed(async () => {
          let next = 0
          await Promise.all(Array.from({ length: 64 }, async () => {
            while (next < N) { const i = next++; await db.get(keys[order[i]]) }
          }))
          return N
        })],
        // Three full scans, the median reported: one scan lasts ~0.1-0.5 s, and single ones moved by 1.8x.
        ['readseq', async (db) => { const r = [await timed(() => readAll(db)), await timed(() => readAll(db)), await timed(() => readAll(db))]; return r.sort((a, b) => a.ops - b.ops)[1] }],
        ['seekrandom', (db) => tinyOps(SEEK_OPS, async (i) => {
          const it = db.iterator({ gte: keys[order[i]] })
          await it.nextv(100)
          await it.close()
        }, true)],
        ['readwhilewriting', (db) => singleOps(N, (i) => i % 20 === 0 ? db.put(keys[order[i]], value(i + 1)) : db.get(keys[order[i]]))]
      ]
      for (const [n, w] of YCSB.entries()) {
        // The same seeded sequence of operations for every engine, drawn before timing.
        const rnd = new Random(SEED + 10 + n)
        const zipf = new ScrambledZipfian(N, rnd)
        const target = Uint32Array.from({ length: YCSB_OPS }, () => zipf.next())
        const isRead = Uint8Array.from({ length: YCSB_OPS }, () => rnd.float() < w.reads ? 1 : 0)
        workloads.push([w.name, (db) => singleOps(YCSB_OPS, (i) => isRead[i] === 1 ? db.get(keys[target[i]]) : db.put(keys[target[i]], value(target[i] + i)))])
      }
      for (const [name, fn] of workloads) {
        if (!want(name)) continue
        for (const e of ENGINES) record(name, e, await fn(dbs.get(e), e))
      }
      for (const e of ENGINES) await dbs.get(e).close()
      dbs.clear()
      if (want('fillbatch')) {
        for (const e of ENGINES) {
          const db = make(e, path.join(root, e + '-batch'))
          await db.open()
          record('fillbatch', e, await timed(async () => {
            for (let i = 0; i < N; i += 1000) {
              const ops = []
              for (let j = i; j < Math.min(N, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: value(j) })
              await db.batch(ops)
            }
            return N
          }))
          await db.close()
        }
      }
      if (want('fillsync')) {
        for (const writers of [1, 64]) {
          const name = writers === 1 ? 'fillsync' : 'fillsync (64 writers)'
          // 64 writers commit ~64 puts per fsync: 10x the puts, or the run lasts a few dozen fsyncs.
          const ops = Math.min(N, writers === 1 ? SYNC_OPS : 10 * SYNC_OPS)
          for (const e of ENGINES) {
            if (e === 'memory-level') continue
            const db = make(e, path.join(root, `${e}-sync${writers}`))
            await db.open()
            // Earlier workloads leave tens of MB of dirty pages being written back,
            // which slows every fsync: start each engine's run from a clean page cache.
            flushOsWrites()
            record(name, e, await timed(async () => {
              let next = 0
              await Promise.all(Array.from({ length: writers }, async () => {
                while (next < ops) { const i = next++; await db.put(keys[i], value(i), { sync: true }) }
              }))
              return ops
            }))
            await db.close()
          }
        }
      }
    }
    if (want('json')) jsonResult = await runJsonWorkload(root, JSON_DOCS, SEED, LSM_OPTIONS)
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => {})
    fs.rmSync(root, { recursive: true, force: true })
  }

  const md = report(started, logicalBytes, jsonResult)
  console.log(md)
  if (MARKDOWN !== undefined) {
    writeSection(MARKDOWN, 'bench', md)
    console.error(`# wrote the section "bench" of ${MARKDOWN}`)
  }
}

/** Writes the OS's dirty pages out (sync(1), where there is one); best effort. */
function flushOsWrites (): void {
  if (process.platform === 'win32') return
  try { execFileSync('sync', { stdio: 'ignore' }) } catch {}
}

const NOTES: Record<string, string> = {
  fillseq: 'awaited put, ascending keys',
  fillrandom: 'awaited put, random keys',
  readrandom: 'awaited get, present keys',
  readmissing: 'awaited get, absent keys between present ones',
  readrandomsync: '`getSync`, present keys',
  readrandom64: '64 gets in flight',
  readseq: 'full scan, `nextv(1000)`, median of 3; entries/s',
  seekrandom: 'seek, then `nextv(100)`; ranges/s',
  readwhilewriting: 'awaited ops, 95% get / 5% put',
  'ycsb-a': 'YCSB A: 50% get / 50% update, zipfian',
  'ycsb-b': 'YCSB B: 95% get / 5% update, zipfian',
  'ycsb-c': 'YCSB C: 100% get, zipfian',
  fillbatch: 'batches of 1,000 puts; puts/s',
  fillsync: '`{ sync: true }` puts, 1 writer',
  'fillsync (64 writers)': '`{ sync: true }` puts, 64 writers'
}

interface Target { what: string, measured: number | undefined, min?: number, max?: number }

function targets (logicalBytes: number): Target[] {
  const r = (w: string, other: EngineName): number | undefined => {
    const row = results.get(w)
    const lsm = row?.get('lsm-level')
    const o = row?.get(other)
    return lsm !== undefined && o !== undefined ? lsm.ops / o.ops : undefined
  }
  const out: Target[] = []
  for (const w of ['fillseq', 'fillrandom', 'readrandom', 'readmissing', 'readwhilewriting', 'ycsb-a', 'ycsb-b', 'ycsb-c']) {
    if (!results.has(w)) continue
    out.push({ what: `${w} vs classic-level`, measured: r(w, 'classic-level'), min: 5 })
    out.push({ what: `${w} vs memory-level`, measured: r(w, 'memory-level'), min: 1 })
  }
  const more: Array<[string, number]> = [['readrandomsync', 1.5], ['fillbatch', 2], ['readseq', 2], ['seekrandom', 3], ['readrandom64', 2], ['fillsync', 1], ['fillsync (64 writers)', 5]]
  for (const [w, min] of more) if (results.has(w)) out.push({ what: `${w} vs classic-level`, measured: r(w, 'classic-level'), min })
  const lsmSpace = space.get('lsm-level')
  if (lsmSpace !== undefined) out.push({ what: 'lsm-level space on disk after fill and compaction / logical bytes', measured: lsmSpace.bytes / logicalBytes, max: 1.1 })
  return out
}

function report (started: Date, logicalBytes: number, json: JsonResult | undefined): string {
  const lines: string[] = []
  const m = machine()
  lines.push('### Side by side: lsm-level, classic-level, memory-level')
  lines.push('')
  lines.push(dateLine(started, startLoad))
  lines.push(`- Machine: ${describeMachine(m)}`)
  lines.push(`- Commit: ${gitCommit()}`)
  lines.push(`- Command: \`${commandLine(ENV_NAMES)}\``)
  lines.push(`- Data: ${int(N)} keys of ${KEY_SIZE} bytes (random), values of ${VALUE_SIZE} random bytes (incompressible), seed ${SEED}; ` +
    `${int(SEEK_OPS)} seeks, ${int(YCSB_OPS)} operations per YCSB workload, ${int(SYNC_OPS)} sync puts (${int(Math.min(N, 10 * SYNC_OPS))} with 64 writers); default options for every engine (block cache: lsm-level 32 MiB, classic-level 8 MB plus its mmap reads)`)
  lines.push('')
  lines.push('ops/s, then p50 / p99 latency in µs of single operations; ratios are lsm-level\'s ops/s over the other engine\'s in this run.')
  lines.push('')
  lines.push('| workload | what | lsm-level | classic-level | memory-level | lsm / classic | lsm / memory |')
  lines.push('|---|---|---:|---:|---:|---:|---:|')
  for (const [w, r] of results) {
    const lsm = r.get('lsm-level')!
    const cell = (e: EngineName): string => {
      const row = r.get(e)
      if (row === undefined) return 'n/a'
      return int(row.ops) + (row.p50 === undefined ? '' : ` (${micros(row.p50)} / ${micros(row.p99!)})`)
    }
    const rel = (e: EngineName): string => r.get(e) === undefined ? 'n/a' : ratio(lsm.ops / r.get(e)!.ops)
    lines.push(`| ${w} | ${NOTES[w] ?? ''} | ${cell('lsm-level')} | ${cell('classic-level')} | ${cell('memory-level')} | ${rel('classic-level')} | ${rel('memory-level')} |`)
  }
  if (space.size > 0) {
    lines.push('')
    lines.push(`Space after the random fill and a full \`compactRange()\` (directory size once closed; logical bytes = keys + values = ${mb(logicalBytes)}):`)
    lines.push('')
    lines.push('| engine | on disk | / logical bytes | compaction after the fill (s) |')
    lines.push('|---|---:|---:|---:|')
    for (const [e, s] of space) lines.push(`| ${e} | ${mb(s.bytes)} | ${(s.bytes / logicalBytes).toFixed(3)}x | ${s.compactSeconds.toFixed(1)} |`)
  }
  lines.push('')
  if (json !== undefined) {
    lines.push(...jsonReport(json))
    lines.push('')
  }
  lines.push('Targets of the performance and compression issues (ratios from this run):')
  lines.push('')
  lines.push('| target | wanted | measured | |')
  lines.push('|---|---:|---:|---|')
  for (const t of [...targets(logicalBytes), ...(json === undefined ? [] : jsonTargets(json))]) {
    const wanted = t.min !== undefined ? `>= ${t.min}x` : `<= ${t.max!}x`
    const met = t.measured !== undefined && (t.min === undefined || t.measured >= t.min) && (t.max === undefined || t.measured <= t.max)
    lines.push(`| ${t.what} | ${wanted} | ${t.measured === undefined ? 'n/a' : t.max !== undefined ? t.measured.toFixed(3) + 'x' : ratio(t.measured)} | ${met ? 'met' : '**missed**'} |`)
  }
  return lines.join('\n')
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
