// The handle budget of one mounted directory of the OPFS file system: at most
// maxOpenHandles sync access handles open at once. A handle is opened in a
// slot; when none is free the least recently used handle of a file that
// nothing writes is closed, and that file is read through a snapshot
// (opfs-snapshot-reads.ts) while its handle is reopened in the background.
// The pool (opfs-pool.ts) builds its free-file reserve on this; the design is
// described with the file system (opfs-fs.ts).
import { errnoError } from '../../lib/fs/fs'
import type { FileHandle, FileSnapshot, SyncAccessHandle } from './opfs-api'
import { SnapshotReads, type SnapshotReader } from './opfs-snapshot-reads'

/**
 * The most sync access handles a mounted directory keeps open at once
 * (Safari allows a page 252; each also holds memory and a file descriptor
 * in the browser). Files beyond it are read through snapshots (getFile(),
 * FileReaderSync) while their handle is reopened, the least recently used
 * closing.
 */
export const MAX_OPEN_HANDLES = 64
/** The smallest bound mount() accepts: room for the free files and the files being written. */
export const MIN_OPEN_HANDLES = 16
/**
 * How long a new pool file's sync access handle is waited for before it is
 * passed over, at first: each batch in a row in which none came waits twice
 * as long as the one before, up to HANDLE_WAIT_MAX_MS (a browser under load
 * was seen to take over a second for each).
 */
export const HANDLE_WAIT_MS = 1000
/**
 * Whether this browser counts an open sync access handle's granted capacity
 * against the quota (Chromium: at least 1 MiB for a handle whose file grew,
 * until it closes), told by navigator.userAgentData, which only Chromium
 * has. Elsewhere no such counting was measured, and a reopen costs: Firefox
 * 153 took 26 ms for a handle's open and close on a busy machine (Chromium
 * 1.3-3.2 ms).
 */
export function countsHandleCapacity (): boolean {
  const nav = (globalThis as { navigator?: { userAgentData?: unknown } }).navigator
  return typeof nav?.userAgentData === 'object' && nav.userAgentData !== null
}

/** How long reopenHandle waits for a file's handle to come again. */
const REOPEN_WAIT_MS = 10000
/** Handles reopened at once for reads. */
const REOPENS_AT_ONCE = 4

/** One pool file: the engine's name it carries, its handle when open, its snapshot when taken. */
export class PoolFile {
  /** The engine's name this file carries; '' when free (or being freed). */
  name = ''
  generation = 0
  readers = 0
  /** Removed while readers had it open: joins the free list when they close. */
  freeOnLastClose = false
  /** Removed while its handle was closed: its header still carries the old name until a handle writes a free one. */
  needsFreeHeader = false
  /** Open WritableFiles on it: its handle stays open. */
  writers = 0
  /** The sync access handle, when open (at most the pool's maxOpenHandles are). */
  handle: SyncAccessHandle | undefined
  /** The contents as of `version` (getFile()), for reads while the handle is closed. */
  snapshot: FileSnapshot | undefined
  snapshotting = false
  /** Bumped by every change through the handle: a snapshot taken before it is stale. */
  version = 0
  /** Changed through the handle since its last flush (true after a mount: unknown). */
  dirty = false
  /** When the handle was last used (the pool's clock), for closing the least recently used. */
  lastUse = 0
  reopening = false

  constructor (readonly entry: FileHandle, handle: SyncAccessHandle | undefined) {
    this.handle = handle
  }
}

/** The open handles of one mounted directory's pool files, within maxOpenHandles. */
export class HandleBudget {
  /** Every pool file of the directory that this pool knows. */
  readonly all = new Set<PoolFile>()
  /** Files whose header changed since the last syncDir. */
  readonly unsyncedHeaders = new Set<PoolFile>()
  /** Set when the directory is unmounted: nothing more is opened. */
  closed = false
  /** Handles open or being opened: never above maxOpenHandles. */
  openHandles = 0
  /** The most handles that were open at once (tests, measurements). */
  maxOpenSeen = 0
  private clock = 0
  private reopens = 0
  /** Whether the browser counts open handles' granted capacity against the quota (countsHandleCapacity). */
  readonly countsCapacity = countsHandleCapacity()
  /** Handle openings in progress (each settles after closing its handle if the pool closed meanwhile). */
  readonly opening = new Set<Promise<unknown>>()
  /** Reads of files whose handle is closed. */
  readonly snapshotReads: SnapshotReads

  constructor (readonly maxOpenHandles: number, readSnapshot: SnapshotReader) {
    this.snapshotReads = new SnapshotReads(readSnapshot)
  }

  /** The handle of `file`, marked as used now; throws if it is closed (callers make sure it is open). */
  handleOf (file: PoolFile): SyncAccessHandle {
    if (file.handle === undefined) throw errnoError('EIO', `the sync access handle of ${file.name === '' ? 'a free pool file' : file.name} is closed`)
    file.lastUse = ++this.clock
    return file.handle
  }

  /** Marks `file` changed through its handle: its snapshot is stale, a flush is due. */
  changed (file: PoolFile): void {
    file.version++
    file.snapshot = undefined
    file.dirty = true
  }

  /**
   * Takes a slot for a handle about to be opened: true when fewer than
   * maxOpenHandles are open (after closing the least recently used one if
   * needed), false when every open one is in use.
   */
  takeSlot (): boolean {
    if (this.openHandles >= this.maxOpenHandles && !this.closeLeastRecentlyUsed()) return false
    this.openHandles++
    this.maxOpenSeen = Math.max(this.maxOpenSeen, this.openHandles)
    return true
  }

  /**
   * Closes the handle of the least recently used file that nothing needs open:
   * a named file no WritableFile writes, whose contents a snapshot holds for
   * reads. Files without a snapshot yet get one asked for. False if none.
   */
  closeLeastRecentlyUsed (): boolean {
    let victim: PoolFile | undefined
    const unsnapshotted: PoolFile[] = []
    for (const file of this.all) {
      if (file.handle === undefined || file.writers > 0 || file.name === '' || file.reopening) continue
      if (file.snapshot === undefined) {
        unsnapshotted.push(file)
        continue
      }
      if (victim === undefined || file.lastUse < victim.lastUse) victim = file
    }
    unsnapshotted.sort((a, b) => a.lastUse - b.lastUse)
    for (const file of unsnapshotted.slice(0, 4)) this.takeSnapshot(file)
    if (victim === undefined) return false
    this.closeHandle(victim)
    return true
  }

  /** Whether few handle slots are left: files whose writer closes then get a snapshot at once, to be ready to close. */
  nearBound (): boolean {
    return this.openHandles >= this.maxOpenHandles * 3 / 4
  }

  /** Closes `file`'s handle (flushed first if it changed: a closed handle cannot flush at syncDir). */
  closeHandle (file: PoolFile): void {
    const handle = file.handle
    if (handle === undefined) return
    if (file.dirty || this.unsyncedHeaders.has(file)) handle.flush()
    file.dirty = false
    this.unsyncedHeaders.delete(file)
    handle.close()
    file.handle = undefined
    this.openHandles--
  }

  /** Asks for a snapshot of `file`'s contents (getFile()), kept if the file has not changed meanwhile. */
  takeSnapshot (file: PoolFile): void {
    if (file.snapshot !== undefined || file.snapshotting || this.closed) return
    file.snapshotting = true
    const version = file.version
    file.entry.getFile().then((snapshot) => {
      if (file.version === version) file.snapshot = snapshot
    }, () => {}).finally(() => { file.snapshotting = false })
  }

  /**
   * Opens `file`'s handle in a free slot. Resolves false (and leaves it
   * closed) when no slot is free or the handle cannot be opened now.
   */
  async openHandle (file: PoolFile): Promise<boolean> {
    if (file.handle !== undefined) return true
    if (file.reopening || !this.takeSlot()) return false
    return await this.tracked(this.openInSlot(file))
  }

  /** `opening`, counted in `this.opening` until it settles. */
  protected async tracked<T> (opening: Promise<T>): Promise<T> {
    this.opening.add(opening)
    try {
      return await opening
    } finally {
      this.opening.delete(opening)
    }
  }

  private async openInSlot (file: PoolFile): Promise<boolean> {
    file.reopening = true
    try {
      const opening = file.entry.createSyncAccessHandle()
      const handle = await within(opening, HANDLE_WAIT_MS)
      if (handle === undefined) {
        this.openHandles--
        // One that comes later is closed: left open, it would hold the file
        // against this database's next open (LEVEL_LOCKED).
        opening.then((late) => late.close(), () => {})
        return false
      }
      if (this.closed) {
        handle.close()
        this.openHandles--
        return false
      }
      file.handle = handle
      file.lastUse = ++this.clock
      return true
    } catch {
      this.openHandles--
      return false
    } finally {
      file.reopening = false
    }
  }

  /**
   * Closes `file`'s handle and opens it again in the same slot (its writers
   * wait: nothing else uses it meanwhile). Chromium counts an open handle's
   * file at its size, and a handle whose writes grew the file at the capacity
   * it granted (at least 1 MiB): the reopen gives that back. Throws EIO if
   * the handle does not come within REOPEN_WAIT_MS (one that comes later is closed).
   */
  async reopenHandle (file: PoolFile): Promise<void> {
    if (file.handle === undefined || this.closed) return
    file.reopening = true
    try {
      this.closeHandle(file)
      this.openHandles++
      const opening = file.entry.createSyncAccessHandle()
      const handle = await within(opening, REOPEN_WAIT_MS).catch(() => undefined)
      if (handle === undefined || this.closed) {
        this.openHandles--
        if (handle !== undefined) handle.close()
        else opening.then((late) => late.close(), () => {})
        throw errnoError('EIO', `the sync access handle of ${file.name} did not open again within ${REOPEN_WAIT_MS} ms`)
      }
      file.handle = handle
      file.lastUse = ++this.clock
    } finally {
      file.reopening = false
    }
  }

  /** A read found `file`'s handle closed: it is reopened in the background (a few at once), the least recently used closing. */
  wantHandle (file: PoolFile): void {
    if (file.handle !== undefined || file.reopening || this.reopens >= REOPENS_AT_ONCE || this.closed) return
    this.reopens++
    this.openHandle(file).finally(() => { this.reopens-- }).catch(() => {})
  }
}

/** What `promise` resolves to within `ms`, else undefined. */
export async function within<T> (promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), ms) })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
