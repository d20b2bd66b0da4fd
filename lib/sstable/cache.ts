// Byte-bounded LRU cache of raw data blocks (block.ts RawBlock), shared by all tables of a
// database. Entries are keyed by (tableId, block offset); a tableId names one
// open Table instance (see Table.id), so blocks of a table that was closed can
// never be confused with another file's, and eraseTable drops them eagerly.
//
// Contract: usedBytes() <= capacity after every call. A block whose charge alone
// exceeds the capacity is not cached. Cached blocks are immutable, so a caller
// may keep using a block after it has been evicted - if the block is pinned
// (RawBlock.pinned). The memory of an evicted block that was never pinned is
// kept (a few buffers at most) for the next block read: a cache miss then
// allocates nothing. Callers of get() that do not pin the block use it only
// within the current synchronous step (point lookups copy the value out).
//
// Block buffers are allocated in multiples of BUFFER_GRAIN bytes so that blocks
// of slightly different sizes can reuse one another's memory.
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

/** Block buffers are sized in multiples of this, so that one can be reused for another block. */
const BUFFER_GRAIN = 64
/**
 * Spare buffers kept per size class: memory outside the cache's budget, so kept
 * small (with 4 KiB blocks, a few classes of 8 buffers: under 150 KiB).
 */
const MAX_SPARE_PER_SIZE = 8

export class BlockCache {
  /** Buffers of evicted, never-pinned blocks, by size. */
  private readonly spare = new Map<number, Buffer[]>()
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

  /**
   * A buffer of at least `size` bytes for a block about to be read (and then
   * cached or dropped): a recycled one if available, else a fresh one.
   */
  takeBuffer (size: number): Buffer {
    const cap = Math.ceil(size / BUFFER_GRAIN) * BUFFER_GRAIN
    // The exact size class, else one or two grains larger (blocks of a table
    // vary by about an entry's size).
    for (let c = cap; c <= cap + 2 * BUFFER_GRAIN; c += BUFFER_GRAIN) {
      const list = this.spare.get(c)
      if (list !== undefined && list.length > 0) return list.pop()!
    }
    return Buffer.allocUnsafeSlow(cap)
  }

  private recycle (block: RawBlock): void {
    if (block.pinned) return
    const buf = block.contents
    const cap = buf.buffer.byteLength
    // Only whole, grain-sized allocations of our own (takeBuffer's) are reused.
    if (buf.byteOffset !== 0 || cap % BUFFER_GRAIN !== 0) return
    let list = this.spare.get(cap)
    if (list === undefined) {
      list = []
      this.spare.set(cap, list)
    }
    if (list.length < MAX_SPARE_PER_SIZE) list.push(Buffer.from(buf.buffer))
  }

  /** Drops every block of a table (when its file is closed or deleted). */
  eraseTable (tableId: number): void {
    const byOffset = this.tables.get(tableId)
    if (byOffset === undefined) return
    for (const e of byOffset.values()) {
      this.unlink(e)
      this.used -= e.charge
      this.recycle(e.block)
    }
    this.tables.delete(tableId)
  }

  private remove (e: Entry, byOffset: Map<number, Entry> | undefined): void {
    this.unlink(e)
    this.used -= e.charge
    this.recycle(e.block)
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
