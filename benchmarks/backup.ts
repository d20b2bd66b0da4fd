// Backups on an object store: what shipping costs and what a restore takes.
//
//   node dist/benchmarks/backup.js
//   BACKUP_FILL_MB=256 ...     data per fill run (default 256: a fill of 32 MB ends in about a
//                              second on a quiet machine, and its shipping catches up after it)
//   BACKUP_ROUNDS=3 ...        fill runs without and with shipping, alternating (default 3 each)
//   BACKUP_RESTART_MB=64 ...   data loaded in key order before the restart (a quarter as much put at random after it; default 64; 0: skip)
//   BACKUP_RESTORE_MB=1024 ... size of the database restored from the directory store (default 1024; 0: skip)
//   BACKUP_S3_MB=128 ...       size of the one restored from s3rver on 127.0.0.1 (default 128; 0: skip)
//
// fill: a loop of awaited batches of 100 puts (random 16-byte keys, 100
// incompressible bytes of value) until BACKUP_FILL_MB of user data, into a
// fresh database, without shipping and with db.replicate() to a directory
// store (intervalMs 1000), alternating; then the shipping run waits until the
// store has everything. Printed: puts/s of each, the bytes put to the store
// per byte the engine wrote to logs and tables (stats().bytes: wal + flushed +
// compacted), requests and requests per minute. Then the medians of each
// side, their spread (min..max) and the ratio of the medians: the foreground
// cost of shipping (target: at most 10%).
// restart: BACKUP_RESTART_MB loaded in key order and shipped, the database
// closed, opened again and shipped again (a new generation), a quarter as
// much put at random: the
// bytes each generation put, the bytes the second named instead of putting
// (tables the first had put: reuse across generations), the bytes the engine
// wrote in each run, and the ratios with and without reuse (target: 1.2x).
// restore: a database filled in key order (batches of 1,000), then shipped
// (replicate, close: the last round ships everything); then
// BACKUP_RESTORE_RUNS (default 3) LsmLevel.restore from the store into fresh
// directories, timed; MB/s of tables and log bytes written.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import type { ObjectStore } from '../lib/backup/object-store'
import { key, value } from './checkpoint-data'
import { Random } from '../test/util/random'
import { startS3 } from '../test/util/s3-server'

const FILL_MB = Number(process.env.BACKUP_FILL_MB ?? 256)
const ROUNDS = Number(process.env.BACKUP_ROUNDS ?? 3)
const RESTART_MB = Number(process.env.BACKUP_RESTART_MB ?? 64)
const RESTORE_MB = Number(process.env.BACKUP_RESTORE_MB ?? 1024)
const S3_MB = Number(process.env.BACKUP_S3_MB ?? 128)
const ENTRY_BYTES = 116

const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(', ')

function scratch (name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `lsm-bench-${name}-`))
}

async function waitShipped (db: LsmLevel<Buffer, Buffer>): Promise<void> {
  for (;;) {
    const r = db.stats().replication!
    if (r.shippedSequence >= db.sequence && r.lastError === undefined) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function fill (ship: boolean, seed: number): Promise<number> {
  const dir = scratch('fill')
  const storeDir = scratch('store')
  const db = new LsmLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  if (ship) await db.replicate(new DirectoryStore(storeDir), { intervalMs: 1000 })
  const rnd = new Random(seed)
  const n = Math.floor(FILL_MB * 1e6 / ENTRY_BYTES)
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < n; i += 100) {
    const ops = []
    for (let j = 0; j < 100; j++) ops.push({ type: 'put' as const, key: key(rnd.int(1e12)), value: value(i + j) })
    await db.batch(ops)
  }
  const s = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const cpuUsPerPut = (cpu.user + cpu.system) / n
  cpuPerPut[ship ? 1 : 0].push(cpuUsPerPut)
  let line = `  ${ship ? 'shipping' : 'no shipping'}: ${n} puts in ${s.toFixed(1)} s, ${Math.round(n / s)} puts/s, process CPU ${cpuUsPerPut.toFixed(2)} us a put`
  if (ship) {
    const t1 = performance.now()
    await waitShipped(db)
    const st = db.stats()
    const r = st.replication!
    const engine = st.bytes.wal + st.bytes.flushed + st.bytes.compacted
    const minutes = (performance.now() - t0) / 60000
    line += `; caught up ${((performance.now() - t1) / 1000).toFixed(1)} s after the last put; put ${(r.bytesUploaded / 1e6).toFixed(1)} MB for ${(engine / 1e6).toFixed(1)} MB the engine wrote (wal ${(st.bytes.wal / 1e6).toFixed(1)}, flushed ${(st.bytes.flushed / 1e6).toFixed(1)}, compacted ${(st.bytes.compacted / 1e6).toFixed(1)}): ${(r.bytesUploaded / engine).toFixed(2)}x; ` +
      `${r.requests} requests (${r.tablesUploaded} tables, ${r.segmentsUploaded} segments, ${r.pointsUploaded} points), ${Math.round(r.requests / minutes)}/min; longest round ${r.maxRoundMs} ms, longest log upload ${r.maxLogsMs} ms`
  }
  console.log(line + `; load ${load()}`)
  await db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  fs.rmSync(storeDir, { recursive: true, force: true })
  return n / s
}

/** Process CPU time (user + system, all threads) per put of each fill: [without, with shipping]. */
const cpuPerPut: [number[], number[]] = [[], []]

const median = (xs: number[]): number => {
  const a = xs.slice().sort((x, y) => x - y)
  return a.length % 2 === 1 ? a[a.length >> 1] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2
}

async function restartRun (mb: number): Promise<void> {
  const dir = scratch('restart')
  const storeDir = scratch('store')
  const store = new DirectoryStore(storeDir)
  const rnd = new Random(99)
  const n = Math.floor(mb * 1e6 / ENTRY_BYTES)
  let total = { put: 0, reused: 0, engine: 0 }
  for (const run of ['first run', 'after the restart']) {
    const db = new LsmLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await db.open()
    await db.replicate(store, { intervalMs: 1000 })
    // The first run loads keys in order (tables that stay); the second puts a quarter as many at random.
    const count = run === 'first run' ? n : n >> 2
    for (let i = 0; i < count; i += 100) {
      const ops = []
      for (let j = 0; j < 100; j++) ops.push({ type: 'put' as const, key: run === 'first run' ? key(i + j) : key(rnd.int(1e12)), value: value(i + j) })
      await db.batch(ops)
    }
    const engine = db.engine
    await db.close()
    const st = engine.stats()
    const r = st.replication!
    const wrote = st.bytes.wal + st.bytes.flushed + st.bytes.compacted
    total = { put: total.put + r.bytesUploaded, reused: total.reused + r.bytesReused, engine: total.engine + wrote }
    console.log(`  ${run}: put ${(r.bytesUploaded / 1e6).toFixed(1)} MB (${r.tablesUploaded} tables), named ${(r.bytesReused / 1e6).toFixed(1)} MB already there (${r.tablesReused} tables), the engine wrote ${(wrote / 1e6).toFixed(1)} MB: ${(r.bytesUploaded / wrote).toFixed(2)}x, ${((r.bytesUploaded + r.bytesReused) / wrote).toFixed(2)}x without reuse; load ${load()}`)
  }
  console.log(`  both runs: ${(total.put / total.engine).toFixed(2)}x the bytes the engine wrote (${((total.put + total.reused) / total.engine).toFixed(2)}x without reuse)`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.rmSync(storeDir, { recursive: true, force: true })
}

const RESTORE_RUNS = Number(process.env.BACKUP_RESTORE_RUNS ?? 3)

async function restoreRun (name: string, store: ObjectStore, mb: number): Promise<void> {
  const dir = scratch('src')
  const db = new LsmLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const n = Math.floor(mb * 1e6 / ENTRY_BYTES)
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(n, i + 1000); j++) ops.push({ type: 'put' as const, key: key(j), value: value(j) })
    await db.batch(ops)
  }
  const t1 = performance.now()
  await db.replicate(store, { intervalMs: 1000 })
  await db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  console.log(`  ${name}: ${n} keys filled in ${((t1 - t0) / 1000).toFixed(0)} s, shipped in ${((performance.now() - t1) / 1000).toFixed(1)} s; load ${load()}`)
  for (let run = 0; run < RESTORE_RUNS; run++) {
    const target = scratch('restored')
    fs.rmdirSync(target)
    const t2 = performance.now()
    const r = await LsmLevel.restore(store, target)
    const s = (performance.now() - t2) / 1000
    const bytes = r.tableBytes + r.logBytes
    const check = new LsmLevel<Buffer, Buffer>(target, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await check.open()
    const last = await check.get(key(n - 1))
    await check.close()
    console.log(`  ${name}: restored ${(bytes / 1e6).toFixed(0)} MB (${r.tables} tables, ${r.segments} log segments) in ${s.toFixed(1)} s: ${(bytes / 1e6 / s).toFixed(0)} MB/s; it opens, its last key ${last?.equals(value(n - 1)) === true ? 'is there' : 'IS MISSING'}; load ${load()}`)
    fs.rmSync(target, { recursive: true, force: true })
  }
}

async function main (): Promise<void> {
  console.log(`backup: ${os.cpus().length} CPUs, Node ${process.version}, load ${load()}`)
  if (FILL_MB > 0) {
    console.log(`fill: batches of 100 random puts, ${FILL_MB} MB of user data a run, ${ROUNDS} runs each, alternating (the first of each pair alternates too)`)
    const without: number[] = []
    const withShipping: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      if (i % 2 === 0) {
        without.push(await fill(false, i + 1))
        withShipping.push(await fill(true, i + 1))
      } else {
        withShipping.push(await fill(true, i + 1))
        without.push(await fill(false, i + 1))
      }
    }
    const a = median(without)
    const b = median(withShipping)
    const span = (xs: number[]): string => `${Math.round(Math.min(...xs))}..${Math.round(Math.max(...xs))}`
    console.log(`  medians: ${Math.round(a)} puts/s without shipping (${span(without)}), ${Math.round(b)} with (${span(withShipping)}): ${(b / a).toFixed(2)}x, ${b / a >= 0.9 ? 'within' : 'outside'} the 10% target; load ${load()}`)
    const [c0, c1] = cpuPerPut.map(median)
    const cspan = (xs: number[]): string => `${Math.min(...xs).toFixed(2)}..${Math.max(...xs).toFixed(2)}`
    console.log(`  process CPU a put, medians: ${c0.toFixed(2)} us without shipping (${cspan(cpuPerPut[0])}), ${c1.toFixed(2)} us with (${cspan(cpuPerPut[1])}): shipping adds ${((c1 / c0 - 1) * 100).toFixed(1)}%`)
  }
  if (RESTART_MB > 0) {
    console.log(`restart: ${RESTART_MB} MB loaded in key order, closed, opened again, ${RESTART_MB / 4} MB of random puts`)
    await restartRun(RESTART_MB)
  }
  if (RESTORE_MB > 0) {
    const storeDir = scratch('store')
    await restoreRun(`directory store, ${RESTORE_MB} MB`, new DirectoryStore(storeDir), RESTORE_MB)
    fs.rmSync(storeDir, { recursive: true, force: true })
  }
  if (S3_MB > 0) {
    const s3 = await startS3()
    if (s3 === undefined) console.log('  s3rver is not installed: no S3 figure')
    else {
      try {
        await restoreRun(`s3rver on 127.0.0.1, ${S3_MB} MB`, await s3.store(), S3_MB)
      } finally {
        await s3.close()
      }
    }
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
