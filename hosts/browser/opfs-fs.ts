// The FileSystem interface (lib/fs/fs.ts) over the browser's Origin Private
// File System, for the engine running in a dedicated worker.
//
// The problem: the engine's file system is synchronous, and in OPFS only an
// open FileSystemSyncAccessHandle is (read, write, truncate, flush, getSize);
// creating a file, opening a handle, listing, renaming and removing are all
// asynchronous. The answer (the design of SQLite's "opfs-sahpool" VFS): a POOL
// of OPFS files is opened asynchronously, ahead of use, with a sync access
// handle kept on each. The engine's files are names carried by pool files:
//
//   OPFS directory <location>/   p<n>.pool, p<n+1>.pool, ...  (the pool)
//   each pool file:
//     [0, 4096)   header (one sector, written by one write() call):
//                   0  u32 LE  magic 'LSMP' (0x504d534c)
//                   4  u32 LE  FORMAT_VERSION
//                   8  f64 LE  generation (an integer; see below)
//                  16  u32 LE  name length in bytes (0: the file is free)
//                  20  bytes   name (UTF-8, at most MAX_NAME_BYTES)
//                 532  u32 LE  CRC-32 of bytes [0, 532)
//     [4096, ...) the engine's file contents
//
// openWrite takes a free pool file and writes the name into its header;
// remove writes a free header (and truncates the data away); list() and
// exists() answer from the in-memory map of names; rename writes the target
// name into the source file's header, then frees the file that carried the
// target name before.
//
// Growth: the pool keeps a target number of free files (RESERVE_FILES at
// first). Whenever it has fewer, it creates more in the background, up to
// GROWTH_BATCH at once. A burst of creates (a tiny write buffer: a log per
// rotation, a table per flush) can still take free files faster than the
// browser opens new handles (Firefox was seen to): the engine creates files
// only once roomToCreate says there is room, and waits for growth when there
// is not, so a flush waits instead of failing. Each wait doubles the target,
// up to MAX_FREE_FILES: a pool drained once keeps more ahead from then on,
// and the handles it keeps open stay bounded. A failure to create a file
// (quota, a handle error) rejects the waiters: that is an I/O error. A bare
// openWrite on an empty pool (no wait asked) throws LEVEL_IO_ERROR. Chromium
// was seen, about once in 50 opens, never to settle createSyncAccessHandle()
// of a new file: such a file is passed over after HANDLE_WAIT_MS, and nothing
// (mount, growth, close) waits on it; growth gives up, as a failure, after
// FRUITLESS_BATCHES batches in a row in which no handle came.
//
// Open handles: at most maxOpenHandles (MAX_OPEN_HANDLES, 64) per mounted
// directory, whatever the number of files (Safari allows a page 252; each
// holds a file descriptor and memory in the browser). The free files kept
// ahead of use (at most half the bound) and files open for writing keep their
// handle. Any other file may lose its handle, the least recently used first,
// when one is needed and the bound is reached, once a File snapshot of it
// (getFile(): asked for when its writer closes near the bound, or when it is
// the least recently used and has none) holds its contents:
// its reads then go through FileReaderSync (synchronous in a worker, but
// milliseconds a call: the last 128 KiB of a file, where a table's metadata
// is, are read at once, 8 such windows kept) while its handle is reopened in
// the background. A handle is
// flushed before it closes if its file changed, so that syncFile and syncDir
// have nothing left to do for it. Removing a file whose handle is closed
// drops its name at once and writes its free header once a handle can be
// opened (a crash before brings the old name back: an orphan, which the
// engine removes at open); a rename or openWrite of such a file moves the
// name to a free file (a higher generation wins). Mount opens each file's
// handle in turn to read its header, closing handles beyond the bound (tables
// first).
//
// A full quota: a sync access handle's write() does not throw, it comes up
// short (Firefox) or returns a bogus count (Chrome): writeAll turns both into
// ENOSPC, which the engine reports as LEVEL_STORAGE_FULL.
//
// Busy files: a pool file whose handle another context holds (an open
// database elsewhere, or a worker that ended and whose handles the browser
// has not closed yet) is retried at mount with backoff for busyWaitMs, then
// the mount fails with LEVEL_LOCKED. Only new files that this worker's pool
// gave up on (never-settling creations) are skipped.
//
// Crash rules (a closed tab, a killed worker, a crashed browser or OS):
// - Every header write gets a generation one above any seen in this directory.
//   At mount, a header whose CRC does not match is free space (a torn write);
//   two files carrying the same name: the higher generation wins, the other is
//   freed. So a rename (the CURRENT switch) needs no atomic rename: the source's
//   new header is written and flushed before the old target is freed, so after
//   a crash either the new header is valid (it wins: the rename happened) or it
//   is not (the source is freed, the old target still carries the name: the
//   rename did not happen). The file carrying the name is never lost.
// - flush() of a sync access handle is the fsync: WritableFile.sync() flushes
//   the file's handle, which makes both its contents and its header (its name)
//   durable. syncDir() flushes the headers written since the last syncDir (new
//   names, removals), as a directory fsync makes creates and unlinks durable.
// - What is written and not flushed (default, non-sync writes) is in the
//   browser's hands: the specification promises nothing until flush(); a
//   closed tab or a terminated worker normally loses nothing the handle already
//   wrote (the bytes went to the browser's storage process), a crashed browser
//   or OS can lose any unflushed write (as Node's page cache on power loss).
//   The engine's crash guarantees (torn log tails, the manifest switch) hold as
//   on a POSIX file system: recovery stops at the first damaged log record.
// - Freeing a file (remove) while a RandomAccessFile still reads it keeps the
//   file out of the free list until the last reader closes, as an unlinked
//   inode lives while it is open.
//
// Paths: the pool is mounted (async, mount()) at one directory path; the
// engine's paths are that path + '/' + name. Subdirectories are names with '/'
// in them. Paths outside a mounted directory fail with ENOENT.
import type { FileSystem, RandomAccessFile, WritableFile } from '../../lib/fs/fs'
import { crc32Js } from '../../lib/util/crc32-table'
import { ioError, isStorageFull, levelError } from '../../lib/errors'

/** Version of the pool file header drawn above. Bump only with a migration path. */
export const FORMAT_VERSION = 1

const MAGIC = 0x504d534c
export const HEADER_BYTES = 4096
const MAX_NAME_BYTES = 512
const CRC_OFFSET = 20 + MAX_NAME_BYTES
const POOL_SUFFIX = '.pool'
/** Free pool files kept ahead of need at first; more are created in the background below this. */
const RESERVE_FILES = 16
/** The most free files the target grows to after bursts drained the pool (each is an open handle). */
const MAX_FREE_FILES = 32
/** New pool files whose handles are opened at once. */
const GROWTH_BATCH = 8
/** How long a new pool file's sync access handle is waited for before it is passed over. */
const HANDLE_WAIT_MS = 1000
/** Batches in a row in which no new handle came before growth fails. */
const FRUITLESS_BATCHES = 10
/** Free pool files mount() waits for. */
const MOUNT_FREE_FILES = 6
/**
 * The most sync access handles a mounted directory keeps open at once
 * (Safari allows a page 252; each also holds memory and a file descriptor
 * in the browser). Files beyond it are read through snapshots (getFile(),
 * FileReaderSync) while their handle is reopened, the least recently used
 * closing.
 */
export const MAX_OPEN_HANDLES = 64
/** The smallest bound mount() accepts: room for the free files and the files being written. */
const MIN_OPEN_HANDLES = 16
/** How long mount() retries a pool file whose handle another context holds before LEVEL_LOCKED. */
export const BUSY_WAIT_MS = 5000
/** The end of a file that a read there through a snapshot reads at once, and how many such windows are kept (1 MiB in all). */
const SNAPSHOT_WINDOW_BYTES = 128 * 1024
const SNAPSHOT_WINDOWS = 8
/** Handles reopened at once for reads. */
const REOPENS_AT_ONCE = 4
/** How long growth waits for a handle slot when every open handle is in use. */
const SLOT_WAIT_MS = 10

// ------------------------------------------------ the OPFS API we use (subset)

/** FileSystemSyncAccessHandle: synchronous in a dedicated worker. */
export interface SyncAccessHandle {
  read (buffer: Uint8Array, options: { at: number }): number
  write (buffer: Uint8Array, options: { at: number }): number
  truncate (size: number): void
  getSize (): number
  flush (): void
  close (): void
}

export interface FileHandle {
  createSyncAccessHandle (): Promise<SyncAccessHandle>
  /** A File: the contents now, readable (FileReaderSync) while no handle is open. */
  getFile (): Promise<FileSnapshot>
}

/** A File (Blob), as far as it is used. */
export interface FileSnapshot {
  readonly size: number
  slice (start: number, end: number): unknown
}

/** FileSystemDirectoryHandle. */
export interface DirectoryHandle {
  getDirectoryHandle (name: string, options?: { create?: boolean }): Promise<DirectoryHandle>
  getFileHandle (name: string, options?: { create?: boolean }): Promise<FileHandle>
  removeEntry (name: string, options?: { recursive?: boolean }): Promise<void>
  keys (): AsyncIterable<string>
}

// ------------------------------------------------------------ headers

interface Header {
  generation: number
  name: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function encodeHeader (header: Header): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES)
  const view = new DataView(out.buffer)
  const name = encoder.encode(header.name)
  if (name.length > MAX_NAME_BYTES) throw levelError('LEVEL_IO_ERROR', `File name too long for the OPFS pool: ${header.name}`)
  view.setUint32(0, MAGIC, true)
  view.setUint32(4, FORMAT_VERSION, true)
  view.setFloat64(8, header.generation, true)
  view.setUint32(16, name.length, true)
  out.set(name, 20)
  view.setUint32(CRC_OFFSET, crc32Js(out.subarray(0, CRC_OFFSET)), true)
  return out
}

/** The header in `bytes`, or undefined if it is not a valid one (never written, torn, damaged). */
export function decodeHeader (bytes: Uint8Array): Header | undefined {
  if (bytes.length < HEADER_BYTES) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== FORMAT_VERSION) return undefined
  if (view.getUint32(CRC_OFFSET, true) !== crc32Js(bytes.subarray(0, CRC_OFFSET))) return undefined
  const length = view.getUint32(16, true)
  if (length > MAX_NAME_BYTES) return undefined
  return { generation: view.getFloat64(8, true), name: decoder.decode(bytes.subarray(20, 20 + length)) }
}

// ------------------------------------------------------------ the pool

class PoolFile {
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

function errnoError (code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code })
}

/**
 * Writes all of `bytes` at `at`, or throws ENOSPC. A sync access handle's
 * write() does not throw when the origin's quota is full: Chrome 150 returns
 * a bogus count (0xFFFFFFF8) after writing what fit, Firefox 153 a short
 * count. Either is a full quota, which the engine reports as
 * LEVEL_STORAGE_FULL (lib/errors.ts: ioError).
 */
function writeAll (handle: SyncAccessHandle, bytes: Uint8Array, at: number): void {
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

function readWithFileReaderSync (snapshot: FileSnapshot, start: number, end: number): Uint8Array {
  const Reader = (globalThis as { FileReaderSync?: new () => FileReaderSyncLike }).FileReaderSync
  if (Reader === undefined) throw errnoError('EIO', 'no FileReaderSync here to read a file whose sync access handle is closed')
  fileReader ??= new Reader()
  return new Uint8Array(fileReader.readAsArrayBuffer(snapshot.slice(start, end)))
}

/** The files of one mounted directory. */
class Pool {
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
  /** Handle openings in progress (each settles after closing its handle if the pool closed meanwhile). */
  readonly opening = new Set<Promise<unknown>>()

  constructor (readonly dir: DirectoryHandle, readonly maxOpenHandles: number, readonly readSnapshot: SnapshotReader, readonly abandoned: Set<string>) {
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
   * Undefined when `count` free files are here now; else a promise that
   * resolves once growth has added files (or ended), or rejects if it failed.
   * A caller that has to wait means demand outran growth: the target doubles.
   */
  roomFor (count: number): Promise<void> | undefined {
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
    if (this.free.length < this.maxFree) {
      this.free.push(file)
      return
    }
    // Enough free files are open: this one's handle is closed (its free header made durable first).
    this.closeHandle(file)
    this.spare.push(file)
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

  private async growToTarget (): Promise<void> {
    for (let fruitless = 0, slotWaits = 0; !this.closed && this.free.length < this.target;) {
      const added = await this.addFiles(Math.min(GROWTH_BATCH, this.target - this.free.length))
      if (added > 0) {
        fruitless = 0
        slotWaits = 0
        this.wake()
      } else if (this.openHandles >= this.maxOpenHandles) {
        // Every slot in use: the snapshots asked for (closeLeastRecentlyUsed) let handles close soon.
        if (++slotWaits * SLOT_WAIT_MS > HANDLE_WAIT_MS * FRUITLESS_BATCHES) {
          throw errnoError('EIO', `no sync access handle slot freed within ${slotWaits * SLOT_WAIT_MS} ms (${this.openHandles} open, the most allowed)`)
        }
        await new Promise((resolve) => setTimeout(resolve, SLOT_WAIT_MS))
      } else if (++fruitless >= FRUITLESS_BATCHES) {
        throw errnoError('EIO', `no new OPFS file's sync access handle came within ${HANDLE_WAIT_MS} ms, ${fruitless} times in a row`)
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
   * are added). A new file whose handle has not come within HANDLE_WAIT_MS
   * is passed over (Chromium was seen never to settle one, about once in 50
   * opens): it is closed if it ever comes, and the next mount skips or
   * reuses it.
   */
  async addFiles (n: number): Promise<number> {
    const jobs: Array<Promise<boolean>> = []
    for (let i = 0; i < n; i++) {
      const spare = this.spare.pop()
      if (spare !== undefined) {
        jobs.push(this.reuseSpare(spare))
        continue
      }
      if (!this.takeSlot()) break
      jobs.push(this.tracked(this.addFile()))
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
      this.handleOf(file).truncate(HEADER_BYTES)
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
  private async addFile (): Promise<boolean> {
    const name = `p${this.count++}${POOL_SUFFIX}`
    let entry: FileHandle | undefined
    const opening = this.dir.getFileHandle(name, { create: true }).then(async (f) => {
      entry = f
      return await f.createSyncAccessHandle()
    })
    const handle = await within(opening, HANDLE_WAIT_MS).catch((err: unknown) => {
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
    // A new file holds no valid header, which mount() takes for free.
    try {
      handle.truncate(HEADER_BYTES)
    } catch (err) {
      handle.close()
      this.openHandles--
      throw err
    }
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

export interface MountOptions {
  /** The most sync access handles open at once (default MAX_OPEN_HANDLES; at least 16). */
  maxOpenHandles?: number
  /** How long a pool file whose handle is held elsewhere is retried before the mount fails with LEVEL_LOCKED (default BUSY_WAIT_MS). */
  busyWaitMs?: number
}

/**
 * A browser whose OPFS has no sync access handles (WebKitGTK 2.50 has the
 * directory and file handles, but createSyncAccessHandle() fails with
 * NotSupportedError), or none in this kind of context (a page, a shared
 * worker: the method is missing, a TypeError): LEVEL_NOT_SUPPORTED naming
 * what is missing, instead of the browser's bare error.
 */
function notSupportedIfMissing (err: unknown): unknown {
  const { name, message } = (err ?? {}) as { name?: unknown, message?: unknown }
  if (name === 'NotSupportedError' || (name === 'TypeError' && /createSyncAccessHandle/.test(String(message)))) {
    return levelError('LEVEL_NOT_SUPPORTED', `This browser's Origin Private File System gives no sync access handles here (createSyncAccessHandle() failed: ${String(name)}: ${String(message)}); lsm-level needs them, in a dedicated worker`, err)
  }
  return err
}

function isBusy (err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === 'NoModificationAllowedError'
}

/** What `promise` resolves to within `ms`, else undefined. */
async function within<T> (promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), ms) })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Mounts an OPFS directory's pool: opens every pool file's handle in turn,
 * reads its header, and at the bound closes the handle of a file read
 * earlier (tables first: they are immutable and read through the block
 * cache), keeping a snapshot of it for reads; then settles conflicts and
 * waits for a few free files.
 */
async function openPool (dir: DirectoryHandle, options: MountOptions, readSnapshot: SnapshotReader, abandoned: Set<string>): Promise<Pool> {
  const pool = new Pool(dir, Math.max(MIN_OPEN_HANDLES, options.maxOpenHandles ?? MAX_OPEN_HANDLES), readSnapshot, abandoned)
  const header = new Uint8Array(HEADER_BYTES)
  const losers: PoolFile[] = []
  try {
    for await (const entry of dir.keys()) {
      if (!entry.endsWith(POOL_SUFFIX)) continue
      const n = Number(entry.slice(1, -POOL_SUFFIX.length))
      if (Number.isInteger(n) && n >= pool.count) pool.count = n + 1
      const fileHandle = await dir.getFileHandle(entry)
      if (pool.openHandles >= pool.maxOpenHandles) await makeRoomAtMount(pool)
      if (!pool.takeSlot()) throw errnoError('EIO', 'no sync access handle slot free at mount')
      let handle: SyncAccessHandle | undefined
      try {
        handle = await openWhenFree(fileHandle, entry, abandoned, options.busyWaitMs ?? BUSY_WAIT_MS)
      } finally {
        if (handle === undefined) pool.openHandles--
      }
      if (handle === undefined) continue
      const file = new PoolFile(fileHandle, handle)
      pool.all.add(file)
      header.fill(0)
      handle.read(header, { at: 0 })
      const h = decodeHeader(header)
      if (h !== undefined && h.generation > pool.generation) pool.generation = h.generation
      if (h === undefined || h.name === '') {
        // Free: kept open while the free files are few (cut to its header: a
        // crash may have left a freed file's old contents), else closed as a spare.
        if (pool.free.length < pool.maxFree) {
          if (handle.getSize() !== HEADER_BYTES) handle.truncate(HEADER_BYTES)
          pool.free.push(file)
        } else {
          pool.closeHandle(file)
          pool.spare.push(file)
        }
        continue
      }
      file.name = h.name
      file.generation = h.generation
      // What an earlier context wrote may not be flushed (a log's default
      // writes): closing this handle flushes it first. Tables are flushed by
      // their writer before the manifest names them.
      file.dirty = !h.name.endsWith('.sst')
      file.lastUse = h.name.endsWith('.sst') ? 0 : 1
      const other = pool.byName.get(h.name)
      if (other === undefined || other.generation < h.generation) {
        pool.byName.set(h.name, file)
        if (other !== undefined) losers.push(other)
      } else {
        losers.push(file)
      }
    }
  } catch (err) {
    pool.close()
    throw err
  }
  try {
    // A rename interrupted between its two header writes: the older claimant is freed.
    for (const file of losers) pool.release(file)
    // Enough free files for an open (manifest, CURRENT and its temp, a log);
    // the rest of the reserve is created in the background.
    while (pool.free.length < MOUNT_FREE_FILES) await pool.whenGrown()
  } catch (err) {
    pool.close()
    throw err
  }
  pool.grow()
  for (const file of pool.unsyncedHeaders) pool.handleOf(file).flush()
  pool.unsyncedHeaders.clear()
  return pool
}

/** At mount, with every slot taken: the least recently used named file gets its snapshot (waited for) and loses its handle. */
async function makeRoomAtMount (pool: Pool): Promise<void> {
  let victim: PoolFile | undefined
  for (const file of pool.all) {
    if (file.handle !== undefined && file.name !== '' && (victim === undefined || file.lastUse < victim.lastUse)) victim = file
  }
  if (victim === undefined) return
  victim.snapshot ??= await victim.entry.getFile()
  pool.closeHandle(victim)
}

/**
 * The sync access handle of the pool file `name`, retried with backoff while
 * another context holds it (NoModificationAllowedError): a tab or worker that
 * has the database open, or one that ended and whose handles the browser has
 * not closed yet (a worker terminated while busy was seen to keep them for a
 * while). Fails with LEVEL_LOCKED after `waitMs`. Undefined for a file that
 * this worker's pool abandoned (a new file whose handle creation never
 * settled, see Pool#addFile): it holds nothing yet, and is skipped.
 */
async function openWhenFree (file: FileHandle, name: string, abandoned: Set<string>, waitMs: number): Promise<SyncAccessHandle | undefined> {
  const start = Date.now()
  for (let delayMs = 20; ; delayMs = Math.min(2 * delayMs, 1000)) {
    try {
      return await file.createSyncAccessHandle()
    } catch (err) {
      if (!isBusy(err)) throw err
      if (abandoned.has(name)) return undefined
      const waited = Date.now() - start
      if (waited >= waitMs) {
        throw levelError('LEVEL_LOCKED', `The database's OPFS files are held by another context: the database is open in another tab or worker, or one that ended has not released its files yet (waited ${waited} ms)`, err)
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, waitMs - waited)))
    }
  }
}

// ------------------------------------------------------------ files

class OpfsRandomAccessFile implements RandomAccessFile {
  private readonly length: number
  private closed = false

  constructor (private readonly pool: Pool, private readonly file: PoolFile) {
    file.readers++
    this.length = (file.handle !== undefined ? file.handle.getSize() : file.snapshot!.size) - HEADER_BYTES
  }

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    const n = Math.max(0, Math.min(length, this.length - position))
    if (n === 0) return 0
    return readAt(this.pool, this.file, buf.subarray(offset, offset + n), HEADER_BYTES + position)
  }

  size (): number {
    return this.length
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    if (--this.file.readers === 0 && this.file.freeOnLastClose) this.pool.recycle(this.file)
  }
}

/**
 * Reads into `out` from `at`: through the handle if it is open, else from
 * the file's snapshot (FileReaderSync, slower), asking for the handle to be
 * reopened for the next reads. Returns the bytes read.
 */
function readAt (pool: Pool, file: PoolFile, out: Uint8Array, at: number): number {
  if (file.handle !== undefined) return pool.handleOf(file).read(out, { at })
  pool.wantHandle(file)
  return pool.readFromSnapshot(file.snapshot!, out, at)
}

class OpfsWritableFile implements WritableFile {
  private length = 0
  private closed = false

  constructor (private readonly pool: Pool, private readonly file: PoolFile) {
    file.writers++
  }

  append (data: Uint8Array): void {
    writeAll(this.pool.handleOf(this.file), data, HEADER_BYTES + this.length)
    this.pool.changed(this.file)
    this.length += data.length
  }

  sync (): void {
    this.pool.handleOf(this.file).flush()
    this.file.dirty = false
  }

  async syncAsync (): Promise<void> {
    this.sync()
  }

  size (): number {
    return this.length
  }

  /** The file is done: its handle may close (least recently used first) once a snapshot holds its contents for reads. */
  close (): void {
    if (this.closed) return
    this.closed = true
    if (--this.file.writers === 0 && this.file.name !== '' && this.pool.nearBound()) this.pool.takeSnapshot(this.file)
  }
}

// ------------------------------------------------------------ the file system

/**
 * The engine's FileSystem over OPFS directories mounted with mount(). Every
 * method but mount() and unmount() is synchronous, as the interface requires.
 */
export class OpfsFileSystem implements FileSystem {
  private readonly pools = new Map<string, Pool>()
  /** Unmounted directories whose handle openings were still in progress. */
  private readonly draining = new Map<string, Promise<unknown>>()
  /** Per directory: pool files whose handle creation never settled in this worker (see openWhenFree). */
  private readonly abandoned = new Map<string, Set<string>>()

  /**
   * `root`: the directory under which each database gets a directory
   * (navigator.storage.getDirectory()); `readSnapshot`: how files whose
   * handle is closed are read (FileReaderSync; the tests' fake has its own).
   */
  constructor (private readonly root: DirectoryHandle, private readonly readSnapshot: SnapshotReader = readWithFileReaderSync) {}

  /**
   * Opens the pool of the database directory `dir` (an absolute path such as
   * '/my-db'; its components name OPFS directories under the root, created if
   * missing). Throws LEVEL_LOCKED if another tab or worker holds its files.
   */
  async mount (dir: string, options: MountOptions = {}): Promise<void> {
    if (this.pools.has(dir)) return
    const draining = this.draining.get(dir)
    if (draining !== undefined) {
      await within(draining, HANDLE_WAIT_MS)
      this.draining.delete(dir)
    }
    let handle = this.root
    for (const part of dir.split('/')) if (part !== '') handle = await handle.getDirectoryHandle(part, { create: true })
    let abandoned = this.abandoned.get(dir)
    if (abandoned === undefined) this.abandoned.set(dir, abandoned = new Set())
    try {
      this.pools.set(dir, await openPool(handle, options, this.readSnapshot, abandoned))
    } catch (err) {
      if (isStorageFull(err)) throw ioError(`Cannot mount ${dir}: no room in the storage quota for the pool's free files`, err)
      throw notSupportedIfMissing(err)
    }
  }

  /**
   * Closes the sync access handles of `dir` (the database must be closed), so
   * that another tab can mount it. Handles still being opened close as they
   * come; a mount of `dir` here waits for them (at most HANDLE_WAIT_MS).
   */
  unmount (dir: string): void {
    const pool = this.pools.get(dir)
    this.pools.delete(dir)
    if (pool === undefined) return
    pool.close()
    if (pool.opening.size > 0) this.draining.set(dir, Promise.allSettled([...pool.opening]))
  }

  isMounted (dir: string): boolean {
    return this.pools.has(dir)
  }

  /** Sync access handles of `dir`'s pool: open now, the most open at once so far, and the bound (tests, measurements). */
  handleCounts (dir: string): { open: number, maxOpen: number, bound: number } {
    const pool = this.pools.get(dir)
    if (pool === undefined) return { open: 0, maxOpen: 0, bound: 0 }
    return { open: pool.openHandles, maxOpen: pool.maxOpenSeen, bound: pool.maxOpenHandles }
  }

  /** Waits for pool growth in progress (tests). */
  async settled (): Promise<void> {
    for (const pool of this.pools.values()) while (pool.growing !== undefined) await pool.growing
  }

  roomToCreate (dir: string, count: number): Promise<void> | undefined {
    return (this.pools.get(dir) ?? this.locate(dir).pool).roomFor(count)
  }

  /** The pool and the name within it of `path`; ENOENT outside every mounted directory. */
  private locate (path: string): { pool: Pool, name: string } {
    for (const [dir, pool] of this.pools) {
      if (path.startsWith(dir + '/') && path.length > dir.length + 1) return { pool, name: path.slice(dir.length + 1) }
    }
    throw errnoError('ENOENT', `not in a mounted OPFS directory: ${path}`)
  }

  private fileAt (path: string): { pool: Pool, file: PoolFile } {
    const { pool, name } = this.locate(path)
    const file = pool.byName.get(name)
    if (file === undefined) throw errnoError('ENOENT', `no such file: ${path}`)
    return { pool, file }
  }

  openRead (path: string): RandomAccessFile {
    const { pool, file } = this.fileAt(path)
    return new OpfsRandomAccessFile(pool, file)
  }

  openWrite (path: string): WritableFile {
    const { pool, name } = this.locate(path)
    let file = pool.byName.get(name)
    if (file?.handle !== undefined) {
      pool.handleOf(file).truncate(HEADER_BYTES)
      pool.changed(file)
    } else {
      // A new file, or one whose handle is closed: a free file takes the name
      // (its higher generation wins at mount over the old carrier, freed).
      const old = file
      file = pool.take()
      try {
        pool.writeHeader(file, name)
      } catch (err) {
        pool.free.push(file)
        throw err
      }
      if (old !== undefined) pool.release(old)
    }
    return new OpfsWritableFile(pool, file)
  }

  readSmallFile (path: string): Buffer {
    const { pool, file } = this.fileAt(path)
    const size = (file.handle !== undefined ? file.handle.getSize() : file.snapshot!.size) - HEADER_BYTES
    const out = Buffer.alloc(size)
    const n = readAt(pool, file, out, HEADER_BYTES)
    return out.subarray(0, n)
  }

  createExclusive (path: string, data: Uint8Array): void {
    if (this.exists(path)) throw errnoError('EEXIST', `file exists: ${path}`)
    const out = this.openWrite(path)
    out.append(data)
    out.sync()
    out.close()
  }

  exists (path: string): boolean {
    // A mounted directory exists once it holds a file: mount() creates the
    // OPFS directory, and an open with createIfMissing: false must still find
    // no database there.
    const mounted = this.pools.get(path)
    if (mounted !== undefined) return mounted.byName.size > 0
    try {
      const { pool, name } = this.locate(path)
      if (pool.byName.has(name)) return true
      for (const other of pool.byName.keys()) if (other.startsWith(name + '/')) return true
      return false
    } catch {
      return false
    }
  }

  list (dir: string): string[] {
    const pool = this.pools.get(dir)
    const prefix = pool !== undefined ? '' : this.locate(dir).name + '/'
    const names = new Set<string>()
    for (const name of (pool ?? this.locate(dir).pool).byName.keys()) {
      if (!name.startsWith(prefix)) continue
      names.add(name.slice(prefix.length).split('/')[0])
    }
    return [...names]
  }

  hardLink (): void {
    throw errnoError('ENOTSUP', 'the OPFS pool has no hard links')
  }

  rename (from: string, to: string): void {
    const { pool, file } = this.fileAt(from)
    const target = this.locate(to)
    if (target.pool !== pool) throw errnoError('EXDEV', `rename across OPFS directories: ${from} -> ${to}`)
    const previous = pool.byName.get(target.name)
    if (previous === file) return
    // The new name first, made durable, then the old carrier freed: after a
    // crash in between, the higher generation wins (see the top of this file).
    if (file.handle !== undefined) {
      pool.writeHeader(file, target.name)
      pool.handleOf(file).flush()
    } else {
      this.renameByCopy(pool, file, from, target.name)
    }
    if (previous !== undefined && previous.name === target.name) pool.release(previous)
  }

  /**
   * A rename of a file whose handle is closed (the engine renames files it has
   * just written, so this is rare): its contents go to a free file, made
   * durable before that file takes the name; then the source is freed.
   */
  private renameByCopy (pool: Pool, file: PoolFile, from: string, to: string): void {
    const data = this.readSmallFile(from)
    const copy = pool.take()
    try {
      writeAll(pool.handleOf(copy), data, HEADER_BYTES)
      pool.changed(copy)
      pool.handleOf(copy).flush()
    } catch (err) {
      pool.handleOf(copy).truncate(HEADER_BYTES)
      pool.free.push(copy)
      throw err
    }
    const previous = pool.byName.get(to)
    pool.writeHeader(copy, to)
    pool.handleOf(copy).flush()
    pool.release(file)
    if (previous !== undefined) pool.release(previous)
  }

  remove (path: string): void {
    const { pool, name } = this.locate(path)
    const file = pool.byName.get(name)
    if (file !== undefined) pool.release(file)
  }

  removeDirIfEmpty (path: string): boolean {
    return this.list(path).length === 0
  }

  mkdirp (path: string): void {
    // Directories are implicit in names; the mounted directory exists.
    if (!this.pools.has(path)) this.locate(path)
  }

  syncFile (path: string): void {
    const { pool, file } = this.fileAt(path)
    // A closed handle was flushed when it closed (Pool#closeHandle).
    if (file.handle === undefined) return
    pool.handleOf(file).flush()
    file.dirty = false
  }

  syncDir (path: string): void {
    const pool = this.pools.get(path) ?? this.locate(path).pool
    // Headers of files whose handle closed were flushed then (Pool#closeHandle).
    for (const file of pool.unsyncedHeaders) pool.handleOf(file).flush()
    pool.unsyncedHeaders.clear()
  }
}
