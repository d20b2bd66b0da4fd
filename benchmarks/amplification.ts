// The three amplifications, measured (after the LSM lesson in the project's
// references): write amplification (bytes written to tables per user byte),
// space amplification (entries on disk per live key, sampled after every flush),
// and tables read per get for present and absent keys, with and without Bloom
// filters. Then a 1,000,000-key random fill under the same four configurations
// and classic-level: write amplification (table bytes; LevelDB's own compaction
// statistics for classic-level), bytes on disk sampled during the fill, tables
// read per get, and the bytes the process wrote (/proc/self/io). Last, single
// awaited puts with a small write buffer (256 KiB): 1,000,000 random puts over
// 1,000,000 keys (so with overwrites), leveled, tiered and classic-level: write
// amplification, bytes on disk per live byte (sampled) and puts/s.
//
//   node dist/benchmarks/amplification.js            all three parts
//   AMP_FILL_KEYS=200000 AMP_PUT_KEYS=200000 node dist/benchmarks/amplification.js
//   AMP_FILL_KEYS=0 (or AMP_PUT_KEYS=0) skips that part
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

import { ClassicLevel } from 'classic-level'

const KEYS = 20_000
const OPS = 100_000
const DELETES = 0.1
const FILL = Number(process.env.AMP_FILL_KEYS ?? 1_000_000)
const PUTS = Number(process.env.AMP_PUT_KEYS ?? 1_000_000)

const key = (i: number): string => 'k' + String(i).padStart(6, '0')

/** The process's I/O counters (all threads, so compaction workers count): NaN where /proc is missing. */
function processIo (): { wchar: number, writeBytes: number } {
  try {
    const text = fs.readFileSync('/proc/self/io', 'utf8')
    const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN)
    return { wchar: field('wchar'), writeBytes: field('write_bytes') }
  } catch {
    return { wchar: NaN, writeBytes: NaN }
  }
}

async function lessonWorkload (root: string, compaction: 'leveled' | 'tiered', bloomBitsPerKey: number): Promise<Record<string, string>> {
  // A memtable of about 1,000 entries, as in the lesson.
  const db = new LsmLevel(path.join(root, `lesson-${compaction}-${bloomBitsPerKey}`), { writeBufferSize: 64 * 1024, bloomBitsPerKey, compaction })
  await db.open()
  const e = db.engine
  const rnd = new Random(42)
  const truth = new Map<string, string>()
  const space: number[] = []
  let flushes = e.counters.flushes
  for (let i = 0; i < OPS; i++) {
    const k = key(rnd.int(KEYS))
    if (rnd.float() < DELETES) { await db.del(k); truth.delete(k) } else { await db.put(k, 'v' + i); truth.set(k, 'v' + i) }
    if (e.counters.flushes !== flushes) {
      flushes = e.counters.flushes
      await e.waitForIdle()
      const entries = e.tables().flat().reduce((s, f) => s + f.entries, 0)
      space.push(entries / truth.size)
    }
  }
  await e.waitForIdle()
  const stats = db.stats()
  let wrong = 0
  for (let i = 0; i < KEYS; i++) if (await db.get(key(i)) !== truth.get(key(i))) wrong++
  if (wrong > 0) throw new Error(`${wrong} wrong reads`)
  const probe = async (keys: string[]): Promise<{ consulted: number, read: number }> => {
    const c0 = e.tableReads.tableGets
    const u0 = db.stats().bloom.useful
    for (const k of keys) await db.get(k)
    const consulted = (e.tableReads.tableGets - c0) / keys.length
    const read = (e.tableReads.tableGets - c0 - (db.stats().bloom.useful - u0)) / keys.length
    return { consulted, read }
  }
  const r2 = new Random(7)
  const live = [...truth.keys()]
  const present = Array.from({ length: 2000 }, () => live[r2.int(live.length)])
  const absent = Array.from({ length: 2000 }, () => key(r2.int(KEYS)) + '-absent') // between present keys
  const p = await probe(present)
  const a = await probe(absent)
  const levels = stats.levels.filter((l) => l.files > 0).map((l) => `L${l.level}:${l.files}`).join(' ')
  await db.close()
  return {
    'write amplification (bytes to tables / user bytes)': stats.writeAmplification.toFixed(2),
    'space amplification, mean (entries on disk / live keys)': (space.reduce((s, x) => s + x, 0) / space.length).toFixed(2),
    'space amplification, worst': Math.max(...space).toFixed(2),
    'read amplification (sorted runs) at the end': String(stats.readAmplification),
    'tables read per get, present keys': p.read.toFixed(2),
    'tables read per get, absent keys': a.read.toFixed(3),
    'tables consulted per get (key range covers it), absent': a.consulted.toFixed(2),
    'tree at the end': levels
  }
}

/** Bytes of every file in a directory (tables, logs, compaction outputs in progress). */
function dirBytes (dir: string): number {
  let total = 0
  for (const name of fs.readdirSync(dir)) {
    try { total += fs.statSync(path.join(dir, name)).size } catch {}
  }
  return total
}

/** Sum of LevelDB's own "Write(MB)" column (flushes and compactions), from leveldb.stats. */
async function leveldbTableWrites (db: any): Promise<number> {
  const text: string = await db.getProperty('leveldb.stats')
  let mb = 0
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/)
    if (cols.length === 6 && cols.every((c) => /^[\d.]+$/.test(c))) mb += Number(cols[5])
  }
  return mb * 1048576
}

/** Bytes written to tables (flushes and compactions) once background work has settled. */
async function tableBytesWhenSettled (db: LsmLevel<Buffer, Buffer> | ClassicLevel<Buffer, Buffer>): Promise<number> {
  if (db instanceof LsmLevel) {
    await db.engine.waitForIdle()
    const s = db.stats()
    return s.bytes.flushed + s.bytes.compacted
  }
  // LevelDB has no "wait for compactions", and its statistics move only when a
  // compaction ends: wait until the process has written nothing for 2 s (a
  // running compaction writes steadily), at most 60 s.
  let last = processIo().wchar
  for (let quiet = 0, k = 0; quiet < 4 && k < 120; k++) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    const now = processIo().wchar
    quiet = now === last ? quiet + 1 : 0
    last = now
  }
  return await leveldbTableWrites(db)
}

interface FillEngine { name: string, compaction?: 'leveled' | 'tiered', bloomBitsPerKey?: number }

async function fillOne (root: string, engine: FillEngine, keys: Buffer[]): Promise<Record<string, string>> {
  const VALUE = 100
  const userBytes = FILL * (keys[0].length + VALUE)
  // Random (incompressible) values, the same sequence for every engine: classic-level
  // compresses its blocks with Snappy, lsm-level does not.
  const values = new Random(2)
  const dir = path.join(root, `fill-${engine.name}-${engine.compaction ?? ''}-${engine.bloomBitsPerKey ?? ''}`)
  const lsm = engine.name === 'lsm-level'
  const db = lsm
    ? new LsmLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', compaction: engine.compaction, bloomBitsPerKey: engine.bloomBitsPerKey })
    : new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const io0 = processIo()
  const t0 = Date.now()
  const space: number[] = []
  for (let i = 0; i < FILL; i += 1000) {
    const ops: Array<{ type: 'put', key: Buffer, value: Buffer }> = []
    for (let j = i; j < Math.min(FILL, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value: values.bytes(VALUE) })
    await db.batch(ops)
    // Bytes on disk per user byte written so far, sampled every 20,000 keys
    // without waiting for compaction (a merge's inputs and outputs coexist).
    if ((i + 1000) % 20_000 === 0) space.push(dirBytes(dir) / ((i + 1000) * (keys[0].length + VALUE)))
  }
  const tableBytes = await tableBytesWhenSettled(db)
  const seconds = (Date.now() - t0) / 1000
  const row: Record<string, string> = {
    seconds: seconds.toFixed(1),
    'write amplification (bytes to tables / user bytes)': (tableBytes / userBytes).toFixed(2) + (lsm ? '' : ' (its leveldb.stats)'),
    'space amplification, mean (bytes on disk / user bytes so far)': (space.reduce((a, b) => a + b, 0) / space.length).toFixed(2),
    'space amplification, worst': Math.max(...space).toFixed(2)
  }
  if (lsm) {
    const e = (db as LsmLevel<Buffer, Buffer>).engine
    const stats = (db as LsmLevel<Buffer, Buffer>).stats()
    const probe = async (probeKeys: Buffer[]): Promise<number> => {
      const c0 = e.tableReads.tableGets
      const u0 = (db as LsmLevel<Buffer, Buffer>).stats().bloom.useful
      for (const k of probeKeys) await (db as LsmLevel<Buffer, Buffer>).get(k)
      return (e.tableReads.tableGets - c0 - ((db as LsmLevel<Buffer, Buffer>).stats().bloom.useful - u0)) / probeKeys.length
    }
    const r = new Random(11)
    row['read amplification (sorted runs) at the end'] = String(stats.readAmplification)
    row['writes delayed (level-0 slowdowns) / time writes waited (stalls)'] = `${stats.slowdowns} / ${(stats.stallMs / 1000).toFixed(1)} s`
    row['tables read per get, present keys'] = (await probe(Array.from({ length: 2000 }, () => keys[r.int(FILL)]))).toFixed(2)
    row['tables read per get, absent keys'] = (await probe(Array.from({ length: 2000 }, () => r.bytes(16)))).toFixed(3)
    row['tree at the end'] = stats.levels.filter((l) => l.files > 0).map((l) => `L${l.level}:${l.files}`).join(' ')
  }
  await db.close()
  const io1 = processIo()
  row['bytes passed to write calls (wchar) / user bytes'] = ((io1.wchar - io0.wchar) / userBytes).toFixed(2)
  row['bytes written to the device (write_bytes) / user bytes'] = ((io1.writeBytes - io0.writeBytes) / userBytes).toFixed(2)
  return row
}

async function fill (root: string): Promise<void> {
  const rnd = new Random(1)
  const keys: Buffer[] = []
  for (let i = 0; i < FILL; i++) keys.push(rnd.bytes(16))
  const userBytes = FILL * 116
  console.log(`\n## ${FILL.toLocaleString('en-US')}-key random fill (16 B random keys, 100 B random values, batches of 1,000; user bytes ${(userBytes / 1e6).toFixed(0)} MB)\n`)
  const engines: FillEngine[] = [
    { name: 'lsm-level', compaction: 'leveled', bloomBitsPerKey: 10 },
    { name: 'lsm-level', compaction: 'leveled', bloomBitsPerKey: 0 },
    { name: 'lsm-level', compaction: 'tiered', bloomBitsPerKey: 10 },
    { name: 'lsm-level', compaction: 'tiered', bloomBitsPerKey: 0 },
    { name: 'classic-level' }
  ]
  const cols: Array<Record<string, string>> = []
  for (const e of engines) cols.push(await fillOne(root, e, keys))
  console.log('| measure | leveled, Bloom 10 bits/key | leveled, no filters | tiered, Bloom 10 bits/key | tiered, no filters | classic-level |')
  console.log('|---|---:|---:|---:|---:|---:|')
  const rows = [...new Set(cols.flatMap((c) => Object.keys(c)))]
  for (const k of rows) console.log(`| ${k} | ${cols.map((c) => c[k] ?? 'n/a').join(' | ')} |`)
}

/**
 * Single awaited puts of random keys (16 B) and values (100 B), `PUTS` of them
 * over `PUTS` keys, with a 256 KiB write buffer: many small flushes, and
 * overwrites that shrink older runs when merged.
 */
async function singlePutsOne (root: string, engine: FillEngine): Promise<Record<string, string>> {
  const VALUE = 100
  const ENTRY = 16 + VALUE
  const dir = path.join(root, `puts-${engine.name}-${engine.compaction ?? ''}`)
  const lsm = engine.name === 'lsm-level'
  const writeBufferSize = 256 * 1024
  const db = lsm
    ? new LsmLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', compaction: engine.compaction, writeBufferSize })
    : new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize })
  await db.open()
  const keys = new Random(3)
  const values = new Random(4)
  const seen = new Uint8Array(PUTS)
  let live = 0
  const space: number[] = []
  const t0 = Date.now()
  for (let i = 0; i < PUTS; i++) {
    const k = keys.int(PUTS)
    if (seen[k] === 0) { seen[k] = 1; live++ }
    await db.put(Buffer.from(String(k).padStart(16, '0')), values.bytes(VALUE))
    // Bytes on disk (tables, logs, merges in progress) per live byte, every 2% of the puts.
    if ((i + 1) % Math.max(1, Math.floor(PUTS / 50)) === 0) space.push(dirBytes(dir) / (live * ENTRY))
  }
  const seconds = (Date.now() - t0) / 1000
  const tableBytes = await tableBytesWhenSettled(db)
  const row: Record<string, string> = {
    'puts/s (until the last put resolves)': (PUTS / seconds).toFixed(0),
    'write amplification (bytes to tables / user bytes)': (tableBytes / (PUTS * ENTRY)).toFixed(2) + (lsm ? '' : ' (its leveldb.stats)'),
    'space amplification, mean (bytes on disk / live bytes)': (space.reduce((a, b) => a + b, 0) / space.length).toFixed(2),
    'space amplification, worst': Math.max(...space).toFixed(2)
  }
  if (lsm) {
    const stats = (db as LsmLevel<Buffer, Buffer>).stats()
    row['writes delayed (level-0 slowdowns) / time writes waited (stalls)'] = `${stats.slowdowns} / ${(stats.stallMs / 1000).toFixed(1)} s`
    row['read amplification (sorted runs) at the end'] = String(stats.readAmplification)
    row['tree at the end'] = stats.levels.filter((l) => l.files > 0).map((l) => `L${l.level}:${l.files}`).join(' ')
  }
  await db.close()
  return row
}

async function singlePuts (root: string): Promise<void> {
  console.log(`\n## ${PUTS.toLocaleString('en-US')} single awaited puts over ${PUTS.toLocaleString('en-US')} random keys (16 B keys, 100 B values, writeBufferSize 256 KiB)\n`)
  const engines: FillEngine[] = [
    { name: 'lsm-level', compaction: 'leveled' },
    { name: 'lsm-level', compaction: 'tiered' },
    { name: 'classic-level' }
  ]
  const cols: Array<Record<string, string>> = []
  for (const e of engines) cols.push(await singlePutsOne(root, e))
  console.log('| measure | leveled | tiered | classic-level |')
  console.log('|---|---:|---:|---:|')
  const rows = [...new Set(cols.flatMap((c) => Object.keys(c)))]
  for (const k of rows) console.log(`| ${k} | ${cols.map((c) => c[k] ?? 'n/a').join(' | ')} |`)
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-amp-'))
  try {
    console.log(`# The lesson's workload: ${OPS.toLocaleString('en-US')} writes over ${KEYS.toLocaleString('en-US')} keys, ${DELETES * 100}% deletes; Node ${process.version}\n`)
    const cols = [
      await lessonWorkload(root, 'leveled', 10),
      await lessonWorkload(root, 'leveled', 0),
      await lessonWorkload(root, 'tiered', 10),
      await lessonWorkload(root, 'tiered', 0)
    ]
    console.log('| measure | leveled, Bloom 10 bits/key | leveled, no filters | tiered, Bloom 10 bits/key | tiered, no filters |')
    console.log('|---|---:|---:|---:|---:|')
    for (const k of Object.keys(cols[0])) console.log(`| ${k} | ${cols.map((c) => c[k]).join(' | ')} |`)
    if (FILL > 0) await fill(root)
    if (PUTS > 0) await singlePuts(root)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
