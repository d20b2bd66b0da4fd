// Ownership of a database across tabs and workers: the origin-wide Web Lock
// (navigator.locks) named for the database directory, taken before any of its
// files is opened and held until close. The browser releases it when the tab
// or worker that holds it ends.
import { levelError } from '../../lib/errors'

interface LockManager {
  request (name: string, options: { ifAvailable: boolean }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>
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
    locks.request(`lsm-level:${dir}`, { ifAvailable: true }, (lock) => {
      if (lock === null) {
        reject(levelError('LEVEL_LOCKED', `Database is open in another tab or worker: ${dir}`))
        return undefined
      }
      return new Promise<void>((release) => resolve(release))
    }).catch(reject)
  })
}
