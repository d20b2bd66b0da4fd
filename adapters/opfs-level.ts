// The engine used directly in a dedicated Web Worker: LsmLevel on the Origin
// Private File System, for apps whose data code runs in a worker. No message
// hop per operation, and getSync() works (the sync access handles read
// synchronously). The Web Worker that BrowserLevel starts serves one of these.
// Where OPFS sync access handles are missing (WebKitGTK, Safari's private
// windows, a shared or service worker), it runs on the fallback storage:
// files held in memory and persisted to IndexedDB (the `storage` option).
//
// Open and close bracket the engine's own with what a browser database needs:
// the browser platform (installed once per worker, hosts/browser/platform.ts),
// the Web Lock that keeps other tabs and workers out (tab-lock.ts), and the
// database directory's mount on its storage (hosts/browser/storage.ts: the
// OPFS pool's files opened ahead of use, or the IndexedDB storage loaded into
// memory). A failed open leaves none of them held.
import '../hosts/browser/globals'
import { LsmLevel, type LsmLevelOptions } from './lsm-level'
import { installBrowserPlatform, resolveLocation } from '../hosts/browser/platform'
import { acquireTabLock } from '../hosts/browser/tab-lock'
import { invalidOption, ioError, levelError } from '../lib/errors'
import { MAX_OPEN_HANDLES } from '../hosts/browser/opfs-fs'
import { storageOption, type StorageChoice, type StorageKind } from '../hosts/browser/storage-option'
import { tabLocksAvailable } from '../hosts/browser/tab-lock'

export type OpfsLevelOptions<K = string, V = string> = LsmLevelOptions<K, V> & {
  /**
   * The most OPFS sync access handles the database keeps open at once
   * (default 64, at least 16): files beyond it are read through File
   * snapshots while their handle is reopened, the least recently used
   * closing. Safari allows a page 252 open handles in all.
   */
  maxOpenHandles?: number
  /**
   * Where the database's files are: 'opfs' (the Origin Private File System,
   * through sync access handles), 'indexeddb' (the fallback: the whole
   * database held in memory and persisted to IndexedDB; README, "Fallback
   * storage"), or 'auto' (default): a database already in IndexedDB stays
   * there, else OPFS where a probe opens a sync access handle, else IndexedDB.
   * `db.storage` says which one an open database uses.
   */
  storage?: StorageChoice
}

interface WorkerGlobals {
  FileSystemFileHandle?: { prototype: { createSyncAccessHandle?: unknown } }
  WorkerGlobalScope?: unknown
}

/** Sync access handles exist in dedicated workers only (not on a page, nor in shared or service workers). */
function syncAccessHandles (): boolean {
  const handle = (globalThis as WorkerGlobals).FileSystemFileHandle
  return typeof handle?.prototype.createSyncAccessHandle === 'function'
}

/** Any worker (dedicated, shared, service): where 'auto' may fall back to IndexedDB. */
function inWorker (): boolean {
  return (globalThis as WorkerGlobals).WorkerGlobalScope !== undefined
}

/**
 * An abstract-level database stored by lsm-level in the Origin Private File
 * System, under the directory named by `location`, for code running in a
 * dedicated worker. Another tab or worker (or another database in this
 * worker) opening the same location while this one is open gets LEVEL_LOCKED.
 */
export class OpfsLevel<K = string, V = string> extends LsmLevel<K, V> {
  private releaseTabLock: (() => void) | undefined
  private readonly maxOpenHandles: number
  private readonly storageChoice: StorageChoice
  private storageInUse: StorageKind | undefined

  constructor (location: string, options?: OpfsLevelOptions<K, V>) {
    const storage = storageOption(options?.storage)
    if (storage !== 'indexeddb' && !syncAccessHandles() && (storage === 'opfs' || !inWorker())) {
      throw levelError('LEVEL_NOT_SUPPORTED', "OpfsLevel runs in a dedicated Web Worker (it needs OPFS sync access handles) or, with storage: 'indexeddb', anywhere; elsewhere use BrowserLevel of lsm-level/browser")
    }
    const maxOpenHandles = options?.maxOpenHandles ?? MAX_OPEN_HANDLES
    if (!Number.isInteger(maxOpenHandles) || maxOpenHandles < 16) throw invalidOption('maxOpenHandles', `must be an integer of at least 16, got ${String(maxOpenHandles)}`)
    const { storage: _storage, ...rest } = options ?? {}
    super(location, rest as OpfsLevelOptions<K, V>)
    this.maxOpenHandles = maxOpenHandles
    this.storageChoice = storage
  }

  /** The storage the open database is on: 'opfs' or 'indexeddb' (undefined while not open). */
  get storage (): StorageKind | undefined {
    return this.storageInUse
  }

  /** 'lsm.storage' (also 'leveldb.storage'): the storage in use, as `storage`; else the engine's properties. */
  override getProperty (name: string): string {
    if (name === 'lsm.storage' || name === 'leveldb.storage') {
      if (this.storageInUse === undefined) return super.getProperty(name)
      return this.storageInUse
    }
    return super.getProperty(name)
  }

  override async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const fs = await installBrowserPlatform()
    const dir = resolveLocation(this.location)
    const release = await acquireTabLock(dir)
    try {
      const kind = await fs.mount(dir, { maxOpenHandles: this.maxOpenHandles, storage: this.storageChoice })
      try {
        // Nothing else keeps a second context off IndexedDB's files.
        if (kind === 'indexeddb' && !tabLocksAvailable()) throw levelError('LEVEL_NOT_SUPPORTED', `The IndexedDB storage needs Web Locks (navigator.locks) to keep other tabs out: ${dir}`)
        // Syncs there cannot block: a sync write waits for its IndexedDB transaction (syncAsync).
        await super._open(kind === 'indexeddb' ? { ...options, inlineSync: false } : options)
      } catch (err) {
        await fs.unmount(dir).catch(() => {})
        throw err
      }
      this.storageInUse = kind
    } catch (err) {
      release()
      throw err
    }
    this.releaseTabLock = release
  }

  override async _close (): Promise<void> {
    try {
      await super._close()
      const fs = await installBrowserPlatform()
      const dir = resolveLocation(this.location)
      await fs.unmount(dir).catch((err: unknown) => {
        throw ioError(`Cannot close ${dir}: its last changes did not reach IndexedDB`, err)
      })
    } finally {
      this.storageInUse = undefined
      this.releaseTabLock?.()
      this.releaseTabLock = undefined
    }
  }
}
