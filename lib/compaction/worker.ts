// Compactions off the event loop: one worker thread that runs compaction jobs
// (lib/compaction/job.ts) on the second core while the main thread keeps
// serving reads and writes. The worker opens the input tables itself (its own
// file descriptors and a small block cache) and writes the outputs; the main
// thread then installs them with one manifest edit. Errors come back with their
// LEVEL_* code and file name.
//
// Memtable flushes run on a second such worker (sharedFlushWorker; lib/compaction/
// job.ts, FlushJob): the main thread copies the frozen memtable (a memcpy of its
// arena and index arrays) and transfers it, and spends no time building the
// level-0 table.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import * as fs from 'node:fs'
import * as os from 'node:os'
import { nodeFileSystem } from '../fs/node-fs'
import { BlockCache } from '../sstable/cache'
import { TableCache } from '../sstable/table-cache'
import { runCompactionJob, runFlushJob, reviveJob, reviveFlushJob, reviveMeta, type CompactionJob, type FlushJob } from './job'
import type { TableWriterResult } from './table-writer'
import { SkipList } from '../memtable/skiplist'
import { levelError, type LevelErrorCode } from '../errors'

interface Request { id: number, job?: CompactionJob, flush?: FlushJob, cancel?: boolean }
interface Reply {
  id: number
  result?: TableWriterResult
  error?: { code?: string, message: string, file?: string, stack?: string }
  /** A flush's memtable copy, transferred back (see lib/memtable/skiplist.ts, "Handing over"); unused. */
  returned?: ArrayBuffer[]
}

/**
 * The main thread's handle on the worker thread. One worker serves every
 * database in the process (`sharedCompactionWorker()`); it is unref'd, so it
 * never keeps the process alive.
 */
export class CompactionWorker {
  /**
   * @param niceness raised scheduling niceness of the thread (Linux; 0: as the
   *   process): a worker that should yield the CPU to the main thread when the
   *   two compete for a core.
   */
  constructor (private readonly niceness = 0) {}

  private worker: Worker | undefined
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (r: TableWriterResult) => void, reject: (e: Error) => void }>()

  private start (): Worker {
    const w = new Worker(__filename, { workerData: { niceness: this.niceness } })
    w.on('message', (reply: Reply) => {
      const p = this.waiting.get(reply.id)
      if (!p) return
      this.waiting.delete(reply.id)
      if (this.waiting.size === 0) w.unref()
      if (reply.error) {
        const e = reply.error.code?.startsWith('LEVEL_')
          ? levelError(reply.error.code as LevelErrorCode, reply.error.message, undefined, reply.error.file)
          : new Error(reply.error.message)
        if (reply.error.stack) e.stack = reply.error.stack
        p.reject(e)
      } else {
        const r = reply.result!
        p.resolve({ ...r, outputs: r.outputs.map(reviveMeta) })
      }
    })
    w.on('error', (err) => this.failAll(err))
    w.on('exit', (code) => {
      this.worker = undefined
      this.failAll(new Error(`compaction worker exited (${code})`))
    })
    return w
  }

  private failAll (err: Error): void {
    const all = [...this.waiting.values()]
    this.waiting.clear()
    for (const p of all) p.reject(err)
  }

  /**
   * Runs `job` on the worker. `signal.cancel()` asks the worker to abandon it at
   * its next slice (the promise then rejects with LEVEL_ABORTED and the partial
   * outputs are removed).
   */
  run (job: CompactionJob, signal?: { cancel?: () => void }): Promise<TableWriterResult> {
    return this.send({ id: 0, job }, signal)
  }

  /**
   * Runs a memtable flush on the worker (not cancellable). It runs alongside a
   * compaction in progress there (both yield between slices), never behind it.
   */
  flush (job: FlushJob): Promise<TableWriterResult> {
    return this.send({ id: 0, flush: job }, undefined, SkipList.stateTransferList(job.entries))
  }

  private send (req: Request, signal?: { cancel?: () => void }, transfer?: ArrayBuffer[]): Promise<TableWriterResult> {
    if (!this.worker) this.worker = this.start()
    const id = this.nextId++
    req.id = id
    const w = this.worker
    if (signal) signal.cancel = () => w.postMessage({ id, cancel: true } satisfies Request)
    return new Promise((resolve, reject) => {
      // Referenced only while a job is in flight: an idle worker never keeps the process alive.
      if (this.waiting.size === 0) w.ref()
      this.waiting.set(id, { resolve, reject })
      w.postMessage(req, transfer)
    })
  }

  /** Stops the worker; a job in progress fails (its partial outputs are orphans, removed on the next open). */
  async close (): Promise<void> {
    const w = this.worker
    this.worker = undefined
    if (w) await w.terminate()
  }
}

let shared: CompactionWorker | undefined
let sharedFlush: CompactionWorker | undefined

/**
 * The worker thread that runs compactions. Nice 10, below the flush worker (5)
 * and the event loop (0): when the cores are all busy, the CPU goes first to
 * the application, then to the flush that writes may be waiting for, and last
 * to compaction, whose debt the level-0 slowdown and stop triggers bound (as
 * RocksDB runs flushes in its high-priority pool and compactions in its low
 * one). Measured on 2 cores (in-process fills, 8 alternating runs each,
 * medians): 1,000-put batches 654k -> 809k puts/s, awaited puts 140k -> 155k/s,
 * against compaction at the event loop's priority.
 */
export function sharedCompactionWorker (): CompactionWorker {
  if (!shared) shared = new CompactionWorker(10)
  return shared
}

/**
 * The worker thread that runs memtable flushes, apart from compactions: a long
 * compaction never slows a flush down, which writes would be waiting for.
 */
export function sharedFlushWorker (): CompactionWorker {
  // Nice 5: when all cores are busy, the event loop gets the CPU first (a flush
  // that moved off the main thread must not delay it more than the time slices
  // it ran in there); with a core to spare the flush runs at full speed.
  if (!sharedFlush) sharedFlush = new CompactionWorker(5)
  return sharedFlush
}

/** Lowers this thread's priority (Linux: setpriority on its thread id); best effort. */
function renice (niceness: number): void {
  if (!(niceness > 0) || process.platform !== 'linux') return
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, Math.min(19, os.getPriority(tid) + niceness))
  } catch {}
}

// ---------------------------------------------------------------- worker side

/** An error as plain data for the reply (a LevelError's code and file kept). */
function errorReply (err: unknown): NonNullable<Reply['error']> {
  const e = err as { code?: string, message?: string, file?: string, stack?: string } | undefined
  return { code: e?.code, message: String(e?.message ?? err), file: e?.file, stack: e?.stack }
}

if (!isMainThread && parentPort) {
  const port = parentPort
  renice(Number((workerData as { niceness?: number } | undefined)?.niceness ?? 0))
  const tableCaches = new Map<string, TableCache>()
  const cancelled = new Set<number>()
  port.on('message', (req: Request) => {
    if (req.cancel) { cancelled.add(req.id); return }
    if (req.flush) {
      const entries = req.flush.entries
      runFlushJob(reviveFlushJob(req.flush), nodeFileSystem).then((result): Reply => ({ id: req.id, result }),
        (err: unknown): Reply => ({ id: req.id, error: errorReply(err) }))
        .then((reply) => {
          // The memtable copy goes back with the reply: this thread collects
          // garbage only when it allocates, which an idle worker never does.
          reply.returned = SkipList.stateTransferList(entries)
          port.postMessage(reply, reply.returned)
        })
      return
    }
    const job = reviveJob(req.job!)
    let tables = tableCaches.get(job.dir)
    if (!tables) {
      // Compaction reads each block once: a small cache is enough.
      tables = new TableCache(nodeFileSystem, job.dir, 64, new BlockCache(1024 * 1024))
      tableCaches.set(job.dir, tables)
    }
    const used = new Set<number>(job.runs.flat().map((f) => f.number))
    runCompactionJob(job, nodeFileSystem, tables, () => cancelled.has(req.id)).then((result): Reply => {
      return { id: req.id, result }
    }, (err: unknown): Reply => {
      return { id: req.id, error: errorReply(err) }
    }).then((reply) => {
      // The inputs are about to be deleted: close them, BEFORE replying, so that
      // once the job is over (and a close() waiting for it has returned) no file
      // of the database is still open here.
      try {
        for (const n of used) tables!.evict(n)
        cancelled.delete(req.id)
      } finally {
        port.postMessage(reply)
      }
    })
  })
}
