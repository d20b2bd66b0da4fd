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
import { ioError, levelError } from '../../lib/errors'

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
  /** The engine's name this file carries; '' when free. */
  name = ''
  generation = 0
  readers = 0
  /** Removed while readers had it open: joins the free list when they close. */
  freeOnLastClose = false

  constructor (readonly handle: SyncAccessHandle) {}
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

/** The files of one mounted directory. */
class Pool {
  readonly byName = new Map<string, PoolFile>()
  readonly free: PoolFile[] = []
  /** Files whose header changed since the last syncDir. */
  readonly unsyncedHeaders = new Set<PoolFile>()
  generation = 0
  /** Pool file names used so far (the next one is p<count>.pool). */
  count = 0
  /** Free files growth keeps ahead of need (see the top of this file). */
  target = RESERVE_FILES
  growing: Promise<void> | undefined
  growthError: unknown
  /** Callers waiting for growth (roomFor): settled after each batch and when growth ends. */
  private waiters: Array<{ resolve: () => void, reject: (err: unknown) => void }> = []
  closed = false

  constructor (readonly dir: DirectoryHandle) {}

  writeHeader (file: PoolFile, name: string): void {
    const generation = ++this.generation
    const bytes = encodeHeader({ generation, name })
    writeAll(file.handle, bytes, 0)
    if (file.name !== '' && this.byName.get(file.name) === file) this.byName.delete(file.name)
    file.name = name
    file.generation = generation
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
    if (this.unsyncedHeaders.delete(file)) file.handle.flush()
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
    this.target = Math.min(MAX_FREE_FILES, Math.max(2 * this.target, count))
    return this.whenGrown()
  }

  /** Starts growth if it is not running; resolves after its next batch (or its end), rejects if it fails. */
  whenGrown (): Promise<void> {
    const waiting = new Promise<void>((resolve, reject) => { this.waiters.push({ resolve, reject }) })
    this.grow()
    return waiting
  }

  /** Frees `file` (a free header, data truncated), unless readers still have it open. */
  release (file: PoolFile): void {
    this.writeHeader(file, '')
    if (file.readers > 0) {
      file.freeOnLastClose = true
      return
    }
    this.recycle(file)
  }

  recycle (file: PoolFile): void {
    file.freeOnLastClose = false
    file.handle.truncate(HEADER_BYTES)
    this.free.push(file)
  }

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
    for (let fruitless = 0; !this.closed && this.free.length < this.target;) {
      const added = await this.addFiles(Math.min(GROWTH_BATCH, this.target - this.free.length))
      if (added > 0) {
        fruitless = 0
        this.wake()
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
   * Creates `n` pool files at once and adds them to the free list; resolves
   * to how many were added, or rejects with the first failure (the files
   * that did open are added). A file whose handle has not come within
   * HANDLE_WAIT_MS is passed over (Chromium was seen never to settle one,
   * about once in 50 opens): it is closed if it ever comes, and the next
   * mount skips or reuses it.
   */
  async addFiles (n: number): Promise<number> {
    const results = await Promise.allSettled(Array.from({ length: n }, async () => await this.addFile()))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return results.filter((r) => r.status === 'fulfilled' && r.value).length
  }

  private async addFile (): Promise<boolean> {
    const name = `p${this.count++}${POOL_SUFFIX}`
    const opening = this.dir.getFileHandle(name, { create: true }).then(async (f) => await f.createSyncAccessHandle())
    const handle = await within(opening, HANDLE_WAIT_MS)
    if (handle === undefined) {
      opening.then((late) => late.close(), () => {})
      return false
    }
    if (this.closed) {
      handle.close()
      return false
    }
    // A new file holds no valid header, which mount() takes for free.
    try {
      handle.truncate(HEADER_BYTES)
    } catch (err) {
      handle.close()
      throw err
    }
    this.free.push(new PoolFile(handle))
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
    for (const file of new Set([...this.byName.values(), ...this.free, ...this.unsyncedHeaders])) file.handle.close()
    this.byName.clear()
    this.free.length = 0
    this.wake(errnoError('EBADF', 'the OPFS directory was unmounted'))
  }
}

export interface MountOptions {
  /**
   * Pool files whose sync access handle is held elsewhere are left out rather
   * than failing the mount with LEVEL_LOCKED: for a caller that owns the
   * directory otherwise (a Web Lock), to whom a busy file can only be a new
   * pool file of its own whose handle creation never settled (see Pool#close).
   */
  skipBusyFiles?: boolean
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

/** Mounts an OPFS directory's pool: opens every pool file, reads the headers, settles conflicts. */
async function openPool (dir: DirectoryHandle, skipBusyFiles: boolean): Promise<Pool> {
  const pool = new Pool(dir)
  const opened: PoolFile[] = []
  try {
    for await (const entry of dir.keys()) {
      if (!entry.endsWith(POOL_SUFFIX)) continue
      const n = Number(entry.slice(1, -POOL_SUFFIX.length))
      if (Number.isInteger(n) && n >= pool.count) pool.count = n + 1
      try {
        opened.push(new PoolFile(await (await dir.getFileHandle(entry)).createSyncAccessHandle()))
      } catch (err) {
        if (!(skipBusyFiles && isBusy(err))) throw err
      }
    }
  } catch (err) {
    for (const file of opened) file.handle.close()
    throw lockedIfBusy(err)
  }
  const header = new Uint8Array(HEADER_BYTES)
  const losers: PoolFile[] = []
  for (const file of opened) {
    header.fill(0)
    file.handle.read(header, { at: 0 })
    const h = decodeHeader(header)
    if (h !== undefined && h.generation > pool.generation) pool.generation = h.generation
    if (h === undefined || h.name === '') {
      pool.free.push(file)
      continue
    }
    file.name = h.name
    file.generation = h.generation
    const other = pool.byName.get(h.name)
    if (other === undefined || other.generation < h.generation) {
      pool.byName.set(h.name, file)
      if (other !== undefined) losers.push(other)
    } else {
      losers.push(file)
    }
  }
  // A rename interrupted between its two header writes: the older claimant is freed.
  for (const file of losers) {
    pool.writeHeader(file, '')
    pool.recycle(file)
  }
  // Enough free files for an open (manifest, CURRENT and its temp, a log);
  // the rest of the reserve is created in the background.
  try {
    while (pool.free.length < MOUNT_FREE_FILES) await pool.whenGrown()
  } catch (err) {
    pool.close()
    throw err
  }
  pool.grow()
  for (const file of pool.unsyncedHeaders) file.handle.flush()
  pool.unsyncedHeaders.clear()
  return pool
}

/** An OPFS handle that another tab or worker holds open: LEVEL_LOCKED. */
function lockedIfBusy (err: unknown): unknown {
  if (isBusy(err)) {
    return levelError('LEVEL_LOCKED', 'The database is open in another tab or worker (its OPFS files are held there)', err)
  }
  return err
}

// ------------------------------------------------------------ files

class OpfsRandomAccessFile implements RandomAccessFile {
  private readonly length: number
  private closed = false

  constructor (private readonly pool: Pool, private readonly file: PoolFile) {
    file.readers++
    this.length = file.handle.getSize() - HEADER_BYTES
  }

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    const n = Math.max(0, Math.min(length, this.length - position))
    if (n === 0) return 0
    return this.file.handle.read(buf.subarray(offset, offset + n), { at: HEADER_BYTES + position })
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

class OpfsWritableFile implements WritableFile {
  private length = 0

  constructor (private readonly file: PoolFile) {}

  append (data: Uint8Array): void {
    writeAll(this.file.handle, data, HEADER_BYTES + this.length)
    this.length += data.length
  }

  sync (): void {
    this.file.handle.flush()
  }

  async syncAsync (): Promise<void> {
    this.file.handle.flush()
  }

  size (): number {
    return this.length
  }

  close (): void {}
}

// ------------------------------------------------------------ the file system

/**
 * The engine's FileSystem over OPFS directories mounted with mount(). Every
 * method but mount() and unmount() is synchronous, as the interface requires.
 */
export class OpfsFileSystem implements FileSystem {
  private readonly pools = new Map<string, Pool>()

  /** `root`: the directory under which each database gets a directory (navigator.storage.getDirectory()). */
  constructor (private readonly root: DirectoryHandle) {}

  /**
   * Opens the pool of the database directory `dir` (an absolute path such as
   * '/my-db'; its components name OPFS directories under the root, created if
   * missing). Throws LEVEL_LOCKED if another tab or worker holds its files.
   */
  async mount (dir: string, options: MountOptions = {}): Promise<void> {
    if (this.pools.has(dir)) return
    let handle = this.root
    for (const part of dir.split('/')) if (part !== '') handle = await handle.getDirectoryHandle(part, { create: true })
    this.pools.set(dir, await openPool(handle, options.skipBusyFiles === true))
  }

  /** Closes the sync access handles of `dir` (the database must be closed), so that another tab can mount it. */
  unmount (dir: string): void {
    const pool = this.pools.get(dir)
    this.pools.delete(dir)
    pool?.close()
  }

  isMounted (dir: string): boolean {
    return this.pools.has(dir)
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
    if (file !== undefined) {
      file.handle.truncate(HEADER_BYTES)
    } else {
      file = pool.take()
      try {
        pool.writeHeader(file, name)
      } catch (err) {
        pool.free.push(file)
        throw err
      }
    }
    return new OpfsWritableFile(file)
  }

  readSmallFile (path: string): Buffer {
    const { file } = this.fileAt(path)
    const out = Buffer.alloc(file.handle.getSize() - HEADER_BYTES)
    const n = file.handle.read(out, { at: HEADER_BYTES })
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
    pool.writeHeader(file, target.name)
    file.handle.flush()
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
    this.fileAt(path).file.handle.flush()
  }

  syncDir (path: string): void {
    const pool = this.pools.get(path) ?? this.locate(path).pool
    for (const file of pool.unsyncedHeaders) file.handle.flush()
    pool.unsyncedHeaders.clear()
  }
}
