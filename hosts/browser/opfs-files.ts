// The engine's open files on the OPFS file system: readers and writers of
// pool files, through their sync access handle or, for a reader whose handle
// the pool closed, a snapshot.
import type { RandomAccessFile, WritableFile } from '../../lib/fs/fs'
import { HEADER_BYTES } from './opfs-pool-header'
import type { PoolFile } from './opfs-handles'
import { writeAll, type Pool } from './opfs-pool'
export class OpfsRandomAccessFile implements RandomAccessFile {
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
export function readAt (pool: Pool, file: PoolFile, out: Uint8Array, at: number): number {
  if (file.handle !== undefined) return pool.handleOf(file).read(out, { at })
  pool.wantHandle(file)
  return pool.snapshotReads.read(file.snapshot!, out, at)
}

export class OpfsWritableFile implements WritableFile {
  private length = 0
  private closed = false

  /** `rarelyAppended`: syncAsync() reopens the handle where the browser counts its capacity, which gives back what the appends took (see Pool#releaseCapacity). */
  constructor (private readonly pool: Pool, private readonly file: PoolFile, private readonly rarelyAppended = false) {
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
    if (this.rarelyAppended && this.pool.countsCapacity) await this.pool.reopenHandle(this.file)
  }

  size (): number {
    return this.length
  }

  /**
   * The file is done: its handle is reopened to give back the quota capacity
   * its growth took (Pool#releaseCapacity), and may close (least recently
   * used first) once a snapshot holds its contents for reads.
   */
  close (): void {
    if (this.closed) return
    this.closed = true
    if (--this.file.writers > 0 || this.file.name === '') return
    if (this.length > 0) this.pool.releaseCapacity(this.file)
    else if (this.pool.nearBound()) this.pool.takeSnapshot(this.file)
  }
}
