// lsm-level in the browser: an abstract-level database on the main thread (or
// any window or worker) whose engine runs in a dedicated worker
// (lib/browser/worker-main.ts, bundled as lsm-level-worker.js beside this
// entry), on the Origin Private File System (hosts/browser/opfs-fs.ts). Operations
// travel as messages (lib/browser/protocol.ts): the requests of one turn in one
// postMessage, replies likewise, reply buffers transferred.
//
// One worker per open database: open() starts it, close() ends it. Keys and
// values cross as Uint8Arrays; abstract-level does the encodings here.
import { AbstractLevel, AbstractIterator, AbstractSnapshot } from 'abstract-level'
import type { AbstractDatabaseOptions } from 'abstract-level'
import ModuleError = require('module-error')
import type { ErrorMessage, RangeMessage, Reply, Request } from './lib/browser/protocol'
import { ENGINE_OPTION_NAMES, resolveOptions } from './lib/options'

// Replaced by the bundler (scripts/build-browser.js) with import.meta.url: the
// worker bundle sits beside this one. Undefined when this file runs unbundled.
declare const LSM_LEVEL_BUNDLE_URL: string | undefined

/** What this module uses of a dedicated Worker (declared here: the build has no DOM typings). */
export interface WorkerLike {
  postMessage (message: unknown): void
  terminate (): void
  onmessage: ((event: { data: Reply[] }) => void) | null
  onerror: ((event: { message: string, preventDefault (): void }) => void) | null
}

/** Starts the worker that runs the engine. */
export type WorkerFactory = () => WorkerLike

type WorkerConstructor = new (url: URL, options: { type: 'module' }) => WorkerLike

export interface BrowserLevelOptions<K = string, V = string> {
  keyEncoding?: AbstractDatabaseOptions<K, V>['keyEncoding']
  valueEncoding?: AbstractDatabaseOptions<K, V>['valueEncoding']
  /**
   * Starts the engine's worker (default: lsm-level-worker.js beside this
   * bundle, as a module worker). Give one when a bundler moves the file.
   */
  worker?: WorkerFactory
  /** Engine options (lib/options.ts), passed to the worker as they are. */
  [engineOption: string]: unknown
}

function defaultWorker (): WorkerLike {
  if (typeof LSM_LEVEL_BUNDLE_URL !== 'string') {
    throw new ModuleError('No worker: pass the `worker` option (a function that starts lsm-level-worker.js)', { code: 'LEVEL_INVALID_OPTION' })
  }
  const Worker = (globalThis as unknown as { Worker: WorkerConstructor }).Worker
  return new Worker(new URL('./lsm-level-worker.js', LSM_LEVEL_BUNDLE_URL), { type: 'module' })
}

function reviveError (e: ErrorMessage): Error {
  const err = new ModuleError(e.message, { code: e.code, cause: e.cause === undefined ? undefined : reviveError(e.cause) })
  if (e.name !== undefined && e.name !== 'Error' && e.name !== 'ModuleError') Object.defineProperty(err, 'name', { value: e.name })
  return err
}

/**
 * Workers whose database closed, kept a while for the next open with the same
 * factory (starting a worker and loading the engine costs tens of
 * milliseconds; apps and test suites open and close databases often).
 */
const idleWorkers = new Map<WorkerFactory, Connection[]>()
const IDLE_WORKERS_MAX = 2
const IDLE_WORKER_MS = 5000

function connect (factory: WorkerFactory): Connection {
  const idle = idleWorkers.get(factory)?.pop()
  if (idle !== undefined) {
    idle.wake()
    return idle
  }
  return new Connection(factory())
}

function retire (factory: WorkerFactory, connection: Connection): void {
  const idle = idleWorkers.get(factory) ?? []
  if (!connection.healthy || idle.length >= IDLE_WORKERS_MAX) {
    connection.terminate()
    return
  }
  idle.push(connection)
  idleWorkers.set(factory, idle)
  connection.sleep(() => {
    const i = idle.indexOf(connection)
    if (i >= 0) idle.splice(i, 1)
    connection.terminate()
  })
}

type Pending = { resolve: (value: unknown) => void, reject: (err: Error) => void }
type Message = Request extends infer R ? R extends { id: number } ? Omit<R, 'id'> : never : never

/** The worker and the requests in flight to it; the requests of one turn leave in one message. */
class Connection {
  private nextId = 1
  private readonly waiting = new Map<number, Pending>()
  private outbox: Request[] = []
  private failure: Error | undefined
  private idleTimer: ReturnType<typeof setTimeout> | undefined

  constructor (private readonly worker: WorkerLike) {
    worker.onmessage = (event) => {
      for (const r of event.data) this.settle(r)
    }
    worker.onerror = (event) => {
      event.preventDefault()
      this.fail(new ModuleError(`The lsm-level worker failed: ${event.message}`, { code: 'LEVEL_IO_ERROR' }))
    }
  }

  request (message: Message): Promise<unknown> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    const id = this.nextId++
    if (this.outbox.length === 0) queueMicrotask(() => this.send())
    this.outbox.push({ ...message, id } as Request)
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }))
  }

  /** A request whose reply only matters if it is an error, which the next request on the same object reports. */
  post (message: Message): void {
    this.request(message).catch(() => {})
  }

  get healthy (): boolean {
    return this.failure === undefined
  }

  /** Idle: `expire` runs unless wake() comes first. */
  sleep (expire: () => void): void {
    this.idleTimer = setTimeout(expire, IDLE_WORKER_MS)
  }

  wake (): void {
    clearTimeout(this.idleTimer)
  }

  terminate (): void {
    this.worker.terminate()
    this.fail(new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' }))
  }

  private send (): void {
    const batch = this.outbox
    this.outbox = []
    this.worker.postMessage(batch)
  }

  private settle (r: Reply): void {
    const p = this.waiting.get(r.id)
    if (p === undefined) return
    this.waiting.delete(r.id)
    if (r.error !== undefined) p.reject(reviveError(r.error))
    else p.resolve(r.result)
  }

  private fail (err: Error): void {
    this.failure = err
    const all = [...this.waiting.values()]
    this.waiting.clear()
    for (const p of all) p.reject(err)
  }
}

interface RangeOptions extends RangeMessage {
  snapshot?: BrowserSnapshot
}

function rangeMessage (options: RangeOptions): RangeMessage {
  return { gt: options.gt, gte: options.gte, lt: options.lt, lte: options.lte, reverse: options.reverse === true, limit: options.limit }
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

let nextObjectId = 1

class BrowserSnapshot extends SnapshotBase {
  readonly id = nextObjectId++

  constructor (options: object, private readonly connection: Connection) {
    super(options)
    connection.post({ op: 'snapshot', snapshot: this.id })
  }

  async _close (): Promise<void> {
    await this.connection.request({ op: 'snapshotClose', snapshot: this.id })
  }
}

type Entry = [Uint8Array | undefined, Uint8Array | undefined]

/** Entries fetched per request by next() (nextv() asks for what it is asked). */
const NEXT_BATCH = 64

// abstract-level's typings of the iterator constructor lag its runtime (options).
const IteratorBase = AbstractIterator as unknown as new (db: unknown, options: object) => AbstractIterator<BrowserLevel<unknown, unknown>, unknown, unknown>

class BrowserIterator extends IteratorBase {
  readonly id = nextObjectId++
  private buffered: Entry[] = []
  private ended = false

  constructor (db: BrowserLevel<unknown, unknown>, options: RangeOptions & { keys?: boolean, values?: boolean }, private readonly connection: Connection) {
    super(db, options)
    connection.post({ op: 'iterator', iterator: this.id, range: rangeMessage(options), keys: options.keys !== false, values: options.values !== false, snapshot: options.snapshot?.id })
  }

  async _next (): Promise<Entry | undefined> {
    if (this.buffered.length === 0 && !this.ended) {
      this.buffered = await this.fetch(NEXT_BATCH)
      this.buffered.reverse()
      if (this.buffered.length === 0) this.ended = true
    }
    return this.buffered.pop()
  }

  async _nextv (size: number): Promise<Entry[]> {
    if (this.buffered.length > 0) {
      const out = this.buffered.splice(Math.max(0, this.buffered.length - size)).reverse()
      return out
    }
    if (this.ended) return []
    const out = await this.fetch(size)
    if (out.length === 0) this.ended = true
    return out
  }

  private async fetch (size: number): Promise<Entry[]> {
    return await this.connection.request({ op: 'nextv', iterator: this.id, size }) as Entry[]
  }

  _seek (target: Uint8Array): void {
    this.buffered = []
    this.ended = false
    this.connection.post({ op: 'seek', iterator: this.id, target })
  }

  async _close (): Promise<void> {
    await this.connection.request({ op: 'iteratorClose', iterator: this.id })
  }
}

// abstract-level's typings lag its manifest (snapshots, signals, ...).
type LevelManifest = ConstructorParameters<typeof AbstractLevel>[0]

/**
 * An abstract-level database stored by lsm-level in the Origin Private File
 * System, under the directory named by `location`; the engine runs in a
 * dedicated worker. Another tab (or worker) opening the same location while
 * this one is open gets LEVEL_LOCKED.
 */
export class BrowserLevel<K = string, V = string> extends AbstractLevel<Uint8Array, K, V> {
  readonly location: string
  private connection: Connection | undefined
  private readonly startWorker: WorkerFactory
  private readonly engineOptions: Record<string, unknown>

  constructor (location: string, options: BrowserLevelOptions<K, V> = {}) {
    if (typeof location !== 'string' || location === '') {
      throw new ModuleError("Invalid option 'location': must be a non-empty string", { code: 'LEVEL_INVALID_OPTION' })
    }
    const { worker, ...rest } = options
    const engineOptions = pickEngineOptions(rest)
    // Validated here, so that bad options fail at construction with a clear message.
    resolveOptions(engineOptions)
    super({
      encodings: { view: true },
      has: true,
      seek: true,
      implicitSnapshots: true,
      explicitSnapshots: true,
      snapshots: true,
      createIfMissing: true,
      errorIfExists: true,
      permanence: true,
      deferredOpen: true,
      additionalMethods: { approximateSize: true, compactRange: true, flush: true, stats: true }
    } as LevelManifest, withoutEngineOptions(rest) as AbstractDatabaseOptions<K, V>)
    this.location = location
    this.startWorker = worker ?? defaultWorker
    this.engineOptions = engineOptions
  }

  private get worker (): Connection {
    if (this.connection === undefined) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    return this.connection
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const connection = connect(this.startWorker)
    const engineOptions = { ...this.engineOptions, ...pickEngineOptions(options), createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists }
    try {
      await connection.request({ op: 'open', location: this.location, options: engineOptions })
    } catch (err) {
      retire(this.startWorker, connection)
      throw err
    }
    this.connection = connection
  }

  async _close (): Promise<void> {
    const connection = this.connection
    this.connection = undefined
    if (connection === undefined) return
    await connection.request({ op: 'close' })
    retire(this.startWorker, connection)
  }

  async _put (key: Uint8Array, value: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.worker.request({ op: 'put', key, value, sync: options.sync === true })
  }

  async _del (key: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.worker.request({ op: 'del', key, sync: options.sync === true })
  }

  async _batch (operations: Array<{ type: 'put' | 'del', key: Uint8Array, value?: Uint8Array }>, options: { sync?: boolean }): Promise<void> {
    const ops = operations.map((op) => op.type === 'put' ? { type: op.type, key: op.key, value: op.value } : { type: op.type, key: op.key })
    await this.worker.request({ op: 'batch', ops, sync: options.sync === true })
  }

  async _get (key: Uint8Array, options: { snapshot?: BrowserSnapshot }): Promise<Uint8Array | undefined> {
    return await this.worker.request({ op: 'get', key, snapshot: options.snapshot?.id }) as Uint8Array | undefined
  }

  async _getMany (keys: Uint8Array[], options: { snapshot?: BrowserSnapshot }): Promise<Array<Uint8Array | undefined>> {
    return await this.worker.request({ op: 'getMany', keys, snapshot: options.snapshot?.id }) as Array<Uint8Array | undefined>
  }

  async _has (key: Uint8Array, options: { snapshot?: BrowserSnapshot }): Promise<boolean> {
    return await this.worker.request({ op: 'has', key, snapshot: options.snapshot?.id }) as boolean
  }

  async _hasMany (keys: Uint8Array[], options: { snapshot?: BrowserSnapshot }): Promise<boolean[]> {
    return await this.worker.request({ op: 'hasMany', keys, snapshot: options.snapshot?.id }) as boolean[]
  }

  async _clear (options: RangeOptions): Promise<void> {
    await this.worker.request({ op: 'clear', range: rangeMessage(options), snapshot: options.snapshot?.id })
  }

  _iterator (options: RangeOptions & { keys?: boolean, values?: boolean }): BrowserIterator {
    return new BrowserIterator(this as BrowserLevel<unknown, unknown>, options, this.worker)
  }

  _snapshot (options: object): BrowserSnapshot {
    return new BrowserSnapshot(options, this.worker)
  }

  /** Compacts the keys in [start, end) (encoded keys; all when omitted). */
  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    await this.callWhenOpen('compactRange', [start, end])
  }

  /** Writes the memtable to a table. */
  async flush (): Promise<void> {
    await this.callWhenOpen('flush', [])
  }

  /** The engine's statistics (see LsmLevel#stats). */
  async stats (): Promise<unknown> {
    return await this.callWhenOpen('stats', [])
  }

  /** Approximate bytes on disk for keys in [start, end) (encoded keys). */
  async approximateSize (start: Uint8Array, end: Uint8Array): Promise<number> {
    return await this.callWhenOpen('approximateSize', [start, end]) as number
  }

  private async callWhenOpen (method: string, args: unknown[]): Promise<unknown> {
    if (this.status === 'opening') await this.open({ passive: true } as object)
    return await this.worker.request({ op: 'call', method, args })
  }
}

// createIfMissing and errorIfExists are abstract-level's: they reach _open() through it.
const ENGINE_OPTION_KEYS: string[] = ENGINE_OPTION_NAMES.filter((n) => n !== 'createIfMissing' && n !== 'errorIfExists')

function pickEngineOptions (options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of ENGINE_OPTION_KEYS) if (options[name] !== undefined) out[name] = options[name]
  return out
}

function withoutEngineOptions (options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) if (!ENGINE_OPTION_KEYS.includes(k)) out[k] = v
  return out
}

/**
 * Asks the browser to keep this origin's storage (OPFS included) under storage
 * pressure rather than evict it (navigator.storage.persist()). Resolves to
 * whether the storage is persistent. Browsers may grant it silently (an
 * installed app, a bookmarked site, site engagement) or ask the user.
 */
export async function persistStorage (): Promise<boolean> {
  const storage = (globalThis as unknown as { navigator?: { storage?: { persist?: () => Promise<boolean> } } }).navigator?.storage
  if (storage?.persist === undefined) return false
  return await storage.persist()
}

export { BrowserLevel as Level }
export default BrowserLevel
