// BrowserLevel: an abstract-level database on the main thread (or any window
// or worker) whose engine runs in a dedicated worker (the worker entry,
// bundled as lsm-level-worker.js beside the browser bundle), on the Origin
// Private File System. It is a RemoteLevel with a worker launcher: operations
// travel over the worker as the remote protocol's messages.
//
// One worker for all the databases of a page (engine-worker.ts): the first
// open starts it, each database talks to it over a channel of its own, and it
// ends a while after the last one closed. Keys and values cross as
// Uint8Arrays; abstract-level does the encodings here.
//
// Any number of tabs and workers may open one location: the worker of the
// first owns the engine, the others' workers are its clients
// (adapters/tabs/). On a page, BrowserLevel also starts the relay
// SharedWorker (lsm-level-relay.js) through which those workers reach the
// owner's, and hands its worker a port to it.
import ModuleError = require('module-error')
import type { WorkerLike } from './remote/channel'
import { connectToEngineWorker, type WorkerFactory } from './engine-worker'
import { RemoteLevel, type RemoteLevelOptions } from './remote-level'
import { storageOption, type StorageChoice, type StorageKind } from '../hosts/browser/storage-option'

// Replaced by the bundler (scripts/build-browser.js) with import.meta.url: the
// worker bundle sits beside this one. Undefined when this file runs unbundled.
declare const LSM_LEVEL_BUNDLE_URL: string | undefined

export type { WorkerLike }

export type { WorkerFactory }

/** What BrowserLevel uses of a SharedWorker. */
export interface SharedWorkerLike {
  port: { postMessage (message: unknown): void }
}

/** Starts (or joins) the relay SharedWorker, lsm-level-relay.js. */
export type RelayFactory = () => SharedWorkerLike

type WorkerConstructor = new (url: URL, options: { type: 'module' }) => WorkerLike
type SharedWorkerConstructor = new (url: URL | string, options: { type: 'module', name: string }) => SharedWorkerLike

export interface BrowserLevelOptions<K = string, V = string> {
  keyEncoding?: RemoteLevelOptions<K, V>['keyEncoding']
  valueEncoding?: RemoteLevelOptions<K, V>['valueEncoding']
  /**
   * Starts the engine's worker (default: lsm-level-worker.js beside this
   * bundle, as a module worker). Give one when a bundler moves the file. The
   * databases opened with the same function share one worker.
   */
  worker?: WorkerFactory
  /**
   * Starts or joins the relay SharedWorker through which the workers of the
   * tabs that share a database reach its owner (default: lsm-level-relay.js
   * beside this bundle, where SharedWorker exists; give one when a bundler
   * moves the file). `false`: no relay; this tab's worker then talks to the
   * owner over BroadcastChannels (slower; the default where there is no
   * SharedWorker, as in a worker).
   */
  relay?: RelayFactory | false
  /**
   * How long an operation waits for the database's owner (another tab's
   * worker) to answer, during a takeover or when it is hung, before failing
   * with LEVEL_OWNER_UNREACHABLE. Default 5000.
   */
  ownerTimeoutMs?: number
  /**
   * Where the database's files are: 'opfs' (the Origin Private File System,
   * through sync access handles), 'indexeddb' (the fallback: the whole
   * database held in memory and persisted to IndexedDB; README, "Fallback
   * storage"), or 'auto' (default): a database already in IndexedDB stays
   * there, else OPFS where the worker's probe opens a sync access handle, else
   * IndexedDB. `db.storage` says which one the open database uses.
   */
  storage?: StorageChoice
  /**
   * How long a new worker has to start (its script loaded and run) before the
   * open fails, the worker ended. Browsers cap the workers a site runs
   * (Firefox: 512, its preference dom.workers.maxPerDomain, across the site's
   * tabs) and queue the next ones until one ends. Default 30000.
   */
  workerStartTimeoutMs?: number
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

function defaultRelay (): SharedWorkerLike | undefined {
  const SharedWorker = (globalThis as unknown as { SharedWorker?: SharedWorkerConstructor }).SharedWorker
  if (SharedWorker === undefined || typeof LSM_LEVEL_BUNDLE_URL !== 'string') return undefined
  return new SharedWorker(new URL('./lsm-level-relay.js', LSM_LEVEL_BUNDLE_URL), { type: 'module', name: 'lsm-level-relay' })
}

/**
 * A port to the relay for the worker (the port of a new connection to the
 * SharedWorker, transferred to the worker), or undefined when there is none:
 * the worker then uses BroadcastChannels.
 */
function relayPort (factory: RelayFactory | undefined): unknown {
  try {
    return (factory === undefined ? defaultRelay() : factory())?.port
  } catch {
    return undefined
  }
}

const WORKER_START_TIMEOUT_MS = 30000

/** Who owns a database shared by tabs, as one tab sees it (BrowserLevel#tabs). */
export interface TabsInfo {
  /** Whether this tab's worker runs the engine ('owner') or is a client of the one that does. */
  role: 'owner' | 'client' | 'none'
  clientId: string
  ownerId?: string
  /** For the owner: the other tabs' sessions it serves, and their iterators, snapshots and change feeds. */
  owner?: { ownerId: string, clients: number, iterators: number, snapshots: number, feeds: number }
  /** How many times the owner changed while this database was open. */
  ownerChanges: number
}

/**
 * An abstract-level database stored by lsm-level in the Origin Private File
 * System, under the directory named by `location`; the engine runs in a
 * dedicated worker. Any number of tabs and workers may open the same
 * location: the first one's worker owns the engine and serves the others,
 * and another takes over when it goes (README, "Many tabs").
 */
export class BrowserLevel<K = string, V = string> extends RemoteLevel<K, V> {
  private storageInUse: StorageKind | undefined

  constructor (location: string, options: BrowserLevelOptions<K, V> = {}) {
    const { worker, relay, ownerTimeoutMs, storage, workerStartTimeoutMs, ...rest } = options
    for (const [name, value] of [['ownerTimeoutMs', ownerTimeoutMs], ['workerStartTimeoutMs', workerStartTimeoutMs]] as const) {
      if (value !== undefined && !(typeof value === 'number' && value > 0)) {
        throw new ModuleError(`Invalid option '${name}': must be a positive number`, { code: 'LEVEL_INVALID_OPTION' })
      }
    }
    const factory = worker ?? defaultWorker
    const setup = { relay: relay === false ? false as const : () => relayPort(relay), ownerTimeoutMs, storage: storageOption(storage), workerStartTimeoutMs: workerStartTimeoutMs ?? WORKER_START_TIMEOUT_MS }
    super(location, { ...rest, connect: () => connectToEngineWorker(factory, setup) })
  }

  /**
   * The storage the open database is on: 'opfs' or 'indexeddb' (the
   * fallback, README "Fallback storage"); the owner's, when another tab owns
   * it. Undefined while not open.
   */
  get storage (): StorageKind | undefined {
    return this.status === 'open' ? this.storageInUse : undefined
  }

  override async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    await super._open(options)
    try {
      this.storageInUse = await this.callServer('getProperty', ['lsm.storage']) as StorageKind
    } catch (err) {
      await super._close().catch(() => {})
      throw err
    }
  }

  /** Whether this tab owns the database or is a client of the tab that does, and what the owner serves. */
  async tabs (): Promise<TabsInfo> {
    return await this.callWhenOpen('tabs', []) as TabsInfo
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
