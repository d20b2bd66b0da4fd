// Worker threads start with the first flush or compaction and stop once idle
// (hosts/node/job-thread.ts): an isolate holds tens of MB, which a database
// that is only read, or written now and then, should not keep.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Worker } from 'node:worker_threads'
import { Engine, encodeBatch } from '../hosts/node/index'
import { JobThread } from '../hosts/node/job-thread'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { KIND_VALUE } from '../lib/keys'
import { MemTable } from '../lib/memtable/memtable'
import type { FlushJob } from '../lib/compaction/job'

const IDLE_STOP_MS = 300

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function putAndFlush (engine: Engine, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from(`${prefix}${i}`), value: Buffer.from(`value ${prefix}${i}`) }]), false)
  }
  await engine.flushMemTable()
  await engine.waitForIdle()
}

test('a worker thread starts with the first job, stops when idle, and starts again for the next', async (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-worker-lifecycle-'))
  const flush = JobThread.thread(0, IDLE_STOP_MS)
  const compaction = JobThread.thread(0, IDLE_STOP_MS)
  try {
    const engine = await Engine.open(dir, {}, nodeFileSystem, { flush, compaction })
    t.equal(flush.starts, 0, 'open starts no flush thread')
    t.equal(compaction.starts, 0, 'open starts no compaction thread')

    await putAndFlush(engine, 'a', 100)
    t.equal(flush.starts, 1, 'the first flush started the flush thread')
    t.ok(flush.running, 'the flush thread is up right after its job')

    await sleep(IDLE_STOP_MS * 3)
    t.notOk(flush.running, `the flush thread stopped after ${IDLE_STOP_MS} ms idle`)

    await putAndFlush(engine, 'b', 100)
    t.equal(flush.starts, 2, 'the next flush started it again')
    t.equal(flush.jobs, 2, 'both flushes ran on the thread')

    await engine.close()

    const reopened = await Engine.open(dir, {}, nodeFileSystem, { flush, compaction })
    t.equal(reopened.get(Buffer.from('a99'))?.toString(), 'value a99', 'the first flush\'s table reads back')
    t.equal(reopened.get(Buffer.from('b0'))?.toString(), 'value b0', 'the flush after the restart reads back')
    await reopened.close()
  } finally {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('flushes closer together than the idle time reuse the running thread', async (t) => {
  // An idle time far above the gaps between these flushes (100 ms sleeps), so
  // that a loaded machine's slow flushes cannot make a gap look idle.
  const idleMs = 10_000
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-worker-reuse-'))
  const flush = JobThread.thread(0, idleMs)
  const compaction = JobThread.thread(0, idleMs)
  try {
    const engine = await Engine.open(dir, {}, nodeFileSystem, { flush, compaction })
    for (let round = 0; round < 4; round++) {
      await sleep(100)
      await putAndFlush(engine, `c${round}-`, 10)
    }
    t.equal(flush.jobs, 4, 'four flushes ran on the thread')
    t.equal(flush.starts, 1, 'one start served them all')
    t.equal(engine.get(Buffer.from('c3-9'))?.toString(), 'value c3-9', 'the last flush reads back')
    await engine.close()
  } finally {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the flush thread starts once the active memtable is a quarter full, before the flush', async (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-worker-prepare-'))
  const flush = JobThread.thread(0, 60_000)
  const compaction = JobThread.thread(0, 60_000)
  const writeBufferSize = 64 * 1024
  try {
    const engine = await Engine.open(dir, { writeBufferSize }, nodeFileSystem, { flush, compaction })
    const value = Buffer.alloc(1000, 1)
    let i = 0
    const put = (): Promise<void> => engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from(`k${String(i++).padStart(6, '0')}`), value }]), false)
    while (engine.stats().memtableBytes < writeBufferSize / 8) await put()
    t.equal(flush.starts, 0, 'an eighth full: no thread yet')
    while (engine.stats().memtableBytes < writeBufferSize / 4 + 2000) await put()
    t.equal(flush.starts, 1, 'a quarter full: the flush thread is starting')
    t.equal(flush.jobs, 0, 'no flush has been asked for yet')
    await engine.flushMemTable()
    t.equal(flush.starts, 1, 'the flush ran on the thread started ahead')
    t.equal(flush.jobs, 1, 'one flush')
    t.equal(compaction.starts, 0, 'the compaction thread is not started ahead')
    await engine.close()
  } finally {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('one thread serves flushes and compactions: a flush runs ahead of the compaction already running there', async (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-worker-shared-'))
  const thread = JobThread.thread(0, 60_000)
  const table = { blockSize: 4096, blockRestartInterval: 16, bloomBitsPerKey: 10, compression: true }
  const value = Buffer.alloc(100, 7)
  const flushJob = (from: number, n: number, fileNumber: number): FlushJob => {
    const mem = new MemTable()
    for (let i = 0; i < n; i++) mem.add(from + i, KIND_VALUE, Buffer.from(`k${String(from + i).padStart(8, '0')}`), value)
    return { dir, entries: mem.entriesState(), table, smallestSnapshot: Number.MAX_SAFE_INTEGER, rangeTombstones: [], floorBase: 0, fileNumber }
  }
  try {
    // A small table for the compaction, then a compaction of it (little work)
    // and a flush five times its size, sent together, the compaction first:
    // taking turns between slices, the compaction would finish first.
    const small = (await thread.flush(flushJob(1, 20_000, 1))).outputs[0]
    const big = flushJob(100_000, 100_000, 2)
    const finished: string[] = []
    const compaction = thread.run({ dir, runs: [[small]], deeper: [], table, targetFileSize: 64 * 1024 * 1024, smallestSnapshot: Number.MAX_SAFE_INTEGER, rangeTombstones: [], floorBase: 0, fileNumbers: [3] })
      .then((r) => { finished.push('compaction'); return r })
    const flush = thread.flush(big).then((r) => { finished.push('flush'); return r })
    const [c, f] = await Promise.all([compaction, flush])
    t.deepEqual(finished, ['flush', 'compaction'], 'the flush finished first; the compaction waited for it')
    t.equal(c.outputs[0]?.entries, 20_000, 'the compaction then wrote all its entries')
    t.equal(f.outputs[0]?.entries, 100_000, 'the flush wrote all its entries')
    t.equal(thread.starts, 1, 'one thread ran all three jobs')
  } finally {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('lsm-level inside an app\'s own worker thread leaves that thread\'s parentPort to the app', async (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-worker-app-'))
  // The app's worker echoes what its parent sends, after using a database (with
  // a flush on lsm-level's own threads). A job server listening on the same port
  // would answer the app's messages as malformed jobs.
  const source = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { Level } = require(workerData.entry)
    parentPort.on('message', async (msg) => {
      const db = new Level(workerData.dir)
      await db.put('k', msg.text)
      await db.compactRange()
      parentPort.postMessage({ echo: await db.get('k') })
      await db.close()
    })
  `
  const worker = new Worker(source, { eval: true, workerData: { dir, entry: path.join(__dirname, '..', 'index.js') } })
  try {
    const replies: unknown[] = []
    const done = new Promise<void>((resolve, reject) => {
      worker.on('error', reject)
      worker.on('message', (m) => { replies.push(m); if ((m as { echo?: unknown }).echo !== undefined) setTimeout(resolve, 200) })
    })
    worker.postMessage({ text: 'hello' })
    await done
    t.deepEqual(replies, [{ echo: 'hello' }], 'the app gets its own reply and nothing else')
  } finally {
    await worker.terminate()
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the worker threads compute CRC-32 with zlib, as the main thread does', async (t) => {
  const root = path.join(__dirname, '..')
  // What a flush or compaction thread loads (JobThread.thread()), in a
  // thread that is not a job server so that it can answer.
  const source = `
    const { parentPort, workerData } = require('node:worker_threads')
    require(workerData.root + '/hosts/node/job-thread.js')
    parentPort.postMessage(require(workerData.root + '/lib/util/crc.js').crcImplementation())
  `
  const worker = new Worker(source, { eval: true, workerData: { root } })
  try {
    const answer = await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject) })
    t.is(answer, 'host', 'a worker thread checksums with zlib.crc32')
  } finally {
    await worker.terminate()
  }
})
