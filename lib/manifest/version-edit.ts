// A version edit: one change to the set of live tables and the engine's
// counters. A manifest file (MANIFEST-<n>) is a log-format file
// (lib/wal/log-format.ts) whose records are encoded version edits; replaying
// them in order rebuilds the current version. The first record of a manifest is
// a full snapshot (every live file) and carries `formatVersion`.
//
// Encoding: a sequence of tagged fields, each a varint tag followed by its body,
// closed by TAG_END. Fields may come in any order; a scalar field appears at
// most once. The closing tag makes every truncation detectable, even one that
// falls on a field boundary (the record CRC should catch those first; this is
// the second line of defence).
//
//   +---------+---------+-----+---------+-----------+
//   | field 0 | field 1 | ... | field k | TAG_END 0 |
//   +---------+---------+-----+---------+-----------+
//
//   tag                      body
//   ---------------------    ----------------------------------------------------
//   0  TAG_END               (none; must be the last byte)
//   1  TAG_FORMAT_VERSION    varint version
//   2  TAG_LOG_NUMBER        varint n (logs numbered below n are no longer needed)
//   3  TAG_NEXT_FILE_NUMBER  varint n
//   4  TAG_LAST_SEQUENCE     varint seq (<= MAX_SEQ)
//   5  TAG_COMPACT_POINTER   varint level | ikey
//   6  TAG_DELETED_FILE      varint level | varint file number
//   7  TAG_NEW_FILE          varint level | varint number | varint size |
//                            varint entries | ikey smallest | ikey largest
//   8  TAG_RANGE_TOMBSTONE   varint seq | varint startLen | start |
//                            varint endLen + 1 | end    (0: no end, no end bytes)
//   9  TAG_NEW_FILE_FLOOR    as TAG_NEW_FILE, with varint floor after entries
//                            (FileMeta.floor; tag 7 means floor 0)
//   10 TAG_LOGS_AT_CLOSE     varint lastSequence | varint count |
//                            count x (varint log number | varint size)
//
//   Format 2 (lsm-level 0.2) added tags 8 and 9 (range tombstones, see
//   lib/range-tombstones.ts). Format 3 (lsm-level 0.4) added tag 10: the last
//   edit of a manifest whose database was closed cleanly, naming every log
//   still needed (number >= logNumber) with its size once synced, and the
//   newest sequence number; an open that finds it refuses logs that differ
//   (lib/recovery.ts). It changes no version: replay keeps it only while it is
//   the manifest's last edit. A version applies an edit's new range tombstones
//   and then drops every tombstone that no longer hides anything (a pure
//   function of the tables' metadata), so replay reproduces the same set without
//   deletion records. The first record names its format version; a manifest of a
//   newer format than this code reads is refused (LEVEL_NOT_SUPPORTED).
//
//   ikey = varint length | encoded internal key (lib/keys.ts: userKey, kind,
//          6-byte seq, reserved 0), length >= TRAILER_SIZE
//
// Any other tag, a missing TAG_END or bytes after it is corruption (a newer manifest must not be half-understood).
// Decoding validates every length and range and throws corruption(name, ...),
// never a wrong value or a RangeError.
import { ByteWriter, compareBytes, getVarint, varintOut } from '../util/coding'
import { corruption } from '../errors'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, TRAILER_SIZE, compareInternalKeys, encodeInternalKey, trailerKind, trailerSeq } from '../keys'
import type { InternalKey } from '../keys'
import type { FileMeta } from './file-meta'
import type { RangeTombstone } from '../range-tombstones'
import { assert } from '../invariants'

/** Version of the manifest format: this edit encoding inside log-format records. */
export const MANIFEST_FORMAT_VERSION = 3
export const FORMAT_VERSION = MANIFEST_FORMAT_VERSION

/**
 * Sanity bound on a level number in the manifest. The version set checks levels
 * against its own (smaller) level count; this only keeps absurd values out.
 */
export const MAX_ENCODED_LEVEL = 63

export const TAG_END = 0
export const TAG_FORMAT_VERSION = 1
export const TAG_LOG_NUMBER = 2
export const TAG_NEXT_FILE_NUMBER = 3
export const TAG_LAST_SEQUENCE = 4
export const TAG_COMPACT_POINTER = 5
export const TAG_DELETED_FILE = 6
export const TAG_NEW_FILE = 7
export const TAG_RANGE_TOMBSTONE = 8
export const TAG_NEW_FILE_FLOOR = 9
export const TAG_LOGS_AT_CLOSE = 10

export interface VersionEdit {
  /** Logs numbered below this are no longer needed (their data is in tables). */
  logNumber?: number
  nextFileNumber?: number
  lastSequence?: number
  compactPointers?: Array<{ level: number, key: InternalKey }>
  deletedFiles?: Array<{ level: number, number: number }>
  newFiles?: Array<{ level: number, meta: FileMeta }>
  /** Range tombstones that join the version (a flush's, or all of them in a snapshot). */
  rangeTombstones?: RangeTombstone[]
  formatVersion?: number
  /** Written by a clean close, alone: the logs still needed and the newest sequence number. */
  logsAtClose?: LogsAtClose
}

/** What the logs a cleanly closed database still needs held when it closed. */
export interface LogsAtClose {
  /** The newest sequence number written. */
  lastSequence: number
  /** Every log numbered >= the manifest's logNumber, oldest first, with its size (bytes of records) once synced. */
  logs: Array<{ number: number, size: number }>
}

function checkLevel (level: number): void {
  assert(Number.isInteger(level) && level >= 0 && level <= MAX_ENCODED_LEVEL, `bad level ${level} in version edit`)
}

function checkCount (n: number, what: string): void {
  assert(Number.isSafeInteger(n) && n >= 0, `bad ${what} ${n} in version edit`)
}

function putInternalKey (w: ByteWriter, key: InternalKey): void {
  assert(key.seq >= 0 && key.seq <= MAX_SEQ, 'internal key seq out of range')
  w.lengthPrefixed(encodeInternalKey(key.userKey, key.seq, key.kind))
}

export function encodeVersionEdit (edit: VersionEdit): Buffer {
  const w = new ByteWriter(128)
  const scalar = (tag: number, value: number | undefined, what: string): void => {
    if (value === undefined) return
    checkCount(value, what)
    w.varint(tag)
    w.varint(value)
  }
  scalar(TAG_FORMAT_VERSION, edit.formatVersion, 'format version')
  scalar(TAG_LOG_NUMBER, edit.logNumber, 'log number')
  scalar(TAG_NEXT_FILE_NUMBER, edit.nextFileNumber, 'next file number')
  if (edit.lastSequence !== undefined) assert(edit.lastSequence <= MAX_SEQ, 'last sequence exceeds MAX_SEQ')
  scalar(TAG_LAST_SEQUENCE, edit.lastSequence, 'last sequence')
  for (const p of edit.compactPointers ?? []) {
    checkLevel(p.level)
    w.varint(TAG_COMPACT_POINTER)
    w.varint(p.level)
    putInternalKey(w, p.key)
  }
  for (const f of edit.deletedFiles ?? []) {
    checkLevel(f.level)
    checkCount(f.number, 'file number')
    w.varint(TAG_DELETED_FILE)
    w.varint(f.level)
    w.varint(f.number)
  }
  for (const f of edit.newFiles ?? []) {
    checkLevel(f.level)
    const m = f.meta
    checkCount(m.number, 'file number')
    checkCount(m.size, 'file size')
    checkCount(m.entries, 'entry count')
    const floor = m.floor ?? 0
    checkCount(floor, 'floor')
    w.varint(floor > 0 ? TAG_NEW_FILE_FLOOR : TAG_NEW_FILE)
    w.varint(f.level)
    w.varint(m.number)
    w.varint(m.size)
    w.varint(m.entries)
    if (floor > 0) w.varint(floor)
    putInternalKey(w, m.smallest)
    putInternalKey(w, m.largest)
  }
  for (const t of edit.rangeTombstones ?? []) {
    assert(t.seq >= 1 && t.seq <= MAX_SEQ, 'range tombstone seq out of range')
    w.varint(TAG_RANGE_TOMBSTONE)
    w.varint(t.seq)
    w.lengthPrefixed(t.start)
    if (t.end === undefined) {
      w.varint(0)
    } else {
      w.varint(t.end.length + 1)
      w.bytes(t.end)
    }
  }
  if (edit.logsAtClose !== undefined) {
    const c = edit.logsAtClose
    assert(c.lastSequence >= 0 && c.lastSequence <= MAX_SEQ, 'last sequence at close out of range')
    w.varint(TAG_LOGS_AT_CLOSE)
    w.varint(c.lastSequence)
    w.varint(c.logs.length)
    for (const l of c.logs) {
      checkCount(l.number, 'log number')
      checkCount(l.size, 'log size')
      w.varint(l.number)
      w.varint(l.size)
    }
  }
  w.varint(TAG_END)
  return w.toBuffer()
}

// Cursor over an encoded edit; every read is bounds-checked.
class Reader {
  pos = 0
  constructor (readonly buf: Buffer, readonly name: string) {}

  varint (what: string): number {
    if (!getVarint(this.buf, this.pos, this.buf.length)) throw corruption(this.name, `version edit: bad or truncated ${what}`)
    if (varintOut.value > Number.MAX_SAFE_INTEGER) throw corruption(this.name, `version edit: ${what} out of range`)
    this.pos = varintOut.pos
    return varintOut.value
  }

  level (): number {
    const level = this.varint('level')
    if (level > MAX_ENCODED_LEVEL) throw corruption(this.name, `version edit: level ${level} out of range`)
    return level
  }

  /** `length` bytes, copied (metadata outlives the manifest record). */
  bytes (length: number, what: string): Buffer {
    if (length > this.buf.length - this.pos) throw corruption(this.name, `version edit: truncated ${what}`)
    const out = Buffer.from(this.buf.subarray(this.pos, this.pos + length))
    this.pos += length
    return out
  }

  internalKey (what: string): InternalKey {
    const len = this.varint(`${what} length`)
    if (len > this.buf.length - this.pos) throw corruption(this.name, `version edit: truncated ${what}`)
    if (len < TRAILER_SIZE) throw corruption(this.name, `version edit: ${what} shorter than its trailer`)
    const start = this.pos
    this.pos += len
    const t = start + len - TRAILER_SIZE
    const kind = trailerKind(this.buf, t)
    if (kind !== KIND_VALUE && kind !== KIND_DELETE) throw corruption(this.name, `version edit: ${what} has unknown kind ${kind}`)
    if (this.buf[t + 7] !== 0) throw corruption(this.name, `version edit: ${what} has a nonzero reserved byte`)
    // Copied: file metadata lives as long as the version, not the manifest record.
    return { userKey: Buffer.from(this.buf.subarray(start, t)), seq: trailerSeq(this.buf, t), kind }
  }
}

/** Decodes an edit read from the manifest `name`; throws corruption(name, ...) if malformed. */
export function decodeVersionEdit (buf: Buffer, name: string): VersionEdit {
  const r = new Reader(buf, name)
  const edit: VersionEdit = {}
  const setScalar = (field: 'formatVersion' | 'logNumber' | 'nextFileNumber' | 'lastSequence', what: string): void => {
    if (edit[field] !== undefined) throw corruption(name, `version edit: duplicate ${what}`)
    edit[field] = r.varint(what)
  }
  for (;;) {
    if (r.pos >= buf.length) throw corruption(name, 'version edit: truncated (no end tag)')
    const tag = r.varint('tag')
    if (tag === TAG_END) break
    switch (tag) {
      case TAG_FORMAT_VERSION:
        setScalar('formatVersion', 'format version')
        break
      case TAG_LOG_NUMBER:
        setScalar('logNumber', 'log number')
        break
      case TAG_NEXT_FILE_NUMBER:
        setScalar('nextFileNumber', 'next file number')
        break
      case TAG_LAST_SEQUENCE:
        setScalar('lastSequence', 'last sequence')
        if ((edit.lastSequence as number) > MAX_SEQ) throw corruption(name, 'version edit: last sequence out of range')
        break
      case TAG_COMPACT_POINTER: {
        const level = r.level()
        const key = r.internalKey('compact pointer key');
        (edit.compactPointers ??= []).push({ level, key })
        break
      }
      case TAG_DELETED_FILE: {
        const level = r.level()
        const number = r.varint('deleted file number');
        (edit.deletedFiles ??= []).push({ level, number })
        break
      }
      case TAG_NEW_FILE:
      case TAG_NEW_FILE_FLOOR: {
        const level = r.level()
        const number = r.varint('file number')
        const size = r.varint('file size')
        const entries = r.varint('entry count')
        const floor = tag === TAG_NEW_FILE_FLOOR ? r.varint('floor') : 0
        if (floor > MAX_SEQ) throw corruption(name, `version edit: table ${number} has floor out of range`)
        const smallest = r.internalKey('smallest key')
        const largest = r.internalKey('largest key')
        if (compareInternalKeys(smallest, largest) > 0) {
          throw corruption(name, `version edit: table ${number} has smallest key > largest key`)
        }
        const meta: FileMeta = { number, size, smallest, largest, entries }
        if (floor > 0) meta.floor = floor;
        (edit.newFiles ??= []).push({ level, meta })
        break
      }
      case TAG_RANGE_TOMBSTONE: {
        const seq = r.varint('range tombstone seq')
        if (seq < 1 || seq > MAX_SEQ) throw corruption(name, 'version edit: range tombstone seq out of range')
        const start = r.bytes(r.varint('range tombstone start length'), 'range tombstone start')
        const endLen = r.varint('range tombstone end length')
        const end = endLen === 0 ? undefined : r.bytes(endLen - 1, 'range tombstone end')
        if (end !== undefined && compareBytes(start, end) >= 0) throw corruption(name, 'version edit: range tombstone with start >= end')
        if (edit.rangeTombstones === undefined) edit.rangeTombstones = []
        edit.rangeTombstones.push({ start, end, seq })
        break
      }
      case TAG_LOGS_AT_CLOSE: {
        if (edit.logsAtClose !== undefined) throw corruption(name, 'version edit: duplicate logs at close')
        const lastSequence = r.varint('last sequence at close')
        if (lastSequence > MAX_SEQ) throw corruption(name, 'version edit: last sequence at close out of range')
        const count = r.varint('log count at close')
        // Each log takes at least two bytes: a count beyond that is damage, not an allocation.
        if (count > (buf.length - r.pos) / 2) throw corruption(name, 'version edit: truncated logs at close')
        const logs: LogsAtClose['logs'] = []
        for (let i = 0; i < count; i++) {
          const number = r.varint('log number at close')
          const size = r.varint('log size at close')
          if (i > 0 && number <= logs[i - 1].number) throw corruption(name, 'version edit: logs at close out of order')
          logs.push({ number, size })
        }
        edit.logsAtClose = { lastSequence, logs }
        break
      }
      default:
        throw corruption(name, `version edit: unknown tag ${tag}`)
    }
  }
  if (r.pos !== buf.length) throw corruption(name, `version edit: ${buf.length - r.pos} bytes after the end tag`)
  return edit
}
