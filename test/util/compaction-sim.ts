// A compaction strategy simulated over a sequence of flushes, without I/O: after
// each flush, pickCompaction() runs and its task is applied at once (through
// compactionEdit, as the scheduler does) until it has nothing to do. A merge
// writes the sum of its inputs (no overwrites: the worst case) over the union of
// their key ranges, cut into tables of targetFileSize covering equal slices of
// it. Keys are 4-byte big-endian numbers; a flush covers the whole key space (a
// memtable of random keys). What it measures is the picker's choices alone:
// bytes written per byte flushed, and sorted runs.
import { compactionEdit, isTrivialMove, movedTables, pickCompaction, type TaskOptions } from '../../lib/compaction/task'
import { sortedRuns } from '../../lib/compaction/tiered-picker'
import type { FileMeta } from '../../lib/manifest/file-meta'
import type { InternalKey } from '../../lib/keys'
import { NUM_LEVELS } from '../../lib/options'

const KEY_SPACE = 2 ** 32

function key (n: number): InternalKey {
  const userKey = Buffer.alloc(4)
  userKey.writeUInt32BE(Math.min(KEY_SPACE - 1, Math.floor(n)))
  return { userKey, seq: 1, kind: 1 }
}

const low = (f: FileMeta): number => f.smallest.userKey.readUInt32BE(0)
const high = (f: FileMeta): number => f.largest.userKey.readUInt32BE(0)

export interface SimulationResult {
  /** (bytes flushed + bytes written by merges) / bytes flushed. */
  writeAmplification: number
  /** Most sorted runs once compaction had nothing left to do after a flush. */
  maxRuns: number
  merges: number
  moves: number
}

export function simulateFlushes (flushBytes: readonly number[], options: TaskOptions): SimulationResult {
  const levels: FileMeta[][] = Array.from({ length: NUM_LEVELS }, () => [])
  const compactPointers: Array<InternalKey | undefined> = new Array(NUM_LEVELS).fill(undefined)
  let nextNumber = 1
  const table = (size: number, from: number, to: number): FileMeta => ({ number: nextNumber++, size, entries: 1, smallest: key(from), largest: key(to) })
  let flushed = 0
  let written = 0
  const result = { writeAmplification: 0, maxRuns: 0, merges: 0, moves: 0 }
  for (const bytes of flushBytes) {
    levels[0].unshift(table(bytes, 0, KEY_SPACE - 1))
    flushed += bytes
    for (;;) {
      const task = pickCompaction({ levels, compactPointers }, options, [], 0)
      if (task === undefined) break
      let outputs: FileMeta[]
      if (isTrivialMove(task)) {
        outputs = movedTables(task)
        result.moves++
      } else {
        const inputs = compactionEdit(task, []).deletedFiles!.map((d) => levels[d.level].find((f) => f.number === d.number)!)
        const size = inputs.reduce((s, f) => s + f.size, 0)
        const from = Math.min(...inputs.map(low))
        const to = Math.max(...inputs.map(high))
        const pieces = Math.max(1, Math.ceil(size / options.targetFileSize))
        const span = (to - from + 1) / pieces
        outputs = Array.from({ length: pieces }, (_, i) => table(size / pieces, from + i * span, from + (i + 1) * span - 1))
        written += size
        result.merges++
      }
      const edit = compactionEdit(task, outputs)
      for (const d of edit.deletedFiles!) levels[d.level] = levels[d.level].filter((f) => f.number !== d.number)
      for (const n of edit.newFiles!) levels[n.level].push(n.meta)
      for (let level = 1; level < NUM_LEVELS; level++) levels[level].sort((a, b) => low(a) - low(b))
      for (const p of edit.compactPointers!) compactPointers[p.level] = p.key
    }
    result.maxRuns = Math.max(result.maxRuns, sortedRuns({ levels, compactPointers }).length)
  }
  result.writeAmplification = (flushed + written) / flushed
  return result
}
