// Subcompactions (option subcompactions): a compaction of at least SUBCOMPACTION_FACTOR x
// targetFileSize of input is split at a user key into two halves of about
// equal bytes, run at once on the compaction runner and the second one
// (JobRunners.second: the Node host's second job thread), and installed as
// one edit. Two cores then work on a large compaction, which writes stalled
// behind level 0 wait for; the outputs of the halves do not overlap.
import type { FileSystem } from '../fs/fs'
import type { FileMeta } from '../manifest/file-meta'
import type { TableCache } from '../sstable/table-cache'
import type { TableWriterResult } from './table-writer'
import type { CompactionJob, JobRunner } from './job'
import { join, tableName } from '../filenames'
import { compareBytes } from '../util/coding'

/** Input of at least this many times targetFileSize splits a compaction in two (see the top of this file). */
const SUBCOMPACTION_FACTOR = 4

/** Index keys sampled per input table when choosing where to split a compaction. */
const SPLIT_SAMPLES_PER_TABLE = 64

/**
 * A user key that splits the input of a compaction into two shares of about
 * equal bytes: the median of keys sampled evenly from every input table's
 * index (one key per data block, and blocks are about equal in size), with
 * overlapping tables (level 0) and one level's run alike. Keys before it go to
 * the first share, it and the keys after it to the second. Undefined when the
 * first share would be empty, or an index cannot be read (the compaction then
 * runs whole, and reports the damage).
 */
export function splitKey (runs: readonly FileMeta[][], tables: TableCache): Uint8Array | undefined {
  // Each sample stands for the `blocks` blocks up to the next one.
  const samples: Array<{ key: Uint8Array, blocks: number }> = []
  let smallest: Uint8Array | undefined
  let totalBlocks = 0
  for (const f of runs.flat()) {
    if (smallest === undefined || compareBytes(f.smallest.userKey, smallest) < 0) smallest = f.smallest.userKey
    let index
    try {
      index = tables.get(f.number).indexBlock()
    } catch {
      return undefined
    }
    const step = Math.max(1, Math.ceil(index.length / SPLIT_SAMPLES_PER_TABLE))
    for (let i = 0; i < index.length; i += step) samples.push({ key: index.userKey(i), blocks: Math.min(step, index.length - i) })
    totalBlocks += index.length
  }
  if (samples.length < 2 || smallest === undefined) return undefined
  samples.sort((a, b) => compareBytes(a.key, b.key))
  let blocks = 0
  for (const { key, blocks: n } of samples) {
    blocks += n
    if (2 * blocks >= totalBlocks) return compareBytes(key, smallest) > 0 ? Buffer.from(key) : undefined
  }
  return undefined
}

/**
 * `job` as two halves split at splitKey's key, each with file numbers of its
 * own (from `newFileNumber`), or as it is: when its input is below
 * SUBCOMPACTION_FACTOR x targetFileSize, or no key splits it.
 */
export function splitCompaction (job: CompactionJob, targetFileSize: number, tables: TableCache, newFileNumber: () => number): CompactionJob[] {
  const inputBytes = job.runs.reduce((sum, run) => run.reduce((s, f) => s + f.size, sum), 0)
  if (inputBytes < SUBCOMPACTION_FACTOR * targetFileSize) return [job]
  const key = splitKey(job.runs, tables)
  if (key === undefined) return [job]
  const second = { ...job, fileNumbers: job.fileNumbers.map(() => newFileNumber()), range: { start: key } }
  return [{ ...job, range: { end: key } }, second]
}

/**
 * Runs job i on runners[i], all at once (a signal each, whose cancel stops
 * it); their results as one. If one fails, the others' outputs are removed and
 * the failure is thrown.
 */
export async function runAtOnce (jobs: CompactionJob[], runners: JobRunner[], signals: Array<{ cancel?: () => void }>, fs: FileSystem, dir: string): Promise<TableWriterResult> {
  const settled = await Promise.allSettled(jobs.map((job, i) => runners[i].run(job, signals[i])))
  const failed = settled.find((r) => r.status === 'rejected')
  if (failed !== undefined) {
    for (const r of settled) {
      if (r.status === 'fulfilled') for (const f of r.value.outputs) fs.remove(join(dir, tableName(f.number)))
    }
    throw failed.reason
  }
  const results = settled.map((r) => (r as PromiseFulfilledResult<TableWriterResult>).value)
  return {
    outputs: results.flatMap((r) => r.outputs),
    entriesIn: results.reduce((sum, r) => sum + r.entriesIn, 0),
    entriesDropped: results.reduce((sum, r) => sum + r.entriesDropped, 0),
    bytesWritten: results.reduce((sum, r) => sum + r.bytesWritten, 0)
  }
}
