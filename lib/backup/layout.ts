// The layout of a backup in an object store (lib/backup/object-store.ts), and
// the encoding of its objects. LAYOUT_VERSION 2 (1 is still read). Keys, under
// the user's prefix:
//
//   lease/<epoch>                            the writers' lease (lib/backup/lease.ts):
//                                            JSON, the one of the highest epoch holds it
//   <gen>/GENERATION                         written first (after the lease):
//                                            {"layout":2,"createdMs":...}
//   <gen>/tables/<number>-<sha>.sst          a table's bytes, exactly as in the database
//                                            directory; sha = the first 32 hex digits
//                                            of its SHA-256: with the size (the
//                                            listing's), what identifies its content.
//                                            Put once per prefix: a generation that
//                                            finds a table of the same size and sha
//                                            under an older generation names that
//                                            object in its points instead
//                                            (layout 1: <number>.sst, never reused)
//   <gen>/refs/<key>                         empty: this generation's points name the
//                                            table object <key> (relative to the prefix)
//                                            of another generation; put before the
//                                            first point that names it. Retention
//                                            keeps every table a kept generation refs
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
//               that ships, never share one, so no object of a generation is ever
//               written twice (the lease objects are the one exception: renewed in place).
//   numbers   = decimal, zero-padded: <number>, <log> 10 digits; <start>, <end> 14;
//               <first>, <last>, <sequence>, <epoch> 16; so that listing order is numeric order.
//
// A point object (all integers little-endian):
//
//   +-----------+--------------+---------+--------------+----------------+-----------+
//   | "LSMPOINT"| fixed32 jlen | json    | fixed32 elen | version edit   | fixed32   |
//   | 8 bytes   |              | jlen B  |              | elen B         | CRC-32    |
//   +-----------+--------------+---------+--------------+----------------+-----------+
//   json = {"layout":2,"sequence":S,"ms":T,"logNumber":L,"nextFileNumber":F,
//           "logs":[[log,length],...],"tables":[[number,size,crc32,key],...]}
//   tables: key = the table's object, relative to the prefix (in this
//   generation or an older one); layout 1 has no key: <gen>/tables/<number>.sst
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
import { sha256 } from '../util/sha256'
import { getFixed32, putFixed32 } from '../util/coding'
import { decodeVersionEdit, encodeVersionEdit, MANIFEST_FORMAT_VERSION, type VersionEdit } from '../manifest/version-edit'
import type { FileMeta } from '../manifest/file-meta'
import type { RangeTombstone } from '../range-tombstones'
import { corruption, levelError } from '../errors'

/**
 * The version of the layout drawn above. Bump only with a reader for the old one.
 *   1  tables at <gen>/tables/<number>.sst, points without table keys
 *   2  tables named by content (<number>-<sha>.sst) and reused across
 *      generations (points name each table's object; refs markers); the lease
 */
export const LAYOUT_VERSION = 2

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

/** A table's key: layout 2 with its content hash, layout 1 (an old backup) without. */
export function tableKey (gen: string, number: number, sha?: string): string {
  return sha === undefined ? `${gen}/tables/${pad(number, 10)}.sst` : `${gen}/tables/${pad(number, 10)}-${sha}.sst`
}

const TABLE_RE = /^(\d{13}-[0-9a-f]{16})\/tables\/(\d{10})-([0-9a-f]{32})\.sst$/

/** A layout-2 table key (relative to the prefix): its generation and content hash. */
export function parseTableKey (rel: string): { gen: string, number: number, sha: string } | undefined {
  const m = TABLE_RE.exec(rel)
  return m === null ? undefined : { gen: m[1], number: Number(m[2]), sha: m[3] }
}

/** The marker that generation `gen` names table object `rel` (relative to the prefix) of another generation. */
export function refKey (gen: string, rel: string): string {
  return `${gen}/refs/${rel}`
}

/** The table key a refs marker (relative to the prefix) names. */
export function parseRefKey (rel: string): { gen: string, table: string } | undefined {
  const m = /^(\d{13}-[0-9a-f]{16})\/refs\/(.+)$/.exec(rel)
  return m === null ? undefined : { gen: m[1], table: m[2] }
}

/** The SHA-256 of a table's bytes, its first 32 hex digits (lib/util/sha256.ts); undefined where the runtime has no SHA-256. */
export async function contentHash (bytes: Uint8Array): Promise<string | undefined> {
  const digest = await sha256(bytes)
  return digest === undefined ? undefined : contentName(digest)
}

/** A SHA-256 digest as a content name: its first 32 hex digits. */
export function contentName (digest: Uint8Array): string {
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex').slice(0, 32)
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

/** A table as a point names it: its number, size and CRC-32 of its bytes, and its object (relative to the prefix; undefined in layout 1). */
export interface PointTable {
  number: number
  size: number
  crc: number
  key?: string
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
    tables: p.tables.map((t) => t.key === undefined ? [t.number, t.size, t.crc] : [t.number, t.size, t.crc, t.key])
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
  let json: { layout: number, sequence: number, ms: number, logNumber: number, nextFileNumber: number, logs: Array<[number, number]>, tables: Array<[number, number, number, string?]> }
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
    tables: json.tables.map(([number, size, c, key]) => ({ number, size, crc: c, ...(typeof key === 'string' ? { key } : {}) })),
    files: edit.newFiles ?? [],
    rangeTombstones: edit.rangeTombstones ?? []
  }
}
