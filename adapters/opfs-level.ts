// The engine used directly in a dedicated Web Worker: LsmLevel on the Origin
// Private File System, for apps whose data code runs in a worker. No message
// hop per operation, and getSync() works (the sync access handles read
// synchronously). The Web Worker that BrowserLevel starts serves one of these.
//
// Open and close bracket the engine's own with what a browser database needs:
// the browser platform (installed once per worker, hosts/browser/platform.ts),
// the Web Lock that keeps other tabs and workers out (tab-lock.ts), and the
// database directory's mount (its pool files opened ahead of use,
// hosts/browser/opfs-fs.ts). A failed open leaves none of them held.
import '../hosts/browser/globals'
import { LsmLevel, type LsmLevelOptions } from './lsm-level'
import { installBrowserPlatform, resolveLocation } from '../hosts/browser/platform'
import { acquireTabLock } from '../hosts/browser/tab-lock'
import { invalidOption, levelError } from '../lib/errors'
import { MAX_OPEN_HANDLES } from '../hosts/browser/opfs-fs'

export type OpfsLevelOptions<K = string, V = string> = LsmLevelOptions<K, V> & {
  /**
   * The most OPFS sync access handles the database keeps open at once
   * (default 64, at least 16): files beyond it are read through File
   * snapshots while their handle is reopened, the least recently used
   * closing. Safari allows a page 252 open handles in all.
   */
  maxOpenHandles?: number
}

interface WorkerGlobals {
  FileSystemFileHandle?: { prototype: { createSyncAccessHandle?: unknown } }
}

/** Sync access handles exist in dedicated workers only (not on a page, nor in shared or service workers). */
function syncAccessHandles (): boolean {
  const handle = (globalThis as WorkerGlobals).FileSystemFileHandle
  return typeof handle?.prototype.createSyncAccessHandle === 'function'
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

  constructor (location: string, options?: OpfsLevelOptions<K, V>) {
    if (!syncAccessHandles()) {
      throw levelError('LEVEL_NOT_SUPPORTED', 'OpfsLevel runs in a dedicated Web Worker (it needs OPFS sync access handles); elsewhere use BrowserLevel of lsm-level/browser')
    }
    const maxOpenHandles = options?.maxOpenHandles ?? MAX_OPEN_HANDLES
    if (!Number.isInteger(maxOpenHandles) || maxOpenHandles < 16) throw invalidOption('maxOpenHandles', `must be an integer of at least 16, got ${String(maxOpenHandles)}`)
    super(location, options)
    this.maxOpenHandles = maxOpenHandles
  }

  override async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const fs = await installBrowserPlatform()
    const dir = resolveLocation(this.location)
    const release = await acquireTabLock(dir)
    try {
      await fs.mount(dir, { maxOpenHandles: this.maxOpenHandles })
      try {
        await super._open(options)
      } catch (err) {
        fs.unmount(dir)
        throw err
      }
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
      fs.unmount(resolveLocation(this.location))
    } finally {
      this.releaseTabLock?.()
      this.releaseTabLock = undefined
    }
  }
}
