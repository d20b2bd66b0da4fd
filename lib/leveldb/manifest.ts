// LevelDB's CURRENT and MANIFEST, read-only: which tables are live and which
// logs still hold writes not yet in tables.
//
// CURRENT holds the live manifest's name and a newline ("MANIFEST-000005\n").
// The manifest is a LevelDB log (lib/leveldb/log-reader.ts) whose records are
// VersionEdits: a sequence of tagged fields, each a varint tag then its value
// (LevelDB's db/version_edit.cc):
//
//   tag  field               value
//   1    comparator          varint length + name ("leveldb.BytewiseComparator")
//   2    log number          varint64: logs numbered below it are in tables
//   3    next file number    varint64
//   4    last sequence       varint64
//   5    compact pointer     varint32 level, varint length + internal key
//   6    deleted file        varint32 level, varint64 file number
//   7    new file            varint32 level, varint64 number, varint64 size,
//                            varint length + smallest internal key,
//                            varint length + largest internal key
//   9    prev log number     varint64: a log still being flushed (older LevelDBs)
//
// (Tag 8 was retired by LevelDB and never appears.) An internal key is the user
// key followed by 8 bytes: fixed64 (LE) of (seq << 8 | type), type 1 a value,
// 0 a deletion (lib/leveldb/table.ts). The state is the edits applied in order,
// the first one usually a full snapshot.
import type { FileSystem } from '../fs/fs'
import { corruption, ioError, levelError } from '../errors'
import { compareBytes, getVarint, varintOut } from '../util/coding'
import { LevelDBLogReader } from './log-reader'
import { join } from '../filenames'

/** The comparator lsm-level's bytewise key order matches. */
export const BYTEWISE_COMPARATOR = 'leveldb.BytewiseComparator'

/** LevelDB's number of levels. */
export const LEVELDB_LEVELS = 7

const TAG_COMPARATOR = 1
const TAG_LOG_NUMBER = 2
const TAG_NEXT_FILE_NUMBER = 3
const TAG_LAST_SEQUENCE = 4
const TAG_COMPACT_POINTER = 5
const TAG_DELETED_FILE = 6
const TAG_NEW_FILE = 7
const TAG_PREV_LOG_NUMBER = 9

export interface LevelDBFile {
  level: number
  number: number
  /** Bytes, as the manifest records it. */
  size: number
  /** The user key of its smallest entry (levels above 0 are ordered by it). */
  smallestUserKey: Buffer
}

export interface LevelDBEdit {
  comparator?: string
  logNumber?: number
  prevLogNumber?: number
  nextFileNumber?: number
  lastSequence?: number
  deletedFiles: Array<{ level: number, number: number }>
  newFiles: LevelDBFile[]
}

/** The state a LevelDB manifest describes once all its edits are applied. */
export interface LevelDBState {
  manifest: string
  manifestBytes: number
  comparator: string | undefined
  logNumber: number
  prevLogNumber: number
  lastSequence: number
  /** Live tables per level: level 0 by file number, the others by key range. */
  levels: LevelDBFile[][]
}

/** Decodes one VersionEdit record; LEVEL_CORRUPTION naming `file` if malformed. */
export function decodeLevelDBEdit (rec: Uint8Array, file: string): LevelDBEdit {
  const edit: LevelDBEdit = { deletedFiles: [], newFiles: [] }
  let pos = 0
  const bad = (what: string): Error => corruption(file, `malformed version edit: ${what}`)
  const varint = (what: string): number => {
    if (!getVarint(rec, pos, rec.length)) throw bad(what)
    pos = varintOut.pos
    return varintOut.value
  }
  const slice = (what: string): Uint8Array => {
    const len = varint(what)
    if (pos + len > rec.length) throw bad(what)
    pos += len
    return rec.subarray(pos - len, pos)
  }
  const level = (): number => {
    const l = varint('level')
    if (l >= LEVELDB_LEVELS) throw bad(`level ${l}`)
    return l
  }
  while (pos < rec.length) {
    const tag = varint('tag')
    switch (tag) {
      case TAG_COMPARATOR: edit.comparator = Buffer.from(slice('comparator')).toString('latin1'); break
      case TAG_LOG_NUMBER: edit.logNumber = varint('log number'); break
      case TAG_PREV_LOG_NUMBER: edit.prevLogNumber = varint('prev log number'); break
      case TAG_NEXT_FILE_NUMBER: edit.nextFileNumber = varint('next file number'); break
      case TAG_LAST_SEQUENCE: edit.lastSequence = varint('last sequence'); break
      case TAG_COMPACT_POINTER: level(); slice('compact pointer'); break
      case TAG_DELETED_FILE: edit.deletedFiles.push({ level: level(), number: varint('deleted file') }); break
      case TAG_NEW_FILE: {
        const l = level()
        const number = varint('new file number')
        const size = varint('new file size')
        const smallest = slice('smallest key')
        if (smallest.length < 8) throw bad('smallest key')
        slice('largest key')
        edit.newFiles.push({ level: l, number, size, smallestUserKey: Buffer.from(smallest.subarray(0, smallest.length - 8)) })
        break
      }
      default: throw bad(`unknown tag ${tag}`)
    }
  }
  return edit
}

/** The manifest's name as CURRENT gives it; LEVEL_CORRUPTION if CURRENT is malformed. */
export function readLevelDBCurrent (fs: FileSystem, dir: string): string {
  let text: string
  try {
    text = fs.readSmallFile(join(dir, 'CURRENT')).toString('latin1')
  } catch (err) {
    throw ioError(`Cannot read CURRENT: ${(err as Error).message}`, err, 'CURRENT')
  }
  const m = /^(MANIFEST-\d+)\n$/.exec(text)
  if (m === null) throw corruption('CURRENT', 'does not name a manifest')
  return m[1]
}

/** Reads CURRENT and the manifest it names into the live state. */
export function readLevelDBState (fs: FileSystem, dir: string): LevelDBState {
  const manifest = readLevelDBCurrent(fs, dir)
  if (!fs.exists(join(dir, manifest))) throw corruption('CURRENT', `names ${manifest}, which does not exist`)
  const state: LevelDBState = {
    manifest,
    manifestBytes: 0,
    comparator: undefined,
    logNumber: 0,
    prevLogNumber: 0,
    lastSequence: 0,
    levels: Array.from({ length: LEVELDB_LEVELS }, () => [])
  }
  const live = Array.from({ length: LEVELDB_LEVELS }, () => new Map<number, LevelDBFile>())
  const reader = new LevelDBLogReader(fs, join(dir, manifest), manifest)
  let edits = 0
  try {
    for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
      const edit = decodeLevelDBEdit(rec, manifest)
      edits++
      if (edit.comparator !== undefined) state.comparator = edit.comparator
      if (edit.logNumber !== undefined) state.logNumber = edit.logNumber
      if (edit.prevLogNumber !== undefined) state.prevLogNumber = edit.prevLogNumber
      if (edit.lastSequence !== undefined) state.lastSequence = edit.lastSequence
      for (const d of edit.deletedFiles) live[d.level].delete(d.number)
      for (const f of edit.newFiles) live[f.level].set(f.number, f)
    }
    state.manifestBytes = reader.bytesRead
  } finally {
    reader.close()
  }
  if (edits === 0) throw corruption(manifest, 'holds no version edit')
  if (state.comparator !== undefined && state.comparator !== BYTEWISE_COMPARATOR) {
    throw levelError('LEVEL_NOT_SUPPORTED', `${manifest} orders keys with the comparator '${state.comparator}'; lsm-level orders keys bytewise ('${BYTEWISE_COMPARATOR}')`, undefined, manifest)
  }
  state.levels[0] = [...live[0].values()].sort((a, b) => a.number - b.number)
  for (let l = 1; l < LEVELDB_LEVELS; l++) state.levels[l] = [...live[l].values()].sort((a, b) => compareBytes(a.smallestUserKey, b.smallestUserKey))
  return state
}
