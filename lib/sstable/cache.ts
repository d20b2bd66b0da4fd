// Byte-bounded LRU cache of raw data blocks (block.ts RawBlock), shared by all tables of a
// database. Entries are keyed by (tableId, block offset); a tableId names one
// open Table instance (see Table.id), so blocks of a table that was closed can
// never be confused with another file's, and eraseTable drops them eagerly.
//
// Contract: usedBytes() <= capacity after every call. A block whose charge alone
// exceeds the capacity is not cached. Cached blocks are immutable, so a caller
// may keep using a block after it has been evicted.
import type { RawBlock } from './block'

interface Entry {
  tableId: number
  offset: number
  block: RawBlock
  charge: number
  // LRU list: `newer` points toward the head (most recently used).
  newer: Entry | null
  older: Entry | null
}

export class BlockCache {
  private readonly tables = new Map<number, Map<number, Entry>>()
  private head: Entry | null = null // most recently used
  private tail: Entry | null = null // least recently used
  private used = 0
  private hitCount = 0
  private missCount = 0

  constructor (readonly capacityBytes: number) {}

  get hits (): number {
    return this.hitCount
  }

  get misses (): number {
    return this.missCount
  }

  usedBytes (): number {
    return this.used
  }

  get (tableId: number, offset: number): RawBlock | undefined {
    const e = this.tables.get(tableId)?.get(offset)
    if (e === undefined) {
      this.missCount++
      return undefined
    }
    this.hitCount++
    if (e !== this.head) {
      this.unlink(e)
      this.pushHead(e)
    }
    return e.block
  }

  set (tableId: number, offset: number, block: RawBlock, charge: number): void {
    if (charge > this.capacityBytes) return
    let byOffset = this.tables.get(tableId)
    if (byOffset === undefined) {
      byOffset = new Map()
      this.tables.set(tableId, byOffset)
    }
    const old = byOffset.get(offset)
    if (old !== undefined) this.remove(old, byOffset)
    const e: Entry = { tableId, offset, block, charge, newer: null, older: null }
    byOffset.set(offset, e)
    this.tables.set(tableId, byOffset) // remove() may have dropped an emptied map
    this.pushHead(e)
    this.used += charge
    while (this.used > this.capacityBytes && this.tail !== null) {
      const victim = this.tail
      this.remove(victim, this.tables.get(victim.tableId))
    }
  }

  /** Drops every block of a table (when its file is closed or deleted). */
  eraseTable (tableId: number): void {
    const byOffset = this.tables.get(tableId)
    if (byOffset === undefined) return
    for (const e of byOffset.values()) {
      this.unlink(e)
      this.used -= e.charge
    }
    this.tables.delete(tableId)
  }

  private remove (e: Entry, byOffset: Map<number, Entry> | undefined): void {
    this.unlink(e)
    this.used -= e.charge
    if (byOffset !== undefined) {
      byOffset.delete(e.offset)
      if (byOffset.size === 0) this.tables.delete(e.tableId)
    }
  }

  private unlink (e: Entry): void {
    if (e.newer !== null) e.newer.older = e.older
    else this.head = e.older
    if (e.older !== null) e.older.newer = e.newer
    else this.tail = e.newer
    e.newer = e.older = null
  }

  private pushHead (e: Entry): void {
    e.older = this.head
    e.newer = null
    if (this.head !== null) this.head.newer = e
    this.head = e
    if (this.tail === null) this.tail = e
  }
}
