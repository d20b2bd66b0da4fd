// BrowserLevel: an abstract-level database on the main thread (or any window
// or worker) whose engine runs in a dedicated worker (the worker entry,
// bundled as lsm-level-worker.js beside the browser bundle), on the Origin
// Private File System. It is a RemoteLevel with a worker launcher: operations
// travel over the worker as the remote protocol's messages.
//
// One worker per open database: open() starts one (or takes an idle one),
// close() lets it go. Keys and values cross as Uint8Arrays; abstract-level
// does the encodings here.
import ModuleError = require('module-error')
import { workerChannel, type WorkerLike } from './remote/channel'
import { RemoteConnection, type ClientChannel } from './remote/connection'
import { RemoteLevel, type RemoteLevelOptions } from './remote-level'

// Replaced by the bundler (scripts/build-browser.js) with import.meta.url: the
// worker bundle sits beside this one. Undefined when this file runs unbundled.
declare const LSM_LEVEL_BUNDLE_URL: string | undefined

export type { WorkerLike }

/** Starts the worker that runs the engine. */
export type WorkerFactory = () => WorkerLike

type WorkerConstructor = new (url: URL, options: { type: 'module' }) => WorkerLike

export interface BrowserLevelOptions<K = string, V = string> {
  keyEncoding?: RemoteLevelOptions<K, V>['keyEncoding']
  valueEncoding?: RemoteLevelOptions<K, V>['valueEncoding']
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

/**
 * Connections to workers whose database closed, kept a while for the next
 * open with the same factory (starting a worker and loading the engine costs
 * tens of milliseconds; apps and test suites open and close databases often).
 */
const idleWorkers = new Map<WorkerFactory, RemoteConnection[]>()
const IDLE_WORKERS_MAX = 2
const IDLE_WORKER_MS = 5000

function connect (factory: WorkerFactory): RemoteConnection {
  const idle = idleWorkers.get(factory)?.pop()
  if (idle !== undefined) {
    clearTimeout(idleTimers.get(idle))
    idleTimers.delete(idle)
    return idle
  }
  return new RemoteConnection(workerChannel(factory()) as ClientChannel)
}

const idleTimers = new Map<RemoteConnection, ReturnType<typeof setTimeout>>()

function retire (factory: WorkerFactory, connection: RemoteConnection): void {
  const idle = idleWorkers.get(factory) ?? []
  if (!connection.healthy || idle.length >= IDLE_WORKERS_MAX) {
    connection.close()
    return
  }
  idle.push(connection)
  idleWorkers.set(factory, idle)
  idleTimers.set(connection, setTimeout(() => {
    idleTimers.delete(connection)
    const i = idle.indexOf(connection)
    if (i >= 0) idle.splice(i, 1)
    connection.close()
  }, IDLE_WORKER_MS))
}

/**
 * An abstract-level database stored by lsm-level in the Origin Private File
 * System, under the directory named by `location`; the engine runs in a
 * dedicated worker. Another tab (or worker) opening the same location while
 * this one is open gets LEVEL_LOCKED.
 */
export class BrowserLevel<K = string, V = string> extends RemoteLevel<K, V> {
  constructor (location: string, options: BrowserLevelOptions<K, V> = {}) {
    const { worker, ...rest } = options
    const factory = worker ?? defaultWorker
    super(location, { ...rest, connect: () => connect(factory), release: (connection) => retire(factory, connection) })
  }
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
