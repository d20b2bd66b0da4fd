// Which storage each open database's directory is on, and the platform's file
// system over them: the OPFS pool (opfs-fs.ts), where this context has OPFS
// sync access handles, or the fallback, files held in memory and persisted to
// IndexedDB (idb-fs.ts). The `storage` option chooses: 'opfs', 'indexeddb',
// or 'auto' (the default): a directory already stored in IndexedDB stays
// there; otherwise OPFS when a probe opens a sync access handle (not a check
// of the browser's name), else IndexedDB. Where neither can be used, the
// mount fails at once with LEVEL_NOT_SUPPORTED naming what is missing.
import type { FileSystem, RandomAccessFile, WritableFile } from '../../lib/fs/fs'
import { levelError } from '../../lib/errors'
import type { DirectoryHandle, FileHandle, MountOptions, OpfsFileSystem } from './opfs-fs'
import { IndexedDbFileSystem, type IdbAccess } from './idb-fs'
import { browserIndexedDb, storeExists } from './idb-store'
import type { StorageChoice, StorageKind } from './storage-option'

export type { StorageChoice, StorageKind }

/** How long the probe waits for a sync access handle (Chromium was seen never to settle one for a new file, about once in 50). */
const PROBE_WAIT_MS = 1000

/**
 * Why this context cannot use OPFS sync access handles, or undefined if it
 * can: the method missing (a page, a shared or service worker, a browser
 * without them), no OPFS root (`root` rejects: private browsing, an
 * ephemeral session), or a handle refused (WebKitGTK: NotSupportedError). The
 * probe opens a handle on a file of its own, then removes it. A handle that
 * does not come within PROBE_WAIT_MS counts as working (the browser has them;
 * it is slow), and is closed if it ever comes.
 */
export async function syncAccessHandlesMissing (root: () => Promise<DirectoryHandle>): Promise<string | undefined> {
  const handleClass = (globalThis as unknown as { FileSystemFileHandle?: { prototype: { createSyncAccessHandle?: unknown } } }).FileSystemFileHandle
  if (typeof handleClass?.prototype.createSyncAccessHandle !== 'function') return 'no FileSystemFileHandle.createSyncAccessHandle() in this context (sync access handles exist in dedicated workers only)'
  let dir: DirectoryHandle
  try {
    dir = await root()
  } catch (err) {
    return String((err as Error).message)
  }
  const name = `.lsm-level-probe-${Math.random().toString(36).slice(2)}`
  let file: FileHandle
  try {
    file = await dir.getFileHandle(name, { create: true })
  } catch (err) {
    return `cannot create an OPFS file (${String((err as Error).name)}: ${String((err as Error).message)})`
  }
  const opening = file.createSyncAccessHandle()
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), PROBE_WAIT_MS) })
  try {
    const handle = await Promise.race([opening, late])
    if (handle === 'late') {
      opening.then((h) => h.close(), () => {})
      return undefined
    }
    handle.close()
    return undefined
  } catch (err) {
    return `createSyncAccessHandle() failed (${String((err as Error).name)}: ${String((err as Error).message)})`
  } finally {
    clearTimeout(timer)
    dir.removeEntry(name).catch(() => {})
  }
}

export interface StorageMountOptions extends MountOptions {
  storage?: StorageChoice
}

interface Mounted { kind: StorageKind, fs: FileSystem }

/**
 * The platform's file system: each mounted database directory on its
 * storage; every call goes to the storage of the directory its path is in.
 * Paths outside every mounted directory go to the OPFS pool (which has the
 * error for them) where there is one.
 */
export class BrowserFileSystem implements FileSystem {
  private readonly mounts = new Map<string, Mounted>()
  private probed: Promise<string | undefined> | undefined

  /**
   * `opfs`: the OPFS file system (rejects with LEVEL_NOT_SUPPORTED where this
   * context has no OPFS); `opfsRoot`: its root directory, for the probe;
   * `indexedDb`: IndexedDB, where there is one (looked up at each mount).
   */
  constructor (private readonly opfs: () => Promise<OpfsFileSystem>, private readonly opfsRoot: () => Promise<DirectoryHandle>, private readonly indexedDb: () => IdbAccess | undefined = browserIndexedDb) {}

  private get idb (): IdbAccess | undefined {
    return this.indexedDb()
  }

  /** Why OPFS sync access handles cannot be used here, or undefined; probed once per context (a failure to run the probe is not kept). */
  private async opfsMissing (): Promise<string | undefined> {
    this.probed ??= syncAccessHandlesMissing(this.opfsRoot)
    return await this.probed
  }

  /**
   * Mounts the database directory `dir` on the storage `options.storage`
   * asks for (see the top of this file); resolves to the storage used.
   */
  async mount (dir: string, options: StorageMountOptions = {}): Promise<StorageKind> {
    const existing = this.mounts.get(dir)
    if (existing !== undefined) return existing.kind
    const kind = await this.choose(dir, options.storage ?? 'auto')
    const fs = kind === 'opfs' ? await this.mountOpfs(dir, options) : await IndexedDbFileSystem.open(dir, this.idb!)
    this.mounts.set(dir, { kind, fs })
    return kind
  }

  private async mountOpfs (dir: string, options: MountOptions): Promise<OpfsFileSystem> {
    const opfs = await this.opfs()
    await opfs.mount(dir, options)
    return opfs
  }

  private async choose (dir: string, choice: StorageChoice): Promise<StorageKind> {
    if (choice === 'opfs') return 'opfs'
    if (choice === 'indexeddb') {
      if (this.idb === undefined) throw levelError('LEVEL_NOT_SUPPORTED', `storage: 'indexeddb' asked for, but there is no IndexedDB here (indexedDB is missing): ${dir}`)
      return 'indexeddb'
    }
    if (this.idb !== undefined && await storeExists(this.idb.factory, dir) === true) return 'indexeddb'
    const missing = await this.opfsMissing()
    if (missing === undefined) return 'opfs'
    if (this.idb !== undefined) return 'indexeddb'
    throw levelError('LEVEL_NOT_SUPPORTED', `No storage for ${dir} here: no OPFS sync access handles (${missing}) and no IndexedDB (indexedDB is missing)`)
  }

  /** The storage `dir` is mounted on, if it is. */
  storageOf (dir: string): StorageKind | undefined {
    return this.mounts.get(dir)?.kind
  }

  /** The file system of a mounted directory (tests, measurements). */
  mounted (dir: string): FileSystem | undefined {
    return this.mounts.get(dir)?.fs
  }

  /**
   * Lets go of `dir` (the database must be closed): OPFS handles closed; the
   * IndexedDB storage's changes committed first (rejects if they could not be).
   */
  async unmount (dir: string): Promise<void> {
    const m = this.mounts.get(dir)
    this.mounts.delete(dir)
    if (m === undefined) return
    if (m.fs instanceof IndexedDbFileSystem) await m.fs.close()
    else (m.fs as OpfsFileSystem).unmount(dir)
  }

  isMounted (dir: string): boolean {
    return this.mounts.has(dir)
  }

  /** The OPFS pool's handle counts of `dir` (zeros on IndexedDB). */
  handleCounts (dir: string): { open: number, maxOpen: number, bound: number } {
    const m = this.mounts.get(dir)
    if (m === undefined || m.kind !== 'opfs') return { open: 0, maxOpen: 0, bound: 0 }
    return (m.fs as OpfsFileSystem).handleCounts(dir)
  }

  /** The file system for `path`: its mounted directory's. */
  private on (path: string): FileSystem {
    for (const [dir, m] of this.mounts) {
      if (path === dir || (path.startsWith(dir + '/'))) return m.fs
    }
    for (const m of this.mounts.values()) if (m.kind === 'opfs') return m.fs
    const err = new Error(`ENOENT: not in a mounted database directory: ${path}`) as Error & { code: string }
    err.code = 'ENOENT'
    throw err
  }

  roomToCreate (dir: string, count: number): Promise<void> | undefined {
    return this.on(dir).roomToCreate?.(dir, count)
  }

  growthGrantBytes (dir: string): number | undefined {
    return this.on(dir).growthGrantBytes?.(dir)
  }

  openRead (path: string): RandomAccessFile { return this.on(path).openRead(path) }
  openWrite (path: string, options?: { preallocate?: boolean }): WritableFile { return this.on(path).openWrite(path, options) }
  readSmallFile (path: string): Buffer { return this.on(path).readSmallFile(path) }
  createExclusive (path: string, data: Uint8Array): void { this.on(path).createExclusive(path, data) }
  list (dir: string): string[] { return this.on(dir).list(dir) }
  hardLink (existing: string, newPath: string): void { this.on(existing).hardLink(existing, newPath) }
  rename (from: string, to: string): void { this.on(from).rename(from, to) }
  remove (path: string): void { this.on(path).remove(path) }
  removeDirIfEmpty (path: string): boolean { return this.on(path).removeDirIfEmpty(path) }
  mkdirp (path: string): void { this.on(path).mkdirp(path) }
  syncFile (path: string): void { this.on(path).syncFile(path) }
  syncDir (path: string): void { this.on(path).syncDir(path) }

  exists (path: string): boolean {
    try {
      return this.on(path).exists(path)
    } catch {
      return false
    }
  }
}
