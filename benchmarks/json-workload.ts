// The compressible workload of `npm run bench` (benchmarks/run.ts): seeded JSON
// order documents of a few hundred bytes (json-docs.ts) under ids as keys, in
// random order. Per engine, after an untimed warmup: half the documents filled
// in batches of 1,000, the other half by awaited single puts; a full compaction;
// the directory measured once closed; a reopen; then random gets of every
// document and full scans, in READ_ROUNDS rounds that alternate the engines
// (each round a third of the gets, or one scan; the median round is reported),
// so that a change in the machine's load lands on every engine alike. lsm-level
// runs twice, with compression on (the default) and off, beside classic-level
// (Snappy on, its default) and memory-level.
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'
import { jsonDocuments } from './json-docs'
import { dirSize, int, mb, micros, ratio } from './report'
import { type Row, seconds, singleOps, timed, tinyOps } from './timing'

import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'

export const JSON_ENGINES = ['lsm-level', 'lsm-level (compression off)', 'classic-level', 'memory-level'] as const
type JsonEngine = typeof JSON_ENGINES[number]

const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' }
const BATCH = 1000
const READ_ROUNDS = 3
const WARMUP_DOCS = 5000

function make (name: JsonEngine, dir: string, lsmOptions: object): any {
  if (name === 'lsm-level') return new LsmLevel(dir, { ...BUF, ...lsmOptions })
  if (name === 'lsm-level (compression off)') return new LsmLevel(dir, { ...BUF, ...lsmOptions, compression: false })
  if (name === 'classic-level') return new ClassicLevel(dir, BUF)
  return new MemoryLevel(BUF)
}

export interface JsonResult {
  docs: number
  logicalBytes: number
  /** Workload -> engine -> row. */
  rows: Map<string, Map<JsonEngine, Row>>
  /** Directory size once compacted and closed (persistent engines). */
  onDisk: Map<JsonEngine, number>
  compactSeconds: Map<JsonEngine, number>
}

interface Data {
  keys: Buffer[]
  docs: Buffer[]
  /** Insertion order and get order: permutations of the documents. */
  fillOrder: Uint32Array
  getOrder: Uint32Array
}

function shuffled (n: number, rnd: Random): Uint32Array {
  const a = Uint32Array.from({ length: n }, (_, i) => i)
  for (let i = n - 1; i > 0; i--) {
    const j = rnd.int(i + 1)
    const t = a[i]
    a[i] = a[j]
    a[j] = t
  }
  return a
}

function makeData (n: number, seed: number): Data {
  const docs = jsonDocuments(n, seed)
  const keys = docs.map((_, i) => Buffer.from(`ord_${String(i).padStart(8, '0')}`))
  const rnd = new Random(seed + 1)
  return { keys, docs, fillOrder: shuffled(n, rnd), getOrder: shuffled(n, rnd) }
}

/** Runs the workload on every engine under `root`; prints each row to stderr as it comes. */
export async function runJsonWorkload (root: string, n: number, seed: number, lsmOptions: object): Promise<JsonResult> {
  const data = makeData(n, seed)
  const result: JsonResult = {
    docs: n,
    logicalBytes: data.keys.reduce((s, k) => s + k.length, 0) + data.docs.reduce((s, d) => s + d.length, 0),
    rows: new Map(),
    onDisk: new Map(),
    compactSeconds: new Map()
  }
  const record = (workload: string, engine: JsonEngine, row: Row): void => {
    if (!result.rows.has(workload)) result.rows.set(workload, new Map())
    result.rows.get(workload)!.set(engine, row)
    const lat = row.p50 === undefined ? '' : ` (p50 ${micros(row.p50)} µs, p99 ${micros(row.p99!)} µs)`
    console.error(`  ${workload.padEnd(22)} ${engine.padEnd(28)} ${int(row.ops).padStart(11)} ops/s${lat}`)
  }
  console.error(`# JSON documents: ${int(n)} documents, ${mb(result.logicalBytes)} of keys and values, seed ${seed}`)
  const half = Math.floor(n / 2)
  const dbs = new Map<JsonEngine, any>()
  try {
    for (const e of JSON_ENGINES) await warmup(e, path.join(root, 'json-warmup-' + e.replace(/\W+/g, '-')), data, lsmOptions)
    for (const e of JSON_ENGINES) {
      const dir = path.join(root, 'json-' + e.replace(/\W+/g, '-'))
      const db = make(e, dir, lsmOptions)
      await db.open()
      record('json fillbatch', e, await timed(async () => {
        for (let i = 0; i < half; i += BATCH) {
          const ops = []
          for (let j = i; j < Math.min(half, i + BATCH); j++) ops.push({ type: 'put', key: data.keys[data.fillOrder[j]], value: data.docs[data.fillOrder[j]] })
          await db.batch(ops)
        }
        return half
      }))
      record('json fillrandom', e, await singleOps(n - half, (i) => db.put(data.keys[data.fillOrder[half + i]], data.docs[data.fillOrder[half + i]])))
      dbs.set(e, await settle(e, db, dir, result, lsmOptions))
    }
    for (const e of JSON_ENGINES) await check(e, dbs.get(e), data)
    const gets = new Map<JsonEngine, Row[]>(JSON_ENGINES.map((e) => [e, []]))
    const scans = new Map<JsonEngine, Row[]>(JSON_ENGINES.map((e) => [e, []]))
    const share = Math.ceil(n / READ_ROUNDS)
    for (let r = 0; r < READ_ROUNDS; r++) {
      const from = r * share
      const count = Math.min(share, n - from)
      for (const e of JSON_ENGINES) gets.get(e)!.push(await tinyOps(count, (i) => dbs.get(e).get(data.keys[data.getOrder[from + i]]), true))
    }
    for (let r = 0; r < READ_ROUNDS; r++) {
      for (const e of JSON_ENGINES) scans.get(e)!.push(await timed(() => scan(dbs.get(e), n)))
    }
    for (const e of JSON_ENGINES) record('json readrandom', e, median(gets.get(e)!))
    for (const e of JSON_ENGINES) record('json readseq', e, median(scans.get(e)!))
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => {})
  }
  return result
}

function median (rows: Row[]): Row {
  return rows.slice().sort((a, b) => a.ops - b.ops)[Math.floor(rows.length / 2)]
}

/** Untimed: the engine's write, read and scan paths (lsm-level: compressed tables too) run before anything is timed. */
async function warmup (e: JsonEngine, dir: string, data: Data, lsmOptions: object): Promise<void> {
  const count = Math.min(WARMUP_DOCS, data.keys.length)
  const db = make(e, dir, lsmOptions)
  await db.open()
  for (let i = 0; i < count; i += BATCH) {
    const ops = []
    for (let j = i; j < Math.min(count, i + BATCH); j++) ops.push({ type: 'put', key: data.keys[j], value: data.docs[j] })
    await db.batch(ops)
  }
  for (let i = 0; i < count; i++) await db.put(data.keys[i], data.docs[i])
  await db.close()
  await db.open()
  for (let i = 0; i < count; i++) await db.get(data.keys[data.getOrder[i] % count])
  for (let r = 0; r < 5; r++) await scan(db, count)
  await db.close()
}

/** A full compaction, the closed directory's size, and a reopen (lsm-level: with its background work done). */
async function settle (e: JsonEngine, db: any, dir: string, result: JsonResult, lsmOptions: object): Promise<any> {
  if (e === 'memory-level') return db
  const lsm = e !== 'classic-level'
  const t0 = process.hrtime.bigint()
  if (lsm) {
    await db.engine.waitForIdle()
    await db.compactRange()
    await db.engine.waitForIdle()
  } else {
    await db.compactRange(Buffer.from('ord_'), Buffer.from('ord_~'))
  }
  result.compactSeconds.set(e, seconds(t0))
  await db.close()
  result.onDisk.set(e, dirSize(dir))
  const again = make(e, dir, lsmOptions)
  await again.open()
  if (lsm) await again.engine.waitForIdle()
  return again
}

/** Untimed: a sample of documents reads back exactly. */
async function check (e: JsonEngine, db: any, data: Data): Promise<void> {
  for (let j = 0; j < data.keys.length; j += 97) {
    const got: Buffer | undefined = await db.get(data.keys[j])
    if (got === undefined || !got.equals(data.docs[j])) throw new Error(`${e}: wrong document for key #${j}`)
  }
}

async function scan (db: any, n: number): Promise<number> {
  let seen = 0
  const it = db.iterator()
  for (;;) {
    const batch = await it.nextv(1000)
    if (batch.length === 0) break
    seen += batch.length
  }
  await it.close()
  if (seen !== n) throw new Error(`json readseq saw ${seen} documents, expected ${n}`)
  return seen
}

const NOTES: Record<string, string> = {
  'json fillbatch': 'half the documents, batches of 1,000 puts; puts/s',
  'json fillrandom': 'the other half, awaited puts, random keys',
  'json readrandom': 'awaited get of every document, random order; median of 3 rounds of a third each',
  'json readseq': 'full scan, `nextv(1000)`, median of 3; entries/s'
}

/** A target of the compression issue: lsm-level (compression on) over classic-level. */
export interface JsonTarget { what: string, measured: number | undefined, min?: number, max?: number }

export function jsonTargets (r: JsonResult): JsonTarget[] {
  const over = (w: string): number | undefined => {
    const lsm = r.rows.get(w)?.get('lsm-level')
    const classic = r.rows.get(w)?.get('classic-level')
    return lsm !== undefined && classic !== undefined ? lsm.ops / classic.ops : undefined
  }
  const lsmDisk = r.onDisk.get('lsm-level')
  const classicDisk = r.onDisk.get('classic-level')
  return [
    { what: 'JSON: bytes on disk, lsm-level / classic-level', measured: lsmDisk !== undefined && classicDisk !== undefined ? lsmDisk / classicDisk : undefined, max: 1 },
    { what: 'JSON: random gets vs classic-level', measured: over('json readrandom'), min: 3 },
    { what: 'JSON: full scans vs classic-level', measured: over('json readseq'), min: 1.5 },
    { what: 'JSON: batch fills vs classic-level', measured: over('json fillbatch'), min: 1.2 }
  ]
}

/** The workload's Markdown: ops/s per engine with ratios, and the space on disk. */
export function jsonReport (r: JsonResult): string[] {
  const lines: string[] = []
  lines.push(`JSON documents (compressible): ${int(r.docs)} seeded order documents of ~${Math.round(r.logicalBytes / r.docs)} bytes with their ids (field names repeated, small vocabularies, ISO timestamps), keys in random order. ` +
    'ops/s, then p50 / p99 latency in µs of single operations; ratios are lsm-level\'s (compression on) over the other engine\'s in this run.')
  lines.push('')
  lines.push('| workload | what | lsm-level | lsm-level (compression off) | classic-level | memory-level | lsm / lsm off | lsm / classic | lsm / memory |')
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const [w, row] of r.rows) {
    const lsm = row.get('lsm-level')!
    const cell = (e: JsonEngine): string => {
      const x = row.get(e)
      if (x === undefined) return 'n/a'
      return int(x.ops) + (x.p50 === undefined ? '' : ` (${micros(x.p50)} / ${micros(x.p99!)})`)
    }
    const rel = (e: JsonEngine): string => row.get(e) === undefined ? 'n/a' : ratio(lsm.ops / row.get(e)!.ops)
    lines.push(`| ${w} | ${NOTES[w] ?? ''} | ${cell('lsm-level')} | ${cell('lsm-level (compression off)')} | ${cell('classic-level')} | ${cell('memory-level')} | ${rel('lsm-level (compression off)')} | ${rel('classic-level')} | ${rel('memory-level')} |`)
  }
  lines.push('')
  lines.push(`Space after the fill and a full \`compactRange()\` (directory size once closed; logical bytes = ids + documents = ${mb(r.logicalBytes)}):`)
  lines.push('')
  lines.push('| engine | on disk | / logical bytes | / classic-level | compaction after the fill (s) |')
  lines.push('|---|---:|---:|---:|---:|')
  const classic = r.onDisk.get('classic-level')
  for (const [e, bytes] of r.onDisk) {
    lines.push(`| ${e} | ${mb(bytes)} | ${(bytes / r.logicalBytes).toFixed(3)}x | ${classic === undefined ? 'n/a' : (bytes / classic).toFixed(2) + 'x'} | ${r.compactSeconds.get(e)!.toFixed(1)} |`)
  }
  return lines
}
