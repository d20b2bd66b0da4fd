// Checkpoints: an openable copy of the database, in another directory, as of one
// sequence number S. It is an ordinary database directory:
//
//   <table>.sst ...   the tables of the version current at S: hard links to the
//                     database's own files (copies where a link is not possible,
//                     e.g. across file systems); tables are immutable, so a link
//                     costs the same whatever the table's size
//   <L>.log           the writes up to S not yet in tables: the records of the
//                     database's unflushed logs (numbers >= the manifest's
//                     logNumber) whose sequence numbers are <= S, copied as they
//                     are (lib/wal/log-format.ts framing, lib/wal/batch.ts payloads)
//   MANIFEST-<L+1>    one snapshot edit (lib/manifest/version-edit.ts): exactly
//                     those tables and range tombstones, logNumber L,
//                     lastSequence S, nextFileNumber L+2
//   CURRENT           written last: a directory without it is an unfinished
//                     checkpoint, not a database
//
// The unflushed writes are copied from the logs rather than flushed first: a
// flush would make the checkpoint wait for a table write (and add a level-0
// table to the live database), while the logs' unflushed part is bounded by
// the memtables' size. Opening the checkpoint replays that log, as after a
// restart.
//
// Consistency: the version, S and the log records are taken in one turn of the
// event loop (no write is applied and no version installed meanwhile); the
// version is then pinned (Version.ref) while its tables are linked over later
// turns, so a compaction that replaces them cannot delete them first.
import { platform } from './platform'
import { linkOrCopy, type FileSystem } from './fs/fs'
import type { Version } from './manifest/version'
import type { FileMeta } from './manifest/file-meta'
import { encodeVersionEdit, MANIFEST_FORMAT_VERSION } from './manifest/version-edit'
import { LogReader } from './wal/log-reader'
import { LogWriter } from './wal/log-writer'
import { batchCount } from './wal/batch'
import { getFixed64 } from './util/coding'
import { CURRENT, join, logName, manifestName, parentDir, parseFileName, tableName, tempName } from './filenames'
import { levelError } from './errors'
import { assert } from './invariants'

/** What a checkpoint is made from: taken in one turn (see above). */
export interface CheckpointSource {
  fs: FileSystem
  /** The database directory. */
  dir: string
  /** The version current at `sequence`, referenced by the caller (released by writeCheckpoint). */
  version: Version
  /** The manifest's logNumber for `version`: older logs hold nothing the tables lack. */
  logNumber: number
  /** S: the last sequence number the checkpoint holds. */
  sequence: number
  /** A file number above every table number of the database. */
  nextFileNumber: number
}

export interface CheckpointResult {
  /** The last sequence number in the checkpoint. */
  sequence: number
  /** Tables hard-linked and tables copied. */
  linked: number
  copied: number
  /** Records (batches) of unflushed writes written to the checkpoint's log. */
  records: number
}

/**
 * The log records of `dir`'s logs numbered >= `logNumber` whose sequence
 * numbers are all <= `sequence`, in log order (copies). Synchronous, so that the
 * caller can take them in the same turn as the version and the sequence number.
 */
export function unflushedRecords (fs: FileSystem, dir: string, logNumber: number, sequence: number): Buffer[] {
  const logs = fs.list(dir)
    .map((n) => parseFileName(n))
    .filter((p) => p !== undefined && p.type === 'log' && p.number >= logNumber)
    .map((p) => p!.number)
    .sort((a, b) => a - b)
  const out: Buffer[] = []
  for (const number of logs) {
    const reader = new LogReader(fs, join(dir, logName(number)), logName(number))
    try {
      for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
        const first = getFixed64(rec, 0)
        if (first > sequence) return out
        // Batches become visible whole: none straddles a visible sequence number.
        assert(first + batchCount(rec) - 1 <= sequence, 'a batch straddles the checkpoint sequence number')
        out.push(Buffer.from(rec))
      }
    } finally {
      reader.close()
    }
  }
  return out
}

/**
 * Writes the checkpoint into `target`, which must not exist or be empty, and
 * releases `source.version`. Tables are linked one per turn of the event loop.
 * On failure, removes what it wrote and rethrows.
 */
export async function writeCheckpoint (source: CheckpointSource, records: Buffer[], target: string): Promise<CheckpointResult> {
  const { fs, version } = source
  const made: string[] = []
  try {
    prepareTarget(fs, target)
    const result: CheckpointResult = { sequence: source.sequence, linked: 0, copied: 0, records: records.length }
    const files: FileMeta[] = []
    for (const level of version.levels) files.push(...level)
    for (const f of files) {
      const to = join(target, tableName(f.number))
      made.push(to)
      if (linkOrCopy(fs, join(source.dir, tableName(f.number)), to) === 'linked') result.linked++
      else result.copied++
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
    const log = source.nextFileNumber
    const manifest = log + 1
    writeRecords(fs, join(target, logName(log)), records, made)
    const newFiles: Array<{ level: number, meta: FileMeta }> = []
    version.levels.forEach((level, n) => { for (const meta of level) newFiles.push({ level: n, meta }) })
    const edit = encodeVersionEdit({
      formatVersion: MANIFEST_FORMAT_VERSION,
      logNumber: log,
      nextFileNumber: manifest + 1,
      lastSequence: source.sequence,
      compactPointers: [],
      newFiles,
      rangeTombstones: version.rangeTombstones.slice()
    })
    writeRecords(fs, join(target, manifestName(manifest)), [edit], made)
    const tmp = join(target, tempName(manifest + 1))
    made.push(tmp)
    writeRecords(fs, tmp, [], made, Buffer.from(manifestName(manifest) + '\n', 'latin1'))
    fs.syncDir(target)
    fs.rename(tmp, join(target, CURRENT))
    made.push(join(target, CURRENT))
    fs.syncDir(target)
    return result
  } catch (err) {
    for (const p of made.reverse()) {
      try { fs.remove(p) } catch {}
    }
    throw err
  } finally {
    version.unref()
  }
}

function prepareTarget (fs: FileSystem, target: string): void {
  if (fs.exists(target) && fs.list(target).length > 0) {
    throw levelError('LEVEL_INVALID_OPTION', `Checkpoint directory is not empty: ${target}`)
  }
  fs.mkdirp(target)
  fs.syncDir(parentDir(platform().resolvePath(target)))
}

/** Writes `records` as log records (or `raw` bytes as they are) to a new file at `file`, synced. */
function writeRecords (fs: FileSystem, file: string, records: Buffer[], made: string[], raw?: Buffer): void {
  const out = fs.openWrite(file)
  made.push(file)
  try {
    if (raw !== undefined) {
      out.append(raw)
      out.sync()
    } else {
      const writer = new LogWriter(out)
      if (records.length > 0) writer.addRecords(records)
      writer.sync()
    }
  } finally {
    out.close()
  }
}
