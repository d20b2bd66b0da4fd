// Ownership of a database across tabs and workers: the origin-wide Web Lock
// (navigator.locks) named for the database directory, taken before any of its
// files is opened and held until close. The browser releases it when the tab
// or worker that holds it ends.
import { levelError } from '../../lib/errors'

interface LockManager {
  request (name: string, options: { ifAvailable?: boolean, signal?: unknown }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>
  query (): Promise<{ held?: Array<{ name?: string }> }>
}

function lockManager (): LockManager | undefined {
  return (globalThis as unknown as { navigator?: { locks?: LockManager } }).navigator?.locks
}

/**
 * Whether this worker has the Web Locks API. Without it the exclusive OPFS
 * sync access handles still refuse a second opener (at mount), and a busy pool
 * file cannot be told from one held by another tab.
 */
export function tabLocksAvailable (): boolean {
  return lockManager() !== undefined
}

/**
 * Takes the lock for the directory `dir` (resolved), held until the returned
 * function is called: a second tab or worker (or a second database in this
 * worker) opening it gets LEVEL_LOCKED at once.
 */
export async function acquireTabLock (dir: string): Promise<() => void> {
  const locks = lockManager()
  if (locks === undefined) return () => {}
  return await new Promise((resolve, reject) => {
    locks.request(tabLockName(dir), { ifAvailable: true }, (lock) => {
      if (lock === null) {
        reject(levelError('LEVEL_LOCKED', `Database is open in another tab or worker: ${dir}`))
        return undefined
      }
      return new Promise<void>((release) => resolve(release))
    }).catch(reject)
  })
}

/**
 * Requests the Web Lock `name`: resolves, once granted, to the function that
 * releases it; to undefined when `ifAvailable` and it is held elsewhere, or
 * when `signal` aborts the wait (or there are no Web Locks here). Unlike
 * acquireTabLock, a request without ifAvailable waits in the browser's queue:
 * the lock comes when its holder releases it or its context ends.
 */
export async function requestWebLock (name: string, options: { ifAvailable?: boolean, signal?: AbortSignal } = {}): Promise<(() => void) | undefined> {
  const locks = lockManager()
  if (locks === undefined) return undefined
  return await new Promise((resolve) => {
    locks.request(name, { ifAvailable: options.ifAvailable === true, signal: options.signal }, (lock) => {
      if (lock === null) {
        resolve(undefined)
        return undefined
      }
      return new Promise<void>((release) => resolve(release))
    }).catch(() => resolve(undefined))
  })
}

/** Whether some context holds the Web Lock `name` now (false without Web Locks). */
export async function webLockHeld (name: string): Promise<boolean> {
  const locks = lockManager()
  if (locks === undefined) return false
  const state = await locks.query()
  return (state.held ?? []).some((l) => l.name === name)
}

/** The name of the tab lock of the directory `dir` (resolved). */
export function tabLockName (dir: string): string {
  return `lsm-level:${dir}`
}
