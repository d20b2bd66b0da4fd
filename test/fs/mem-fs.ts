// An in-memory FileSystem that knows what a power loss could leave behind, for
// crash and fault-injection tests.
//
// Durability model
//   - File data: each file (inode) has its current bytes and its durable bytes.
//     `sync` / `syncAsync` make the current bytes durable (`syncAsync` makes
//     durable what had been appended when it was called, once it completes).
//     Appends and truncations since the last sync are remembered in order.
//   - Directory entries: each directory has its current entries and its durable
//     entries. Creates (openWrite, openAppend, createExclusive), renames and
//     removes change the current entries and are remembered as pending
//     operations; `syncDir` of that directory makes them durable (`syncDirAsync`:
//     those recorded when it was called, once it completes). An open handle
//     keeps writing to its inode whatever happens to the name (POSIX).
//   - Directories themselves (mkdirp, removeDirIfEmpty) are durable at once: the
//     engine never fsyncs a database directory's parent, and this model does not
//     try to catch that.
//   - Preallocated files (openWrite with `preallocate`, as node-fs does for
//     logs): zeros are appended `preallocateStep` bytes at a time ahead of the
//     data, which then overwrites them in place; close() trims the zeros (a
//     truncation, and a crash point of its own). Each write, the zeros and each
//     overwrite, is a pending write of its own: a power loss keeps or loses them
//     independently, and an overwrite that is lost leaves the zeros under it.
//
// Crash images (each a NEW MemFileSystem whose every byte and entry is durable):
//   - `killProcess()`: the process died, the kernel did not: everything that
//     reached write(2), and every create/rename/remove, survives.
//   - `crash(rnd, mode)`: a power loss. Durable state survives; the rest, per mode:
//       drop     nothing unsynced survives (no data, no directory operation).
//       subset   per unsynced append: kept, lost, cut at a random byte, or kept in
//                a random subset of aligned chunks (a later page may persist while
//                an earlier one is lost; lost bytes below the new end read as
//                zeros).
//       torn     all unsynced appends kept, but the last one cut at a random byte.
//       zeros    all kept, but a random tail of the last append reads as zeros
//                (the size reached the disk, the data did not).
//       garbage  all kept, but a random tail of the last append is random bytes.
//       mixed    each file draws one of the data modes above (or "all kept").
//     In every mode but `drop`, each unsynced directory operation is kept or
//     reverted independently (a reverted create loses the file; a reverted rename
//     leaves the old names; a reverted remove brings the file back with whatever
//     of its data survives). An unsynced truncation (openWrite over an existing
//     file) may be reverted, which brings back the durable content.
//   All choices come from `rnd`: the same seed and state give the same image.
//
// Crash points and faults
//   - Every call that changes state (see MUTATING_OPS) is numbered: `ops` counts
//     them (the completion of a syncAsync / syncDirAsync is one of its own), and `onOp` (if set) runs before each one, with the file system still
//     in the state before the operation, so a test can take crash images there.
//   - `crashAt = k`: operation number k throws CrashError instead of running, and
//     every later call throws CrashError too: the disk state is frozen as it was
//     before operation k. `onCrash` runs at that moment.
//   - `injectFault({ op, nth, code })`: the nth matching call of `op` (counted from
//     1 among calls whose path matches `path`, if given) throws an Error with
//     `code` (EIO or ENOSPC) without changing anything (an append with `partial`
//     first writes part of its data). `times` makes it fail that many matching
//     calls in a row (Infinity: for good).
import * as path from 'node:path'
import type { FileSystem, RandomAccessFile, WritableFile } from '../../lib/fs/fs'

/** Thrown by every call once the file system has "crashed" (see `crashAt`). */
export class CrashError extends Error {
  readonly code = 'ECRASH'
  constructor (message = 'simulated crash: the process is gone') {
    super(message)
    this.name = 'CrashError'
  }
}

export function isCrashError (err: unknown): boolean {
  for (let e = err as any, depth = 0; e && depth < 8; e = e.cause, depth++) {
    if (e instanceof CrashError || e.code === 'ECRASH') return true
  }
  return false
}

export type OpKind =
  | 'openRead' | 'read' | 'readSmallFile' | 'exists' | 'list'
  | 'openWrite' | 'openAppend' | 'append' | 'sync' | 'syncAsync' | 'syncDone'
  | 'createExclusive' | 'rename' | 'remove' | 'removeDirIfEmpty' | 'mkdirp' | 'syncDir' | 'syncDirAsync' | 'syncDirDone' | 'truncate'

/** Operations that change the (current or durable) state: the crash points. */
export const MUTATING_OPS: ReadonlySet<OpKind> = new Set<OpKind>([
  'openWrite', 'openAppend', 'append', 'sync', 'syncAsync', 'syncDone',
  'createExclusive', 'rename', 'remove', 'removeDirIfEmpty', 'mkdirp', 'syncDir', 'syncDirAsync', 'syncDirDone', 'truncate'
])

export type CrashMode = 'drop' | 'subset' | 'torn' | 'zeros' | 'garbage' | 'mixed'
export const CRASH_MODES: readonly CrashMode[] = ['drop', 'subset', 'torn', 'zeros', 'garbage', 'mixed']

/** The random source crash images draw from (test/util/random.ts's Random fits). */
export interface CrashRandom {
  /** An integer in [0, n). */
  int (n: number): number
}

export interface FaultSpec {
  op: OpKind | OpKind[]
  /** Fail the nth matching call (1-based). Default 1. */
  nth?: number
  /** Only calls whose path (or basename) matches count. */
  path?: string | RegExp
  code?: 'EIO' | 'ENOSPC'
  /** Number of consecutive matching calls that fail, from the nth on. Default 1; Infinity: all. */
  times?: number
  /** For `append`: write the first half of the data before failing (a short write). */
  partial?: boolean
}

export interface Fault extends Required<Omit<FaultSpec, 'path' | 'partial'>> {
  path: string | RegExp | undefined
  partial: boolean
  /** Matching calls seen so far. */
  seen: number
  /** Calls this fault made fail. */
  hits: number
}

interface Inode {
  id: number
  data: Buffer
  len: number
  /** Content as of the last sync. */
  durable: Buffer
  /** data[0..base) has been untouched since the last sync (base <= durable.length). */
  base: number
  /** Appended ranges since the last sync, in order, all at or above `base`. */
  pending: Array<{ off: number, len: number }>
  /** A truncation happened since the last sync. */
  truncated: boolean
  /** The shortest length a truncation since the last sync left (meaningful while `truncated`). */
  truncatedTo: number
  /** Bumped by every truncation (a syncAsync that saw an older epoch makes nothing durable). */
  epoch: number
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

let nextInodeId = 1

function newInode (content?: Uint8Array): Inode {
  const data = Buffer.alloc(Math.max(64, content ? content.length : 0))
  if (content) data.set(content)
  const len = content ? content.length : 0
  return { id: nextInodeId++, data, len, durable: Buffer.from(data.subarray(0, len)), base: len, pending: [], truncated: false, truncatedTo: 0, epoch: 0 }
}

function errnoError (code: string, message: string, syscall: string, p?: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${message}${p !== undefined ? `, ${syscall} '${p}'` : ''}`) as NodeJS.ErrnoException
  err.code = code
  err.syscall = syscall
  if (p !== undefined) err.path = p
  return err
}

class MemRandomAccessFile implements RandomAccessFile {
  private open = true
  private readonly length: number

  constructor (private readonly fs: MemFileSystem, private readonly inode: Inode, private readonly p: string) {
    this.length = inode.len
  }

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    this.fs.before('read', this.p)
    if (!this.open) throw errnoError('EBADF', 'file closed', 'read', this.p)
    const end = Math.min(this.inode.len, position + length)
    if (end <= position) return 0
    buf.set(this.inode.data.subarray(position, end), offset)
    return end - position
  }

  size (): number {
    return this.length
  }

  close (): void {
    this.open = false
  }
}

class MemWritableFile implements WritableFile {
  private open = true
  /** Preallocated: bytes written (the zeros beyond are not counted); else unused. */
  private length: number
  /** Preallocated: end of the zeros written ahead of the data. */
  private allocated = 0

  /** `preallocateStep` > 0: a preallocated file (see the top of this file). */
  constructor (private readonly fs: MemFileSystem, private readonly inode: Inode, private readonly p: string, private readonly preallocateStep = 0) {
    this.length = inode.len
  }

  append (data: Uint8Array): void {
    const fault = this.fs.before('append', this.p, true)
    this.check('append')
    if (fault) {
      // A short write: the first half reaches the file (and, preallocated, does not count).
      if (fault.partial && data.length > 1) this.write(data.subarray(0, data.length >> 1))
      throw fault.error
    }
    this.write(data)
    if (this.preallocateStep > 0) this.length += data.length
  }

  private write (data: Uint8Array): void {
    const step = this.preallocateStep
    if (step === 0) {
      this.fs.appendTo(this.inode, data)
      return
    }
    if (this.length + data.length > this.allocated) {
      const target = Math.ceil((this.length + data.length) / step) * step
      const from = Math.max(this.allocated, this.inode.len)
      if (target > from) this.fs.appendTo(this.inode, Buffer.alloc(target - from))
      this.allocated = target
    }
    this.fs.writeAt(this.inode, this.length, data)
  }

  sync (): void {
    this.fs.before('sync', this.p)
    this.check('sync')
    this.fs.syncInode(this.inode, this.inode.len, this.inode.epoch)
  }

  syncAsync (): Promise<void> {
    try {
      this.fs.before('syncAsync', this.p)
      this.check('syncAsync')
    } catch (err) {
      return Promise.reject(err)
    }
    const upTo = this.inode.len
    const epoch = this.inode.epoch
    // Completes on a later turn of the event loop, so writes can pile up meanwhile
    // (group commit); its completion is a crash point of its own.
    return new Promise((resolve, reject) => {
      setImmediate(() => {
        try {
          this.fs.before('syncDone', this.p)
          this.fs.syncInode(this.inode, upTo, epoch)
          resolve()
        } catch (err) {
          reject(err)
        }
      })
    })
  }

  size (): number {
    return this.preallocateStep > 0 ? this.length : this.inode.len
  }

  close (): void {
    if (!this.open) return
    this.open = false
    // Preallocated: trim the zeros (ftruncate, not synced).
    if (this.preallocateStep > 0 && this.inode.len > this.length) this.fs.trimOnClose(this.inode, this.length, this.p)
  }

  /** close() on a later turn, as node-fs runs it on the thread pool. */
  async closeAsync (): Promise<void> {
    if (!this.open) return
    await new Promise<void>((resolve) => setImmediate(resolve))
    this.close()
  }

  private check (op: string): void {
    if (!this.open) throw errnoError('EBADF', 'file closed', op, this.p)
  }
}

export class MemFileSystem implements FileSystem {
  private readonly dirs = new Map<string, DirNode>()
  /** State-changing operations so far (the crash-point counter). */
  ops = 0
  /** Calls per operation kind (all kinds, including reads). */
  readonly counts: Record<string, number> = {}
  /** Operation number at which to crash (see the top of this file). */
  crashAt = -1
  crashed = false
  /** Runs before each state-changing operation: (operation number, kind, path). */
  onOp: ((index: number, op: OpKind, p: string) => void) | undefined
  /** Runs once, when `crashAt` is reached. */
  onCrash: (() => void) | undefined
  /** When an array, "op basename" of every state-changing operation is pushed to it. */
  trace: string[] | undefined
  private readonly faults: Fault[] = []
  /** Zeros written ahead at a time in preallocated files (node-fs: 256 KiB; small here, so that crash images stay cheap and cross many steps). */
  readonly preallocateStep: number

  constructor (options?: { preallocateStep?: number }) {
    this.preallocateStep = options?.preallocateStep ?? 2048
    this.dirs.set(path.resolve('/'), newDir())
  }

  // ---------------------------------------------------------------- faults and crash points

  injectFault (spec: FaultSpec): Fault {
    const f: Fault = {
      op: spec.op,
      nth: spec.nth ?? 1,
      path: spec.path,
      code: spec.code ?? 'EIO',
      times: spec.times ?? 1,
      partial: spec.partial ?? false,
      seen: 0,
      hits: 0
    }
    this.faults.push(f)
    return f
  }

  clearFaults (): void {
    this.faults.length = 0
  }

  /**
   * Called at the start of every operation. Throws CrashError once crashed (or at
   * the crash point) and injected faults; for `deferFault` callers the fault is
   * returned instead, so they can do part of the work first.
   * @internal
   */
  before (op: OpKind, p: string, deferFault = false): { error: Error, partial: boolean } | undefined {
    if (this.crashed) throw new CrashError()
    this.counts[op] = (this.counts[op] ?? 0) + 1
    if (MUTATING_OPS.has(op)) {
      const index = this.ops
      if (index === this.crashAt) {
        this.crashed = true
        this.onCrash?.()
        throw new CrashError(`simulated crash at operation ${index} (${op} ${path.basename(p)})`)
      }
      this.onOp?.(index, op, p)
      this.ops++
      this.trace?.push(`${op} ${path.basename(p)}`)
    }
    for (const f of this.faults) {
      const ops = Array.isArray(f.op) ? f.op : [f.op]
      if (!ops.includes(op)) continue
      if (f.path !== undefined) {
        const base = path.basename(p)
        const ok = typeof f.path === 'string' ? (p === f.path || base === f.path) : (f.path.test(p) || f.path.test(base))
        if (!ok) continue
      }
      f.seen++
      if (f.seen >= f.nth && f.seen < f.nth + f.times) {
        f.hits++
        const error = errnoError(f.code, f.code === 'EIO' ? 'i/o error (injected)' : 'no space left on device (injected)', op, p)
        if (deferFault) return { error, partial: f.partial }
        throw error
      }
    }
    return undefined
  }

  // ---------------------------------------------------------------- FileSystem

  openRead (p: string): RandomAccessFile {
    const abs = path.resolve(p)
    this.before('openRead', abs)
    return new MemRandomAccessFile(this, this.lookup(abs, 'open'), abs)
  }

  openWrite (p: string, options?: { preallocate?: boolean }): WritableFile {
    const abs = path.resolve(p)
    this.before('openWrite', abs)
    const { dir, name } = this.parent(abs, 'open')
    const step = options?.preallocate === true ? this.preallocateStep : 0
    const existing = dir.entries.get(name)
    if (existing) {
      this.truncateInode(existing, 0)
      return new MemWritableFile(this, existing, abs, step)
    }
    const inode = newInode()
    this.link(dir, name, inode)
    return new MemWritableFile(this, inode, abs, step)
  }

  openAppend (p: string): WritableFile {
    const abs = path.resolve(p)
    this.before('openAppend', abs)
    const { dir, name } = this.parent(abs, 'open')
    let inode = dir.entries.get(name)
    if (!inode) {
      inode = newInode()
      this.link(dir, name, inode)
    }
    return new MemWritableFile(this, inode, abs)
  }

  readSmallFile (p: string): Buffer {
    const abs = path.resolve(p)
    this.before('readSmallFile', abs)
    const inode = this.lookup(abs, 'open')
    return Buffer.from(inode.data.subarray(0, inode.len))
  }

  createExclusive (p: string, data: Uint8Array): void {
    const abs = path.resolve(p)
    this.before('createExclusive', abs)
    const { dir, name } = this.parent(abs, 'open')
    if (dir.entries.has(name)) throw errnoError('EEXIST', 'file already exists', 'open', abs)
    const inode = newInode()
    this.link(dir, name, inode)
    this.appendTo(inode, data)
    this.syncInode(inode, inode.len, inode.epoch)
  }

  exists (p: string): boolean {
    const abs = path.resolve(p)
    this.before('exists', abs)
    if (this.dirs.has(abs)) return true
    const dir = this.dirs.get(path.dirname(abs))
    return dir !== undefined && dir.entries.has(path.basename(abs))
  }

  list (d: string): string[] {
    const abs = path.resolve(d)
    this.before('list', abs)
    const dir = this.dirs.get(abs)
    if (!dir) throw errnoError(this.isFile(abs) ? 'ENOTDIR' : 'ENOENT', 'no such directory', 'scandir', abs)
    const names = [...dir.entries.keys()]
    for (const other of this.dirs.keys()) {
      if (other !== abs && path.dirname(other) === abs) names.push(path.basename(other))
    }
    return names.sort()
  }

  rename (from: string, to: string): void {
    const a = path.resolve(from)
    const b = path.resolve(to)
    this.before('rename', a)
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
    this.before('remove', abs)
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
    this.before('removeDirIfEmpty', abs)
    const dir = this.dirs.get(abs)
    if (!dir) return true
    if (dir.entries.size > 0) return false
    for (const other of this.dirs.keys()) if (path.dirname(other) === abs && other !== abs) return false
    this.dirs.delete(abs)
    return true
  }

  mkdirp (p: string): void {
    const abs = path.resolve(p)
    this.before('mkdirp', abs)
    const chain: string[] = []
    for (let d = abs; !this.dirs.has(d); d = path.dirname(d)) {
      if (this.isFile(d)) throw errnoError('EEXIST', 'file already exists', 'mkdir', d)
      chain.push(d)
    }
    for (const d of chain.reverse()) this.dirs.set(d, newDir())
  }

  syncDir (p: string): void {
    const abs = path.resolve(p)
    this.before('syncDir', abs)
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
      this.before('syncDirAsync', abs)
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
          this.before('syncDirDone', abs)
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

  truncate (p: string, length: number): void {
    const abs = path.resolve(p)
    this.before('truncate', abs)
    this.truncateInode(this.lookup(abs, 'truncate'), length)
  }

  // ---------------------------------------------------------------- crash images

  /** The image a killed process leaves: everything written survives. */
  killProcess (): MemFileSystem {
    return this.image((inode) => Buffer.from(inode.data.subarray(0, inode.len)), () => true)
  }

  /** An image a power loss could leave (see the top of this file); seeded by `rnd`. */
  crash (rnd: CrashRandom, mode: CrashMode): MemFileSystem {
    const keepOp = mode === 'drop' ? () => false : () => rnd.int(2) === 0
    return this.image((inode) => crashContent(inode, rnd, mode), keepOp)
  }

  /** An exact copy of the current state, all of it durable. The same as `killProcess()`. */
  clone (): MemFileSystem {
    return this.killProcess()
  }

  /** Names and sizes of the files in `dir` (current state), for messages. */
  describe (d: string): string {
    const dir = this.dirs.get(path.resolve(d))
    if (!dir) return '(no directory)'
    return [...dir.entries].map(([n, i]) => `${n}:${i.len}${i.len !== i.durable.length || i.pending.length ? `(durable ${i.durable.length})` : ''}`).join(' ')
  }

  private image (content: (inode: Inode) => Buffer, keepOp: () => boolean): MemFileSystem {
    const out = new MemFileSystem()
    const copies = new Map<Inode, Inode>()
    const copy = (inode: Inode): Inode => {
      let c = copies.get(inode)
      if (!c) {
        c = newInode(content(inode))
        copies.set(inode, c)
      }
      return c
    }
    for (const [dpath, dir] of this.dirs) {
      const entries = new Map(dir.durable)
      for (const op of dir.pending) if (keepOp()) applyDirOp(entries, op)
      const node = newDir()
      // Sorted, so that the random draws do not depend on Map insertion history.
      for (const name of [...entries.keys()].sort()) node.entries.set(name, copy(entries.get(name)!))
      node.durable = new Map(node.entries)
      out.dirs.set(dpath, node)
    }
    return out
  }

  // ---------------------------------------------------------------- internals

  /** @internal */
  appendTo (inode: Inode, data: Uint8Array): void {
    if (data.length === 0) return
    const need = inode.len + data.length
    if (need > inode.data.length) {
      const grown = Buffer.alloc(Math.max(need, inode.data.length * 2))
      inode.data.copy(grown, 0, 0, inode.len)
      inode.data = grown
    }
    inode.data.set(data, inode.len)
    inode.pending.push({ off: inode.len, len: data.length })
    inode.len = need
  }

  /**
   * Overwrites data[off, off + data.length), which must lie inside the file (a
   * preallocated file's zeros). A pending write like an append. @internal
   */
  writeAt (inode: Inode, off: number, data: Uint8Array): void {
    if (data.length === 0) return
    if (off + data.length > inode.len) throw new Error('MemFileSystem.writeAt past the end of the file')
    inode.data.set(data, off)
    inode.pending.push({ off, len: data.length })
    // The bytes from `off` on are no longer those of the last sync.
    if (off < inode.base) inode.base = off
  }

  /** A preallocated file's close: truncates it to `length` (a crash point, like truncate). @internal */
  trimOnClose (inode: Inode, length: number, p: string): void {
    this.before('truncate', p)
    this.truncateInode(inode, length)
  }

  /** Makes data[0..upTo) durable, if no truncation happened since `epoch`. @internal */
  syncInode (inode: Inode, upTo: number, epoch: number): void {
    if (inode.epoch !== epoch) return
    upTo = Math.min(upTo, inode.len)
    if (upTo < inode.durable.length && !inode.truncated) return
    inode.durable = Buffer.from(inode.data.subarray(0, upTo))
    inode.base = upTo
    inode.truncated = false
    const rest: Array<{ off: number, len: number }> = []
    for (const a of inode.pending) {
      const end = a.off + a.len
      if (end <= upTo) continue
      const off = Math.max(a.off, upTo)
      rest.push({ off, len: end - off })
    }
    inode.pending = rest
  }

  private truncateInode (inode: Inode, length: number): void {
    inode.epoch++
    if (length < inode.len) {
      inode.truncatedTo = inode.truncated ? Math.min(inode.truncatedTo, length) : length
      inode.truncated = true
      inode.len = length
      if (length < inode.base) inode.base = length
      const rest: Array<{ off: number, len: number }> = []
      for (const a of inode.pending) {
        if (a.off >= length) continue
        rest.push({ off: a.off, len: Math.min(a.len, length - a.off) })
      }
      inode.pending = rest
    } else if (length > inode.len) {
      this.appendTo(inode, Buffer.alloc(length - inode.len))
    }
  }

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

// The bytes of `inode` after a power loss in `mode`.
function crashContent (inode: Inode, rnd: CrashRandom, mode: CrashMode): Buffer {
  if (inode.pending.length === 0 && !inode.truncated) return Buffer.from(inode.durable)
  if (mode === 'drop') return Buffer.from(inode.durable)
  let fileMode: CrashMode | 'all' = mode
  if (mode === 'mixed') fileMode = (['drop', 'subset', 'torn', 'zeros', 'garbage', 'all'] as const)[rnd.int(6)]
  if (fileMode === 'drop') return Buffer.from(inode.durable)
  // An unsynced truncation may not have reached the disk: then neither did anything after it.
  if (inode.truncated && rnd.int(3) === 0) return Buffer.from(inode.durable)

  const out = Buffer.alloc(inode.len)
  inode.data.copy(out, 0, 0, inode.base)
  // Durable bytes past `base` (a preallocated file's synced zeros, since
  // overwritten) stay, up to where a truncation since the sync cut them. They
  // are zeros (writeAt only overwrites zeros), which is what `out` holds there.
  let end = Math.max(inode.base, inode.truncated ? Math.min(inode.durable.length, inode.truncatedTo) : inode.durable.length)
  const keep = (from: number, to: number): void => {
    if (to <= from) return
    inode.data.copy(out, from, from, to)
    if (to > end) end = to
  }
  const appends = inode.pending
  const last = appends.length - 1
  if (fileMode === 'subset') {
    const unit = [64, 512, 4096][rnd.int(3)]
    for (const a of appends) {
      const r = rnd.int(100)
      const aEnd = a.off + a.len
      if (r < 45) {
        keep(a.off, aEnd)
      } else if (r < 65) {
        // lost
      } else if (r < 80) {
        keep(a.off, a.off + rnd.int(a.len + 1))
      } else {
        // A random subset of the aligned chunks the append touches.
        for (let c = a.off - (a.off % unit); c < aEnd; c += unit) {
          if (rnd.int(2) === 0) keep(Math.max(c, a.off), Math.min(c + unit, aEnd))
        }
      }
    }
    return out.subarray(0, end)
  }
  for (let i = 0; i < last; i++) keep(appends[i].off, appends[i].off + appends[i].len)
  if (last < 0) return out.subarray(0, end)
  const a = appends[last]
  const aEnd = a.off + a.len
  const cut = a.off + rnd.int(a.len + 1)
  if (fileMode === 'torn') {
    keep(a.off, cut)
    return out.subarray(0, end)
  }
  keep(a.off, aEnd)
  if (fileMode === 'zeros') {
    out.fill(0, cut, aEnd)
  } else if (fileMode === 'garbage') {
    for (let i = cut; i < aEnd; i++) out[i] = rnd.int(256)
  }
  return out.subarray(0, end)
}
