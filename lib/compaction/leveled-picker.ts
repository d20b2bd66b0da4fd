// The leveled compaction picker: a pure function of the LSM's shape (no I/O, no
// clock), so it can be tested from fixtures.
//
// Scores: level 0 scores (table count / level0CompactionTrigger); a level n >= 1
// scores (bytes / maxBytesForLevel(n)). The highest score >= 1 is compacted:
//   - level 0: all its tables (they may overlap one another; taking them all keeps
//     every remaining L0 table newer than everything below it) plus the level-1
//     tables they overlap, merged into level 1;
//   - level n: one table, chosen round-robin after the level's compact pointer,
//     plus the level n+1 tables it overlaps, merged into level n+1.
// Input tables that overlap nothing under them nor one another (a single table,
// or level-0 tables of keys written in order) are moved down by a manifest
// edit alone (a trivial move), unless they would overlap too much of the level
// below the output (which would make that next compaction expensive).
import { keyRange, overlapsRange, type FileMeta } from '../manifest/file-meta'
import type { LeveledTask, LsmShape } from './task-kinds'
import { compareInternalKeys } from '../keys'
import { compareBytes } from '../util/coding'
import { maxBytesForLevel, NUM_LEVELS, type EngineOptions } from '../options'

export type PickerOptions = Pick<EngineOptions, 'level0CompactionTrigger' | 'maxBytesForLevelBase' | 'levelMultiplier' | 'targetFileSize'>

export function levelScores (shape: LsmShape, opts: PickerOptions): number[] {
  const scores: number[] = []
  for (let level = 0; level < NUM_LEVELS - 1; level++) {
    const files = shape.levels[level]
    if (level === 0) {
      scores.push(files.length / opts.level0CompactionTrigger)
    } else {
      let bytes = 0
      for (const f of files) bytes += f.size
      scores.push(bytes / maxBytesForLevel(opts as EngineOptions, level))
    }
  }
  return scores
}

function overlapping (files: FileMeta[], smallest: Uint8Array, largest: Uint8Array): FileMeta[] {
  return files.filter((f) => overlapsRange(f, smallest, largest))
}

export function pickLeveledCompaction (shape: LsmShape, opts: PickerOptions): LeveledTask | undefined {
  const scores = levelScores(shape, opts)
  let level = -1
  let best = 1
  for (let l = 0; l < scores.length; l++) {
    if (scores[l] >= best) { best = scores[l]; level = l }
  }
  if (level < 0) return undefined
  return taskFor(shape, opts, level, best)
}

/** True if no two of `files` share a user key (each ends before the next, in key order, begins). */
function disjoint (files: readonly FileMeta[]): boolean {
  const sorted = files.slice().sort((a, b) => compareBytes(a.smallest.userKey, b.smallest.userKey))
  for (let i = 1; i < sorted.length; i++) {
    if (compareBytes(sorted[i - 1].largest.userKey, sorted[i].smallest.userKey) >= 0) return false
  }
  return true
}

/** The task that compacts `level`. */
function taskFor (shape: LsmShape, opts: PickerOptions, level: number, score: number): LeveledTask | undefined {
  const files = shape.levels[level]
  if (files.length === 0) return undefined
  let inputs: FileMeta[]
  if (level === 0) {
    inputs = files.slice()
  } else {
    const pointer = shape.compactPointers[level]
    let pick = files[0]
    if (pointer) {
      const after = files.find((f) => compareInternalKeys(f.largest, pointer) > 0)
      if (after) pick = after
    }
    inputs = [pick]
  }
  const outputLevel = level + 1
  const range = keyRange(inputs)
  const overlaps = overlapping(shape.levels[outputLevel], range.smallest, range.largest)
  let trivialMove = false
  if (overlaps.length === 0 && disjoint(inputs)) {
    const grand = outputLevel + 1 < NUM_LEVELS ? overlapping(shape.levels[outputLevel + 1], range.smallest, range.largest) : []
    let grandBytes = 0
    for (const f of grand) grandBytes += f.size
    trivialMove = grandBytes <= 10 * opts.targetFileSize
  }
  return { kind: 'leveled', level, outputLevel, inputs, overlaps, trivialMove, score }
}
