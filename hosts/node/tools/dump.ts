// One database file decoded as plain data, for inspection (`lsm-level dump`)
// and checking (verify.ts): a table's properties and entries, a manifest's
// version edits, a log's write batches. Each reads the file directly, takes no
// lock and writes nothing, so it works on a live or a damaged database. The
// formats are drawn in the modules that read them: lib/sstable/format.ts,
// lib/manifest/version-edit.ts, lib/wal/batch.ts, lib/wal/log-format.ts.
import * as path from 'node:path'
import type { FileSystem } from '../../../lib/fs/fs'
import { nodeFileSystem } from '../node-fs'
import { KIND_VALUE } from '../../../lib/keys'
import { Table } from '../../../lib/sstable/table'
import { BlockCache } from '../../../lib/sstable/cache'
import type { TableProperties } from '../../../lib/sstable/format'
import { LogReader, type TailStatus } from '../../../lib/wal/log-reader'
import { decodeBatch, type DecodedBatch } from '../../../lib/wal/batch'
import { decodeVersionEdit, type VersionEdit } from '../../../lib/manifest/version-edit'
import { currentUserKey, currentValue } from '../../../lib/iterators/internal-iterator'

/** A small block cache of its own: a dump reads each block once, in file order. */
const DUMP_CACHE_BYTES = 256 * 1024

/** A table entry, in copies the caller owns. */
export interface TableEntry {
  userKey: Buffer
  seq: number
  /** KIND_VALUE or KIND_DELETE (lib/keys.ts). */
  kind: number
  /** KIND_VALUE only. */
  value?: Buffer
}

/** An open table file; close() releases it. */
export interface TableDump {
  /** The file's basename. */
  name: string
  fileSize: number
  properties: TableProperties
  /**
   * The entries in internal order (user key ascending, then newest first), each
   * block's checksum verified as it is read. Throws LEVEL_CORRUPTION naming the
   * file at the first damaged block.
   */
  entries (): Generator<TableEntry>
  close (): void
}

/** A log or manifest record: decoded, or the error that stopped its decoding. */
export type LogRecord<T> = { bytes: number, decoded: T } | { bytes: number, error: Error }

/** An open log or manifest; close() releases it. */
export interface LogDump<T> {
  /** The file's basename. */
  name: string
  /** The records of the file's valid prefix, in file order. */
  records (): Generator<LogRecord<T>>
  /** Why reading stopped (clean end, torn or corrupt tail): only once records() has ended. */
  readonly tail: TailStatus
  close (): void
}

/**
 * Opens the table at `file` (footer, index, filter and properties read and
 * verified now). Throws LEVEL_CORRUPTION naming the file if they are damaged,
 * LEVEL_IO_ERROR or an errno-coded error if it cannot be read.
 */
export function dumpTable (file: string, fs: FileSystem = nodeFileSystem): TableDump {
  const name = path.basename(file)
  const table = Table.open(fs, file, name, new BlockCache(DUMP_CACHE_BYTES))
  return {
    name,
    fileSize: table.fileSize,
    properties: table.properties,
    entries: () => tableEntries(table),
    close: () => table.unref()
  }
}

function* tableEntries (table: Table): Generator<TableEntry> {
  const it = table.iterator()
  try {
    for (it.seekToFirst(); it.valid(); it.next()) {
      const kind = it.kind()
      const entry: TableEntry = { userKey: Buffer.from(currentUserKey(it)), seq: it.seq(), kind }
      if (kind === KIND_VALUE) entry.value = Buffer.from(currentValue(it))
      yield entry
    }
  } finally {
    it.close()
  }
}

/** Opens the manifest at `file`; its records decode to version edits. Throws LEVEL_IO_ERROR if it cannot be opened. */
export function dumpManifest (file: string, fs: FileSystem = nodeFileSystem): LogDump<VersionEdit> {
  return dumpRecords(file, decodeVersionEdit, fs)
}

/**
 * Opens the write-ahead log at `file`; its records decode to write batches
 * (ops i has sequence number firstSeq + i). Throws LEVEL_IO_ERROR if it cannot be opened.
 */
export function dumpLog (file: string, fs: FileSystem = nodeFileSystem): LogDump<DecodedBatch> {
  return dumpRecords(file, decodeBatch, fs)
}

function dumpRecords<T> (file: string, decode: (payload: Buffer, name: string) => T, fs: FileSystem): LogDump<T> {
  const name = path.basename(file)
  const reader = new LogReader(fs, file, name)
  return {
    name,
    records: () => decodeRecords(reader, decode),
    get tail () { return reader.tail },
    close: () => reader.close()
  }
}

function* decodeRecords<T> (reader: LogReader, decode: (payload: Buffer, name: string) => T): Generator<LogRecord<T>> {
  for (let payload = reader.next(); payload !== undefined; payload = reader.next()) {
    let record: LogRecord<T>
    try {
      record = { bytes: payload.length, decoded: decode(payload, reader.name) }
    } catch (err) {
      record = { bytes: payload.length, error: err instanceof Error ? err : new Error(String(err)) }
    }
    yield record
  }
}

/** A log's tail status in words (`lsm-level dump` prints it; verify's problems quote it). */
export function describeTail (t: TailStatus): string {
  if (t.state === 'clean') return `tail: clean (${t.offset} bytes)`
  let s = `tail: ${t.state} at offset ${t.offset}, ${t.droppedBytes} bytes after it not readable`
  if (t.validRecordAfter) s += ` (a valid record follows at offset ${t.nextValidOffset}: records were lost)`
  return s
}
