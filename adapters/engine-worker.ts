// The page's engine worker: the one dedicated worker (per worker factory) in
// which every BrowserLevel of this page (or worker) runs its engine, each
// database over a line of its own on the worker's postMessage
// (remote/worker-lines.ts). One worker, not one per
// database: a worker costs a start of about 100 ms (its script loaded and
// compiled again) and its own copy of the engine in memory, and browsers cap
// the workers a site runs (Firefox: 512), which an app of many databases (or
// the abstract-level test suite) reaches.
//
// The worker ends IDLE_WORKER_MS after its last database closed, or when it
// fails (it did not start in time, or an error escaped it): then every
// database in it fails, and the next open starts a new one.
import { WORKER_CONNECT, WORKER_STARTED, type WorkerLike } from './remote/channel'
import { RemoteConnection, type ClientChannel } from './remote/connection'
import type { Request, ServerMessage } from './remote/protocol'
import { LINES_FORMAT, WorkerLines } from './remote/worker-lines'
import { backgroundTimer } from '../lib/util/turn'
import { levelError } from '../lib/errors'

/** Starts the worker that runs the engine. */
export type WorkerFactory = () => WorkerLike

/** What a new database asks of the worker with its channel (the worker's part of BrowserLevel's options). */
export interface ConnectSetup {
  /** A port to the relay SharedWorker, given with the first connection that has one (the worker keeps it), or false: this database uses none. */
  relay: (() => unknown) | false
  ownerTimeoutMs: number | undefined
  storage: string
  workerStartTimeoutMs: number
}

/** How long a worker with no database stays for the next open. */
const IDLE_WORKER_MS = 5000

class EngineWorker {
  private readonly lines: WorkerLines
  private nextLine = 1
  private failure: Error | undefined
  private relayGiven = false
  private startTimer: ReturnType<typeof setTimeout> | undefined
  private idleTimer: ReturnType<typeof setTimeout> | undefined

  constructor (private readonly worker: WorkerLike, startTimeoutMs: number, private readonly forget: () => void) {
    this.lines = new WorkerLines((message, transfer) => worker.postMessage(message, transfer))
    worker.onmessage = (event) => {
      if (this.lines.deliver(event.data)) return
      const hello = event.data as { [WORKER_STARTED]?: boolean, lines?: number } | null
      if (hello?.[WORKER_STARTED] !== true) return
      clearTimeout(this.startTimer)
      if (hello.lines !== LINES_FORMAT) {
        this.fail(levelError('LEVEL_NOT_SUPPORTED', `The worker file speaks format ${String(hello.lines ?? 1)} of the page's messages, not ${LINES_FORMAT}: it is from another version of lsm-level than this page's bundle (a stale lsm-level-worker.js?)`))
      }
    }
    worker.onerror = (event) => {
      event.preventDefault()
      this.fail(new Error(`The worker failed: ${event.message}`))
    }
    this.startTimer = setTimeout(() => {
      this.fail(new Error(`The worker did not start within ${startTimeoutMs} ms (workerStartTimeoutMs): the browser may be running as many workers for this site as it allows (Firefox: 512); each tab of the site runs one for its databases, and the site's own workers count too`))
    }, startTimeoutMs)
  }

  /** Whether new databases may go to this worker. */
  get usable (): boolean {
    return this.failure === undefined
  }

  /** A connection for one database, over a new line to this worker. */
  connect (setup: ConnectSetup): RemoteConnection {
    clearTimeout(this.idleTimer)
    const relay = setup.relay !== false && !this.relayGiven ? setup.relay() : undefined
    if (relay !== undefined) this.relayGiven = true
    const n = this.nextLine++
    this.worker.postMessage({ [WORKER_CONNECT]: { line: n, relay, useRelay: setup.relay !== false, ownerTimeoutMs: setup.ownerTimeoutMs, storage: setup.storage } }, (relay === undefined ? [] : [relay]) as ArrayBuffer[])
    const line = this.lines.open<Request[], ServerMessage[]>(n)
    // The line ends when its database lets go of the connection, or when the worker fails.
    const channel: ClientChannel = {
      send: (message, transfer) => line.send(message, transfer),
      receive: (onMessage, onClose) => line.receive(onMessage, (reason) => {
        this.letGo()
        onClose?.(reason)
      }),
      close: () => line.close()
    }
    return new RemoteConnection(channel)
  }

  private letGo (): void {
    if (this.lines.size === 0 && this.failure === undefined) this.idleTimer = backgroundTimer(() => this.end(), IDLE_WORKER_MS)
  }

  private fail (reason: Error): void {
    if (this.failure !== undefined) return
    this.failure = reason
    this.end()
    this.lines.endAll(reason)
  }

  private end (): void {
    clearTimeout(this.startTimer)
    clearTimeout(this.idleTimer)
    this.failure ??= new Error('The worker ended')
    this.forget()
    this.worker.onmessage = null
    this.worker.onerror = null
    this.worker.terminate()
  }
}

/** The page's engine workers, by the factory that started them. */
const workers = new Map<WorkerFactory, EngineWorker>()

/** A connection for one database to the page's engine worker of `factory` (started now if there is none, or it failed). */
export function connectToEngineWorker (factory: WorkerFactory, setup: ConnectSetup): RemoteConnection {
  let engineWorker = workers.get(factory)
  if (engineWorker === undefined || !engineWorker.usable) {
    const started: EngineWorker = new EngineWorker(factory(), setup.workerStartTimeoutMs, () => {
      if (workers.get(factory) === started) workers.delete(factory)
    })
    workers.set(factory, started)
    engineWorker = started
  }
  return engineWorker.connect(setup)
}
