// Compaction tasks and what they change: pure functions of the LSM's shape, no
// I/O and no clock, so that they can be tested from fixtures
// (test/compaction.test.ts). The scheduler (lib/compaction/scheduler.ts)
// runs them.
//
// A task merges input runs (each level-0 table is a run of its own, a deeper
// level one run), newest first, into new tables at `outputLevel`, and the
// version edit it makes deletes the inputs and adds the outputs in one step.
import { overlapsRange, keyRange, type FileMeta } from '../manifest/file-meta'
import { compareBytes } from '../util/coding'
import type { VersionEdit } from '../manifest/version-edit'
import type { RangeTombstone } from '../range-tombstones'
import type { EngineOptions } from '../options'
import { pickLeveledCompaction } from './leveled-picker'
import { pickTieredCompaction } from './tiered-picker'
import { pickRangeTombstoneCompaction } from './range-tombstone-picker'
import type { CompactionTask, LsmShape, ManualTask } from './task-kinds'

export type { TwoLevelMerge, LeveledTask, TieredTask, RangeTombstoneTask, ManualTask, CompactionTask } from './task-kinds'

export type TaskOptions = Pick<EngineOptions, 'compaction' | 'level0CompactionTrigger' | 'maxBytesForLevelBase' | 'levelMultiplier'
| 'targetFileSize' | 'maxSizeAmplificationPercent' | 'sizeRatioPercent'> & { compression?: boolean, level0Compressed?: boolean }

/**
 * The next compaction the configured strategy wants, if any; with nothing else
 * to do, a cleanup that reclaims the space under range tombstones that every
 * snapshot sees (`smallestSnapshot`).
 */
export function pickCompaction (shape: LsmShape, options: TaskOptions, rangeTombstones: readonly RangeTombstone[], smallestSnapshot: number): CompactionTask | undefined {
  const task = options.compaction === 'leveled' ? pickLeveledCompaction(shape, options) : pickTieredCompaction(shape, options)
  if (task !== undefined || rangeTombstones.length === 0) return task
  return pickRangeTombstoneCompaction(shape.levels, rangeTombstones, smallestSnapshot)
}

/**
 * The step of compactRange() that compacts `level`'s tables overlapping
 * [start, end] (undefined: open), or undefined if none does. Each level goes
 * into the next, down to `bottom` (the deepest level holding data), which is
 * compacted in place. Level 0 tables may overlap one another: all of them are
 * taken, so that no older level-0 table is left above newer data.
 */
export function manualTask (levels: readonly FileMeta[][], level: number, bottom: number, start: Uint8Array | undefined, end: Uint8Array | undefined): ManualTask | undefined {
  const overlapping = levels[level].filter((f) => overlapsRange(f, start, end))
  if (overlapping.length === 0) return undefined
  const inputs = level === 0 ? levels[0].slice() : overlapping
  const outputLevel = level === bottom && level > 0 ? level : level + 1
  let overlaps: FileMeta[] = []
  if (outputLevel !== level) {
    const range = keyRange(inputs)
    overlaps = levels[outputLevel].filter((f) => overlapsRange(f, range.smallest, range.largest))
  }
  return { kind: 'manual', level, outputLevel, inputs, overlaps }
}

/** The task's input runs by level, newest first. */
export function inputLevels (task: CompactionTask): Array<{ level: number, files: FileMeta[] }> {
  if (task.kind === 'tiered') return task.runs
  const out = [{ level: task.level, files: task.inputs }]
  if (task.overlaps.length > 0) out.push({ level: task.outputLevel, files: task.overlaps })
  return out
}

/** One line for a trace: kind (and reason), input runs as level:bytes newest first, the output level. */
export function describeTask (task: CompactionTask): string {
  const runs = inputLevels(task).flatMap((r) => r.level === 0 ? r.files.map((f) => ({ level: 0, files: [f] })) : [r])
  const inputs = runs.map((r) => `L${r.level}:${r.files.reduce((s, f) => s + f.size, 0)}`).join(' ')
  return `${task.kind}${task.kind === 'tiered' ? ' ' + task.reason : ''} ${inputs} -> L${task.outputLevel}`
}

/** The sorted runs a merge reads, newest first: each level-0 table alone, each deeper level whole. */
export function mergeRuns (task: CompactionTask): FileMeta[][] {
  return inputLevels(task).flatMap((r) => r.level === 0 ? r.files.map((f) => [f]) : [r.files])
}

/**
 * True if the task only moves its input tables to the output level (a manifest
 * edit, no bytes written): a leveled trivial move, or a tiered run moved down.
 */
export function isTrivialMove (task: CompactionTask): boolean {
  return (task.kind === 'leveled' && task.trivialMove) || (task.kind === 'tiered' && task.reason === 'move')
}

/** The tables a trivial move carries to its output level. */
export function movedTables (task: CompactionTask): FileMeta[] {
  return inputLevels(task).flatMap((r) => r.files)
}

/**
 * The version edit that installs a finished task: its inputs deleted, `outputs`
 * added at the output level (for a trivial move, the input tables themselves), and
 * for leveled and manual tasks the level's round-robin compact pointer moved
 * past the inputs (the leveled picker's next choice in that level).
 */
export function compactionEdit (task: CompactionTask, outputs: readonly FileMeta[]): VersionEdit {
  const deletedFiles = inputLevels(task).flatMap((r) => r.files.map((f) => ({ level: r.level, number: f.number })))
  const newFiles = outputs.map((meta) => ({ level: task.outputLevel, meta }))
  const compactPointers: NonNullable<VersionEdit['compactPointers']> = []
  if (task.kind === 'leveled' || task.kind === 'manual') {
    let largest = task.inputs[0].largest
    for (const f of task.inputs) if (compareBytes(f.largest.userKey, largest.userKey) > 0) largest = f.largest
    compactPointers.push({ level: task.level, key: largest })
  }
  return { deletedFiles, newFiles, compactPointers }
}
