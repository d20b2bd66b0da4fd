// Table helpers shared by the table tests (sstable, table-format): build a table
// file from a sorted model, read an iterator back into entries, compare entry
// lists, recognise the corruption errors that damaged tables must raise, and
// list where a table's data blocks are and how they are stored.
import * as fs from 'node:fs'
import * as path from 'node:path'
import { NodeFileSystem } from '../../hosts/node/node-fs'
import { isLevelError } from '../../lib/errors'
import { tableName } from '../../lib/filenames'
import { type InternalIterator, currentUserKey, currentValue } from '../../lib/iterators/internal-iterator'
import { TableBuilder, type TableBuilderOptions } from '../../lib/sstable/table-builder'
import { Table } from '../../lib/sstable/table'
import { BlockCache } from '../../lib/sstable/cache'
import { type BlockHandle, FOOTER_SIZE, decodeHandle } from '../../lib/sstable/format'
import type { Entry } from './array-iterator'

const nfs = new NodeFileSystem()
let tablesBuilt = 0

/**
 * Writes `model` (sorted in internal order) as a table file in `dir`, named
 * `name` or else the next unused table file name of this process, synced and
 * closed.
 */
export function buildTable (dir: string, model: readonly Entry[], options: TableBuilderOptions, name = tableName(++tablesBuilt)): { path: string, name: string, size: number } {
  const p = path.join(dir, name)
  const w = nfs.openWrite(p)
  const b = new TableBuilder(w, options)
  for (const e of model) b.add(e.userKey, e.seq, e.kind, e.value)
  const res = b.finish()
  w.sync()
  w.close()
  return { path: p, name, size: res.size }
}

/** A copy of `it`'s current entry. */
export function currentEntry (it: InternalIterator): Entry {
  return { userKey: Buffer.from(currentUserKey(it)), seq: it.seq(), kind: it.kind(), value: Buffer.from(currentValue(it)) }
}

/** Every entry of `it`, in iteration order (`backward`: from the last to the first). */
export function collectEntries (it: InternalIterator, backward = false): Entry[] {
  const out: Entry[] = []
  if (backward) for (it.seekToLast(); it.valid(); it.prev()) out.push(currentEntry(it))
  else for (it.seekToFirst(); it.valid(); it.next()) out.push(currentEntry(it))
  return out
}

/** null if the two lists hold the same entries, else where they first differ. */
export function diffEntries (a: readonly Entry[], b: readonly Entry[]): string | null {
  if (a.length !== b.length) return `length ${a.length} != ${b.length}`
  for (let i = 0; i < a.length; i++) {
    const x = a[i]
    const y = b[i]
    if (!x.userKey.equals(y.userKey) || x.seq !== y.seq || x.kind !== y.kind || !x.value.equals(y.value)) {
      return `entry ${i}: ${x.userKey.toString('hex')}@${x.seq}/${x.kind} vs ${y.userKey.toString('hex')}@${y.seq}/${y.kind}`
    }
  }
  return null
}

/** Runs fn; returns the error it threw (or undefined). */
export function thrown (fn: () => void): unknown {
  try {
    fn()
    return undefined
  } catch (err) {
    return err
  }
}

/** A LEVEL_CORRUPTION error whose message names `name` (and not a RangeError in disguise). */
export function isCorruptionNaming (err: unknown, name: string): boolean {
  return isLevelError(err, 'LEVEL_CORRUPTION') && err.message.includes(name) && !(err instanceof RangeError)
}

/** A stored block of a table file: its handle and the type byte of its trailer (0 as is, 1 Snappy). */
export interface StoredBlock extends BlockHandle {
  type: number
}

/** The data blocks of table file `p`, in order, as stored (read through the table's index). */
export function dataBlocks (p: string): StoredBlock[] {
  const table = Table.open(nfs, p, path.basename(p), new BlockCache(0))
  const file = fs.readFileSync(p)
  const index = table.indexBlock()
  const out: StoredBlock[] = []
  for (let i = 0; i < index.length; i++) {
    const h = decodeHandle(path.basename(p), index.value(i), file.length - FOOTER_SIZE)
    out.push({ ...h, type: file[h.offset + h.size] })
  }
  table.unref()
  return out
}
