// The one file-system interface for all engine I/O; hosts/node/node-fs.ts
// implements it over node:fs, hosts/browser/opfs-fs.ts over the browser's OPFS.
// The engine (lib/) reaches files only through it: it imports no node: module,
// a rule the linter holds (eslint.config.mjs). Crash and fault tests substitute
// an in-memory implementation that can crash and inject faults (test/fs/).
// Calls are synchronous (write(2), pread(2), fsync(2)) but for the `...Async`
// variants (syncAsync; optionally closeAsync, syncDirAsync, removeAsync), which
// run off the event loop: group commit overlaps an fsync with new writes, and
// slow closes, unlinks and directory fsyncs do not stall it.
//
// Paths are absolute or relative to the process; the engine always joins them
// from the database directory.
//
// A file system may make new files ahead of use, asynchronously (the OPFS
// pool: a synchronous create takes a file made earlier). It says so with
// roomToCreate, and the engine creates files through createWhenRoom, which
// waits until the file system has made enough rather than fail.

export interface RandomAccessFile {
  /** Reads up to `length` bytes at `position` into `buf[offset..]`; returns bytes read (short at EOF). */
  read (buf: Uint8Array, offset: number, length: number, position: number): number
  size (): number
  close (): void
  /** The same as `close`, off the event loop (optional: `closeAsync()` below falls back to close). */
  closeAsync? (): Promise<void>
}

export interface WritableFile {
  /** Appends all of `data` (one write(2) call, retried on short writes). */
  append (data: Uint8Array): void
  /** fdatasync: everything appended so far survives power loss once this returns. */
  sync (): void
  /** The same as `sync`, off the event loop. */
  syncAsync (): Promise<void>
  /** Bytes appended so far. */
  size (): number
  close (): void
  /** The same as `close`, off the event loop (optional: `closeAsync()` below falls back to close). */
  closeAsync? (): Promise<void>
}

export interface FileSystem {
  /** Opens an existing file for positional reads. Throws ENOENT-coded errors if missing. */
  openRead (path: string): RandomAccessFile
  /**
   * Creates (or truncates) a file for appending. `preallocate` (write-ahead
   * logs): the implementation may extend the file with zeros ahead of the
   * appends, so that an fdatasync after an append has no file size to commit;
   * `size()` still counts only appended bytes, and `close()` trims the zeros.
   * A crash can leave a zero-filled tail: log readers report it as torn, and
   * recovery takes it for the unused space it is (tailIsZeros, lib/wal/log-reader.ts).
   * `rarelyAppended` (a manifest: an edit per flush or compaction): where the
   * storage reserves room for a file while it is open for writing (Chromium's
   * OPFS counts a sync access handle's granted capacity, at least 1 MiB,
   * against the quota), the implementation may give that room back after each
   * syncAsync(), at the cost of a slower syncAsync().
   */
  openWrite (path: string, options?: { preallocate?: boolean, rarelyAppended?: boolean }): WritableFile
  /**
   * Opens an existing file for appending after its last byte (`size()` counts
   * the bytes it held). Optional: without it, an open writes a new manifest
   * rather than append its edit to the one it read (lib/manifest/version-set.ts).
   */
  openAppend? (path: string): WritableFile
  /** Reads a whole small file (CURRENT, LOCK). Never used for tables or logs. */
  readSmallFile (path: string): Buffer
  /**
   * Creates a file exclusively (fails with code EEXIST if it exists), writes
   * `data`, syncs (unless `sync` is false: a file whose bytes matter only
   * while its creator runs, LOCK) and closes it.
   */
  createExclusive (path: string, data: Uint8Array, options?: { sync?: boolean }): void
  exists (path: string): boolean
  /**
   * When the file's content last changed, in milliseconds since the epoch on
   * the clock Date.now() reads (stat's mtime). Optional: it tells a lock file
   * being written now from one a crash left unwritten (hosts/node/lock.ts).
   */
  modifiedMs? (path: string): number
  /** Names (not paths) of the entries in a directory. */
  list (dir: string): string[]
  /**
   * A second directory entry for the file at `existing` (link(2)). Throws
   * errno-coded errors: EEXIST if `newPath` exists, EXDEV across file systems
   * (linkOrCopy below copies then).
   */
  hardLink (existing: string, newPath: string): void
  /** Atomic rename, replacing `to` if it exists. */
  rename (from: string, to: string): void
  remove (path: string): void
  /** Removes a directory if it is empty; returns false if it is not empty. */
  removeDirIfEmpty (path: string): boolean
  mkdirp (path: string): void
  /** fsync of a whole existing file, not open for writing here (a log written by an earlier process, kept live at open). */
  syncFile (path: string): void
  /** fsync of a directory, making creates, renames and removes in it durable. */
  syncDir (path: string): void
  /** The same as `syncDir`, off the event loop (optional: `syncDirAsync()` below falls back to syncDir). */
  syncDirAsync? (path: string): Promise<void>
  /** The same as `remove`, off the event loop (optional: `removeAsync()` below falls back to remove). */
  removeAsync? (path: string): Promise<void>
  /**
   * For a file system that makes new files ahead of use: undefined when
   * `count` files can be created in `dir` now; else a promise that resolves
   * once more have been made (ask again then), or rejects if making them
   * failed. Without it, files can always be created at once.
   */
  roomToCreate? (dir: string, count: number): Promise<void> | undefined
  /**
   * Where the storage counts the room it grants a file being written against
   * the quota, in steps of at least this many bytes (Chromium's OPFS: 1 MiB,
   * then the next power of two of the size), for files in `dir`: the engine
   * then keeps its write buffer small while the database is small
   * (writeBufferFor below), so that a flush, which holds its log and its new
   * table at once, leaves most of a small quota to data. Undefined elsewhere.
   */
  growthGrantBytes? (dir: string): number | undefined
}

/**
 * The write buffer a memtable may fill: `configured` (the writeBufferSize
 * option), or, on a file system that counts grants (growthGrantBytes), a
 * sixteenth of the database's table bytes, at least a grant less 128 KiB
 * (room for the last write group and the table's own bytes within one
 * grant), at most `configured`.
 */
export function writeBufferFor (fs: FileSystem, dir: string, configured: number, tableBytes: number): number {
  const grant = fs.growthGrantBytes?.(dir)
  if (grant === undefined) return configured
  return Math.min(configured, Math.max(grant - 131072, Math.floor(tableBytes / 16)))
}

/**
 * Runs `create`, which creates up to `count` files in `dir`, as soon as the
 * file system can create them without waiting: at once on most file systems;
 * on one that makes files ahead of use, once it has made enough (rejects if
 * it could not). The check and `create` run in one synchronous step, so two
 * callers waiting at once cannot both count on the same file.
 */
export async function createWhenRoom<T> (fs: FileSystem, dir: string, count: number, create: () => T): Promise<T> {
  for (let wait = fs.roomToCreate?.(dir, count); wait !== undefined; wait = fs.roomToCreate?.(dir, count)) await wait
  return create()
}

/**
 * Removes a file off the event loop where the file system offers it: an unlink
 * can wait tens of milliseconds on the file system's journal, and compactions
 * retire tables by the dozen.
 */
export async function removeAsync (fs: FileSystem, path: string): Promise<void> {
  if (fs.removeAsync) await fs.removeAsync(path)
  else fs.remove(path)
}

/**
 * Closes a file off the event loop where the file system offers it: closing a
 * preallocated log trims it (ftruncate), and the last close of a file already
 * unlinked frees its blocks; either can wait on the file system's journal
 * (66 ms measured on the event loop for a trim; 4-5 ms a held 4 MiB log).
 */
export async function closeAsync (file: WritableFile | RandomAccessFile): Promise<void> {
  if (file.closeAsync) await file.closeAsync()
  else file.close()
}

/** fsync of a directory off the event loop where the file system offers it. */
export async function syncDirAsync (fs: FileSystem, path: string): Promise<void> {
  if (fs.syncDirAsync) await fs.syncDirAsync(path)
  else fs.syncDir(path)
}

/** The size of the file at `path` (opened for it, then closed). */
export function fileSize (fs: FileSystem, path: string): number {
  const f = fs.openRead(path)
  try {
    return f.size()
  } finally {
    f.close()
  }
}

/** Errors of link(2) that mean "this file system cannot link here", not a failure. */
const LINK_UNSUPPORTED = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'])

/**
 * Makes `newPath` hold the bytes of the immutable file at `existing`: a hard
 * link, or a copy (synced) where a link is not possible (across file systems,
 * or where links are not supported). Returns how: 'linked' or 'copied'.
 */
export function linkOrCopy (fs: FileSystem, existing: string, newPath: string): 'linked' | 'copied' {
  if (hardLinkIfSupported(fs, existing, newPath)) return 'linked'
  copyFile(fs, existing, newPath)
  return 'copied'
}

/** A hard link of `existing` at `newPath`, or false where the file system cannot link there. Throws other errors. */
export function hardLinkIfSupported (fs: FileSystem, existing: string, newPath: string): boolean {
  try {
    fs.hardLink(existing, newPath)
    return true
  } catch (err) {
    if (!LINK_UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? '')) throw err
    return false
  }
}

/** An error with a Node errno code (ENOENT, EEXIST, ENOSPC...), as the engine expects of any file system. */
export function errnoError (code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code })
}

/**
 * createExclusive for a file system that one thread alone changes (the
 * browser's, inside one worker): nothing can create the file between the
 * check and the write.
 */
export function createExclusiveAlone (fs: FileSystem, path: string, data: Uint8Array): void {
  if (fs.exists(path)) throw errnoError('EEXIST', `file exists: ${path}`)
  const out = fs.openWrite(path)
  out.append(data)
  out.sync()
  out.close()
}

/** Copies the file at `from` to `to` in 1 MiB reads and syncs the copy. */
export function copyFile (fs: FileSystem, from: string, to: string): void {
  const src = fs.openRead(from)
  try {
    const dst = fs.openWrite(to)
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024)
      const size = src.size()
      for (let pos = 0; pos < size;) {
        const n = src.read(buf, 0, Math.min(buf.length, size - pos), pos)
        if (n === 0) break
        dst.append(buf.subarray(0, n))
        pos += n
      }
      dst.sync()
    } finally {
      dst.close()
    }
  } finally {
    src.close()
  }
}
