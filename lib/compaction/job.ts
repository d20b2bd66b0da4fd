// A compaction job as plain data, so it can run on the main thread or in a
// worker thread (hosts/node/job-thread.ts) alike: which tables to merge, where
// the output goes, and the drop rules' inputs.
import type { FileSystem } from '../fs/fs'
import type { FileMeta } from '../manifest/file-meta'
import type { InternalIterator } from '../iterators/internal-iterator'
import { MergingIterator } from '../iterators/merging-iterator'
import { LevelIterator } from '../iterators/level-iterator'
import { KeyRangeIterator } from '../iterators/key-range-iterator'
import type { TableCache } from '../sstable/table-cache'
import { writeTables, type TableWriterResult } from './table-writer'
import { compareBytes } from '../util/coding'
import { NUM_LEVELS } from '../options'
import { RangeTombstoneIndex, type RangeTombstone } from '../range-tombstones'
import { MemTable } from '../memtable/memtable'
import type { SkipListState } from '../memtable/skiplist'
import { assert } from '../invariants'
import type { TableOptions } from '../sstable/table-builder'
import type { TableContent } from '../backup/table-content'

export interface CompactionJob {
  dir: string
  /** Input runs, newest first: each L0 table alone, then a level's tables as one run. */
  runs: FileMeta[][]
  /** Tables of the levels below the output, per level (for the tombstone rule). */
  deeper: FileMeta[][]
  table: TableOptions
  targetFileSize: number
  smallestSnapshot: number
  /** The version's range tombstones: versions they hide from every snapshot are dropped. */
  rangeTombstones: RangeTombstone[]
  /** min(newest of rangeTombstones, smallestSnapshot): every tombstone up to it is applied in full. */
  floorBase: number
  /** File numbers reserved for the outputs, used in order. */
  fileNumbers: number[]
  /** A subcompaction: only the user keys in [start, end) (either open), see CompactionScheduler. */
  range?: { start?: Uint8Array, end?: Uint8Array }
}

/**
 * A memtable flush as plain data: the frozen memtable's entries (a copy of its
 * arena and index, lib/memtable/skiplist.ts) go to one level-0 table.
 */
export interface FlushJob {
  dir: string
  entries: SkipListState
  table: TableOptions
  smallestSnapshot: number
  /** The memtable's own range tombstones (applied to its entries). */
  rangeTombstones: RangeTombstone[]
  floorBase: number
  /** The output table's number. */
  fileNumber: number
}

/** Rebuilds Buffers in FileMeta keys after a structured clone (which yields Uint8Arrays). */
export function reviveMeta (f: FileMeta): FileMeta {
  const b = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength)
  return {
    ...f,
    smallest: { ...f.smallest, userKey: b(f.smallest.userKey) },
    largest: { ...f.largest, userKey: b(f.largest.userKey) }
  }
}

const b = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength)

export function reviveJob (job: CompactionJob): CompactionJob {
  return {
    ...job,
    runs: job.runs.map((r) => r.map(reviveMeta)),
    deeper: job.deeper.map((r) => r.map(reviveMeta)),
    rangeTombstones: job.rangeTombstones.map((t) => ({ seq: t.seq, start: b(t.start), end: t.end === undefined ? undefined : b(t.end) })),
    range: job.range === undefined ? undefined : { start: job.range.start && b(job.range.start), end: job.range.end && b(job.range.end) }
  }
}

export function reviveFlushJob (job: FlushJob): FlushJob {
  return {
    ...job,
    rangeTombstones: job.rangeTombstones.map((t) => ({ seq: t.seq, start: b(t.start), end: t.end === undefined ? undefined : b(t.end) }))
  }
}

/**
 * Runs a flush job: the same table writer, with the same parameters, as a
 * flush on the event loop (CompactionScheduler.writeLevel0). Not abortable: a flush is
 * finished even when the database is closing.
 */
export async function runFlushJob (job: FlushJob, fs: FileSystem): Promise<TableWriterResult> {
  let used = false
  return await writeTables(MemTable.iteratorOf(job.entries), {
    fs,
    dir: job.dir,
    table: job.table,
    targetFileSize: Infinity,
    smallestSnapshot: job.smallestSnapshot,
    isBaseLevelForKey: () => false,
    rangeTombstones: job.rangeTombstones.length > 0 ? RangeTombstoneIndex.build(job.rangeTombstones) : undefined,
    floorBase: job.floorBase,
    newFileNumber: () => {
      assert(!used, 'a flush wrote more than one table')
      used = true
      return job.fileNumber
    },
    shouldAbort: () => false
  })
}

/**
 * True if no table in a deeper level can hold the key. Keys arrive in ascending
 * order, so each level keeps a cursor.
 */
export function baseLevelChecker (deeper: FileMeta[][]): (userKey: Uint8Array) => boolean {
  const cursors = new Array(NUM_LEVELS).fill(0)
  return (userKey) => {
    for (let level = 0; level < deeper.length; level++) {
      const files = deeper[level]
      let i = cursors[level]
      while (i < files.length && compareBytes(files[i].largest.userKey, userKey) < 0) i++
      cursors[level] = i
      if (i < files.length && compareBytes(files[i].smallest.userKey, userKey) <= 0) return false
    }
    return true
  }
}

/** Runs `job`, reading tables through `tables`; `waitTurn` as TableWriterParams's. */
export async function runCompactionJob (job: CompactionJob, fs: FileSystem, tables: TableCache, shouldAbort: () => boolean, waitTurn?: () => Promise<void> | undefined): Promise<TableWriterResult> {
  // Every run (a lone L0 table too) opens its tables lazily, inside writeTables,
  // which closes the merged input on any error: a table that fails to open must
  // not leak the ones opened before it.
  const children: InternalIterator[] = job.runs.map((run) => new LevelIterator(run, (meta) => tables.get(meta.number).iterator()))
  const merged = new MergingIterator(children)
  const input = job.range === undefined ? merged : new KeyRangeIterator(merged, job.range.start, job.range.end)
  let next = 0
  return await writeTables(input, {
    fs,
    dir: job.dir,
    table: job.table,
    targetFileSize: job.targetFileSize,
    smallestSnapshot: job.smallestSnapshot,
    isBaseLevelForKey: baseLevelChecker(job.deeper),
    rangeTombstones: RangeTombstoneIndex.build(job.rangeTombstones),
    floorBase: job.floorBase,
    newFileNumber: () => {
      assert(next < job.fileNumbers.length, 'compaction ran out of reserved file numbers')
      return job.fileNumbers[next++]
    },
    shouldAbort,
    waitTurn
  })
}

/**
 * Runs flush and compaction jobs off the event loop: a host's worker thread
 * (the Node host's JobThread), or in tests the same job host served on this
 * thread. `signal.cancel` is set to a function that abandons the job.
 */
export interface JobRunner {
  run (job: CompactionJob, signal?: { cancel?: () => void }): Promise<TableWriterResult>
  flush (job: FlushJob): Promise<TableWriterResult>
  /**
   * A flush is coming soon: a runner that starts a thread for its jobs starts
   * it now, so that the flush does not wait for the thread's start. Optional.
   */
  prepare? (): void
  /** Reads a table's checksums, and its bytes if keepBytes (lib/backup/table-content.ts), off the event loop. Optional. */
  readTable? (path: string, size: number, keepBytes: boolean): Promise<TableContent>
}

/**
 * The runners of compactions and of memtable flushes: one runner may serve
 * both (the Node host's one job thread, where a flush pauses the compaction
 * running there), or each its own.
 */
export interface JobRunners {
  compaction: JobRunner
  flush: JobRunner
  /**
   * Runs the second half of a compaction split in two (the `subcompactions`
   * option) while `compaction` runs the first. Default: `flush`, if it is
   * another runner than `compaction`; with neither, compactions are not split.
   */
  second?: JobRunner
}
