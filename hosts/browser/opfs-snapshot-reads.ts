// Reads of a pool file whose sync access handle is closed: through a File
// snapshot of it (getFile()), read synchronously with FileReaderSync, with the
// end of each file read ahead. The handle budget (opfs-handles.ts) closes
// handles and takes the snapshots; the design is described with the file
// system (opfs-fs.ts).
import { errnoError } from '../../lib/fs/fs'
import type { FileSnapshot } from './opfs-api'

/** The end of a file that a read there through a snapshot reads at once, and how many such windows are kept (1 MiB in all). */
const SNAPSHOT_WINDOW_BYTES = 128 * 1024
const SNAPSHOT_WINDOWS = 8

/** Reads bytes [start, end) of a snapshot synchronously (FileReaderSync in a worker). */
export type SnapshotReader = (snapshot: FileSnapshot, start: number, end: number) => Uint8Array

interface FileReaderSyncLike { readAsArrayBuffer (blob: unknown): ArrayBuffer }
let fileReader: FileReaderSyncLike | undefined

export function readWithFileReaderSync (snapshot: FileSnapshot, start: number, end: number): Uint8Array {
  const Reader = (globalThis as { FileReaderSync?: new () => FileReaderSyncLike }).FileReaderSync
  if (Reader === undefined) throw errnoError('EIO', 'no FileReaderSync here to read a file whose sync access handle is closed')
  fileReader ??= new Reader()
  return new Uint8Array(fileReader.readAsArrayBuffer(snapshot.slice(start, end)))
}

/** The snapshot reads of one mounted directory, with the windows they read ahead. */
export class SnapshotReads {
  /** Stretches of snapshots read ahead, the most recent last. */
  private readonly windows: Array<{ snapshot: FileSnapshot, start: number, bytes: Uint8Array }> = []

  constructor (readonly readSnapshot: SnapshotReader) {}

  /**
   * Reads into `out` from `at` in `snapshot`. A FileReaderSync call costs
   * milliseconds, for 128 KiB 1.2-2 times what it costs for 4 KiB (Chromium
   * 150, BENCHMARKS.md): a read in the last 128 KiB of a file (a table's
   * footer, index and filter blocks, read one after the other when it is
   * opened) reads all of them once, kept in a window; other reads (data
   * blocks, at random) read just their bytes.
   */
  read (snapshot: FileSnapshot, out: Uint8Array, at: number): number {
    const end = Math.min(at + out.length, snapshot.size)
    if (end <= at) return 0
    let w = this.windows.find((x) => x.snapshot === snapshot && x.start <= at && end <= x.start + x.bytes.length)
    if (w === undefined) {
      const start = Math.max(0, snapshot.size - SNAPSHOT_WINDOW_BYTES)
      if (at < start) {
        const bytes = this.readSnapshot(snapshot, at, end)
        out.set(bytes)
        return bytes.length
      }
      w = { snapshot, start, bytes: this.readSnapshot(snapshot, start, snapshot.size) }
      this.windows.push(w)
      if (this.windows.length > SNAPSHOT_WINDOWS) this.windows.shift()
    }
    const n = Math.min(end, w.start + w.bytes.length) - at
    out.set(w.bytes.subarray(at - w.start, at - w.start + n))
    return n
  }
}
