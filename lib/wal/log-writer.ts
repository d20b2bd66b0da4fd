// Appends records (lib/wal/log-format.ts) to a log file: the write-ahead log and
// the manifest both write through this class.
//
// Contracts:
// - Each call to `addRecord` / `addRecords` issues exactly ONE `append` (one
//   write(2)). `addRecords` is group commit: the writes gathered in one tick are
//   framed as separate records but land in the file with a single system call.
// - Nothing is durable until `sync` / `syncAsync` returns.
// - A failed append poisons the writer: part of the buffer may have reached the
//   file, so anything appended after it would sit behind a torn record and be
//   reported as mid-log corruption on recovery. Every later call rethrows the
//   first error; the owner must abandon this log and start a new one.
import { closeAsync, type WritableFile } from '../fs/fs'
import { encodedRecordSize, writeRecord } from './log-format'
import { assert } from '../invariants'

// A scratch buffer is reused for records up to this size (append is synchronous,
// so the bytes are out of the buffer before the next call); larger ones get a
// buffer of their own so that one huge batch does not pin memory forever.
const MAX_SCRATCH = 1024 * 1024

export class LogWriter {
  private readonly file: WritableFile
  private scratch: Buffer = Buffer.allocUnsafe(0)
  private failure: unknown = undefined
  private closed = false

  constructor (file: WritableFile) {
    this.file = file
  }

  /** Appends one record holding `payload` (one write(2)). */
  addRecord (payload: Uint8Array): void {
    this.check()
    const buf = this.buffer(encodedRecordSize(payload.length))
    const end = writeRecord(buf, 0, payload)
    this.append(buf.subarray(0, end))
  }

  /** Appends one record per payload, in order, with a single write(2). */
  addRecords (payloads: Uint8Array[]): void {
    this.check()
    if (payloads.length === 0) return
    let total = 0
    for (const p of payloads) total += encodedRecordSize(p.length)
    const buf = this.buffer(total)
    let pos = 0
    for (const p of payloads) pos = writeRecord(buf, pos, p)
    this.append(buf.subarray(0, pos))
  }

  /** fdatasync: every record added so far survives a crash once this returns. */
  sync (): void {
    this.check()
    this.guard(() => this.file.sync())
  }

  /** `sync` off the event loop; records may keep being added meanwhile. */
  async syncAsync (): Promise<void> {
    this.check()
    try {
      await this.file.syncAsync()
    } catch (err) {
      if (this.failure === undefined) this.failure = err
      throw err
    }
  }

  /** Bytes in the file, including any present before this writer opened it. */
  size (): number {
    return this.file.size()
  }

  /** Closes the file (without syncing). Idempotent. */
  close (): void {
    if (this.closed) return
    this.closed = true
    this.scratch = Buffer.allocUnsafe(0)
    this.file.close()
  }

  /** close() off the event loop where the file system offers it (see closeAsync in lib/fs/fs.ts). */
  async closeAsync (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.scratch = Buffer.allocUnsafe(0)
    await closeAsync(this.file)
  }

  private check (): void {
    assert(!this.closed, 'log writer used after close')
    if (this.failure !== undefined) throw this.failure
  }

  private buffer (size: number): Buffer {
    if (size > MAX_SCRATCH) return Buffer.allocUnsafe(size)
    if (this.scratch.length < size) {
      this.scratch = Buffer.allocUnsafe(Math.min(MAX_SCRATCH, Math.max(size, 2 * this.scratch.length, 4096)))
    }
    return this.scratch
  }

  private append (data: Uint8Array): void {
    this.guard(() => this.file.append(data))
  }

  private guard (fn: () => void): void {
    try {
      fn()
    } catch (err) {
      this.failure = err
      throw err
    }
  }
}
