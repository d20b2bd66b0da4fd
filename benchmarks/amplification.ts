// The three amplifications, measured (after the LSM lesson in the project's
// references): write amplification (bytes written to tables per user byte),
// space amplification (entries on disk per live key, sampled after every flush),
// and tables read per get for present and absent keys, with and without Bloom
// filters. Then a 1,000,000-key random fill, with the bytes the process wrote to
// disk (/proc/self/io) for lsm-level and for classic-level.
//
//   node dist/benchmarks/amplification.js            both parts
//   AMP_FILL_KEYS=200000 node dist/benchmarks/amplification.js
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random } from '../test/util/random'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { ClassicLevel } = require('classic-level')

const KEYS = 20_000
const OPS = 100_000
const DELETES = 0.1
const FILL = Number(process.env.AMP_FILL_KEYS ?? 1_000_000)

const key = (i: number): string => 'k' + String(i).padStart(6, '0')

function processWriteBytes (): number {
  try {
    const m = /write_bytes:\s+(\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))
    return m ? Number(m[1]) : NaN
  } catch {
    return NaN
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
    const c0 = e.counters.tableGets
    const u0 = db.stats().bloom.useful
    for (const k of keys) await db.get(k)
    const consulted = (e.counters.tableGets - c0) / keys.length
    const read = (e.counters.tableGets - c0 - (db.stats().bloom.useful - u0)) / keys.length
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

async function fill (root: string): Promise<void> {
  const rnd = new Random(1)
  const keys: Buffer[] = []
  for (let i = 0; i < FILL; i++) keys.push(rnd.bytes(16))
  const value = rnd.bytes(100)
  const userBytes = FILL * 116
  console.log(`\n## ${FILL.toLocaleString('en-US')}-key random fill (16 B keys, 100 B values, batches of 1,000; user bytes ${(userBytes / 1e6).toFixed(0)} MB)\n`)
  console.log('| engine | seconds | bytes written by the process (/proc/self/io) | per user byte | table bytes / user bytes |')
  console.log('|---|---:|---:|---:|---:|')
  for (const name of ['lsm-level', 'classic-level']) {
    const dir = path.join(root, 'fill-' + name)
    const db = name === 'lsm-level'
      ? new LsmLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
      : new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await db.open()
    const w0 = processWriteBytes()
    const t0 = Date.now()
    for (let i = 0; i < FILL; i += 1000) {
      const ops = []
      for (let j = i; j < Math.min(FILL, i + 1000); j++) ops.push({ type: 'put', key: keys[j], value })
      await db.batch(ops)
    }
    let tableAmp = 'n/a'
    if (name === 'lsm-level') {
      await (db as LsmLevel<Buffer, Buffer>).engine.waitForIdle()
      tableAmp = (db as LsmLevel<Buffer, Buffer>).stats().writeAmplification.toFixed(2)
    }
    await db.close()
    const written = processWriteBytes() - w0
    console.log(`| ${name} | ${((Date.now() - t0) / 1000).toFixed(1)} | ${(written / 1e6).toFixed(0)} MB | ${(written / userBytes).toFixed(2)} | ${tableAmp} |`)
  }
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
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
