// The Node host's job runners: worker threads that run flush and compaction
// jobs (plain data, see the compaction job module) on the second core while
// the main thread keeps serving reads and writes. A thread opens the input
// tables itself (its own file descriptors and a small block cache) and writes
// the outputs; the main thread then installs them with one manifest edit.
// Errors come back with their LEVEL_* or errno code, file name and causes. The
// thread runs the engine's job server (lib/compaction/job-host.ts), which
// tests also run on the main thread over the in-memory file system
// (JobThread.inProcess).
//
// Memtable flushes run on the same thread (sharedJobThread), ahead of the
// compaction running there (lib/compaction/job-host.ts): the main thread copies
// the frozen memtable (a memcpy of its arena and index arrays) and transfers
// it, and spends no time building the level-0 table. One thread, not one for
// flushes and one for compactions: each thread is a JavaScript heap of its own
// with its garbage and its malloc arena (a 1,000,000-key fill's peak RSS on a
// loaded 2-core machine: 204-238 MB with one, 231-262 MB with two), and a
// second thread's CPU only competes with the event loop's on two cores.
//
// Words (docs/ARCHITECTURE.md, "Glossary"): a "job thread" is one of these
// worker threads (or its in-process stand-in); the "job server" is the code
// that serves jobs on it; the browser's page worker is something else: where
// BrowserLevel's engine runs.
import { MessageChannel, Worker, isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import type { FileSystem } from '../../lib/fs/fs'
import { nodeFileSystem } from './node-fs'
import { reviveMeta, type CompactionJob, type FlushJob, type JobRunner } from '../../lib/compaction/job'
import { serveJobs, type JobReply, type JobRequest } from '../../lib/compaction/job-host'
import { errorFromData } from '../../lib/error-codec'
import type { TableWriterResult } from '../../lib/compaction/table-writer'
import type { TableContent } from '../../lib/backup/table-content'
import { SkipList } from '../../lib/memtable/skiplist'
// The threads check and write every block's CRC-32: zlib's, as on the main thread.
import './crc'
// They read and hash the tables a backup puts.
import './sha256'

/** Set by scripts/build-node.js: in the bundles, the threads run the worker bundle beside this file. */
declare const LSM_LEVEL_WORKER_FILE: string | undefined

/**
 * The main thread's handle on a job server (lib/compaction/job-host.ts): a worker
 * thread (`JobThread.thread`), or, in tests, a MessageChannel whose other
 * end is served on this thread (`JobThread.inProcess`). Both get the same
 * messages, structured-cloned and transferred alike, and their replies go
 * through the same handling here. One thread serves every database in the
 * process (`sharedJobThread()`); it is unref'd, so it never keeps the
 * process alive.
 */
export class JobThread implements JobRunner {
  /**
   * A worker thread running jobs over the node file system.
   * @param niceness raised scheduling niceness of the thread (Linux; 0: as the
   *   process): a worker that should yield the CPU to the main thread when the
   *   two compete for a core.
   */
  static thread (niceness = 0, idleStopMs = WORKER_IDLE_STOP_MS): JobThread {
    const file = typeof LSM_LEVEL_WORKER_FILE === 'string' ? path.join(__dirname, LSM_LEVEL_WORKER_FILE) : __filename
    const data: JobHostData = { lsmLevelJobHost: true, niceness }
    return new JobThread(() => new Worker(file, { workerData: data }), idleStopMs)
  }

  /**
   * Jobs run on this thread over `fileSystem` (tests: the in-memory file
   * system), by the job server a worker thread runs, one MessageChannel hop away.
   * The channel lives while a job is in flight (an open port with a listener is
   * never collected): a database abandoned by a test leaves nothing behind.
   * Each busy spell gets a new host, whose table cache starts empty, as the
   * thread's is between jobs (it closes a compaction's inputs before replying).
   */
  static inProcess (fileSystem: FileSystem): JobThread {
    return new JobThread(() => {
      const { port1, port2 } = new MessageChannel()
      serveJobs(port2, fileSystem)
      port2.unref()
      return port1
    })
  }

  /**
   * @param idleStopMs a thread idle this long is stopped (it starts again with
   *   the next job); unused for a channel, which closes as soon as it is idle
   */
  private constructor (private readonly spawn: () => Worker | MessagePort, private readonly idleStopMs = 0) {}

  /** Jobs handed to this worker so far. */
  jobs = 0
  /** Threads started so far (each stop and restart counts one more). */
  starts = 0
  private endpoint: Worker | MessagePort | undefined
  private idleTimer: ReturnType<typeof setTimeout> | undefined
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (r: JobReply) => void, reject: (e: Error) => void }>()

  /** Whether a thread (or channel) is up now. */
  get running (): boolean {
    return this.endpoint !== undefined
  }

  private start (): Worker | MessagePort {
    const w = this.spawn()
    this.starts++
    w.on('message', (reply: JobReply) => {
      const p = this.waiting.get(reply.id)
      if (!p) return
      this.waiting.delete(reply.id)
      if (this.waiting.size === 0) this.idle(w)
      if (reply.error) p.reject(errorFromData(reply.error))
      else p.resolve(reply)
    })
    if (w instanceof Worker) {
      w.on('error', (err) => this.failAll(err))
      w.on('exit', (code) => {
        // A thread stopped when idle has nothing in flight, and a newer one may be up.
        if (this.endpoint !== w) return
        this.endpoint = undefined
        this.failAll(new Error(`compaction worker exited (${code})`))
      })
    }
    return w
  }

  /**
   * No job in flight: a thread stops holding the process, and is stopped once
   * idle for idleStopMs (an isolate holds its heap and its garbage: 9 MB for
   * one that ran nothing, more after jobs); a channel closes.
   */
  private idle (w: Worker | MessagePort): void {
    if (w instanceof Worker) {
      w.unref()
      this.idleTimer = setTimeout(() => {
        this.idleTimer = undefined
        if (this.endpoint !== w || this.waiting.size > 0) return
        this.endpoint = undefined
        void w.terminate()
      }, this.idleStopMs)
      this.idleTimer.unref()
    } else {
      w.close()
      if (this.endpoint === w) this.endpoint = undefined
    }
  }

  /**
   * Starts the thread ahead of a job (a start takes 40-125 ms on the thread);
   * it is then idle until the job comes, and stopped as any idle thread.
   * Nothing if it is up.
   */
  prepare (): void {
    if (this.endpoint !== undefined) return
    const w = this.endpoint = this.start()
    this.idle(w)
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
  async run (job: CompactionJob, signal?: { cancel?: () => void }): Promise<TableWriterResult> {
    return reviveResult(await this.send({ id: 0, job }, signal))
  }

  /**
   * Runs a memtable flush on the worker (not cancellable). It runs alongside a
   * compaction in progress there (both yield between slices), never behind it.
   */
  async flush (job: FlushJob): Promise<TableWriterResult> {
    return reviveResult(await this.send({ id: 0, flush: job }, undefined, SkipList.stateTransferList(job.entries)))
  }

  /**
   * Reads a table's checksums, and its bytes if keepBytes, on the worker (a
   * backup's put): the event loop neither reads nor hashes it. It runs
   * alongside the jobs there.
   */
  async readTable (path: string, size: number, keepBytes: boolean): Promise<TableContent> {
    const { table } = await this.send({ id: 0, readTable: { path, size, keepBytes } })
    const u = table!.bytes
    return { ...table!, bytes: u === undefined ? undefined : Buffer.from(u.buffer, u.byteOffset, u.byteLength) }
  }

  private send (req: JobRequest, signal?: { cancel?: () => void }, transfer?: ArrayBuffer[]): Promise<JobReply> {
    if (this.idleTimer !== undefined) {
      clearTimeout(this.idleTimer)
      this.idleTimer = undefined
    }
    if (!this.endpoint) this.endpoint = this.start()
    this.jobs++
    const id = this.nextId++
    req.id = id
    const w = this.endpoint
    if (signal) signal.cancel = () => w.postMessage({ id, cancel: true } satisfies JobRequest)
    return new Promise((resolve, reject) => {
      // Referenced only while a job is in flight: an idle worker never keeps the process alive.
      if (this.waiting.size === 0) w.ref()
      this.waiting.set(id, { resolve, reject })
      w.postMessage(req, transfer)
    })
  }
}

/** A job's result as the worker sent it: its tables' keys are Uint8Arrays again Buffers. */
function reviveResult (reply: JobReply): TableWriterResult {
  const r = reply.result!
  return { ...r, outputs: r.outputs.map(reviveMeta) }
}

/**
 * How long a worker thread may sit idle before it is stopped, which frees its
 * heap, its garbage and the transferred memtable copies it still holds.
 * Starting one takes 40-125 ms on the thread (loading its modules) and under
 * 5 ms on the event loop, and a flush that is coming starts it ahead
 * (prepare()); a sustained write load keeps it busy far more often than this.
 */
const WORKER_IDLE_STOP_MS = 1000

let shared: JobThread | undefined
let second: JobThread | undefined

/**
 * The worker thread that runs flushes and compactions. Nice 5: when the cores
 * are all busy, the CPU goes first to the application, then to this thread
 * (as RocksDB runs its background jobs below the application's threads);
 * a flush that writes may be waiting for runs ahead of the compaction there.
 * Measured on 2 cores with separate threads (in-process fills, 8 alternating
 * runs each, medians): 1,000-put batches 654k -> 809k puts/s, awaited puts
 * 140k -> 155k/s, with compaction niced (10) against at the event loop's priority.
 */
export function sharedJobThread (): JobThread {
  if (!shared) shared = JobThread.thread(5)
  return shared
}

/**
 * The thread that runs the second half of a split compaction (option
 * subcompactions, off by default): started by its first job only.
 */
export function sharedSecondJobThread (): JobThread {
  if (!second) second = JobThread.thread(10)
  return second
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

/** What a job thread is started with; the marker tells it from an app's own worker thread that loads lsm-level. */
interface JobHostData {
  lsmLevelJobHost: true
  niceness: number
}

const hostData = workerData as Partial<JobHostData> | null | undefined
if (!isMainThread && parentPort && hostData?.lsmLevelJobHost === true) {
  renice(Number(hostData.niceness ?? 0))
  serveJobs(parentPort, nodeFileSystem)
}
