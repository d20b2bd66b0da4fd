// The pool of one mounted directory of the OPFS file system: pool files with
// their sync access handles (at most maxOpenHandles open), the free files kept
// ahead of use and their growth, snapshots for reads of files whose handle is
// closed. The design is described with the file system (opfs-fs.ts).
import { ioError } from '../../lib/errors'
import { errnoError } from '../../lib/fs/fs'
import type { DirectoryHandle, FileHandle, FileSnapshot, SyncAccessHandle } from './opfs-api'
import { encodeHeader, HEADER_BYTES } from './opfs-pool-header'
export const POOL_SUFFIX = '.pool'
/** Free pool files kept ahead of need at first; more are created in the background below this. */
export const RESERVE_FILES = 16
/** The most free files the target grows to after bursts drained the pool (each is an open handle). */
export const MAX_FREE_FILES = 32
/** New pool files whose handles are opened at once. */
export const GROWTH_BATCH = 8
/**
 * How long a new pool file's sync access handle is waited for before it is
 * passed over, at first: each batch in a row in which none came waits twice
 * as long as the one before, up to HANDLE_WAIT_MAX_MS (a browser under load
 * was seen to take over a second for each).
 */
export const HANDLE_WAIT_MS = 1000
export const HANDLE_WAIT_MAX_MS = 8000
/** How long growth goes on with no new handle coming before it fails with LEVEL_IO_ERROR. */
export const GROWTH_GIVE_UP_MS = 30000
/** Free pool files mount() waits for. */
export const MOUNT_FREE_FILES = 6
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
/** How long mount() retries a pool file whose handle another context holds before LEVEL_LOCKED. */
export const BUSY_WAIT_MS = 5000
/** The end of a file that a read there through a snapshot reads at once, and how many such windows are kept (1 MiB in all). */
const SNAPSHOT_WINDOW_BYTES = 128 * 1024
const SNAPSHOT_WINDOWS = 8
/** Handles reopened at once for reads. */
const REOPENS_AT_ONCE = 4
/** How long growth waits for a handle slot when every open handle is in use. */
const SLOT_WAIT_MS = 10

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

/**
 * Writes all of `bytes` at `at`, or throws ENOSPC. A sync access handle's
 * write() does not throw when the origin's quota is full: Chrome 150 returns
 * a bogus count (0xFFFFFFF8) after writing what fit, Firefox 153 a short
 * count. Either is a full quota, which the engine reports as
 * LEVEL_STORAGE_FULL (lib/errors.ts: ioError).
 */
export function writeAll (handle: SyncAccessHandle, bytes: Uint8Array, at: number): void {
  const n = handle.write(bytes, { at })
  if (n !== bytes.length) {
    const what = n > bytes.length ? `a bogus count, ${n}, from write() of ${bytes.length} bytes` : `a short write, ${n} of ${bytes.length} bytes`
    throw errnoError('ENOSPC', `the storage quota is full (${what})`)
  }
}

/** Reads bytes [start, end) of a snapshot synchronously (FileReaderSync in a worker). */
export type SnapshotReader = (snapshot: FileSnapshot, start: number, end: number) => Uint8Array

interface FileReaderSyncLike { readAsArrayBuffer (blob: unknown): ArrayBuffer }
let fileReader: FileReaderSyncLike | undefined

export function readWithFileReaderSync (snapshot: FileSnapshot, start: number, end: number): Uint8Array {
  const Reader = (globalThis as { FileReaderSync?: new () => FileReaderSyncLike }).FileReaderSync
  if (Reader === undefined) throw errnoError('EIO', 'no FileReaderSync here to read a file whose sync access handle is closed')
  fileReader ??= new Reader()
  return new Uint8Array(fileReader.readAsArrayBuffer(snapshot.slice(start, end)))
}

/** The files of one mounted directory. */
export class Pool {
  /** Every pool file of the directory that this pool knows. */
  readonly all = new Set<PoolFile>()
  readonly byName = new Map<string, PoolFile>()
  /** Free files with an open handle, ready for a synchronous create. */
  readonly free: PoolFile[] = []
  /** Free files whose handle is closed (some still to be given a free header): growth reopens these before it makes new ones. */
  readonly spare: PoolFile[] = []
  /** Files whose header changed since the last syncDir. */
  readonly unsyncedHeaders = new Set<PoolFile>()
  generation = 0
  /** Pool file names used so far (the next one is p<count>.pool). */
  count = 0
  /** Free files growth keeps ahead of need (see the top of this file). */
  target: number
  readonly maxFree: number
  growing: Promise<void> | undefined
  growthError: unknown
  /** Callers waiting for growth (roomFor): settled after each batch and when growth ends. */
  private waiters: Array<{ resolve: () => void, reject: (err: unknown) => void }> = []
  closed = false
  /** Handles open or being opened: never above maxOpenHandles. */
  openHandles = 0
  /** The most handles that were open at once (tests, measurements). */
  maxOpenSeen = 0
  private clock = 0
  private reopens = 0
  /** Files being freed whose handle is closed: given a free header when a handle can be opened. */
  private readonly toFree: PoolFile[] = []
  private freeing = false
  /** Stretches of snapshots read ahead, the most recent last (readFromSnapshot). */
  private readonly windows: Array<{ snapshot: FileSnapshot, start: number, bytes: Uint8Array }> = []
  /** Capacity releases in progress (releaseCapacity): new files wait for them. */
  readonly releasing = new Set<Promise<void>>()
  /** Handle openings in progress (each settles after closing its handle if the pool closed meanwhile). */
  readonly opening = new Set<Promise<unknown>>()

  /** The first wait for a new file's handle, and how long growth goes on with none coming (HANDLE_WAIT_MS, GROWTH_GIVE_UP_MS; tests make them short). */
  readonly handleWaitMs: number
  readonly growthGiveUpMs: number

  constructor (readonly dir: DirectoryHandle, readonly maxOpenHandles: number, readonly readSnapshot: SnapshotReader, readonly abandoned: Set<string>, waits: { handleWaitMs?: number, growthGiveUpMs?: number } = {}) {
    this.handleWaitMs = waits.handleWaitMs ?? HANDLE_WAIT_MS
    this.growthGiveUpMs = waits.growthGiveUpMs ?? GROWTH_GIVE_UP_MS
    this.maxFree = Math.min(MAX_FREE_FILES, Math.floor(maxOpenHandles / 2))
    this.target = Math.max(MOUNT_FREE_FILES, Math.min(RESERVE_FILES, Math.floor(maxOpenHandles / 4)))
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

  writeHeader (file: PoolFile, name: string): void {
    const generation = ++this.generation
    const bytes = encodeHeader({ generation, name })
    writeAll(this.handleOf(file), bytes, 0)
    this.changed(file)
    if (file.name !== '' && this.byName.get(file.name) === file) this.byName.delete(file.name)
    file.name = name
    file.generation = generation
    file.needsFreeHeader = false
    if (name !== '') this.byName.set(name, file)
    this.unsyncedHeaders.add(file)
  }

  /** A free file, or LEVEL_IO_ERROR when none is left (callers that can wait ask roomFor first). Starts growth when low. */
  take (): PoolFile {
    const file = this.free.pop()
    if (this.free.length < this.target) this.grow()
    if (file === undefined) {
      const why = this.growthError === undefined ? 'more are being created; wait for them with roomToCreate' : `creating more failed: ${String(this.growthError)}`
      throw ioError(`No free file in the OPFS pool (${this.byName.size} in use; ${why})`, this.growthError)
    }
    // A file freed since the last syncDir: its free header is made durable
    // before it carries a new name, or a crash could bring back the old name
    // over the new contents.
    if (this.unsyncedHeaders.delete(file)) this.handleOf(file).flush()
    return file
  }

  /**
   * Undefined when `count` free files are here now and no capacity release
   * is in progress (releaseCapacity); else a promise that resolves once the
   * releases are over, or once growth has added files (or ended), or rejects
   * if it failed. A caller that has to wait for files means demand outran
   * growth: the target doubles.
   */
  roomFor (count: number): Promise<void> | undefined {
    if (this.releasing.size > 0 && !this.closed) {
      return Promise.all([...this.releasing]).then(() => {
        if (this.closed) throw errnoError('EBADF', 'the OPFS directory was unmounted')
      })
    }
    if (this.free.length >= count) return undefined
    if (this.closed) return Promise.reject(errnoError('EBADF', 'the OPFS directory was unmounted'))
    this.target = Math.min(this.maxFree, Math.max(2 * this.target, count))
    return this.whenGrown()
  }

  /** Starts growth if it is not running; resolves after its next batch (or its end), rejects if it fails. */
  whenGrown (): Promise<void> {
    const waiting = new Promise<void>((resolve, reject) => { this.waiters.push({ resolve, reject }) })
    this.grow()
    return waiting
  }

  /**
   * Frees `file`: its name is gone at once; its header becomes a free one now
   * if its handle is open, else once a handle can be opened (a crash before
   * brings the old name back: an orphan, which the engine removes at open).
   * It joins the free files once its last reader closes.
   */
  release (file: PoolFile): void {
    if (file.handle === undefined) {
      if (this.byName.get(file.name) === file) this.byName.delete(file.name)
      file.name = ''
      file.needsFreeHeader = true
    } else {
      this.writeHeader(file, '')
    }
    if (file.readers > 0) {
      file.freeOnLastClose = true
      return
    }
    this.recycle(file)
  }

  /** Adds a freed file (its last reader gone) to the free files, or to the spare ones. */
  recycle (file: PoolFile): void {
    file.freeOnLastClose = false
    if (file.handle === undefined) {
      this.toFree.push(file)
      this.freeLater()
      return
    }
    if (file.needsFreeHeader) this.writeHeader(file, '')
    this.handleOf(file).truncate(HEADER_BYTES)
    this.changed(file)
    // Its handle is closed (its free header made durable first), which gives
    // back the quota capacity the handle held (see releaseCapacity); growth
    // reopens it, before it makes new files, when free files run low.
    this.closeHandle(file)
    this.spare.push(file)
    if (this.free.length < this.target) this.grow()
  }

  /**
   * Chromium counts against the origin's quota, for each open sync access
   * handle whose file grew, the capacity it granted that handle: at least
   * 1 MiB, then the next power of two of the file's largest size, until the
   * handle closes (an open handle's file starts with its size as capacity).
   * A file whose writer is done keeps a handle for reads: that handle is
   * closed once a snapshot holds the contents for reads, and reopened. New
   * files wait for these releases (roomFor): a compaction's outputs, one
   * after another, would otherwise hold 1 MiB each until theirs came.
   */
  releaseCapacity (file: PoolFile): void {
    if (file.handle === undefined || this.closed) return
    const version = file.version
    // Bounded: a snapshot that does not come (within the first wait for a handle) leaves the handle as it is.
    const releasing: Promise<void> = within(file.entry.getFile(), this.handleWaitMs).then((snapshot) => {
      if (snapshot === undefined || this.closed || file.handle === undefined || file.writers > 0 || file.name === '' || file.reopening) return
      // Changed since (a rename's header): asked again, for a snapshot of it as it is now.
      if (file.version !== version) return this.releaseCapacity(file)
      file.snapshot = snapshot
      this.closeHandle(file)
      this.wantHandle(file)
    }).catch(() => {
      // No snapshot, or the flush before the close failed: the file keeps its
      // handle (and the capacity) until it closes for another reason.
    }).finally(() => { this.releasing.delete(releasing) })
    this.releasing.add(releasing)
  }

  /** Writes free headers into the files waiting in toFree, one at a time, as handle slots allow. */
  private freeLater (): void {
    if (this.freeing || this.closed) return
    this.freeing = true
    void (async () => {
      try {
        for (let file = this.toFree.shift(); file !== undefined && !this.closed; file = this.toFree.shift()) {
          if (!await this.openHandle(file)) {
            // No slot or no handle now: it waits with the spare files, whose reuse writes its free header.
            this.spare.push(file)
            continue
          }
          try {
            this.recycle(file)
          } catch {
            // Its free header did not reach the file: the pool lets it go.
            // The name in its header (if any) is an orphan at the next mount,
            // which the engine removes; the error that matters reaches the
            // writer whose own write fails on the same storage.
            this.forget(file)
          }
        }
      } finally {
        this.freeing = false
      }
    })()
  }

  // ---------------------------------------------------------- handles

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

  /** Drops `file` from the pool after a failed write to it: its handle is closed (errors ignored) and it is never handed out again here. */
  forget (file: PoolFile): void {
    this.all.delete(file)
    if (this.byName.get(file.name) === file) this.byName.delete(file.name)
    this.unsyncedHeaders.delete(file)
    if (file.handle === undefined) return
    try { file.handle.close() } catch {}
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
  private async tracked<T> (opening: Promise<T>): Promise<T> {
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
      const handle = await within(file.entry.createSyncAccessHandle(), HANDLE_WAIT_MS)
      if (handle === undefined) {
        this.openHandles--
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
   * Reads into `out` from `at` in `snapshot`. A FileReaderSync call costs
   * milliseconds, for 128 KiB 1.2-2 times what it costs for 4 KiB (Chromium
   * 150, BENCHMARKS.md): a read in the last 128 KiB of a file (a table's
   * footer, index and filter blocks, read one after the other when it is
   * opened) reads all of them once, kept in a window; other reads (data
   * blocks, at random) read just their bytes.
   */
  readFromSnapshot (snapshot: FileSnapshot, out: Uint8Array, at: number): number {
    const end = Math.min(at + out.length, snapshot.size)
    if (end <= at) return 0
    let w = this.windows.find((x) => x.snapshot === snapshot && x.start <= at && end <= x.start + x.bytes.length)
    if (w === undefined) {
      const start = Math.max(0, snapshot.size - SNAPSHOT_WINDOW_BYTES)
      if (at < start) {
        const bytes = this.readSnapshot(snapshot, at, end)
        out.set(bytes)
        return bytes.length
      }
      w = { snapshot, start, bytes: this.readSnapshot(snapshot, start, snapshot.size) }
      this.windows.push(w)
      if (this.windows.length > SNAPSHOT_WINDOWS) this.windows.shift()
    }
    const n = Math.min(end, w.start + w.bytes.length) - at
    out.set(w.bytes.subarray(at - w.start, at - w.start + n))
    return n
  }

  /** A read found `file`'s handle closed: it is reopened in the background (a few at once), the least recently used closing. */
  wantHandle (file: PoolFile): void {
    if (file.handle !== undefined || file.reopening || this.reopens >= REOPENS_AT_ONCE || this.closed) return
    this.reopens++
    this.openHandle(file).finally(() => { this.reopens-- }).catch(() => {})
  }

  // ---------------------------------------------------------- growth

  /** Creates pool files in the background until `target` are free (one growth at a time). */
  grow (): void {
    if (this.growing !== undefined || this.closed) return
    this.growing = this.growToTarget().then(() => undefined, (err: unknown) => err).then((err) => {
      // Cleared before the waiters run: one that still lacks room starts the next growth.
      this.growing = undefined
      this.growthError = err
      this.wake(err)
    })
  }

  /**
   * Adds files in batches until `target` are free. A batch in which no
   * handle came waits at least its wait, and the next one waits twice as
   * long (up to HANDLE_WAIT_MAX_MS); once batches in a row have gone on for
   * growthGiveUpMs with none coming, growth fails with LEVEL_IO_ERROR.
   */
  private async growToTarget (): Promise<void> {
    let waitMs = this.handleWaitMs
    let fruitlessMs = 0
    for (let slotWaits = 0; !this.closed && this.free.length < this.target;) {
      const started = Date.now()
      const added = await this.addFiles(Math.min(GROWTH_BATCH, this.target - this.free.length), waitMs)
      if (added > 0) {
        waitMs = this.handleWaitMs
        fruitlessMs = 0
        slotWaits = 0
        this.wake()
      } else if (this.openHandles >= this.maxOpenHandles) {
        // Every slot in use: the snapshots asked for (closeLeastRecentlyUsed) let handles close soon.
        if (++slotWaits * SLOT_WAIT_MS > this.growthGiveUpMs) {
          throw ioError(`No sync access handle slot of the OPFS pool freed within ${slotWaits * SLOT_WAIT_MS} ms (${this.openHandles} open, the most allowed)`)
        }
        await new Promise((resolve) => setTimeout(resolve, SLOT_WAIT_MS))
      } else {
        const left = waitMs - (Date.now() - started)
        if (left > 0 && !this.closed) await new Promise((resolve) => setTimeout(resolve, left))
        fruitlessMs += Date.now() - started
        if (fruitlessMs >= this.growthGiveUpMs) {
          throw ioError(`No new OPFS file's sync access handle came in ${fruitlessMs} ms (tries waiting ${this.handleWaitMs} to ${waitMs} ms for each; the bound, growthGiveUpMs, is ${this.growthGiveUpMs} ms): the browser gave none`)
        }
        waitMs = Math.min(2 * waitMs, HANDLE_WAIT_MAX_MS)
      }
    }
  }

  /** Settles every waiter: resolved (they ask again), or rejected with `err`. */
  private wake (err?: unknown): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) {
      if (err === undefined) w.resolve()
      else w.reject(err)
    }
  }

  /**
   * Adds up to `n` files to the free list at once: spare files reopened
   * first, then new pool files, as handle slots allow. Resolves to how many
   * were added, or rejects with the first failure (the files that did open
   * are added). A new file whose handle has not come within `waitMs`
   * is passed over (Chromium was seen never to settle one, about once in 50
   * opens): it is closed if it ever comes, and the next mount skips or
   * reuses it.
   */
  async addFiles (n: number, waitMs = this.handleWaitMs): Promise<number> {
    const jobs: Array<Promise<boolean>> = []
    for (let i = 0; i < n; i++) {
      const spare = this.spare.pop()
      if (spare !== undefined) {
        jobs.push(this.reuseSpare(spare))
        continue
      }
      if (!this.takeSlot()) break
      jobs.push(this.tracked(this.addFile(waitMs)))
    }
    const results = await Promise.allSettled(jobs)
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return results.filter((r) => r.status === 'fulfilled' && r.value).length
  }

  private async reuseSpare (file: PoolFile): Promise<boolean> {
    if (!await this.openHandle(file)) {
      this.spare.push(file)
      return false
    }
    if (this.closed) return false
    try {
      if (file.needsFreeHeader) this.writeHeader(file, '')
      // Cut to its header (an empty file stays empty: see addFile).
      const handle = this.handleOf(file)
      if (handle.getSize() > HEADER_BYTES) handle.truncate(HEADER_BYTES)
      this.changed(file)
    } catch (err) {
      this.closeHandle(file)
      this.spare.push(file)
      throw err
    }
    this.free.push(file)
    return true
  }

  /** Creates a new pool file in the slot taken for it. */
  private async addFile (waitMs: number): Promise<boolean> {
    const name = `p${this.count++}${POOL_SUFFIX}`
    let entry: FileHandle | undefined
    const opening = this.dir.getFileHandle(name, { create: true }).then(async (f) => {
      entry = f
      return await f.createSyncAccessHandle()
    })
    const handle = await within(opening, waitMs).catch((err: unknown) => {
      this.openHandles--
      throw err
    })
    if (handle === undefined) {
      // Passed over: a later mount here skips it while it is busy (openWhenFree).
      this.abandoned.add(name)
      opening.then((late) => {
        late.close()
        this.abandoned.delete(name)
      }, () => {})
      this.openHandles--
      return false
    }
    if (this.closed) {
      handle.close()
      this.openHandles--
      return false
    }
    // A new file is empty: no valid header, which mount() takes for free. It
    // gets its header when it is taken (a write there now would hold 1 MiB
    // of the quota while it waits: see releaseCapacity).
    const file = new PoolFile(entry!, handle)
    this.all.add(file)
    this.free.push(file)
    return true
  }

  /**
   * Closes every handle (the engine must have closed its files). Growth in
   * progress is not waited for (Chromium was seen never to settle a
   * createSyncAccessHandle() of a new file, about once in 50 opens): the
   * handle it opens, if it ever does, is closed then (addFile). Callers
   * still waiting for growth are rejected.
   */
  close (): void {
    this.closed = true
    for (const file of this.all) {
      if (file.handle === undefined) continue
      file.handle.close()
      file.handle = undefined
      this.openHandles--
    }
    this.byName.clear()
    this.free.length = 0
    this.wake(errnoError('EBADF', 'the OPFS directory was unmounted'))
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
