// What the engine needs from its host and cannot write in plain JavaScript: the
// default file system, path resolution, the directory lock and the threads that
// run flushes and compactions. (CRC-32 is installed apart, where the host has a
// faster one than the engine's own.) The engine core (the engine and what it
// imports) imports no node: module; a host installs its platform once, before
// the first open: the Node host (installed by importing it, as the Node entry
// does) or the browser's dedicated worker.
import type { FileSystem } from './fs/fs'
import type { JobRunners } from './compaction/job'

export interface LockHandle {
  /** The directory the lock is held on (as given to acquireLock). */
  readonly dir: string
  /** Releases the lock; idempotent. */
  release (): void
  /** Releases the lock and puts back the stale LOCK file it replaced, if any (for an open that failed). */
  restore (): void
}

export interface Platform {
  /** The file system an open uses when it is given none. */
  readonly fileSystem: FileSystem
  /** An absolute, normalised form of a database location (its key in the lock table). */
  resolvePath (location: string): string
  /** Takes the directory's lock or throws LEVEL_LOCKED. */
  acquireLock (fs: FileSystem, dir: string): LockHandle
  /** Where flushes and compactions over `fs` run; undefined: on the event loop, in slices. */
  jobRunners (fs: FileSystem): JobRunners | undefined
  /** Whether `fs`'s paths name this machine's files, which an object store's putFile reads by path. Optional: no. */
  isHostFileSystem? (fs: FileSystem): boolean
}

let installed: Platform | undefined

export function installPlatform (platform: Platform): void {
  installed = platform
}

export function platform (): Platform {
  if (installed === undefined) throw new Error('lsm-level: no platform installed (import lsm-level, or its browser entry)')
  return installed
}
