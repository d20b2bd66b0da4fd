// Range-tombstone compactions: a pure function of the tree, the live range
// tombstones and the oldest snapshot, tried when the strategy's own picker has
// nothing to do, so that the space under a clear() comes back without a manual
// compactRange (RocksDB's deletion-triggered compaction, for range tombstones).
//
// A table at level >= 1 that overlaps a tombstone's range and whose floor is
// below the tombstone's seq may still hold versions it hides; it is rewritten in
// place (same level), which drops them and lifts its floor to at least that seq
// (lib/compaction/table-writer.ts), so each task makes progress and the next one
// looks further along. Up to MAX_INPUTS adjacent tables per task keeps each job
// small. In place is safe at level >= 1: the outputs stay inside the inputs' key
// span, which no other table of the level overlaps. Level 0 cannot be rewritten
// in place (an L0 table rewritten would get a newer file number than L0 tables
// holding newer data): when an L0 table is under the tombstone, all of level 0
// is merged into level 1 with the level-1 tables it overlaps, as compactRange
// does (also right under tiered compaction: level 1 is the newest run below
// level 0, and the merged run keeps that place). A tombstone that some snapshot does not
// see yet is skipped: the versions under it must stay, and the task would not
// make progress.
import { keyRange, overlapsHalfOpen, overlapsRange, type FileMeta } from '../manifest/file-meta'
import type { RangeTombstone } from '../range-tombstones'
import type { RangeTombstoneTask } from './task-kinds'

export const MAX_INPUTS = 8

export function pickRangeTombstoneCompaction (levels: readonly FileMeta[][], tombstones: readonly RangeTombstone[], smallestSnapshot: number): RangeTombstoneTask | undefined {
  for (const t of tombstones) {
    if (t.seq > smallestSnapshot) continue
    if (levels[0].some((f) => overlapsHalfOpen(f, t.start, t.end) && (f.floor ?? 0) < t.seq)) {
      const inputs = levels[0].slice()
      const { smallest, largest } = keyRange(inputs)
      const below = levels[1].filter((f) => overlapsRange(f, smallest, largest))
      return { kind: 'range-tombstone', level: 0, outputLevel: 1, inputs, overlaps: below }
    }
    for (let level = 1; level < levels.length; level++) {
      const inputs: FileMeta[] = []
      for (const f of levels[level]) {
        if (overlapsHalfOpen(f, t.start, t.end) && (f.floor ?? 0) < t.seq) {
          inputs.push(f)
          if (inputs.length === MAX_INPUTS) break
        } else if (inputs.length > 0) {
          break // keep the inputs adjacent
        }
      }
      if (inputs.length > 0) return { kind: 'range-tombstone', level, outputLevel: level, inputs, overlaps: [] }
    }
  }
  return undefined
}
