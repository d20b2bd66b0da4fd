// The logs a shipper (lib/backup/shipper.ts) holds open from round to round
// until they are shipped to their end, and the reading of their segments.
//
// Logs are held open until they are shipped to their end and retired (below
// the manifest's logNumber), so the segments of a log are contiguous from byte
// 0 even when its flush removes it from the directory between two rounds; a log
// made and flushed entirely between two rounds is opened by the engine's
// retirement hook (retired) before it is deleted. Held logs that are retired
// but not shipped keep their disk space (the files are unlinked, the
// descriptors open): at most maxHeldLogBytes of them; past it the oldest is let
// go, and the sequence numbers it held cannot be restored on their own.
import type { FileSystem, RandomAccessFile } from '../fs/fs'
import type { LogPosition, SealedLog } from '../wal/log-manager'
import { HEADER_SIZE, recordFaultText, recordLength, walkRecords } from '../wal/log-format'
import { readRecordFrom } from '../wal/log-reader'
import { BATCH_HEADER_SIZE, batchCount } from '../wal/batch'
import { getFixed64 } from '../util/coding'
import { join, logName, logNumbers } from '../filenames'
import { corruption } from '../errors'

export interface HeldLog {
  file: RandomAccessFile
  /** Bytes put so far (a record boundary). */
  shipped: number
  /** Where its records end, once it is sealed. */
  sealedLength: number | undefined
  /** Segment keys, for the retention. */
  keys: string[]
  /** The last sequence number shipped from it. */
  lastSeq: number
}

/** Where a round's capture stands in the logs: its manifest's logNumber and where its visible writes end. */
export interface LogCapture {
  logNumber: number
  visibleEnd: LogPosition
}

/** What the held logs need of the engine. */
export interface LogSource {
  fs: FileSystem
  dir: string
  sealedLog: (number: number) => SealedLog | undefined
}

export class HeldLogs {
  /** The logs held open, by number. */
  readonly open = new Map<number, HeldLog>()
  /** Segments of logs let go (shipped to their end, or dropped), by log number, for the retention. */
  readonly closedKeys = new Map<number, string[]>()
  /** The first capture's logNumber: the logs below it are not needed (the first point's tables hold them). */
  firstLog: number | undefined
  /**
   * The newest log let go unshipped (or that could not be opened): a restore
   * from a point whose logNumber is at or below it stops at its hole.
   */
  newestDropped: number | undefined

  constructor (private readonly source: LogSource, private readonly maxHeldLogBytes: number, private readonly counters: { logsDropped: number }) {}

  /**
   * The engine's hook, called in the turn a flush retires log `number`,
   * before the log is deleted: a log this shipper has not opened yet is
   * opened now (its bytes stay readable after the unlink), and its length
   * noted. Never throws: a log it cannot open is a hole, not a failure.
   */
  retired (number: number): void {
    if (this.firstLog === undefined || number < this.firstLog) return
    try {
      const held = this.open.get(number)
      if (held !== undefined) {
        held.sealedLength ??= this.source.sealedLog(number)?.length ?? recordsEnd(held.file, held.shipped)
        return
      }
      // Shipped and let go already; else a log no round opened (made and flushed between two captures,
      // or left out of a capture that saw the flush's version before this hook ran).
      if (this.closedKeys.has(number)) return
      const { fs, dir } = this.source
      const file = fs.openRead(join(dir, logName(number)))
      this.open.set(number, { file, shipped: 0, sealedLength: this.source.sealedLog(number)?.length ?? recordsEnd(file, 0), keys: [], lastSeq: 0 })
      this.dropOverHeld()
    } catch {
      this.dropped(number)
    }
  }

  /** In the capture's turn: opens the logs from logNumber to the visible one not held yet, and notes which are sealed. */
  openFrom (cap: LogCapture): void {
    const { fs, dir } = this.source
    this.firstLog ??= cap.logNumber
    for (const number of logNumbers(fs, dir, cap.logNumber)) {
      if (number > cap.visibleEnd.number || this.open.has(number) || this.closedKeys.has(number)) continue
      this.open.set(number, { file: fs.openRead(join(dir, logName(number))), shipped: 0, sealedLength: undefined, keys: [], lastSeq: 0 })
    }
    for (const [number, log] of this.open) {
      if (number < cap.visibleEnd.number && log.sealedLength === undefined) {
        // A log of an earlier process (replayed at open) was not sealed by this one: its records end where the valid ones do.
        log.sealedLength = this.source.sealedLog(number)?.length ?? recordsEnd(log.file, log.shipped)
      }
    }
  }

  /** The logs from logNumber to the visible one and where their writes up to the capture's sequence number end. */
  lengths (cap: LogCapture): Array<[number, number]> {
    const out: Array<[number, number]> = []
    for (const [number, log] of this.open) {
      if (number < cap.logNumber || number > cap.visibleEnd.number) continue
      out.push([number, number === cap.visibleEnd.number ? cap.visibleEnd.offset : log.sealedLength!])
    }
    return out.sort((a, b) => a[0] - b[0])
  }

  /** Lets go of the oldest retired, unshipped logs beyond maxHeldLogBytes. */
  private dropOverHeld (): void {
    let bytes = 0
    const retired = [...this.open].filter(([, l]) => l.sealedLength !== undefined).sort((a, b) => b[0] - a[0])
    for (const [number, log] of retired) {
      bytes += log.sealedLength! - log.shipped
      if (bytes <= this.maxHeldLogBytes) continue
      log.file.close()
      this.open.delete(number)
      this.closedKeys.set(number, log.keys)
      this.dropped(number)
    }
  }

  private dropped (number: number): void {
    this.counters.logsDropped++
    this.newestDropped = Math.max(this.newestDropped ?? number, number)
  }

  /** Lets go of a log shipped to its end: its file is the caller's to close. */
  letGo (number: number, log: HeldLog): void {
    this.open.delete(number)
    this.closedKeys.set(number, log.keys)
  }

  /** Closes every held log. */
  closeAll (): void {
    for (const log of this.open.values()) log.file.close()
    this.open.clear()
  }
}

/** The bytes of one segment of `log` from its shipped offset: whole records, up to `end` and at most `maxBytes` (one record at least); the sequence numbers of their first and last operations. */
export function readSegment (number: number, log: HeldLog, end: number, maxBytes: number): { bytes: Buffer, first: number, last: number } {
  const name = logName(number)
  let want = Math.min(end - log.shipped, maxBytes)
  let bytes = readAt(log.file, log.shipped, want, name)
  let walk = walkBatches(bytes, name, log.shipped)
  if (walk.end === 0) {
    // One record longer than the cap: that record alone.
    const length = recordLength(bytes, 0, Infinity)
    if (typeof length !== 'number') throw corruption(name, recordFaultText(length, log.shipped))
    want = HEADER_SIZE + length
    bytes = readAt(log.file, log.shipped, want, name)
    walk = walkBatches(bytes, name, log.shipped)
  }
  return { bytes: bytes.subarray(0, walk.end), first: walk.first, last: walk.last }
}

/** Reads `length` bytes at `position`; LEVEL_CORRUPTION if the file is shorter. */
function readAt (file: RandomAccessFile, position: number, length: number, name: string): Buffer {
  const buf = Buffer.allocUnsafe(length)
  let done = 0
  while (done < length) {
    const n = file.read(buf, done, length - done, position + done)
    if (n === 0) throw corruption(name, `ends at ${position + done} bytes, before its records' end at ${position + length}`)
    done += n
  }
  return buf
}

/**
 * The whole records at the start of `bytes` (log bytes from file offset
 * `base`): where the last whole one ends (0: not even one; a record cut by the
 * end of `bytes` is left for the next segment), and the sequence numbers of the
 * first and last operations. Headers only: the CRCs are the restore's to check.
 */
function walkBatches (bytes: Buffer, name: string, base: number): { end: number, first: number, last: number } {
  let first = 0
  let last = 0
  const walk = walkRecords(bytes, (payload, at) => {
    if (payload.length < BATCH_HEADER_SIZE) throw corruption(name, `no log record at offset ${base + at}`)
    const seq = getFixed64(payload, 0)
    if (first === 0) first = seq
    last = seq + batchCount(payload) - 1
  }, false)
  if (walk.fault === 'bad-type') throw corruption(name, recordFaultText(walk.fault, base + walk.end))
  return { end: walk.end, first, last }
}

/** Where the valid records of a retired log end, from `from` (a record boundary): its length was not noted while it was sealed. */
export function recordsEnd (file: RandomAccessFile, from: number): number {
  let pos = from
  for (let rec = readRecordFrom(file, pos); rec !== undefined && rec.payload.length >= BATCH_HEADER_SIZE; rec = readRecordFrom(file, pos)) pos = rec.next
  return pos
}
