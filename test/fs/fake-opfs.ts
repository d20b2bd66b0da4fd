// A fake of the OPFS API that hosts/browser/opfs-fs.ts uses (directory handles, file
// handles, sync access handles), in memory, with the durability of a browser
// crash: each file has its durable bytes and the writes and truncations made
// since its last flush(); crash() returns a new root whose files kept each
// unflushed operation or not, at random, and a kept write may be cut short (a
// torn header). A second sync access handle on a file fails with
// NoModificationAllowedError, as in browsers (another tab holds the database).
// Creating a sync access handle can be made slow (as in Firefox, where a burst
// of flushes outran the pool's growth, or a browser under load), made never to
// settle, or made to fail (a full quota). A quota
// on the bytes of all files makes writes past it come up short, as in Firefox,
// or return a bogus count, as in Chrome (0xFFFFFFF8, after writing what fit),
// and makes truncate() past it throw QuotaExceededError.
import type { DirectoryHandle, FileHandle, FileSnapshot, SyncAccessHandle } from '../../hosts/browser/opfs-fs'
import type { Random } from '../util/random'

type Op = { write: Uint8Array, at: number } | { truncate: number }

/** `bytes` after `op`: changed in place when it fits, else a longer copy. */
function applyOp (bytes: Uint8Array, op: Op): Uint8Array {
  if ('truncate' in op) {
    const out = new Uint8Array(op.truncate)
    out.set(bytes.subarray(0, op.truncate))
    return out
  }
  const end = op.at + op.write.length
  const out = end > bytes.length ? new Uint8Array(end) : bytes
  if (out !== bytes) out.set(bytes)
  out.set(op.write, op.at)
  return out
}

class FakeFile {
  durable: Uint8Array = new Uint8Array(0)
  current: Uint8Array = new Uint8Array(0)
  pending: Op[] = []
  open = false
  /** Writes and truncations so far: a snapshot taken before one is stale. */
  changes = 0

  apply (op: Op): void {
    this.current = applyOp(this.current, op)
    this.pending.push(op)
    this.changes++
  }

  /** This file after a crash: the durable bytes and a random choice of the pending operations, in order. */
  crashed (rnd: Random): FakeFile {
    const file = new FakeFile()
    let bytes: Uint8Array = this.durable.slice()
    for (const op of this.pending) {
      const choice = rnd.int(3)
      if (choice === 0) continue
      if (choice === 1 || 'truncate' in op) bytes = applyOp(bytes, op)
      else bytes = applyOp(bytes, { write: op.write.subarray(0, rnd.int(op.write.length)), at: op.at })
    }
    file.durable = bytes
    file.current = bytes
    return file
  }
}

/**
 * A File from getFile(): the contents then. Reading it after the file
 * changed throws NotReadableError (as a browser may), so that a stale
 * snapshot cannot be read unnoticed.
 */
export class FakeSnapshot implements FileSnapshot {
  private readonly changes: number
  private readonly bytes: Uint8Array
  constructor (private readonly file: FakeFile) {
    this.changes = file.changes
    this.bytes = file.current.slice()
  }

  get size (): number {
    return this.bytes.length
  }

  slice (start: number, end: number): Uint8Array {
    if (this.file.changes !== this.changes) throw Object.assign(new Error('the file changed since getFile()'), { name: 'NotReadableError' })
    return this.bytes.subarray(start, end)
  }
}

/** Snapshot reads made so far (reads of files whose handle was closed). */
export const snapshotReads = { count: 0 }

/** The OpfsFileSystem's snapshot reader for the fake (FileReaderSync's part). */
export function readFakeSnapshot (snapshot: FileSnapshot, start: number, end: number): Uint8Array {
  snapshotReads.count++
  return (snapshot as FakeSnapshot).slice(start, end).slice()
}

/** Flushes so far, and how many more writes, truncations and flushes may run before the fake crashes. */
interface Counters { flushes: number, opsLeft: number }

export const CRASHED = 'fake OPFS: crashed'

/** How createSyncAccessHandle() behaves, shared by every directory below a root. */
export interface HandleCreation {
  /** ms each creation takes (0: settles on the next microtask). */
  delayMs: number
  /** Set: every creation fails with it (after the delay). */
  failure?: Error
  /** True: every creation started meanwhile never settles (a browser that gives no handle). */
  never?: boolean
  /** Creations in progress now, and the most there were at once. */
  inFlight: number
  maxInFlight: number
}

/** The quota, shared by every file below a root: `usedBytes` counts the current bytes of every file. */
export interface Quota {
  bytes: number
  usedBytes: number
  /** What a write past the quota returns: the bytes it wrote ('short') or Chrome's 0xFFFFFFF8 ('bogus'). */
  full: 'short' | 'bogus'
}

/** Chrome 150's return value from write() when the quota is full. */
export const BOGUS_WRITE_COUNT = 0xFFFFFFF8

class FakeSyncAccessHandle implements SyncAccessHandle {
  private closed = false
  constructor (private readonly file: FakeFile, private readonly counters: Counters, private readonly quota: Quota) {}

  /** Applies `op`, counting the bytes it adds or frees against the quota. */
  private apply (op: Op): void {
    const before = this.file.current.length
    this.file.apply(op)
    this.quota.usedBytes += this.file.current.length - before
  }

  private check (): void {
    if (this.closed) throw Object.assign(new Error('handle closed'), { name: 'InvalidStateError' })
    if (this.counters.opsLeft-- <= 0) throw new Error(CRASHED)
  }

  read (buffer: Uint8Array, options: { at: number }): number {
    if (this.closed) throw Object.assign(new Error('handle closed'), { name: 'InvalidStateError' })
    const src = this.file.current.subarray(options.at, options.at + buffer.length)
    buffer.set(src)
    return src.length
  }

  write (buffer: Uint8Array, options: { at: number }): number {
    this.check()
    const room = this.quota.bytes - this.quota.usedBytes
    const fits = Math.max(0, Math.min(buffer.length, this.file.current.length + room - options.at))
    if (fits > 0) this.apply({ write: Uint8Array.from(buffer.subarray(0, fits)), at: options.at })
    if (fits < buffer.length && this.quota.full === 'bogus') return BOGUS_WRITE_COUNT
    return fits
  }

  truncate (size: number): void {
    this.check()
    if (size - this.file.current.length > this.quota.bytes - this.quota.usedBytes) {
      throw Object.assign(new Error('the quota is full'), { name: 'QuotaExceededError' })
    }
    this.apply({ truncate: size })
  }

  getSize (): number {
    if (this.closed) throw Object.assign(new Error('handle closed'), { name: 'InvalidStateError' })
    return this.file.current.length
  }

  flush (): void {
    this.check()
    this.counters.flushes++
    this.file.durable = this.file.current.slice()
    this.file.pending = []
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.file.open = false
  }
}

export class FakeDirectory implements DirectoryHandle {
  readonly files = new Map<string, FakeFile>()
  readonly dirs = new Map<string, FakeDirectory>()
  /** Shared by every file below: set opsLeft to make the fake crash after that many operations. */
  counters: Counters = { flushes: 0, opsLeft: Infinity }
  /** Shared by every directory below: slow or failing handle creation. */
  handleCreation: HandleCreation = { delayMs: 0, inFlight: 0, maxInFlight: 0 }
  /** Shared by every directory below: no limit unless `bytes` is set. */
  quota: Quota = { bytes: Infinity, usedBytes: 0, full: 'short' }

  async getDirectoryHandle (name: string, options?: { create?: boolean }): Promise<DirectoryHandle> {
    let dir = this.dirs.get(name)
    if (dir === undefined) {
      if (options?.create !== true) throw Object.assign(new Error(name), { name: 'NotFoundError' })
      dir = new FakeDirectory()
      dir.counters = this.counters
      dir.handleCreation = this.handleCreation
      dir.quota = this.quota
      this.dirs.set(name, dir)
    }
    return dir
  }

  async getFileHandle (name: string, options?: { create?: boolean }): Promise<FileHandle> {
    let file = this.files.get(name)
    if (file === undefined) {
      if (options?.create !== true) throw Object.assign(new Error(name), { name: 'NotFoundError' })
      file = new FakeFile()
      this.files.set(name, file)
    }
    const f = file
    const counters = this.counters
    const creation = this.handleCreation
    const quota = this.quota
    return {
      async getFile () {
        return new FakeSnapshot(f)
      },
      async createSyncAccessHandle () {
        if (creation.never === true) return await new Promise<never>(() => {})
        if (creation.delayMs > 0 || creation.failure !== undefined) {
          creation.maxInFlight = Math.max(creation.maxInFlight, ++creation.inFlight)
          try {
            if (creation.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, creation.delayMs))
          } finally {
            creation.inFlight--
          }
          if (creation.failure !== undefined) throw creation.failure
        }
        if (f.open) throw Object.assign(new Error('file is open elsewhere'), { name: 'NoModificationAllowedError' })
        f.open = true
        return new FakeSyncAccessHandle(f, counters, quota)
      }
    }
  }

  /** Files in this directory with a sync access handle open. */
  openFiles (): number {
    let n = 0
    for (const file of this.files.values()) if (file.open) n++
    return n
  }

  async removeEntry (name: string): Promise<void> {
    this.quota.usedBytes -= this.files.get(name)?.current.length ?? 0
    this.files.delete(name)
    this.dirs.delete(name)
  }

  async* keys (): AsyncIterable<string> {
    for (const name of [...this.dirs.keys(), ...this.files.keys()]) yield name
  }

  /** The tree a browser crash leaves (directory entries are durable at once, as OPFS creates them). */
  crash (rnd: Random): FakeDirectory {
    const out = new FakeDirectory()
    for (const [name, file] of this.files) {
      const crashed = file.crashed(rnd)
      out.files.set(name, crashed)
      out.quota.usedBytes += crashed.current.length
    }
    for (const [name, dir] of this.dirs) {
      const child = dir.crash(rnd)
      out.quota.usedBytes += child.quota.usedBytes
      child.counters = out.counters
      child.handleCreation = out.handleCreation
      child.quota = out.quota
      out.dirs.set(name, child)
    }
    return out
  }
}
