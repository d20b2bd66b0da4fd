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
// Recovery semantics (which prefix of a damaged log is returned) live in
// lib/wal/log-reader.ts.
import { crc, maskCrc } from '../util/crc'
import { putFixed32 } from '../util/coding'
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
