// The pool of one mounted directory of the OPFS file system: its pool files
// by name, the free files kept ahead of use and their growth, and the freeing
// of files. The open handles, within maxOpenHandles, are the handle budget's
// (opfs-handles.ts), which the pool extends. The design is described with the
// file system (opfs-fs.ts).
import { ioError } from '../../lib/errors'
import { errnoError } from '../../lib/fs/fs'
import type { DirectoryHandle, FileHandle, SyncAccessHandle } from './opfs-api'
import { HANDLE_WAIT_MS, HandleBudget, PoolFile, within } from './opfs-handles'
import { encodeHeader, HEADER_BYTES } from './opfs-pool-header'
import type { SnapshotReader } from './opfs-snapshot-reads'
export const POOL_SUFFIX = '.pool'
/** Free pool files kept ahead of need at first; more are created in the background below this. */
export const RESERVE_FILES = 16
/** The most free files the target grows to after bursts drained the pool (each is an open handle). */
export const MAX_FREE_FILES = 32
/** New pool files whose handles are opened at once. */
export const GROWTH_BATCH = 8
/** The longest a growth batch waits for a new file's handle (HANDLE_WAIT_MS doubles up to it). */
export const HANDLE_WAIT_MAX_MS = 8000
/** How long growth goes on with no new handle coming before it fails with LEVEL_IO_ERROR. */
export const GROWTH_GIVE_UP_MS = 30000
/** Free pool files mount() waits for. */
export const MOUNT_FREE_FILES = 6
/** How long mount() retries a pool file whose handle another context holds before LEVEL_LOCKED. */
export const BUSY_WAIT_MS = 5000
/** How long growth waits for a handle slot when every open handle is in use. */
const SLOT_WAIT_MS = 10

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

/** The files of one mounted directory. */
export class Pool extends HandleBudget {
  readonly byName = new Map<string, PoolFile>()
  /** Free files with an open handle, ready for a synchronous create. */
  readonly free: PoolFile[] = []
  /** Free files whose handle is closed (some still to be given a free header): growth reopens these before it makes new ones. */
  readonly spare: PoolFile[] = []
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
  /** Files being freed whose handle is closed: given a free header when a handle can be opened. */
  private readonly toFree: PoolFile[] = []
  private freeing = false
  /** Capacity releases in progress (releaseCapacity): new files wait for them. */
  readonly releasing = new Set<Promise<void>>()

  /** The first wait for a new file's handle, and how long growth goes on with none coming (HANDLE_WAIT_MS, GROWTH_GIVE_UP_MS; tests make them short). */
  readonly handleWaitMs: number
  readonly growthGiveUpMs: number

  constructor (readonly dir: DirectoryHandle, maxOpenHandles: number, readSnapshot: SnapshotReader, readonly abandoned: Set<string>, waits: { handleWaitMs?: number, growthGiveUpMs?: number } = {}) {
    super(maxOpenHandles, readSnapshot)
    this.handleWaitMs = waits.handleWaitMs ?? HANDLE_WAIT_MS
    this.growthGiveUpMs = waits.growthGiveUpMs ?? GROWTH_GIVE_UP_MS
    this.maxFree = Math.min(MAX_FREE_FILES, Math.floor(maxOpenHandles / 2))
    this.target = Math.max(MOUNT_FREE_FILES, Math.min(RESERVE_FILES, Math.floor(maxOpenHandles / 4)))
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
