// The browser platform (lib/platform.ts): each database directory mounted on
// its storage before each open (storage.ts: the OPFS pool, or the fallback in
// memory persisted to IndexedDB), '/'-rooted paths, a lock table for this
// worker (other tabs and workers are kept out by the Web Lock that OpfsLevel
// takes, tab-lock.ts, and on OPFS by OPFS itself: a file's sync access handle
// is exclusive, so a second mount fails with LEVEL_LOCKED), and flushes and
// compactions on this worker's event loop, in slices.
import { installPlatform, type LockHandle } from '../../lib/platform'
import { OpfsFileSystem, type DirectoryHandle } from './opfs-fs'
import { BrowserFileSystem } from './storage'
import { levelError } from '../../lib/errors'

/** A location as an absolute OPFS path: '/' + its components, '.' and '..' resolved. */
export function resolveLocation (location: string): string {
  const parts: string[] = []
  for (const part of location.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') parts.pop()
    else parts.push(part)
  }
  return '/' + parts.join('/')
}

const locked = new Set<string>()

function acquireLock (_fs: unknown, dir: string): LockHandle {
  if (locked.has(dir)) throw levelError('LEVEL_LOCKED', `Database is locked by another open database in this worker: ${dir}`)
  locked.add(dir)
  const release = (): void => { locked.delete(dir) }
  return { dir, release, restore: release }
}

let installed: BrowserFileSystem | undefined

/**
 * Installs the platform, once per context (the worker entry and every
 * OpfsLevel share it); resolves to its file system. The OPFS root is asked
 * for when a database is first mounted on OPFS (or the probe runs): where
 * there is none, only the IndexedDB storage works.
 */
export async function installBrowserPlatform (): Promise<BrowserFileSystem> {
  installed ??= install()
  return installed
}

function install (): BrowserFileSystem {
  const fs = new BrowserFileSystem(opfsFileSystem, rootOnce)
  installPlatform({
    fileSystem: fs,
    resolvePath: resolveLocation,
    acquireLock,
    jobRunners: () => undefined
  })
  return fs
}

/** `get`'s promise, kept once it resolves (a failure is not kept: the next call tries again). */
function cached<T> (get: () => Promise<T>): () => Promise<T> {
  let kept: Promise<T> | undefined
  return async () => {
    kept ??= get().catch((err: unknown) => {
      kept = undefined
      throw err
    })
    return await kept
  }
}

const rootOnce = cached(opfsRoot)
const opfsOnce = cached(async () => new OpfsFileSystem(await rootOnce()))

/** The OPFS pool's file system over the origin's root, made once. */
async function opfsFileSystem (): Promise<OpfsFileSystem> {
  return await opfsOnce()
}

/**
 * The origin's OPFS root directory, or LEVEL_NOT_SUPPORTED naming what is
 * missing: no navigator.storage.getDirectory() (an older browser, a context
 * that is not secure), or one that fails (Safari's private windows have no
 * OPFS).
 */
async function opfsRoot (): Promise<DirectoryHandle> {
  const storage = (globalThis as unknown as { navigator?: { storage?: { getDirectory?: () => Promise<unknown> } } }).navigator?.storage
  if (typeof storage?.getDirectory !== 'function') {
    throw levelError('LEVEL_NOT_SUPPORTED', 'No Origin Private File System here: navigator.storage.getDirectory() is missing (it needs a secure context: https or localhost)')
  }
  try {
    return await storage.getDirectory() as DirectoryHandle
  } catch (err) {
    throw levelError('LEVEL_NOT_SUPPORTED', `No Origin Private File System here: navigator.storage.getDirectory() failed (${String((err as Error).name)}: ${String((err as Error).message)}; private browsing windows may have none)`, err)
  }
}
