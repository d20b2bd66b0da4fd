// The size-tiered (universal-style) compaction picker: a pure function of the
// LSM's shape, like the leveled one.
//
// Sorted runs, newest first: each level-0 table is a run of its own, and each
// non-empty level 1..6 is one run (levels hold successively older data). Nothing
// is done under `level0CompactionTrigger` runs (default 8 under this strategy).
// At or above it, as in RocksDB's universal compaction:
//   1. space amplification: if the runs above the oldest one hold more than
//      `maxSizeAmplificationPercent` of its size, everything is merged into one
//      run (a full compaction: tombstones and old versions disappear);
//   2. size ratio: otherwise, starting from the newest run, a window of adjacent
//      runs grows while the next (older) run is no larger than the window's total
//      times (1 + sizeRatioPercent / 100); a window of two or more is merged. If
//      the window from a run holds it alone, the next start is tried;
//   3. otherwise, only if there are more runs than the trigger, the newest runs
//      are merged regardless of size, as few as bring the count back to the
//      trigger.
// So runs accumulate up to the trigger, and a byte is rewritten only when its run
// is merged with runs of a similar total size, instead of about
// levelMultiplier/2 times per level under leveled compaction: less write
// amplification, paid for with more runs to read and more space. (Rule 3 firing
// at the trigger itself, down to trigger - 1 runs, merged every new flush into
// the newest deeper run: leveled compaction with a ratio of 1, and more write
// amplification than leveled.)
//
// Placement keeps the age order of runs: the merged run goes to the level of
// the oldest run in the window, or, when the window holds only level-0 tables,
// to the deepest empty level above the next older run. A window that includes
// a level-0 table always includes every older level-0 table too.
//
// Six levels are six places for merged runs. When a window of level-0 tables
// has none (level 1 holds a run), room is made first, never by merging the
// tables into that run (which, with small frequent flushes, rewrote an ever
// larger level-1 run every few flushes: 25 bytes written per user byte where
// leveled wrote 9):
//   4. a move: the run just above the deepest empty level moves into it, a
//      manifest edit that writes nothing; or, with every level full,
//   5. room: the two adjacent deeper runs of the fewest bytes merge into one.
// Room is made when rule 2's window, or rule 3's (which then applies at the
// trigger itself), holds only level-0 tables and cannot be placed.
import { NUM_LEVELS } from '../options'
import type { LsmShape, SortedRun, TieredTask } from './task-kinds'

export interface TieredOptions {
  level0CompactionTrigger: number
  /** Default 200: the newer runs may hold twice the oldest run's bytes. */
  maxSizeAmplificationPercent: number
  /** Default 1 (RocksDB's universal compaction default). */
  sizeRatioPercent: number
}

export function sortedRuns (shape: LsmShape): SortedRun[] {
  const runs: SortedRun[] = []
  for (const f of shape.levels[0]) runs.push({ level: 0, files: [f], bytes: f.size })
  for (let level = 1; level < NUM_LEVELS; level++) {
    const files = shape.levels[level]
    if (files.length > 0) runs.push({ level, files, bytes: files.reduce((s, f) => s + f.size, 0) })
  }
  return runs
}

/** Extends a window end so that it never leaves an older level-0 table behind. */
function closeOverL0 (runs: SortedRun[], j: number): number {
  while (j + 1 < runs.length && runs[j + 1].level === 0) j++
  return j
}

/**
 * Where a merge of runs[i..j] goes: the level of its oldest run, or, for a
 * window of level-0 tables only (every one of them), the deepest empty level
 * above the next older run; -1 if that run is in level 1 (no room).
 */
function placement (runs: SortedRun[], j: number): number {
  if (runs[j].level > 0) return runs[j].level
  const olderLevel = j + 1 < runs.length ? runs[j + 1].level : NUM_LEVELS
  return olderLevel - 1
}

function merge (runs: SortedRun[], i: number, j: number, reason: TieredTask['reason']): TieredTask | undefined {
  j = closeOverL0(runs, j)
  const out = placement(runs, j)
  if (out < 1 || j - i + 1 < 2) return undefined
  return { kind: 'tiered', runs: runs.slice(i, j + 1), outputLevel: out, reason }
}

/**
 * Room for a run of level-0 tables when level 1 holds a run: the run just above
 * the deepest empty level moves into it (a manifest edit, no bytes written), or,
 * with no level empty, the two adjacent deeper runs of the fewest bytes merge.
 */
function makeRoom (shape: LsmShape, runs: SortedRun[]): TieredTask {
  const deeper = runs.filter((r) => r.level > 0)
  for (let level = NUM_LEVELS - 1; level >= 2; level--) {
    if (shape.levels[level].length > 0) continue
    const above = deeper.filter((r) => r.level < level).pop()
    if (above !== undefined) return { kind: 'tiered', runs: [above], outputLevel: level, reason: 'move' }
  }
  let best = 0
  for (let k = 1; k + 1 < deeper.length; k++) {
    if (deeper[k].bytes + deeper[k + 1].bytes < deeper[best].bytes + deeper[best + 1].bytes) best = k
  }
  return { kind: 'tiered', runs: deeper.slice(best, best + 2), outputLevel: deeper[best + 1].level, reason: 'room' }
}

export function pickTieredCompaction (shape: LsmShape, opts: TieredOptions): TieredTask | undefined {
  const runs = sortedRuns(shape)
  if (runs.length < Math.max(2, opts.level0CompactionTrigger)) return undefined
  const last = runs[runs.length - 1]
  let newer = 0
  for (let k = 0; k < runs.length - 1; k++) newer += runs[k].bytes
  if (last.bytes > 0 && newer * 100 > last.bytes * opts.maxSizeAmplificationPercent) {
    const t = merge(runs, 0, runs.length - 1, 'space-amplification')
    if (t) return t
  }
  let blocked = false
  for (let i = 0; i < runs.length - 1; i++) {
    let total = runs[i].bytes
    let j = i
    while (j + 1 < runs.length && runs[j + 1].bytes * 100 <= total * (100 + opts.sizeRatioPercent)) {
      j++
      total += runs[j].bytes
    }
    if (j > i) {
      const t = merge(runs, i, j, 'size-ratio')
      if (t) return t
      blocked = true
    }
  }
  if (runs.length <= opts.level0CompactionTrigger && !blocked) return undefined
  const width = Math.max(2, runs.length - opts.level0CompactionTrigger + 1)
  const t = merge(runs, 0, width - 1, 'run-count')
  if (t) return t
  return makeRoom(shape, runs)
}
