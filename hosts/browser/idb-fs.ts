// The fallback storage: the FileSystem interface (lib/fs/fs.ts) over files
// held in memory and persisted to IndexedDB (the layout: idb-store.ts), for
// browsers and contexts without OPFS sync access handles (WebKitGTK, Safari's
// private windows, shared and service workers). One instance per database
// directory, loaded whole into memory at open().
//
// Persistence: every change (append, create, rename, remove) marks what it
// touched; soon after (the next macrotask), one IndexedDB transaction writes
// everything marked since the last one: the changed chunks of each file, its
// record, the dropped names and ids. One transaction runs at a time, each
// capturing the in-memory state at its start, so they commit in the order of
// the changes and each takes the store from one state the engine had to a
// later one: after a crash or a reload, the files are as they were at some
// point of the engine's operations (a prefix), as after a killed process,
// and the engine's recovery takes it from there (a log's torn tail, the
// manifest switch).
//
// Durability: sync() cannot wait (the interface is synchronous); it asks for
// a transaction soon. syncAsync() resolves once a transaction holding every
// change made before it has committed, with durability 'strict' where the
// browser supports it: a `{ sync: true }` write is acknowledged then (the
// engine's inlineSync is off on this storage, so its syncs are syncAsync).
// Writes without sync reach IndexedDB within a transaction's time, in order;
// a tab closed or crashed before then loses them (a prefix stays).
//
// Failure: a transaction that aborts (a full quota: QuotaExceededError, then
// ENOSPC, which the engine reports as LEVEL_STORAGE_FULL) stops persistence
// for good: later changes would land on a store that lacks the failed ones.
// Every later change and sync then throws that error; reads go on from
// memory; a reopen loads the last committed state.
import { createExclusiveAlone, errnoError, type FileSystem, type RandomAccessFile, type WritableFile } from '../../lib/fs/fs'
import { CHUNK_BYTES, commit, loadFiles, openStore, storageError, type Changes, type IdbDatabase, type IdbFactory, type IdbKeyRangeStatic } from './idb-store'

/** The smallest room given to a file's last chunk: it grows by doubling up to chunkBytes (a small file holds no whole chunk). */
const MIN_CHUNK_ROOM = 4096

/** One file's bytes in chunks of chunkBytes (the last may be shorter, or have room). */
class MemFile {
  /** Chunks changed since the last transaction captured this file. */
  readonly dirty = new Set<number>()
  /** Dropped: no name carries it any more (its chunks go at the next transaction). */
  dropped = false

  constructor (readonly id: number, public name: string, public size: number, readonly chunkBytes: number, readonly chunks: Uint8Array[]) {}

  append (data: Uint8Array): void {
    let at = this.size
    for (let from = 0; from < data.length;) {
      const index = Math.floor(at / this.chunkBytes)
      const offset = at - index * this.chunkBytes
      const n = Math.min(this.chunkBytes - offset, data.length - from)
      let chunk = this.chunks[index]
      if (chunk === undefined || chunk.length < offset + n) {
        const room = Math.min(this.chunkBytes, Math.max(offset + n, 2 * (chunk?.length ?? 0), MIN_CHUNK_ROOM))
        const grown = new Uint8Array(room)
        if (chunk !== undefined) grown.set(chunk)
        chunk = this.chunks[index] = grown
      }
      chunk.set(data.subarray(from, from + n), offset)
      this.dirty.add(index)
      from += n
      at += n
    }
    this.size = at
  }

  read (out: Uint8Array, position: number): number {
    const end = Math.min(this.size, position + out.length)
    let done = 0
    for (let at = position; at < end;) {
      const index = Math.floor(at / this.chunkBytes)
      const offset = at - index * this.chunkBytes
      const n = Math.min(this.chunkBytes - offset, end - at)
      out.set(this.chunks[index].subarray(offset, offset + n), done)
      done += n
      at += n
    }
    return done
  }

  /**
   * Chunk `index` as stored: bytes of its own, exactly as long as the file
   * has there (IndexedDB stores a view's whole buffer). A whole chunk is not
   * copied: it never changes again (files only grow), and put() clones it
   * at once.
   */
  stored (index: number): Uint8Array {
    const length = Math.min(this.chunkBytes, this.size - index * this.chunkBytes)
    const chunk = this.chunks[index]
    if (chunk.length === length && chunk.byteOffset === 0 && chunk.buffer.byteLength === length) return chunk
    return chunk.slice(0, length)
  }
}

class MemReader implements RandomAccessFile {
  constructor (private readonly file: MemFile) {}

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    if (position >= this.file.size || length <= 0) return 0
    return this.file.read(buf.subarray(offset, offset + length), position)
  }

  size (): number {
    return this.file.size
  }

  close (): void {}
}

class MemWriter implements WritableFile {
  private closed = false

  constructor (private readonly fs: IndexedDbFileSystem, private readonly file: MemFile) {}

  append (data: Uint8Array): void {
    if (this.closed) throw errnoError('EBADF', `append to a closed file: ${this.file.name}`)
    this.fs.changing()
    this.file.append(data)
    this.fs.touched(this.file)
  }

  sync (): void {
    this.fs.check()
    this.fs.schedule()
  }

  async syncAsync (): Promise<void> {
    await this.fs.persisted()
  }

  size (): number {
    return this.file.size
  }

  close (): void {
    this.closed = true
  }
}

/** The IndexedDB side of an open: the database and its key ranges (tests pass a fake). */
export interface IdbAccess { factory: IdbFactory, keyRange: IdbKeyRangeStatic }

/**
 * The files of one database directory `dir` (an absolute path such as
 * '/my-db'), in memory and persisted to IndexedDB. Paths are `dir` + '/' +
 * name; names may hold '/' (subdirectories are implicit).
 */
export class IndexedDbFileSystem implements FileSystem {
  private readonly files = new Map<string, MemFile>()
  private nextId = 1
  /** Changed since the last transaction captured the state. */
  private readonly dirtyFiles = new Set<MemFile>()
  private readonly dirtyNames = new Set<string>()
  private dropIds: number[] = []
  /** Changes made (counted) and the count the last committed transaction holds. */
  private changes = 0
  private committedChanges = 0
  private inFlight: Promise<void> | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private waiters: Array<{ changes: number, resolve: () => void, reject: (err: Error) => void }> = []
  private failure: Error | undefined
  private closed = false
  /** Transactions committed (tests, measurements). */
  transactions = 0

  private constructor (readonly dir: string, private readonly db: IdbDatabase, private readonly idb: IdbAccess) {}

  /** Opens the directory's IndexedDB database and loads every file into memory. */
  static async open (dir: string, idb: IdbAccess): Promise<IndexedDbFileSystem> {
    const db = await openStore(idb.factory, dir)
    try {
      const fs = new IndexedDbFileSystem(dir, db, idb)
      for (const [name, stored] of await loadFiles(db, idb.keyRange, dir)) {
        fs.files.set(name, new MemFile(stored.id, name, stored.size, stored.chunkBytes, stored.chunks))
        if (stored.id >= fs.nextId) fs.nextId = stored.id + 1
      }
      return fs
    } catch (err) {
      db.close()
      throw err
    }
  }

  /** Bytes held in memory (the files' sizes). */
  get bytes (): number {
    let n = 0
    for (const f of this.files.values()) n += f.size
    return n
  }

  // ---------------------------------------------------------- persistence

  /** Throws the persistence failure, if any (or EBADF once closed). */
  check (): void {
    if (this.failure !== undefined) throw this.failure
    if (this.closed) throw errnoError('EBADF', `the IndexedDB storage of ${this.dir} is closed`)
  }

  /** Called before any change: counts it (throws as check() does). */
  changing (): void {
    this.check()
    this.changes++
  }

  touched (file: MemFile): void {
    // A file removed or written anew while a writer still appends: its chunks are gone from the store.
    if (file.dropped) return
    this.dirtyFiles.add(file)
    this.schedule()
  }

  private named (name: string): void {
    this.dirtyNames.add(name)
    this.schedule()
  }

  private drop (file: MemFile): void {
    file.dropped = true
    this.dirtyFiles.delete(file)
    this.dropIds.push(file.id)
  }

  /** Asks for a transaction soon (the next macrotask, or after the one running). */
  schedule (): void {
    if (this.timer !== undefined || this.inFlight !== undefined || this.failure !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.persist()
    }, 0)
  }

  /** Resolves once a committed transaction holds every change made so far; rejects with the persistence failure. */
  async persisted (): Promise<void> {
    if (this.failure !== undefined) throw this.failure
    if (this.committedChanges >= this.changes) return
    const changes = this.changes
    await new Promise<void>((resolve, reject) => {
      this.waiters.push({ changes, resolve, reject })
      this.schedule()
    })
  }

  private capture (): Changes {
    const names: Changes['names'] = new Map()
    for (const name of this.dirtyNames) {
      const f = this.files.get(name)
      names.set(name, f === undefined ? undefined : { id: f.id, size: f.size, chunkBytes: f.chunkBytes })
    }
    const chunks: Changes['chunks'] = []
    for (const f of this.dirtyFiles) {
      names.set(f.name, { id: f.id, size: f.size, chunkBytes: f.chunkBytes })
      for (const index of f.dirty) if (index * f.chunkBytes < f.size) chunks.push({ id: f.id, index, bytes: f.stored(index) })
      f.dirty.clear()
    }
    const out = { dropIds: this.dropIds, names, chunks }
    this.dirtyFiles.clear()
    this.dirtyNames.clear()
    this.dropIds = []
    return out
  }

  private persist (): void {
    if (this.inFlight !== undefined || this.failure !== undefined) return
    if (this.committedChanges >= this.changes) {
      this.settleWaiters()
      return
    }
    const changes = this.changes
    this.inFlight = commit(this.db, this.idb.keyRange, this.capture()).then(() => {
      this.inFlight = undefined
      this.transactions++
      this.committedChanges = changes
      this.settleWaiters()
      if (this.committedChanges < this.changes) this.schedule()
    }, (err: unknown) => {
      this.inFlight = undefined
      this.failure = err instanceof Error ? err : storageError(err, 'IndexedDB')
      for (const w of this.waiters) w.reject(this.failure)
      this.waiters = []
    })
  }

  private settleWaiters (): void {
    const left: typeof this.waiters = []
    for (const w of this.waiters) {
      if (w.changes <= this.committedChanges) w.resolve()
      else left.push(w)
    }
    this.waiters = left
  }

  /**
   * Waits until every change is committed, then closes the IndexedDB
   * database. Rejects with the persistence failure if there was one (the
   * changes after it are not stored).
   */
  async close (): Promise<void> {
    if (this.closed) return
    try {
      await this.persisted()
    } finally {
      this.closed = true
      clearTimeout(this.timer)
      this.db.close()
    }
  }

  // ---------------------------------------------------------- the FileSystem interface

  private nameOf (path: string): string {
    if (path.startsWith(this.dir + '/') && path.length > this.dir.length + 1) return path.slice(this.dir.length + 1)
    throw errnoError('ENOENT', `not in the IndexedDB storage of ${this.dir}: ${path}`)
  }

  private fileAt (path: string): MemFile {
    const file = this.files.get(this.nameOf(path))
    if (file === undefined) throw errnoError('ENOENT', `no such file: ${path}`)
    return file
  }

  openRead (path: string): RandomAccessFile {
    return new MemReader(this.fileAt(path))
  }

  openWrite (path: string): WritableFile {
    const name = this.nameOf(path)
    this.changing()
    const old = this.files.get(name)
    if (old !== undefined) this.drop(old)
    const file = new MemFile(this.nextId++, name, 0, CHUNK_BYTES, [])
    this.files.set(name, file)
    this.named(name)
    return new MemWriter(this, file)
  }

  readSmallFile (path: string): Buffer {
    const file = this.fileAt(path)
    const out = Buffer.alloc(file.size)
    file.read(out, 0)
    return out
  }

  createExclusive (path: string, data: Uint8Array): void {
    createExclusiveAlone(this, path, data)
  }

  exists (path: string): boolean {
    // The directory exists once it holds a file (an open with createIfMissing: false must find none).
    if (path === this.dir) return this.files.size > 0
    if (!path.startsWith(this.dir + '/')) return false
    const name = path.slice(this.dir.length + 1)
    if (this.files.has(name)) return true
    for (const other of this.files.keys()) if (other.startsWith(name + '/')) return true
    return false
  }

  list (dir: string): string[] {
    const prefix = dir === this.dir ? '' : this.nameOf(dir) + '/'
    const names = new Set<string>()
    for (const name of this.files.keys()) if (name.startsWith(prefix)) names.add(name.slice(prefix.length).split('/')[0])
    return [...names]
  }

  hardLink (): void {
    throw errnoError('ENOTSUP', 'the IndexedDB storage has no hard links')
  }

  rename (from: string, to: string): void {
    const file = this.fileAt(from)
    const target = this.nameOf(to)
    if (file.name === target) return
    this.changing()
    const previous = this.files.get(target)
    if (previous !== undefined) this.drop(previous)
    this.files.delete(file.name)
    this.named(file.name)
    file.name = target
    this.files.set(target, file)
    this.named(target)
  }

  remove (path: string): void {
    const name = this.nameOf(path)
    const file = this.files.get(name)
    if (file === undefined) return
    this.changing()
    this.files.delete(name)
    this.drop(file)
    this.named(name)
  }

  removeDirIfEmpty (path: string): boolean {
    return this.list(path).length === 0
  }

  mkdirp (path: string): void {
    // Directories are implicit in names.
    if (path !== this.dir) this.nameOf(path)
  }

  syncFile (): void {
    this.check()
    this.schedule()
  }

  syncDir (): void {
    this.check()
    this.schedule()
  }
}
