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
// (mount, growth, close) waits on it. A browser under load (Firefox at its
// worker limit) was seen to take over HANDLE_WAIT_MS for every handle: each
// batch in a row in which none came waits twice as long as the one before (up
// to HANDLE_WAIT_MAX_MS), and growth gives up, as LEVEL_IO_ERROR, once such
// batches have gone on for GROWTH_GIVE_UP_MS (30 s).
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
import { createExclusiveAlone, errnoError, type FileSystem, type RandomAccessFile, type WritableFile } from '../../lib/fs/fs'
import { ioError, isStorageFull } from '../../lib/errors'
import type { DirectoryHandle } from './opfs-api'
import { HEADER_BYTES } from './opfs-pool-header'
import { countsHandleCapacity, HANDLE_WAIT_MS, within, type PoolFile } from './opfs-handles'
import { writeAll, type Pool } from './opfs-pool'
import { readWithFileReaderSync, type SnapshotReader } from './opfs-snapshot-reads'
import { notSupportedIfMissing, openPool, type MountOptions } from './opfs-mount'
import { OpfsRandomAccessFile, OpfsWritableFile, readAt } from './opfs-files'

export type { DirectoryHandle, FileHandle, FileSnapshot, SyncAccessHandle } from './opfs-api'
export { FORMAT_VERSION, HEADER_BYTES, decodeHeader } from './opfs-pool-header'
export { MAX_OPEN_HANDLES } from './opfs-handles'
export { BUSY_WAIT_MS } from './opfs-pool'
export type { SnapshotReader } from './opfs-snapshot-reads'
export type { MountOptions } from './opfs-mount'

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

  /** Chromium grants a sync access handle's file room in steps of at least 1 MiB, counted against the quota (countsHandleCapacity). */
  growthGrantBytes (_dir: string): number | undefined {
    return countsHandleCapacity() ? 1048576 : undefined
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

  openWrite (path: string, options: { rarelyAppended?: boolean } = {}): WritableFile {
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
    return new OpfsWritableFile(pool, file, options.rarelyAppended === true)
  }

  readSmallFile (path: string): Buffer {
    const { pool, file } = this.fileAt(path)
    const size = (file.handle !== undefined ? file.handle.getSize() : file.snapshot!.size) - HEADER_BYTES
    const out = Buffer.alloc(size)
    const n = readAt(pool, file, out, HEADER_BYTES)
    return out.subarray(0, n)
  }

  createExclusive (path: string, data: Uint8Array): void {
    createExclusiveAlone(this, path, data)
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
