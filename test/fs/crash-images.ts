// Crash images: the file system a crash would leave, built from the in-memory
// file system's record of writes and syncs (mem-fs.ts). Each image is a new
// MemFileSystem whose every byte and entry is durable; the original is not
// changed and can go on.
//
//   - `killedProcessImage(fs)`: the process died, the kernel did not: everything
//     that reached write(2), and every create/rename/remove, survives.
//   - `powerLossImage(fs, rnd, mode)`: durable state survives; the rest, per mode:
//       drop     nothing unsynced survives (no data, no directory operation).
//       subset   per pending write: kept, lost, cut at a random byte, or kept in
//                a random subset of aligned chunks (a later page may persist while
//                an earlier one is lost; lost bytes below the new end read as
//                zeros).
//       torn     all pending writes kept, but the last one cut at a random byte.
//       zeros    all kept, but a random tail of the last write reads as zeros
//                (the size reached the disk, the data did not).
//       garbage  all kept, but a random tail of the last write is random bytes.
//       mixed    each file draws one of the data modes above (or "all kept").
//     In every mode but `drop`, each pending directory operation is kept or
//     reverted independently (a reverted create loses the file; a reverted rename
//     leaves the old names; a reverted remove brings the file back with whatever
//     of its data survives). A pending truncation (openWrite over an existing
//     file, a preallocated file's trim on close) may be reverted, which brings
//     back the durable content.
//     The image is used after a restart: its files are RESTART_MS older.
//   All choices come from `rnd`: the same seed and state give the same image.
import type { FileRecord } from './mem-file'
import type { MemFileSystem } from './mem-fs'

export type CrashMode = 'drop' | 'subset' | 'torn' | 'zeros' | 'garbage' | 'mixed'
export const CRASH_MODES: readonly CrashMode[] = ['drop', 'subset', 'torn', 'zeros', 'garbage', 'mixed']

/** The random source power-loss images draw from (test/util/random.ts's Random fits). */
export interface CrashRandom {
  /** An integer in [0, n). */
  int (n: number): number
}

/** The image a killed process leaves: everything written survives. */
export function killedProcessImage (fs: MemFileSystem): MemFileSystem {
  return fs.clone()
}

/**
 * No machine restarts after a power loss in less: its image is used at least
 * this long after the crash (its files' modification times are that much older).
 */
export const RESTART_MS = 5000

/** An image a power loss could leave (see the top of this file); seeded by `rnd`. */
export function powerLossImage (fs: MemFileSystem, rnd: CrashRandom, mode: CrashMode): MemFileSystem {
  return fs.image({
    keepDirOp: mode === 'drop' ? () => false : () => rnd.int(2) === 0,
    content: (file) => powerLossContent(file, rnd, mode),
    elapsedMs: RESTART_MS
  })
}

// The bytes of `file` after a power loss in `mode`.
function powerLossContent (file: FileRecord, rnd: CrashRandom, mode: CrashMode): Buffer {
  if (file.pending.length === 0 && !file.truncated) return Buffer.from(file.durable)
  if (mode === 'drop') return Buffer.from(file.durable)
  let fileMode: CrashMode | 'all' = mode
  if (mode === 'mixed') fileMode = (['drop', 'subset', 'torn', 'zeros', 'garbage', 'all'] as const)[rnd.int(6)]
  if (fileMode === 'drop') return Buffer.from(file.durable)
  // An unsynced truncation may not have reached the disk: then neither did anything after it.
  if (file.truncated && rnd.int(3) === 0) return Buffer.from(file.durable)

  const out = Buffer.alloc(file.len)
  file.data.copy(out, 0, 0, file.base)
  // Durable bytes past `base` (a preallocated file's synced zeros, since
  // overwritten) stay, up to where a truncation since the sync cut them. They
  // are zeros (only preallocated zeros are overwritten), which is what `out`
  // holds there.
  let end = Math.max(file.base, file.truncated ? Math.min(file.durable.length, file.truncatedTo) : file.durable.length)
  const keep = (from: number, to: number): void => {
    if (to <= from) return
    file.data.copy(out, from, from, to)
    if (to > end) end = to
  }
  const writes = file.pending
  const last = writes.length - 1
  if (fileMode === 'subset') {
    const unit = [64, 512, 4096][rnd.int(3)]
    for (const w of writes) {
      const r = rnd.int(100)
      const wEnd = w.off + w.len
      if (r < 45) {
        keep(w.off, wEnd)
      } else if (r < 65) {
        // lost
      } else if (r < 80) {
        keep(w.off, w.off + rnd.int(w.len + 1))
      } else {
        // A random subset of the aligned chunks the write touches.
        for (let c = w.off - (w.off % unit); c < wEnd; c += unit) {
          if (rnd.int(2) === 0) keep(Math.max(c, w.off), Math.min(c + unit, wEnd))
        }
      }
    }
    return out.subarray(0, end)
  }
  for (let i = 0; i < last; i++) keep(writes[i].off, writes[i].off + writes[i].len)
  if (last < 0) return out.subarray(0, end)
  const w = writes[last]
  const wEnd = w.off + w.len
  const cut = w.off + rnd.int(w.len + 1)
  if (fileMode === 'torn') {
    keep(w.off, cut)
    return out.subarray(0, end)
  }
  keep(w.off, wEnd)
  if (fileMode === 'zeros') {
    out.fill(0, cut, wEnd)
  } else if (fileMode === 'garbage') {
    for (let i = cut; i < wEnd; i++) out[i] = rnd.int(256)
  }
  return out.subarray(0, end)
}
