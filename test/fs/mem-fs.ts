// An in-memory FileSystem (lib/fs/fs.ts) for crash and fault tests. Besides the
// bytes and names a reader sees, it records what is durable and what was
// written since, in order; crash-images.ts turns that record into the file
// system a killed process or a power loss would leave. Every call first goes
// through `faults` (fault-injection.ts), which numbers the crash points and can
// stop the process or fail the call.
//
// Durability record
//   - File data (mem-file.ts): each file has its current bytes and its durable
//     bytes; `sync` makes the current bytes durable. Writes and truncations since
//     the last sync are remembered in order. Preallocated files (openWrite with
//     `preallocate`, as node-fs does for logs) get zeros `preallocateStep` bytes
//     (default 2 KiB) ahead of the data, which then overwrites them in place;
//     close() trims the zeros (a truncation, and a crash point of its own).
//   - Directory entries: each directory has its current entries and its durable
//     entries. Creates (openWrite, createExclusive), renames and removes change
//     the current entries and are remembered as pending operations; `syncDir`
//     of that directory makes them durable (`syncDirAsync`: those recorded when
//     it was called, once it completes). An open handle keeps writing to its
//     file whatever happens to the name (POSIX).
//   - Modification times: each file's is when its content last changed
//     (Date.now()); an image may be dated later (Survival.elapsedMs).
//   - Directories themselves (mkdirp, removeDirIfEmpty) are durable at once: the
//     engine never fsyncs a database directory's parent, and this model does not
//     try to catch that.
//
// What a crash image keeps and loses (each image is a new MemFileSystem whose
// every byte and entry is durable; the modes are in crash-images.ts):
//   - killed process (the kernel lives on): everything that reached write(2),
//     and every create, rename and remove, synced or not.
//   - power loss: every directory and everything durable. Of the rest, each
//     pending write may be kept, lost or cut short (a lost write below a kept one
//     reads as zeros; a lost overwrite leaves the preallocated zeros), and each
//     pending directory operation is kept or reverted on its own (a reverted
//     create loses the file; a reverted rename leaves the old name; a reverted
//     remove brings the file back with whatever of its data survives). A pending
//     truncation may be reverted, which brings back the durable content.
import * as path from 'node:path'
import type { FileSystem, RandomAccessFile, WritableFile } from '../../lib/fs/fs'
import { errnoError, FaultInjector } from './fault-injection'
import { appendTo, MemRandomAccessFile, MemWritableFile, newInode, syncInode, truncateInode, type FileRecord, type Inode } from './mem-file'

/** What survives in a crash image (see `image`). */
export interface Survival {
  /** Whether one pending directory operation (create, rename, remove) survives. */
  keepDirOp (): boolean
  /** The bytes of a file in the image. */
  content (file: FileRecord): Buffer
  /**
   * Time between the crash and the image's use (default 0): its files'
   * modification times are that much older than the crashed ones'.
   */
  elapsedMs?: number
}

type DirOp =
  | { kind: 'link', name: string, inode: Inode }
  | { kind: 'unlink', name: string, inode: Inode }
  | { kind: 'rename', from: string, to: string, inode: Inode }

interface DirNode {
  entries: Map<string, Inode>
  durable: Map<string, Inode>
  /** Operations not yet durable, oldest first. */
  pending: DirOp[]
  /** Operations ever recorded / ever made durable (pending = the ops in between). */
  recorded: number
  committed: number
}

function newDir (): DirNode {
  return { entries: new Map(), durable: new Map(), pending: [], recorded: 0, committed: 0 }
}

function applyDirOp (entries: Map<string, Inode>, op: DirOp): void {
  if (op.kind === 'link') {
    entries.set(op.name, op.inode)
  } else if (op.kind === 'unlink') {
    if (entries.get(op.name) === op.inode) entries.delete(op.name)
  } else {
    if (entries.get(op.from) === op.inode) entries.delete(op.from)
    entries.set(op.to, op.inode)
  }
}

// ---------------------------------------------------------------- the file system

export class MemFileSystem implements FileSystem {
  private readonly dirs = new Map<string, DirNode>()
  /** Crash points and injected errors: every call goes through `faults.before` first. */
  readonly faults = new FaultInjector()
  /** Zeros written ahead at a time in preallocated files (node-fs: 256 KiB; small here, so that crash images stay cheap and cross many steps). */
  readonly preallocateStep: number

  constructor (options?: { preallocateStep?: number }) {
    this.preallocateStep = options?.preallocateStep ?? 2048
    this.dirs.set(path.resolve('/'), newDir())
  }

  openRead (p: string): RandomAccessFile {
    const abs = path.resolve(p)
    this.faults.before('openRead', abs)
    return new MemRandomAccessFile(this.faults, this.lookup(abs, 'open'), abs)
  }

  openWrite (p: string, options?: { preallocate?: boolean }): WritableFile {
    const abs = path.resolve(p)
    this.faults.before('openWrite', abs)
    const { dir, name } = this.parent(abs, 'open')
    const step = options?.preallocate === true ? this.preallocateStep : 0
    const existing = dir.entries.get(name)
    if (existing) {
      truncateInode(existing, 0)
      return new MemWritableFile(this.faults, existing, abs, step)
    }
    const inode = newInode()
    this.link(dir, name, inode)
    return new MemWritableFile(this.faults, inode, abs, step)
  }

  openAppend (p: string): WritableFile {
    const abs = path.resolve(p)
    this.faults.before('openAppend', abs)
    return new MemWritableFile(this.faults, this.lookup(abs, 'open'), abs, 0)
  }

  readSmallFile (p: string): Buffer {
    const abs = path.resolve(p)
    this.faults.before('readSmallFile', abs)
    const inode = this.lookup(abs, 'open')
    return Buffer.from(inode.data.subarray(0, inode.len))
  }

  createExclusive (p: string, data: Uint8Array, options?: { sync?: boolean }): void {
    const abs = path.resolve(p)
    this.faults.before('createExclusive', abs)
    const { dir, name } = this.parent(abs, 'open')
    if (dir.entries.has(name)) throw errnoError('EEXIST', 'file already exists', 'open', abs)
    const inode = newInode()
    this.link(dir, name, inode)
    appendTo(inode, data)
    if (options?.sync !== false) syncInode(inode, inode.len, inode.epoch)
  }

  modifiedMs (p: string): number {
    const abs = path.resolve(p)
    this.faults.before('modifiedMs', abs)
    return this.lookup(abs, 'stat').mtimeMs
  }

  exists (p: string): boolean {
    const abs = path.resolve(p)
    this.faults.before('exists', abs)
    if (this.dirs.has(abs)) return true
    const dir = this.dirs.get(path.dirname(abs))
    return dir !== undefined && dir.entries.has(path.basename(abs))
  }

  list (d: string): string[] {
    const abs = path.resolve(d)
    this.faults.before('list', abs)
    const dir = this.dirs.get(abs)
    if (!dir) throw errnoError(this.isFile(abs) ? 'ENOTDIR' : 'ENOENT', 'no such directory', 'scandir', abs)
    const names = [...dir.entries.keys()]
    for (const other of this.dirs.keys()) {
      if (other !== abs && path.dirname(other) === abs) names.push(path.basename(other))
    }
    return names.sort()
  }

  hardLink (existing: string, newPath: string): void {
    const a = path.resolve(existing)
    const b = path.resolve(newPath)
    this.faults.before('hardLink', a)
    const inode = this.lookup(a, 'link')
    const dst = this.parent(b, 'link')
    if (dst.dir.entries.has(dst.name)) throw errnoError('EEXIST', 'file already exists', 'link', b)
    this.link(dst.dir, dst.name, inode)
  }

  rename (from: string, to: string): void {
    const a = path.resolve(from)
    const b = path.resolve(to)
    this.faults.before('rename', a)
    const src = this.parent(a, 'rename')
    const dst = this.parent(b, 'rename')
    const inode = src.dir.entries.get(src.name)
    if (!inode) throw errnoError('ENOENT', 'no such file or directory', 'rename', a)
    if (a === b) return
    if (src.dir === dst.dir) {
      src.dir.entries.delete(src.name)
      src.dir.entries.set(dst.name, inode)
      src.dir.pending.push({ kind: 'rename', from: src.name, to: dst.name, inode })
      src.dir.recorded++
    } else {
      this.unlink(src.dir, src.name, inode)
      this.link(dst.dir, dst.name, inode)
    }
  }

  remove (p: string): void {
    const abs = path.resolve(p)
    this.faults.before('remove', abs)
    const dir = this.dirs.get(path.dirname(abs))
    const name = path.basename(abs)
    const inode = dir?.entries.get(name)
    if (dir && inode) {
      this.unlink(dir, name, inode)
      return
    }
    if (this.dirs.has(abs)) this.removeDirTree(abs)
  }

  removeDirIfEmpty (p: string): boolean {
    const abs = path.resolve(p)
    this.faults.before('removeDirIfEmpty', abs)
    const dir = this.dirs.get(abs)
    if (!dir) return true
    if (dir.entries.size > 0) return false
    for (const other of this.dirs.keys()) if (path.dirname(other) === abs && other !== abs) return false
    this.dirs.delete(abs)
    return true
  }

  mkdirp (p: string): void {
    const abs = path.resolve(p)
    this.faults.before('mkdirp', abs)
    const chain: string[] = []
    for (let d = abs; !this.dirs.has(d); d = path.dirname(d)) {
      if (this.isFile(d)) throw errnoError('EEXIST', 'file already exists', 'mkdir', d)
      chain.push(d)
    }
    for (const d of chain.reverse()) this.dirs.set(d, newDir())
  }

  syncFile (p: string): void {
    const abs = path.resolve(p)
    this.faults.before('syncFile', abs)
    const inode = this.lookup(abs, 'open')
    syncInode(inode, inode.len, inode.epoch)
  }

  syncDir (p: string): void {
    const abs = path.resolve(p)
    this.faults.before('syncDir', abs)
    const dir = this.dirs.get(abs)
    if (!dir) throw errnoError('ENOENT', 'no such directory', 'open', abs)
    dir.durable = new Map(dir.entries)
    dir.pending = []
    dir.committed = dir.recorded
  }

  /**
   * `syncDir` off the event loop: completes on a later turn (a crash point of its
   * own, 'syncDirDone'), making durable the operations recorded when it was called.
   */
  syncDirAsync (p: string): Promise<void> {
    const abs = path.resolve(p)
    let dir: DirNode | undefined
    try {
      this.faults.before('syncDirAsync', abs)
      dir = this.dirs.get(abs)
      if (!dir) throw errnoError('ENOENT', 'no such directory', 'open', abs)
    } catch (err) {
      return Promise.reject(err)
    }
    const node = dir
    const target = node.recorded
    return new Promise((resolve, reject) => {
      setImmediate(() => {
        try {
          this.faults.before('syncDirDone', abs)
          if (this.dirs.get(abs) === node) {
            const n = Math.min(target - node.committed, node.pending.length)
            for (let i = 0; i < n; i++) applyDirOp(node.durable, node.pending[i])
            if (n > 0) {
              node.pending = node.pending.slice(n)
              node.committed += n
            }
          }
          resolve()
        } catch (err) {
          reject(err)
        }
      })
    })
  }

  // ---------------------------------------------------------------- images

  /**
   * A new file system, all of it durable, holding what survives: every
   * directory, each directory's durable entries plus the pending operations
   * `survival.keepDirOp()` keeps (asked once per operation, oldest first), and
   * for each file reachable from those entries `survival.content(file)` (asked
   * once per file). The order of the questions depends only on the record, so
   * a seeded `survival` gives the same image every time.
   */
  image (survival: Survival): MemFileSystem {
    const out = new MemFileSystem()
    const copies = new Map<Inode, Inode>()
    const copy = (inode: Inode): Inode => {
      let c = copies.get(inode)
      if (!c) {
        c = newInode(survival.content(inode), inode.mtimeMs - (survival.elapsedMs ?? 0))
        copies.set(inode, c)
      }
      return c
    }
    for (const [dpath, dir] of this.dirs) {
      const entries = new Map(dir.durable)
      for (const op of dir.pending) if (survival.keepDirOp()) applyDirOp(entries, op)
      const node = newDir()
      // Sorted, so that the questions asked do not depend on Map insertion history.
      for (const name of [...entries.keys()].sort()) node.entries.set(name, copy(entries.get(name)!))
      node.durable = new Map(node.entries)
      out.dirs.set(dpath, node)
    }
    return out
  }

  /** An exact copy of the current state, all of it durable. */
  clone (): MemFileSystem {
    return this.image({ keepDirOp: () => true, content: (file) => Buffer.from(file.data.subarray(0, file.len)) })
  }

  /** Names and sizes of the files in `dir` (current state), for messages. */
  describe (d: string): string {
    const dir = this.dirs.get(path.resolve(d))
    if (!dir) return '(no directory)'
    return [...dir.entries].map(([n, i]) => `${n}:${i.len}${i.len !== i.durable.length || i.pending.length ? `(durable ${i.durable.length})` : ''}`).join(' ')
  }

  // ---------------------------------------------------------------- internals

  private link (dir: DirNode, name: string, inode: Inode): void {
    dir.entries.set(name, inode)
    dir.pending.push({ kind: 'link', name, inode })
    dir.recorded++
  }

  private unlink (dir: DirNode, name: string, inode: Inode): void {
    dir.entries.delete(name)
    dir.pending.push({ kind: 'unlink', name, inode })
    dir.recorded++
  }

  private removeDirTree (abs: string): void {
    for (const d of [...this.dirs.keys()]) {
      if (d === abs || d.startsWith(abs + path.sep)) this.dirs.delete(d)
    }
  }

  private isFile (abs: string): boolean {
    return this.dirs.get(path.dirname(abs))?.entries.has(path.basename(abs)) ?? false
  }

  private lookup (abs: string, syscall: string): Inode {
    const inode = this.dirs.get(path.dirname(abs))?.entries.get(path.basename(abs))
    if (!inode) {
      throw errnoError(this.dirs.has(abs) ? 'EISDIR' : 'ENOENT', this.dirs.has(abs) ? 'is a directory' : 'no such file or directory', syscall, abs)
    }
    return inode
  }

  private parent (abs: string, syscall: string): { dir: DirNode, name: string } {
    const dir = this.dirs.get(path.dirname(abs))
    if (!dir) throw errnoError('ENOENT', 'no such file or directory', syscall, abs)
    if (this.dirs.has(abs)) throw errnoError('EISDIR', 'is a directory', syscall, abs)
    return { dir, name: path.basename(abs) }
  }
}
