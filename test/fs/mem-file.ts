// One file of the in-memory file system (mem-fs.ts): its bytes, what of them
// is durable, the writes since the last sync in order (a FileRecord, from which
// crash-images.ts builds what a crash leaves), and the handles that read and
// write it. Every handle call first goes through the file system's
// FaultInjector (fault-injection.ts).
//
//   - `sync` / `syncAsync` make the current bytes durable (`syncAsync`: what had
//     been written when it was called, once it completes, unless the file was
//     truncated meanwhile).
//   - Writes (appends, overwrites of preallocated zeros) and truncations since
//     the last sync are remembered in order.
//   - Preallocated files (openWrite with `preallocate`, as node-fs does for
//     logs): zeros are appended `preallocateStep` bytes at a time ahead of the
//     data, which then overwrites them in place; close() trims the zeros (a
//     truncation, and a crash point of its own). Each write, the zeros and each
//     overwrite, is a pending write of its own: a power loss keeps or loses them
//     independently, and an overwrite that is lost leaves the zeros under it.
//   - A handle keeps writing to its file whatever happens to the file's name
//     (POSIX).
import type { RandomAccessFile, WritableFile } from '../../lib/fs/fs'
import { errnoError, type FaultInjector } from './fault-injection'

/** What the file system records of one file; read by crash-images.ts. */
export interface FileRecord {
  /** Current content: data[0..len). */
  readonly data: Buffer
  readonly len: number
  /** Content as of the last sync. */
  readonly durable: Buffer
  /** data[0..base) has been untouched since the last sync (base <= durable.length). */
  readonly base: number
  /** Writes since the last sync (appends, overwrites of preallocated zeros), in order, all at or above `base`. */
  readonly pending: ReadonlyArray<{ readonly off: number, readonly len: number }>
  /** A truncation happened since the last sync. */
  readonly truncated: boolean
  /** The shortest length a truncation since the last sync left (meaningful while `truncated`). */
  readonly truncatedTo: number
  /** When the content last changed (Date.now()), as stat's mtime. */
  readonly mtimeMs: number
}

/** A file of the in-memory file system: its FileRecord, which only this module and mem-fs.ts change. */
export interface Inode extends FileRecord {
  data: Buffer
  len: number
  durable: Buffer
  base: number
  pending: Array<{ off: number, len: number }>
  truncated: boolean
  truncatedTo: number
  /** Bumped by every truncation (a syncAsync that saw an older epoch makes nothing durable). */
  epoch: number
  mtimeMs: number
}

export function newInode (content?: Uint8Array, mtimeMs = Date.now()): Inode {
  const data = Buffer.alloc(Math.max(64, content ? content.length : 0))
  if (content) data.set(content)
  const len = content ? content.length : 0
  return { data, len, durable: Buffer.from(data.subarray(0, len)), base: len, pending: [], truncated: false, truncatedTo: 0, epoch: 0, mtimeMs }
}

// ---------------------------------------------------------------- writes

export function appendTo (inode: Inode, data: Uint8Array): void {
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
  inode.mtimeMs = Date.now()
}

/**
 * Overwrites data[off, off + data.length), which must lie inside the file (a
 * preallocated file's zeros). A pending write like an append.
 */
function writeAt (inode: Inode, off: number, data: Uint8Array): void {
  if (data.length === 0) return
  if (off + data.length > inode.len) throw new Error('MemFileSystem: writeAt past the end of the file')
  inode.data.set(data, off)
  inode.pending.push({ off, len: data.length })
  inode.mtimeMs = Date.now()
  // The bytes from `off` on are no longer those of the last sync.
  if (off < inode.base) inode.base = off
}

/** Makes data[0..upTo) durable, if no truncation happened since `epoch`. */
export function syncInode (inode: Inode, upTo: number, epoch: number): void {
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

/**
 * Cuts the file to `length` (no more than its length: openWrite over an existing
 * file, a preallocated file's trim). Remembered until the next sync.
 */
export function truncateInode (inode: Inode, length: number): void {
  inode.epoch++
  inode.mtimeMs = Date.now()
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
  }
}

// ---------------------------------------------------------------- handles

export class MemRandomAccessFile implements RandomAccessFile {
  private open = true
  private readonly length: number

  constructor (private readonly faults: FaultInjector, private readonly inode: Inode, private readonly p: string) {
    this.length = inode.len
  }

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    this.faults.before('read', this.p)
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

export class MemWritableFile implements WritableFile {
  private open = true
  /** Preallocated: bytes written (the zeros beyond are not counted); else unused. */
  private length = 0
  /** Preallocated: end of the zeros written ahead of the data. */
  private allocated = 0

  /**
   * A handle on `inode`, just created or truncated by openWrite (or opened by openAppend: not preallocated).
   * `preallocateStep` > 0: a preallocated file (see the top of this file).
   */
  constructor (private readonly faults: FaultInjector, private readonly inode: Inode, private readonly p: string, private readonly preallocateStep: number) {}

  append (data: Uint8Array): void {
    const fault = this.faults.beforePartial('append', this.p)
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
      appendTo(this.inode, data)
      return
    }
    if (this.length + data.length > this.allocated) {
      const target = Math.ceil((this.length + data.length) / step) * step
      const from = Math.max(this.allocated, this.inode.len)
      if (target > from) appendTo(this.inode, Buffer.alloc(target - from))
      this.allocated = target
    }
    writeAt(this.inode, this.length, data)
  }

  sync (): void {
    this.faults.before('sync', this.p)
    this.check('sync')
    syncInode(this.inode, this.inode.len, this.inode.epoch)
  }

  syncAsync (): Promise<void> {
    try {
      this.faults.before('syncAsync', this.p)
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
          this.faults.before('syncDone', this.p)
          syncInode(this.inode, upTo, epoch)
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
    // Preallocated: trim the zeros (ftruncate, not synced; a crash point of its own).
    if (this.preallocateStep > 0 && this.inode.len > this.length) {
      this.faults.before('truncate', this.p)
      truncateInode(this.inode, this.length)
    }
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
