// The log format: the record framing shared by the write-ahead log (<n>.log)
// and the manifest (MANIFEST-<n>). A log file is a plain sequence of records:
//
//   +-----------------+-----------------+------+---------------------+
//   | masked CRC      | payload length  | type | payload             |
//   | fixed32 (LE)    | fixed32 (LE)    | 1 B  | `length` bytes      |
//   +-----------------+-----------------+------+---------------------+
//   |<------------- header: HEADER_SIZE = 9 bytes -------->|
//
//   masked CRC = maskCrc(crc32(type byte ++ payload))      (lib/util/crc.ts)
//   type       = RECORD_FULL (1). Every other value is reserved; a reader of
//                this version treats a record of any other type as invalid.
//
// Contracts:
// - A record is never split: it is written with exactly one `append` (one
//   write(2)), so an interrupted write can only damage the last record of a file,
//   and a reader sees either the whole record or a torn one.
// - There is no block structure, padding or file header: the file's bytes are
//   exactly the concatenation of its records, except that a write-ahead log that
//   was open when the process stopped, or retired but not yet trimmed on disk,
//   may end in zeros (the node file system extends logs with zeros ahead of their
//   records, hosts/node/node-fs.ts, and trims them at close). Readers see those zeros
//   as a torn tail (below); recovery (lib/recovery.ts) takes an all-zero tail
//   for the log's end, not for damage.
// - Zero-filled or garbage bytes never decode as a valid record. An all-zero
//   header fails twice over: its type 0 is reserved, and its stored CRC 0 is not
//   maskCrc(crc32([0])), the checksum of type 0 with an empty payload (a masked
//   CRC is 0 only for one specific raw CRC; test/wal.test.ts checks this one).
//   Garbage passes only with the CRC's 2^-32 odds and a plausible length.
// - The CRC covers type and payload, not the length field. A damaged length makes
//   the CRC be computed over the wrong range, which fails just the same (with the
//   CRC's usual 2^-32 odds).
//
// Parsing: `recordLength` (a header), `readRecordAt` (one record) and
// `walkRecords` (the records of a buffer) below are the one decoder of this
// framing; `readRecordFrom` (lib/wal/log-reader.ts) reads one from a file with
// them. Recovery semantics (which prefix of a damaged log is returned) live in
// lib/wal/log-reader.ts.
import { crc, maskCrc } from '../util/crc'
import { getFixed32, putFixed32 } from '../util/coding'
import { assert } from '../invariants'

/** Version of the framing drawn above. Bump only with a migration path. */
export const FORMAT_VERSION = 1

export const HEADER_SIZE = 9

/** The only record type of FORMAT_VERSION 1: a whole payload in one record. */
export const RECORD_FULL = 1

/** Largest payload the fixed32 length field can describe. */
export const MAX_PAYLOAD_LENGTH = 0xffffffff

// CRC of the type byte alone, the running start of every record's CRC.
const TYPE_CRC: number[] = []
for (let t = 0; t < 256; t++) TYPE_CRC.push(crc(Uint8Array.of(t)))

/** The masked CRC stored for a record of `type` holding `payload`. */
export function recordChecksum (type: number, payload: Uint8Array): number {
  return maskCrc(crc(payload, TYPE_CRC[type & 0xff]))
}

/** Bytes a record with a payload of `payloadLength` bytes occupies in the file. */
export function encodedRecordSize (payloadLength: number): number {
  return HEADER_SIZE + payloadLength
}

/**
 * Writes one RECORD_FULL record holding `payload` at `dst[pos]`; `dst` must have
 * room for `encodedRecordSize(payload.length)` bytes. Returns the new position.
 */
export function writeRecord (dst: Uint8Array, pos: number, payload: Uint8Array): number {
  assert(payload.length <= MAX_PAYLOAD_LENGTH, 'log record payload too large')
  assert(pos + HEADER_SIZE + payload.length <= dst.length, 'log record does not fit its buffer')
  putFixed32(dst, pos, recordChecksum(RECORD_FULL, payload))
  putFixed32(dst, pos + 4, payload.length)
  dst[pos + 8] = RECORD_FULL
  dst.set(payload, pos + HEADER_SIZE)
  return pos + HEADER_SIZE + payload.length
}

/** One record as a fresh buffer. */
export function encodeRecord (payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(encodedRecordSize(payload.length))
  writeRecord(out, 0, payload)
  return out
}

/**
 * Why the bytes at an offset are not a record, in the order the checks are made:
 *   cut-header  fewer than HEADER_SIZE bytes are left
 *   bad-type    the type is not RECORD_FULL
 *   past-end    the payload length runs past the end of the bytes
 *   checksum    the stored CRC does not match type and payload
 */
export type RecordFault = 'cut-header' | 'bad-type' | 'past-end' | 'checksum'

/** A record read: its payload (a view of the bytes read) and the offset just past it. */
export interface LogRecord {
  payload: Buffer
  next: number
}

/**
 * The payload length of the record whose header is at `bytes[at]`, if that
 * header is plausible: whole, of type RECORD_FULL, and with a payload of at most
 * `room` bytes (what the source holds after the header; by default the rest of
 * `bytes`). Otherwise the fault. No checksum work.
 */
export function recordLength (bytes: Uint8Array, at: number, room = bytes.length - at - HEADER_SIZE): number | RecordFault {
  if (at + HEADER_SIZE > bytes.length) return 'cut-header'
  if (bytes[at + 8] !== RECORD_FULL) return 'bad-type'
  const length = getFixed32(bytes, at + 4)
  return length > room ? 'past-end' : length
}

/** Whether `payload` is the one the header at `header[at]` describes (its stored CRC matches). */
export function recordIntact (header: Uint8Array, at: number, payload: Uint8Array): boolean {
  return recordChecksum(RECORD_FULL, payload) === getFixed32(header, at)
}

/**
 * The record at `bytes[pos]`, or why there is none. `checksum: false` checks
 * the header only (for a reader whose bytes are checked as a whole elsewhere).
 */
export function readRecordAt (bytes: Buffer, pos: number, checksum = true): LogRecord | RecordFault {
  const length = recordLength(bytes, pos)
  if (typeof length !== 'number') return length
  const payload = bytes.subarray(pos + HEADER_SIZE, pos + HEADER_SIZE + length)
  if (checksum && !recordIntact(bytes, pos, payload)) return 'checksum'
  return { payload, next: pos + HEADER_SIZE + length }
}

/** Where a walk over a buffer's records ended. */
export interface RecordWalk {
  /** The offset just past the last record accepted. */
  end: number
  /** Why the record at `end` was not read; undefined if the walk reached the end of the bytes or was stopped. */
  fault: RecordFault | undefined
  /** The visitor stopped the walk at the record at `end`. */
  stopped: boolean
}

/**
 * Reads the records of `bytes` from its start, in order, handing each payload
 * (a view) and its offset to `visit`, until the end of the bytes, the first
 * record that is not valid (see readRecordAt), or a visit that returns false
 * (that record is not accepted). Stops there: nothing after a bad record is read.
 */
export function walkRecords (bytes: Buffer, visit: (payload: Buffer, at: number) => boolean | void, checksum = true): RecordWalk {
  let pos = 0
  while (pos < bytes.length) {
    const rec = readRecordAt(bytes, pos, checksum)
    if (typeof rec === 'string') return { end: pos, fault: rec, stopped: false }
    if (visit(rec.payload, pos) === false) return { end: pos, fault: undefined, stopped: true }
    pos = rec.next
  }
  return { end: pos, fault: undefined, stopped: false }
}

/** The text of a LEVEL_CORRUPTION for a record fault at byte `at` of a log or segment. */
export function recordFaultText (fault: RecordFault, at: number): string {
  switch (fault) {
    case 'cut-header': return `a record header is cut at byte ${at}`
    case 'bad-type': return `bad record at byte ${at} (not a record type)`
    case 'past-end': return `bad record at byte ${at} (its length runs past the end)`
    case 'checksum': return `record checksum mismatch at byte ${at}`
  }
}
