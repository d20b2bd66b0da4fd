// Byte-bounded cache of raw data blocks (raw-block.ts), shared by all tables of a
// database. Each open Table owns a BlockSlots (one slot per data block), so a
// lookup is an array index, not a hash: blocks of a table that was closed can
// never be confused with another file's, and eraseTable drops them eagerly.
//
// Eviction is CLOCK (second chance), an approximation of LRU that costs a hit
// one store (the entry's reference bit) instead of relinking a list: the hand
// sweeps the ring of entries, clearing reference bits, and evicts the first
// entry that was not referenced since the hand last passed it. New entries are
// inserted just behind the hand (the last place it will reach).
//
// Contract: usedBytes() <= capacity after every call. A block whose charge alone
// exceeds the capacity is not cached. Cached blocks are immutable, so a caller
// may keep using a block after it has been evicted - while it holds a pin
// (pin / release: an iterator positioned on the block), or forever if the block
// is pinned for good (RawBlock.pinned). The memory of a block that is out of the
// cache and unpinned is kept (a few buffers at most) for the next block read: a
// cache miss then allocates nothing. Callers of get() that do not pin the block
// use it only within the current synchronous step (point lookups copy the value
// out).
//
// Block buffers are allocated in multiples of BUFFER_GRAIN bytes so that blocks
// of slightly different sizes can reuse one another's memory.
import type { RawBlock } from './raw-block'

interface Entry {
  slots: BlockSlots
  index: number
  block: RawBlock
  charge: number
  referenced: boolean
  // The CLOCK ring (circular, doubly linked).
  next: Entry
  prev: Entry
}

/** One table's view of the cache: slot i holds data block i, if cached. */
export class BlockSlots {
  readonly entries: Array<Entry | undefined>
  constructor (blocks: number) {
    this.entries = new Array(blocks).fill(undefined)
  }
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
  /** The CLOCK hand: the next entry to consider for eviction (null: empty). */
  private hand: Entry | null = null
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

  /** Slots for a table of `blocks` data blocks. */
  slotsFor (blocks: number): BlockSlots {
    return new BlockSlots(blocks)
  }

  get (slots: BlockSlots, index: number): RawBlock | undefined {
    const e = slots.entries[index]
    if (e === undefined) {
      this.missCount++
      return undefined
    }
    this.hitCount++
    e.referenced = true
    return e.block
  }

  set (slots: BlockSlots, index: number, block: RawBlock, charge: number): void {
    if (charge > this.capacityBytes) return
    const old = slots.entries[index]
    if (old !== undefined) this.remove(old)
    // Make room first, so that the new entry is never its own victim.
    while (this.used + charge > this.capacityBytes && this.hand !== null) this.evictOne()
    const e: Entry = { slots, index, block, charge, referenced: false, next: null as unknown as Entry, prev: null as unknown as Entry }
    const h = this.hand
    if (h === null) {
      e.next = e.prev = e
      this.hand = e
    } else {
      // Behind the hand: the last entry the sweep reaches.
      e.next = h
      e.prev = h.prev
      h.prev.next = e
      h.prev = e
    }
    slots.entries[index] = e
    block.cached = true
    this.used += charge
  }

  /** Keeps `block`'s memory from being recycled until release(block). */
  pin (block: RawBlock): void {
    block.pins++
  }

  /**
   * Drops a pin taken with pin(). The block's memory is recycled if it is out
   * of the cache and this was its last pin: the caller must not use the block
   * (nor views of it) any more.
   */
  release (block: RawBlock): void {
    if (--block.pins === 0 && !block.cached) this.recycle(block)
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

  /** Returns a buffer from takeBuffer() that no block came to own (it may be handed out again). */
  giveBack (buf: Buffer): void {
    this.keepSpare(buf)
  }

  /** Drops every block of a table (when its file is closed or deleted). */
  eraseTable (slots: BlockSlots): void {
    const entries = slots.entries
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]
      if (e !== undefined) this.remove(e)
    }
  }

  private evictOne (): void {
    let e = this.hand!
    while (e.referenced) {
      e.referenced = false
      e = e.next
    }
    this.hand = e
    this.remove(e)
  }

  private recycle (block: RawBlock): void {
    if (block.pinned || block.pins > 0) return
    this.keepSpare(block.contents)
  }

  /** Keeps the whole memory of `buf` for takeBuffer(), if it is one of ours and there is room. */
  private keepSpare (buf: Buffer): void {
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

  private remove (e: Entry): void {
    if (e.next === e) {
      this.hand = null
    } else {
      e.prev.next = e.next
      e.next.prev = e.prev
      if (this.hand === e) this.hand = e.next
    }
    e.slots.entries[e.index] = undefined
    this.used -= e.charge
    e.block.cached = false
    this.recycle(e.block)
  }
}
