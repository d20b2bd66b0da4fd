// The change feed's throughput beside the write throughput that produced it,
// and the time a checkpoint takes for a large database, in one run:
//
//   node dist/benchmarks/feed-checkpoint.js
//   FEED_BATCHES=20000 ...       batches of 100 puts written while the feed follows (default 20,000)
//   CHECKPOINT_MB=1024 ...       database size for the checkpoint timing (default 1024; 0 skips it)
//
// Feed: after an untimed warm-up, the writes alone (the baseline); then a writer commits batches of 100 puts (16-byte keys, 100 incompressible bytes of value)
// as fast as it can while a consumer follows db.changes() live in the same
// process; then a second consumer reads the whole history again from the
// retained logs (catch-up). Rates in puts per second; the ratios are feed /
// write.
// Checkpoint: a database filled to CHECKPOINT_MB in key order (batches of 1,000
// puts), compactions finished; then three checkpoints into fresh directories,
// each timed, with the database's bytes and files.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { dirBytes, key, value } from './checkpoint-data'

const FEED_BATCHES = Number(process.env.FEED_BATCHES ?? 20_000)
const CHECKPOINT_MB = Number(process.env.CHECKPOINT_MB ?? 1024)
/** The same writes with no feed consumer: the baseline (ms). `batches` of 100 puts. */
async function writeAlone (root: string, name: string, batches: number): Promise<number> {
  const db = new LsmLevel<Buffer, Buffer>(path.join(root, name), { keyEncoding: 'buffer', valueEncoding: 'buffer', retainLogBytes: 1024 * 1024 * 1024 })
  await db.open()
  const t0 = process.hrtime.bigint()
  const ops = Array.from({ length: 100 }, () => ({ type: 'put' as const, key: Buffer.alloc(0) as Buffer, value: value(0) }))
  for (let i = 0; i < batches; i++) {
    for (let j = 0; j < 100; j++) { ops[j].key = key(i * 100 + j); ops[j].value = value(i * 100 + j) }
    await db.batch(ops)
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  await db.close()
  return ms
}

async function feed (root: string): Promise<void> {
  await writeAlone(root, 'warm-up', Math.ceil(FEED_BATCHES / 4)) // JIT and page cache, untimed
  const aloneMs = await writeAlone(root, 'alone', FEED_BATCHES)
  const db = new LsmLevel<Buffer, Buffer>(path.join(root, 'feed'), { keyEncoding: 'buffer', valueEncoding: 'buffer', retainLogBytes: 1024 * 1024 * 1024 })
  await db.open()
  let seen = 0
  const target = FEED_BATCHES * 100
  let feedDone = 0
  const t0 = process.hrtime.bigint()
  const consumer = (async () => {
    for await (const b of db.changes({ since: 0 })) {
      seen += b.ops.length
      if (seen >= target) { feedDone = Number(process.hrtime.bigint() - t0) / 1e6; break }
    }
  })()
  const ops = Array.from({ length: 100 }, () => ({ type: 'put' as const, key: Buffer.alloc(0) as Buffer, value: value(0) }))
  for (let i = 0; i < FEED_BATCHES; i++) {
    for (let j = 0; j < 100; j++) { ops[j].key = key(i * 100 + j); ops[j].value = value(i * 100 + j) }
    await db.batch(ops)
  }
  const writeMs = Number(process.hrtime.bigint() - t0) / 1e6
  await consumer
  const t1 = process.hrtime.bigint()
  let again = 0
  for await (const b of db.changes({ since: 0 })) {
    again += b.ops.length
    if (again >= target) break
  }
  const catchUpMs = Number(process.hrtime.bigint() - t1) / 1e6
  const rate = (n: number, ms: number): number => Math.round(n / ms * 1000)
  console.log(`feed: ${target} puts in batches of 100 (116 bytes each)`)
  console.log(`  write alone    ${rate(target, aloneMs)} puts/s (${aloneMs.toFixed(0)} ms, no consumer)`)
  console.log(`  write          ${rate(target, writeMs)} puts/s (${writeMs.toFixed(0)} ms, with the live consumer below on the same event loop: ${(writeMs / aloneMs).toFixed(2)}x the time alone)`)
  console.log(`  live feed      ${rate(target, feedDone)} puts/s (all delivered ${feedDone.toFixed(0)} ms after the first write; ${(feedDone / writeMs).toFixed(2)}x the write time)`)
  console.log(`  catch-up feed  ${rate(target, catchUpMs)} puts/s from the retained logs (${(catchUpMs / writeMs).toFixed(2)}x the write time)`)
  await db.close()
}

async function checkpoint (root: string): Promise<void> {
  const location = path.join(root, 'big')
  const db = new LsmLevel<Buffer, Buffer>(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const n = Math.ceil(CHECKPOINT_MB * 1024 * 1024 / 116)
  const t0 = Date.now()
  const ops = Array.from({ length: 1000 }, () => ({ type: 'put' as const, key: Buffer.alloc(0) as Buffer, value: value(0) }))
  for (let i = 0; i < n; i += 1000) {
    for (let j = 0; j < 1000; j++) { ops[j].key = key(i + j); ops[j].value = value(i + j) }
    await db.batch(ops)
  }
  await db.engine.waitForIdle()
  const { bytes, tables: files } = dirBytes(location)
  console.log(`checkpoint: ${n} keys, ${(bytes / 1048576).toFixed(0)} MiB in ${files} tables (filled in ${((Date.now() - t0) / 1000).toFixed(0)} s)`)
  for (let i = 0; i < 3; i++) {
    const target = path.join(root, `cp${i}`)
    const t1 = process.hrtime.bigint()
    const made = await db.checkpoint(target)
    const ms = Number(process.hrtime.bigint() - t1) / 1e6
    console.log(`  checkpoint ${i + 1}: ${ms.toFixed(1)} ms, ${made.linked} linked, ${made.copied} copied, ${made.logBytes} bytes of unflushed log: ${(ms / Math.max(1, made.linked + made.copied)).toFixed(3)} ms per table`)
  }
  await db.close()
}

async function main (): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-feed-bench-'))
  try {
    await feed(root)
    if (CHECKPOINT_MB > 0) await checkpoint(root)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
