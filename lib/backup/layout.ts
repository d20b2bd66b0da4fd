// The layout of a backup in an object store (lib/backup/object-store.ts), and
// the encoding of its objects. LAYOUT_VERSION 1. Keys, under the user's prefix:
//
//   <gen>/GENERATION                         written first: {"layout":1,"createdMs":...}
//   <gen>/tables/<number>.sst                a table's bytes, exactly as in the database
//                                            directory; put once per generation
//   <gen>/logs/<log>/<start>-<end>-<first>-<last>-<crc>-<ms>.seg
//                                            bytes [start, end) of log <log>: whole log
//                                            records (lib/wal/log-format.ts), holding the
//                                            batches of sequence numbers first..last;
//                                            crc = CRC-32 of the bytes (8 hex digits),
//                                            ms = when the shipper took them (Date.now())
//   <gen>/points/<sequence>-<ms>.pt          a point: the version (tables, range
//                                            tombstones) at a sequence number, and the
//                                            logs that hold the writes after its tables
//
//   <gen>     = <ms:13 digits>-<16 hex digits, random>: when the generation started
//               and a random tag; a generation is one run of a shipper (one
//               db.replicate() on one open database). Two writers, or a restored copy
//               that ships, never share one, so no object is ever written twice.
//   numbers   = decimal, zero-padded: <number>, <log> 10 digits; <start>, <end> 14;
//               <first>, <last>, <sequence> 16; so that listing order is numeric order.
//
// A point object (all integers little-endian):
//
//   +-----------+--------------+---------+--------------+----------------+-----------+
//   | "LSMPOINT"| fixed32 jlen | json    | fixed32 elen | version edit   | fixed32   |
//   | 8 bytes   |              | jlen B  |              | elen B         | CRC-32    |
//   +-----------+--------------+---------+--------------+----------------+-----------+
//   json = {"layout":1,"sequence":S,"ms":T,"logNumber":L,"nextFileNumber":F,
//           "logs":[[log,length],...],"tables":[[number,size,crc32],...]}
//   logs: every log >= L that holds writes <= S, and the length of its records
//   up to S: the segments must cover [0, length) of each (else the backup is
//   damaged: an object is missing)
//   version edit = lib/manifest/version-edit.ts, a snapshot edit: every table of the
//   version (level and metadata), its range tombstones, logNumber L, lastSequence S.
//   The CRC-32 covers every byte before it.
//
// What a point promises: its tables were put before it (and their sizes and CRCs
// are in it), every write <= S is in its tables or in logs numbered >= L, and
// the segments of logs >= L put in this generation start at byte 0 of each log
// (they were put before the point, or after it by the same shipper). Restore
// (lib/backup/restore.ts) takes a point and the segments that follow, byte- and
// sequence-contiguous, and stops at the first hole: the result is a prefix of
// the write order.
//
// Segments carry their CRC and byte range in their name, so that a listing says
// what each holds and a damaged or truncated one is told from a good one before
// its records are read (whose own CRCs are checked too).
import { crc } from '../util/crc'
import { getFixed32, putFixed32 } from '../util/coding'
import { decodeVersionEdit, encodeVersionEdit, MANIFEST_FORMAT_VERSION, type VersionEdit } from '../manifest/version-edit'
import type { FileMeta } from '../manifest/file-meta'
import type { RangeTombstone } from '../range-tombstones'
import { corruption, levelError } from '../errors'

/** The version of the layout drawn above. Bump only with a reader for the old one. */
export const LAYOUT_VERSION = 1

const POINT_MAGIC = Buffer.from('LSMPOINT', 'latin1')

export const GENERATION_FILE = 'GENERATION'

export function newGenerationId (nowMs: number, random: Uint8Array): string {
  return String(nowMs).padStart(13, '0') + '-' + Buffer.from(random).toString('hex').slice(0, 16).padStart(16, '0')
}

export function isGenerationId (s: string): boolean {
  return /^\d{13}-[0-9a-f]{16}$/.test(s)
}

/** When a generation started (ms), from its id. */
export function generationStartMs (gen: string): number {
  return Number(gen.slice(0, 13))
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0')

export function tableKey (gen: string, number: number): string {
  return `${gen}/tables/${pad(number, 10)}.sst`
}

export interface SegmentName {
  log: number
  start: number
  end: number
  /** The sequence numbers of its first and last operations. */
  first: number
  last: number
  crc: number
  ms: number
}

export function segmentKey (gen: string, s: SegmentName): string {
  return `${gen}/logs/${pad(s.log, 10)}/${pad(s.start, 14)}-${pad(s.end, 14)}-${pad(s.first, 16)}-${pad(s.last, 16)}-${(s.crc >>> 0).toString(16).padStart(8, '0')}-${pad(s.ms, 13)}.seg`
}

const SEGMENT_RE = /\/logs\/(\d{10})\/(\d{14})-(\d{14})-(\d{16})-(\d{16})-([0-9a-f]{8})-(\d{13})\.seg$/

export function parseSegmentKey (key: string): SegmentName | undefined {
  const m = SEGMENT_RE.exec(key)
  if (m === null) return undefined
  return { log: Number(m[1]), start: Number(m[2]), end: Number(m[3]), first: Number(m[4]), last: Number(m[5]), crc: parseInt(m[6], 16), ms: Number(m[7]) }
}

export function pointKey (gen: string, sequence: number, ms: number): string {
  return `${gen}/points/${pad(sequence, 16)}-${pad(ms, 13)}.pt`
}

const POINT_RE = /\/points\/(\d{16})-(\d{13})\.pt$/

export function parsePointKey (key: string): { sequence: number, ms: number } | undefined {
  const m = POINT_RE.exec(key)
  return m === null ? undefined : { sequence: Number(m[1]), ms: Number(m[2]) }
}

/** A table as a point names it: its number, size and CRC-32 of its bytes. */
export interface PointTable {
  number: number
  size: number
  crc: number
}

export interface Point {
  sequence: number
  ms: number
  logNumber: number
  nextFileNumber: number
  /** [log number, bytes of its records up to `sequence`], ascending. */
  logs: Array<[number, number]>
  tables: PointTable[]
  /** The version: tables per level and range tombstones. */
  files: Array<{ level: number, meta: FileMeta }>
  rangeTombstones: RangeTombstone[]
}

export function encodePoint (p: Point): Buffer {
  const json = Buffer.from(JSON.stringify({
    layout: LAYOUT_VERSION,
    sequence: p.sequence,
    ms: p.ms,
    logNumber: p.logNumber,
    nextFileNumber: p.nextFileNumber,
    logs: p.logs,
    tables: p.tables.map((t) => [t.number, t.size, t.crc])
  }), 'utf8')
  const edit = encodeVersionEdit({
    formatVersion: MANIFEST_FORMAT_VERSION,
    logNumber: p.logNumber,
    nextFileNumber: p.nextFileNumber,
    lastSequence: p.sequence,
    compactPointers: [],
    newFiles: p.files,
    rangeTombstones: p.rangeTombstones
  })
  const out = Buffer.allocUnsafe(8 + 4 + json.length + 4 + edit.length + 4)
  let pos = POINT_MAGIC.copy(out, 0)
  pos = putFixed32(out, pos, json.length)
  pos += json.copy(out, pos)
  pos = putFixed32(out, pos, edit.length)
  pos += edit.copy(out, pos)
  putFixed32(out, pos, crc(out.subarray(0, pos)))
  return out
}

/** Decodes a point object; LEVEL_CORRUPTION naming `key` if it is damaged. */
export function decodePoint (buf: Buffer, key: string): Point {
  const bad = (why: string): Error => corruption(key, why)
  if (buf.length < 20 || !buf.subarray(0, 8).equals(POINT_MAGIC)) throw bad('not a point object')
  if (getFixed32(buf, buf.length - 4) !== crc(buf.subarray(0, buf.length - 4))) throw bad('checksum mismatch')
  const jlen = getFixed32(buf, 8)
  if (12 + jlen + 4 > buf.length - 4) throw bad('bad length')
  let json: { layout: number, sequence: number, ms: number, logNumber: number, nextFileNumber: number, logs: Array<[number, number]>, tables: number[][] }
  try {
    json = JSON.parse(buf.toString('utf8', 12, 12 + jlen))
  } catch (err) {
    throw corruption(key, 'bad JSON', err)
  }
  if (json.layout > LAYOUT_VERSION) {
    throw levelError('LEVEL_NOT_SUPPORTED', `Backup object ${key} has layout version ${json.layout}; this version of lsm-level reads up to ${LAYOUT_VERSION}`)
  }
  const elen = getFixed32(buf, 12 + jlen)
  if (12 + jlen + 4 + elen !== buf.length - 4) throw bad('bad length')
  const edit: VersionEdit = decodeVersionEdit(buf.subarray(16 + jlen, 16 + jlen + elen), key)
  return {
    sequence: json.sequence,
    ms: json.ms,
    logNumber: json.logNumber,
    nextFileNumber: json.nextFileNumber,
    logs: json.logs,
    tables: json.tables.map(([number, size, c]) => ({ number, size, crc: c })),
    files: edit.newFiles ?? [],
    rangeTombstones: edit.rangeTombstones ?? []
  }
}
