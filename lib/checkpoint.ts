// Checkpoints: an openable copy of the database, in another directory, as of one
// sequence number S. It is an ordinary database directory:
//
//   <table>.sst ...   the tables of the version current at S: hard links to the
//                     database's own files (copies where a link is not possible,
//                     e.g. across file systems); tables are immutable, so a link
//                     costs the same whatever the table's size
//   <n>.log ...       the writes up to S not yet in tables: of each of the
//                     database's unflushed logs (numbers >= the manifest's
//                     logNumber) that holds some, the byte prefix that ends with
//                     the last record <= S, under the same number
//                     (lib/wal/log-format.ts framing: a prefix cut at a record
//                     boundary is a valid log); no record is decoded. The log
//                     that holds S's batch is copied; the older ones, which no
//                     record will be appended to, are hard-linked (copied
//                     where a link is not possible): whole, with at most the
//                     preallocated zeros a retired log has until it is trimmed,
//                     which recovery takes for unused space.
//                     If there is none, one empty log, numbered F (below)
//   MANIFEST-<F+1>    one snapshot edit (lib/manifest/version-edit.ts): exactly
//                     those tables and range tombstones, logNumber the oldest
//                     log above, lastSequence S, nextFileNumber F+2, where F is
//                     the database's next file number (above every log copied)
//   CURRENT           written last: a directory without it is an unfinished
//                     checkpoint, not a database
//
// The unflushed writes are copied from the logs rather than flushed first: a
// flush would make the checkpoint wait for a table write (and add a level-0
// table to the live database), while the logs' unflushed part is bounded by
// the memtables' size. Opening the checkpoint replays those logs, as after a
// restart.
//
// Consistency: the version, S and the logs' lengths are taken in one turn of
// the event loop (no write is applied and no version installed meanwhile).
// Records are appended in sequence order, so the records <= S are exactly a
// prefix of the logs: every record of the logs before the one that holds S's
// batch, and that log up to the end of S's group of writes (the engine keeps
// where the last applied group ends; records after it, written but not yet
// applied while a sync write waits for its fsync, are not copied). The older
// logs are taken whole: where a log's records end was noted when the database
// rotated away from it (SealedLog.length; a log replayed at open ends at its
// file's end). The logs are opened in that turn too: a flush that removes one
// later leaves its bytes readable (it is copied from the open file then,
// instead of linked). The version is pinned (Version.ref) while its tables
// are linked, so a compaction that replaces them cannot delete them first.
// From the next turn on, linking and copying run in slices of about SLICE_MS
// of the event loop (COPY_CHUNK_BYTES at most per step), whatever the logs'
// size. The files' fsyncs (and the parent directory's, for the checkpoint's
// own entry, and the checkpoint directory's, for the entries) run off the
// event loop, all at once; then CURRENT's rename and a last directory fsync:
// CURRENT names a manifest only once everything it needs is durable.
//
// Why the log of S is copied and the older ones may be linked: the database
// appends to its current log past the prefix, and the checkpoint, once opened,
// is a database of its own, which takes over its newest log if it holds no
// record (recovery truncates it and appends to it): a link there would share
// writes both ways. An older log is never the checkpoint's newest, nothing
// appends to it in either database, and the database's retirement only trims
// its zeros; its records are durable once the retirement's fdatasync returns
// (SealedLog.durable), which CURRENT waits for like the copies' fsyncs (it
// has returned already in practice: no write goes to a newer log before the
// older log's retirement is over).
import { platform } from './platform'
import { hardLinkIfSupported, linkOrCopy, syncDirAsync, type FileSystem, type RandomAccessFile, type WritableFile } from './fs/fs'
import type { Version } from './manifest/version'
import type { FileMeta } from './manifest/file-meta'
import type { LogPosition, SealedLog } from './wal/log-manager'
import { encodeVersionEdit, MANIFEST_FORMAT_VERSION } from './manifest/version-edit'
import { LogWriter } from './wal/log-writer'
import { nextTurn, TurnSlices } from './util/turn'
import { CURRENT, join, logName, manifestName, parentDir, parseFileName, tableName, tempName } from './filenames'
import { ioError, levelError } from './errors'
import { assert } from './invariants'

/** The event loop's time a checkpoint takes at once, about (ms): then it lets other work run. */
const SLICE_MS = 2
/** The bytes of a log copied in one step. */
const COPY_CHUNK_BYTES = 1024 * 1024

/** An unflushed log, opened, and where its records up to the checkpoint's sequence number end. */
export interface UnflushedLog {
  number: number
  /** Bytes to copy: a prefix that ends at a record boundary. */
  length: number
  file: RandomAccessFile
  /**
   * Set for a log taken whole, which no record will be appended to (it may be
   * linked): resolves once its records are durable.
   */
  durable?: Promise<void>
}

/** What a checkpoint is made from: taken in one turn (see above). */
export interface CheckpointSource {
  fs: FileSystem
  /** The database directory. */
  dir: string
  /** The version current at `sequence`, referenced by the caller (released by writeCheckpoint). */
  version: Version
  /** S: the last sequence number the checkpoint holds. */
  sequence: number
  /** The unflushed logs holding writes <= S, oldest first (closed by writeCheckpoint). */
  logs: UnflushedLog[]
  /** A file number above every table and log number of the database. */
  nextFileNumber: number
}

export interface CheckpointResult {
  /** The last sequence number in the checkpoint. */
  sequence: number
  /** Tables hard-linked and tables copied. */
  linked: number
  copied: number
  /** Unflushed logs copied or linked, those linked, and their records' bytes (the writes not yet in tables). */
  logs: number
  logsLinked: number
  logBytes: number
}

/**
 * Opens `dir`'s logs numbered from `logNumber` to `visibleEnd.number` and
 * returns them with the length of their records up to the visible sequence
 * number: `visibleEnd.offset` for the log of `visibleEnd`, the whole of the
 * others (`sealedLog`, else the file's size: a log of an earlier process,
 * synced when this one opened).
 * Synchronous, so that the caller can take them in the same turn as the
 * version and the sequence number. Reads nothing.
 */
export function openUnflushedLogs (fs: FileSystem, dir: string, logNumber: number, visibleEnd: LogPosition, sealedLog: (number: number) => SealedLog | undefined): UnflushedLog[] {
  const numbers = fs.list(dir)
    .map((n) => parseFileName(n))
    .filter((p) => p !== undefined && p.type === 'log' && p.number >= logNumber && p.number <= visibleEnd.number)
    .map((p) => p!.number)
    .sort((a, b) => a - b)
  const out: UnflushedLog[] = []
  try {
    for (const number of numbers) {
      const file = fs.openRead(join(dir, logName(number)))
      const log: UnflushedLog = { number, length: visibleEnd.offset, file }
      out.push(log)
      if (number < visibleEnd.number) {
        const sealed = sealedLog(number)
        log.length = sealed?.length ?? file.size()
        log.durable = sealed?.durable ?? Promise.resolve()
      }
      assert(log.length <= file.size(), 'a log is shorter than its records')
    }
  } catch (err) {
    closeLogs(out)
    throw err
  }
  return out
}

/**
 * Writes the checkpoint into `target`, which must not exist or be empty, and
 * releases `source.version` and closes `source.logs`. Works in slices of the
 * event loop from the next turn on (see above): the caller's turn does
 * nothing more. On failure, removes what it wrote and rethrows.
 */
export async function writeCheckpoint (source: CheckpointSource, target: string): Promise<CheckpointResult> {
  const { fs, version } = source
  const made: string[] = []
  const syncs = new FileSyncs()
  try {
    // The caller's turn took the source: the work starts on the next one.
    await nextTurn()
    const slices = new TurnSlices(SLICE_MS)
    prepareTarget(fs, target, syncs)
    const result: CheckpointResult = { sequence: source.sequence, linked: 0, copied: 0, logs: 0, logsLinked: 0, logBytes: 0 }
    const newFiles: Array<{ level: number, meta: FileMeta }> = []
    version.levels.forEach((level, n) => { for (const meta of level) newFiles.push({ level: n, meta }) })
    for (const { meta } of newFiles) {
      const to = join(target, tableName(meta.number))
      made.push(to)
      if (linkOrCopy(fs, join(source.dir, tableName(meta.number)), to) === 'linked') result.linked++
      else result.copied++
      await slices.next()
    }
    for (const log of source.logs) {
      const to = join(target, logName(log.number))
      if (log.durable !== undefined && linkLog(fs, join(source.dir, logName(log.number)), to)) {
        made.push(to)
        syncs.add(log.durable)
        result.logsLinked++
      } else {
        await copyLogPrefix(fs, log, to, slices, made, syncs)
      }
      result.logs++
      result.logBytes += log.length
    }
    // No unflushed write: an empty log for the manifest to name.
    const logNumber = source.logs.length > 0 ? source.logs[0].number : source.nextFileNumber
    if (source.logs.length === 0) writeFile(fs, join(target, logName(logNumber)), made, syncs)
    const manifest = source.nextFileNumber + 1
    const edit = encodeVersionEdit({
      formatVersion: MANIFEST_FORMAT_VERSION,
      logNumber,
      nextFileNumber: manifest + 1,
      lastSequence: source.sequence,
      compactPointers: [],
      newFiles,
      rangeTombstones: version.rangeTombstones.slice()
    })
    writeFile(fs, join(target, manifestName(manifest)), made, syncs, { record: edit })
    const tmp = join(target, tempName(manifest + 1))
    writeFile(fs, tmp, made, syncs, { raw: Buffer.from(manifestName(manifest) + '\n', 'latin1') })
    // Every entry is made: the directory's fsync runs beside the files'.
    syncs.add(syncDirAsync(fs, target))
    await syncs.done()
    fs.rename(tmp, join(target, CURRENT))
    made.push(join(target, CURRENT))
    await syncDirAsync(fs, target)
    return result
  } catch (err) {
    await syncs.settled()
    for (const p of made.reverse()) {
      try { fs.remove(p) } catch {}
    }
    throw err
  } finally {
    closeLogs(source.logs)
    version.unref()
  }
}

/**
 * The checkpoint's fsyncs, run at once off the event loop (their round trips
 * overlap instead of adding up); each file is closed once its sync returns.
 * A failure is kept (no unhandled rejection) and thrown by done().
 */
class FileSyncs {
  private readonly running: Array<Promise<void>> = []
  private failure: { err: unknown } | undefined

  add (sync: Promise<void>): void {
    this.running.push(sync.then(() => {}, (err) => { this.failure ??= { err } }))
  }

  /** Resolves once every sync added so far returned; throws the first failure. */
  async done (): Promise<void> {
    await this.settled()
    if (this.failure !== undefined) throw this.failure.err
  }

  async settled (): Promise<void> {
    await Promise.all(this.running)
  }
}

function closeLogs (logs: UnflushedLog[]): void {
  for (const log of logs) {
    try { log.file.close() } catch {}
  }
}

function prepareTarget (fs: FileSystem, target: string, syncs: FileSyncs): void {
  if (fs.exists(target) && fs.list(target).length > 0) {
    throw levelError('LEVEL_INVALID_OPTION', `Checkpoint directory is not empty: ${target}`)
  }
  fs.mkdirp(target)
  syncs.add(syncDirAsync(fs, parentDir(platform().resolvePath(target))))
}

/** A hard link of a log taken whole; false where links are not possible or the database removed it since (it is copied then). */
function linkLog (fs: FileSystem, existing: string, newPath: string): boolean {
  try {
    return hardLinkIfSupported(fs, existing, newPath)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
}

/** fdatasync of `out` off the event loop, then close. */
function syncAndClose (out: WritableFile): Promise<void> {
  return out.syncAsync().finally(() => out.close())
}

/** Copies the first `log.length` bytes of `log` to a new file at `to`, a chunk per step; its sync joins `syncs`. */
async function copyLogPrefix (fs: FileSystem, log: UnflushedLog, to: string, slices: TurnSlices, made: string[], syncs: FileSyncs): Promise<void> {
  const out = fs.openWrite(to)
  made.push(to)
  try {
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(COPY_CHUNK_BYTES, log.length)))
    for (let pos = 0; pos < log.length;) {
      const n = log.file.read(buf, 0, Math.min(buf.length, log.length - pos), pos)
      if (n === 0) throw ioError(`Checkpoint: ${logName(log.number)} ended at ${pos} bytes, before its records' end at ${log.length}`, undefined, logName(log.number))
      out.append(buf.subarray(0, n))
      pos += n
      await slices.next()
    }
  } catch (err) {
    out.close()
    throw err
  }
  syncs.add(syncAndClose(out))
}

/** Writes a new file at `file`: one log record holding `record`, or `raw` bytes as they are, or nothing; its sync joins `syncs`. */
function writeFile (fs: FileSystem, file: string, made: string[], syncs: FileSyncs, content: { record?: Uint8Array, raw?: Buffer } = {}): void {
  const out = fs.openWrite(file)
  made.push(file)
  try {
    if (content.raw !== undefined) out.append(content.raw)
    else if (content.record !== undefined) new LogWriter(out).addRecord(content.record)
  } catch (err) {
    out.close()
    throw err
  }
  syncs.add(syncAndClose(out))
}
