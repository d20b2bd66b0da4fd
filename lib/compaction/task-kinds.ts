// The kinds of compaction task, as plain data: what a picker returns and the
// scheduler runs. Declared apart from the pickers and from the functions of
// task.ts that use them, so that neither imports the other to name them.
import type { FileMeta } from '../manifest/file-meta'
import type { TieredTask } from './tiered-picker'

export type { TieredTask } from './tiered-picker'

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
