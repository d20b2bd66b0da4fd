// Keeps tables open so each file is opened (footer, index, filter, properties
// read) once, bounded by maxOpenFiles: an LRU of open Tables, each holding one
// file descriptor. The cache holds one reference per table; evicting a table
// drops that reference, so a table still used by an iterator stays open until
// the iterator closes (the bound is on tables the cache keeps, and is exceeded
// only transiently by such pinned tables).
import { corruption } from '../errors'
import type { FileSystem } from '../fs/fs'
import { join, tableName } from '../filenames'
import type { BlockCache } from './cache'
import { Table, type TableOpenOptions } from './table'

export class TableCache {
  // LRU by use stamp (Table.lastUse): a hit only stamps the table (no map
  // reordering per lookup); the least recently used is found by a scan, only
  // when a new table is opened beyond maxOpenFiles.
  private readonly tables = new Map<number, Table>()
  private clock = 0
  private readonly maxOpenFiles: number
  private retiredBloomChecked = 0
  private retiredBloomUseful = 0
  /** Files opened so far (cache misses). */
  opens = 0

  constructor (
    private readonly fs: FileSystem,
    private readonly dir: string,
    maxOpenFiles: number,
    private readonly blockCache: BlockCache,
    private readonly options: TableOpenOptions = {}
  ) {
    this.maxOpenFiles = Math.max(1, Math.floor(maxOpenFiles))
  }

  /**
   * The open table for file number n, opened if needed. Valid for immediate use;
   * callers that keep it beyond the current synchronous step call ref()/unref().
   * A missing file is corruption (the manifest names a table that is gone).
   */
  get (fileNumber: number): Table {
    const t = this.tables.get(fileNumber)
    if (t !== undefined) {
      t.lastUse = ++this.clock
      return t
    }
    const name = tableName(fileNumber)
    let table: Table
    try {
      table = Table.open(this.fs, join(this.dir, name), name, this.blockCache, this.options)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw corruption(name, 'table file is missing', err)
      throw err
    }
    this.opens++
    table.lastUse = ++this.clock
    this.tables.set(fileNumber, table)
    while (this.tables.size > this.maxOpenFiles) {
      let oldest = -1
      let oldestUse = Infinity
      for (const [n, t] of this.tables) {
        if (t.lastUse < oldestUse) { oldest = n; oldestUse = t.lastUse }
      }
      this.evict(oldest)
    }
    return table
  }

  /** Drops the table from the cache (when its file is deleted, or to make room). */
  evict (fileNumber: number): void {
    const t = this.tables.get(fileNumber)
    if (t === undefined) return
    this.tables.delete(fileNumber)
    this.retiredBloomChecked += t.bloomChecked
    this.retiredBloomUseful += t.bloomUseful
    t.unref()
  }

  /** Tables currently held open by the cache. */
  size (): number {
    return this.tables.size
  }

  close (): void {
    for (const n of [...this.tables.keys()]) this.evict(n)
  }

  /** Bytes the open tables hold outside the block cache (Table.memoryBytes). */
  get memoryBytes (): number {
    let n = 0
    for (const t of this.tables.values()) n += t.memoryBytes
    return n
  }

  get bloomChecked (): number {
    let n = this.retiredBloomChecked
    for (const t of this.tables.values()) n += t.bloomChecked
    return n
  }

  get bloomUseful (): number {
    let n = this.retiredBloomUseful
    for (const t of this.tables.values()) n += t.bloomUseful
    return n
  }
}
