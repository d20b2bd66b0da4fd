// The change feed: the committed batches, in commit order, read back from the
// write-ahead logs: the retired logs kept for it (lib/wal/log-retention.ts),
// then the live log, then each log a rotation starts, for as long as the
// consumer iterates.
//
//   since ... [ retained logs ][ unflushed logs ][ live log ] --> commits to come
//
// Nothing is buffered for a consumer: each batch is read from its log when the
// consumer asks for it, so a slow consumer costs a file descriptor and a file
// position, never memory; a consumer that has caught up waits for the next
// commit. Only batches visible to reads are delivered (sequence numbers <= the
// database's last committed one), never a record that is in the log but not
// applied yet.
//
// A batch is `{ seq, ops }`: `seq` is the sequence number of its LAST operation
// (the database's `sequence` once it is committed), so a consumer that saves
// the `seq` it applied resumes with changes({ since: seq }). Operation i has
// sequence number seq - ops.length + 1 + i. A range clear() is one op of type
// 'clear' ([key, end), no end: to the last key).
//
// Records are read with lib/wal's readRecordFrom; a record that does not pass
// its checks (or is too short for a batch) is the end of what is written so far.
import type { FileSystem, RandomAccessFile } from './fs/fs'
import { getFixed64 } from './util/coding'
import type { LogRecord } from './wal/log-format'
import { readRecordFrom } from './wal/log-reader'
import { BATCH_HEADER_SIZE, batchCount, decodeBatch, OP_RANGE_DELETE } from './wal/batch'
import { join, logName } from './filenames'
import { levelError } from './errors'
import { KIND_VALUE } from './keys'

export interface ChangeOp {
  type: 'put' | 'del' | 'clear'
  key: Buffer
  /** put only. */
  value?: Buffer
  /** clear only: the first key not deleted; undefined: no end. */
  end?: Buffer
}

export interface ChangeBatch {
  /** The sequence number of the batch's last operation. */
  seq: number
  ops: ChangeOp[]
}

/** What the feed needs of the engine. */
export interface FeedSource {
  fs: FileSystem
  dir: string
  /** The last committed (visible) sequence number. */
  sequence (): number
  /** The numbers of the logs in the directory (retained, unflushed and live), ascending. */
  logNumbers (): number[]
  /** Resolves after the next commit, or at close. */
  nextCommit (): Promise<void>
  /** The database is closed (or closing): the feed ends. */
  closed (): boolean
}

/** The valid batch record at `offset` of an open log, or undefined (end of what is written, or damage). */
function readRecord (file: RandomAccessFile, offset: number): LogRecord | undefined {
  const rec = readRecordFrom(file, offset)
  return rec !== undefined && rec.payload.length >= BATCH_HEADER_SIZE ? rec : undefined
}

function truncated (since: number, oldest: number | undefined): Error {
  const have = oldest === undefined ? 'no longer hold the changes after it' : `hold the changes from sequence number ${oldest} on`
  return levelError('LEVEL_CHANGES_NOT_RETAINED',
    `The change feed cannot start after sequence number ${since}: the logs ${have}. ` +
    'Start from a checkpoint (db.checkpoint) and follow the feed from its sequence number; the retainLogBytes / retainLogAgeMs options keep more history.')
}

function openLog (fs: FileSystem, dir: string, number: number): RandomAccessFile | undefined {
  try {
    return fs.openRead(join(dir, logName(number)))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/** The first sequence number of a log's first record, or undefined (no record, or no log). */
function firstSequence (fs: FileSystem, dir: string, number: number): number | undefined {
  const file = openLog(fs, dir, number)
  if (file === undefined) return undefined
  try {
    const rec = readRecord(file, 0)
    return rec === undefined ? undefined : getFixed64(rec.payload, 0)
  } finally {
    file.close()
  }
}

function toChangeOps (payload: Buffer, name: string): ChangeBatch {
  const batch = decodeBatch(payload, name)
  const ops: ChangeOp[] = batch.ops.map((op) => {
    if (op.kind === OP_RANGE_DELETE) return { type: 'clear', key: op.key, end: op.end }
    if (op.kind === KIND_VALUE) return { type: 'put', key: op.key, value: op.value }
    return { type: 'del', key: op.key }
  })
  return { seq: batch.firstSeq + ops.length - 1, ops }
}

/**
 * The log to start reading at for batches after `since`: the newest log whose
 * first record is at or before since + 1. Throws LEVEL_CHANGES_NOT_RETAINED if
 * the logs begin after it.
 */
function startingLog (source: FeedSource, since: number): number | undefined {
  const { fs, dir } = source
  let start: number | undefined
  let oldest: number | undefined
  for (const number of source.logNumbers()) {
    const first = firstSequence(fs, dir, number)
    if (first === undefined) continue
    if (oldest === undefined) oldest = first
    if (first <= since + 1) start = number
    else break
  }
  if (start === undefined && oldest !== undefined) throw truncated(since, oldest)
  // No record in any log: everything up to the current sequence number is in tables only.
  if (start === undefined && since < source.sequence()) throw truncated(since, undefined)
  return start
}

/**
 * The committed batches after sequence number `since`, in commit order, then
 * new ones as they commit, until the database closes or the consumer stops.
 */
export async function* changes (source: FeedSource, since: number): AsyncGenerator<ChangeBatch, void, undefined> {
  const { fs, dir } = source
  if (!Number.isSafeInteger(since) || since < 0) throw levelError('LEVEL_INVALID_OPTION', `changes(): since must be a sequence number (an integer >= 0), got ${String(since)}`)
  if (since > source.sequence()) {
    throw levelError('LEVEL_INVALID_OPTION', `changes(): since (${since}) is ahead of the database's sequence number (${source.sequence()}); a consumer ahead of its source must start again from a checkpoint`)
  }
  let number = startingLog(source, since)
  let file: RandomAccessFile | undefined
  let offset = 0
  /** Where to go on in log `number` when it is opened again (see below). */
  let resumeAt: number | undefined
  /** Whether `file` was opened since the last record read. */
  let reopened = false
  let next = since + 1
  try {
    for (;;) {
      if (source.closed()) return
      if (next > source.sequence()) {
        await source.nextCommit()
        continue
      }
      if (file === undefined) {
        // The log with the next batch: the first one after `number` (or the oldest, when nothing was found yet).
        const after = source.logNumbers().find((n) => number === undefined || n >= number)
        if (after === undefined) throw truncated(since, undefined)
        offset = after === number && resumeAt !== undefined ? resumeAt : 0
        resumeAt = undefined
        number = after
        file = openLog(fs, dir, number)
        reopened = true
        if (file === undefined) throw truncated(next - 1, undefined)
      }
      const openedNow = reopened
      reopened = false
      const rec = readRecord(file, offset)
      if (rec === undefined) {
        // The end of this log's records: the next batch is in a newer log.
        const newer = source.logNumbers().find((n) => n > number!)
        if (newer === undefined) {
          // A reader may see the file's size as it was when opened (OPFS's
          // readers do): read on from here with a new one, at once if the
          // batch is committed already (a reader opened after it sees it),
          // else after the next commit.
          const stale = !openedNow
          file.close()
          file = undefined
          resumeAt = offset
          if (!stale || next > source.sequence()) await source.nextCommit()
          continue
        }
        file.close()
        file = undefined
        number = newer
        continue
      }
      const first = getFixed64(rec.payload, 0)
      const last = first + batchCount(rec.payload) - 1
      if (last < next) {
        offset = rec.next
        continue
      }
      if (first > next) throw truncated(next - 1, first)
      if (last > source.sequence()) {
        // Written to the log, not applied yet (batches become visible whole, so only after a gap in `next`).
        await source.nextCommit()
        continue
      }
      offset = rec.next
      next = last + 1
      yield toChangeOps(rec.payload, logName(number!))
    }
  } finally {
    file?.close()
  }
}
