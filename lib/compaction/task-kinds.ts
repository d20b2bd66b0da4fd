// The kinds of compaction task, as plain data: what a picker sees (the tree's
// shape), what it returns and the scheduler runs. Declared apart from the
// pickers and from the functions of task.ts that use them, and importing none
// of them, so that each names these types without importing another.
import type { FileMeta } from '../manifest/file-meta'
import type { InternalKey } from '../keys'

/** What a picker decides from: the tables of each level, and where each level's round-robin compaction resumes. */
export interface LsmShape {
  levels: FileMeta[][]
  compactPointers: Array<InternalKey | undefined>
}

/** Tables that together hold one sorted run of keys: one level-0 table, or a whole level. */
export interface SortedRun {
  level: number
  files: FileMeta[]
  bytes: number
}

/** The tiered picker's choice: adjacent sorted runs, possibly across several levels. */
export interface TieredTask {
  kind: 'tiered'
  /** Runs merged, newest first. */
  runs: SortedRun[]
  outputLevel: number
  reason: 'space-amplification' | 'size-ratio' | 'run-count' | 'move' | 'room'
}

/** Tables of one level merged with the tables of the output level they overlap. */
export interface TwoLevelMerge {
  level: number
  outputLevel: number
  /** Tables taken from `level`. */
  inputs: FileMeta[]
  /** Tables taken from `outputLevel` (empty when outputLevel === level: a rewrite in place). */
  overlaps: FileMeta[]
}

/** The leveled picker's choice (lib/compaction/leveled-picker.ts). */
export interface LeveledTask extends TwoLevelMerge {
  kind: 'leveled'
  /** One input and nothing under it: moved down by a manifest edit alone. */
  trivialMove: boolean
  score: number
}

/** A cleanup under range tombstones (lib/compaction/range-tombstone-picker.ts). */
export interface RangeTombstoneTask extends TwoLevelMerge {
  kind: 'range-tombstone'
}

/** One step of compactRange(). */
export interface ManualTask extends TwoLevelMerge {
  kind: 'manual'
}

export type CompactionTask = LeveledTask | TieredTask | RangeTombstoneTask | ManualTask
