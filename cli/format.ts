// Keys, values and version edits as text for the terminal.
import { logName, tableName } from '../lib/filenames'
import { KIND_DELETE, KIND_VALUE, type InternalKey } from '../lib/keys'
import { OP_RANGE_DELETE } from '../lib/wal/batch'
import type { VersionEdit } from '../lib/manifest/version-edit'

/** Bytes as utf8 text if they are printable, else as 0x-prefixed hex. */
export function printable (b: Uint8Array): string {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)
  const s = buf.toString('utf8')
  // eslint-disable-next-line no-control-regex
  if (Buffer.byteLength(s) === buf.length && !/[\u0000-\u001f\u007f-\u009f\ufffd]/.test(s)) return s
  return '0x' + buf.toString('hex')
}

/** put, del or delrange: the kind of a table entry or of a log's operation. */
export function kindName (kind: number): string {
  return kind === KIND_VALUE ? 'put' : kind === KIND_DELETE ? 'del' : kind === OP_RANGE_DELETE ? 'delrange' : `kind${kind}`
}

/** `<user key> @<seq> <kind>` */
export function formatKey (k: InternalKey): string {
  return `${printable(k.userKey)} @${k.seq} ${kindName(k.kind)}`
}

/** An edit as plain JSON-able data (keys printable, tables by file name). */
export function editToJson (e: VersionEdit): Record<string, unknown> {
  const o: Record<string, unknown> = {}
  if (e.formatVersion !== undefined) o.formatVersion = e.formatVersion
  if (e.logNumber !== undefined) o.logNumber = e.logNumber
  if (e.nextFileNumber !== undefined) o.nextFileNumber = e.nextFileNumber
  if (e.lastSequence !== undefined) o.lastSequence = e.lastSequence
  if (e.compactPointers?.length) o.compactPointers = e.compactPointers.map((c) => ({ level: c.level, key: formatKey(c.key) }))
  if (e.deletedFiles?.length) o.deletedFiles = e.deletedFiles.map((d) => ({ level: d.level, file: tableName(d.number) }))
  if (e.newFiles?.length) {
    o.newFiles = e.newFiles.map((n) => ({
      level: n.level,
      file: tableName(n.meta.number),
      size: n.meta.size,
      entries: n.meta.entries,
      ...(n.meta.floor !== undefined ? { floor: n.meta.floor } : {}),
      smallest: formatKey(n.meta.smallest),
      largest: formatKey(n.meta.largest)
    }))
  }
  if (e.rangeTombstones?.length) {
    o.rangeTombstones = e.rangeTombstones.map((t) => ({ seq: t.seq, start: printable(t.start), end: t.end === undefined ? null : printable(t.end) }))
  }
  if (e.logsAtClose !== undefined) {
    o.logsAtClose = { lastSequence: e.logsAtClose.lastSequence, logs: e.logsAtClose.logs.map((l) => ({ file: logName(l.number), size: l.size })) }
  }
  return o
}

export function errMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
