// The in-memory write buffer: every write lands here (after the log) until the
// table is frozen at writeBufferSize and flushed to a level-0 table.
//
// A memtable holds every version of every key it was given, ordered by internal
// key (userKey ascending, seq descending), in a SkipList. Nothing is ever removed
// or overwritten, which is what makes reading it while writes continue safe: a
// reader either sees a new entry or it does not, and readers filter by seq anyway.
import type { InternalIterator } from '../iterators/internal-iterator'
import { assert, checks } from '../invariants'
import { SkipList } from './skiplist'
import { RangeTombstoneIndex, type RangeTombstone } from '../range-tombstones'

/** Bookkeeping cost charged per entry on top of key and value bytes. */
const ENTRY_OVERHEAD = 48

export interface MemTableEntry {
  kind: number
  value: Buffer
  seq: number
}

export class MemTable {
  private readonly list = new SkipList()
  private bytes = 0
  private minSeq = 0
  private maxSeq = 0
  /** Range tombstones written to this memtable (lib/range-tombstones.ts), in seq order. */
  private readonly tombstones: RangeTombstone[] = []
  private tombstoneIndex = RangeTombstoneIndex.EMPTY
  private indexedTombstones = 0

  /**
   * Adds one entry. REQUIRES: (userKey, seq) is not already present (seqs are
   * unique). The key and value bytes are copied (the caller keeps its buffers).
   */
  add (seq: number, kind: number, userKey: Uint8Array, value: Uint8Array): void {
    this.list.insert(userKey, seq, kind, value)
    this.bytes += userKey.length + value.length + ENTRY_OVERHEAD
    if (seq > this.maxSeq) this.maxSeq = seq
    if (seq < this.minSeq || this.minSeq === 0) this.minSeq = seq
  }

  /**
   * add() of the key src[keyOff, keyOff + keyLen) and the value
   * src[valueOff, valueOff + valueLen), e.g. an operation of an encoded batch:
   * both are copied, no view is made.
   */
  addFrom (seq: number, kind: number, src: Uint8Array, keyOff: number, keyLen: number, valueOff: number, valueLen: number): void {
    this.list.insertFrom(src, keyOff, keyLen, seq, kind, src, valueOff, valueLen)
    this.bytes += keyLen + valueLen + ENTRY_OVERHEAD
    if (seq > this.maxSeq) this.maxSeq = seq
    if (seq < this.minSeq || this.minSeq === 0) this.minSeq = seq
  }

  /** Adds a range tombstone: [start, end) deleted as of `seq` (end undefined: no end). */
  addRangeTombstone (seq: number, start: Buffer, end: Buffer | undefined): void {
    this.tombstones.push({ start, end, seq })
    this.bytes += start.length + (end?.length ?? 0) + ENTRY_OVERHEAD
  }

  rangeTombstoneCount (): number {
    return this.tombstones.length
  }

  /** The range tombstones, in the order written. */
  rangeTombstones (): readonly RangeTombstone[] {
    return this.tombstones
  }

  /** An index over the range tombstones written so far (rebuilt after each addition, on demand). */
  rangeTombstoneIndex (): RangeTombstoneIndex {
    if (this.indexedTombstones !== this.tombstones.length) {
      this.tombstoneIndex = RangeTombstoneIndex.build(this.tombstones)
      this.indexedTombstones = this.tombstones.length
    }
    return this.tombstoneIndex
  }

  /** True if nothing (no entry, no range tombstone) was added. */
  isEmpty (): boolean {
    return this.list.size === 0 && this.tombstones.length === 0
  }

  /** Newest entry for `userKey` with seq <= snapshotSeq, or undefined. Its value is a copy the caller owns. */
  get (userKey: Uint8Array, snapshotSeq: number): MemTableEntry | undefined {
    const list = this.list
    const node = list.findVisible(userKey, snapshotSeq)
    if (node === 0) return undefined
    return { kind: list.kindAt(node), value: Buffer.from(list.valueAt(node)), seq: list.seqAt(node) }
  }

  /** Approximate memory use in bytes: keys + values + a fixed overhead per entry. */
  approximateBytes (): number {
    return this.bytes
  }

  entryCount (): number {
    return this.list.size
  }

  /** Smallest seq added (0 while empty). */
  get firstSeq (): number {
    return this.minSeq
  }

  /** Largest seq added (0 while empty). */
  get lastSeq (): number {
    return this.maxSeq
  }

  /** User key of the first entry in internal order (undefined while empty). */
  get smallestKey (): Buffer | undefined {
    const node = this.list.first()
    return node === 0 ? undefined : this.list.keyAt(node)
  }

  /** User key of the last entry in internal order (undefined while empty). */
  get largestKey (): Buffer | undefined {
    const node = this.list.last()
    return node === 0 ? undefined : this.list.keyAt(node)
  }

  /**
   * An iterator over all entries, both directions. It stays usable while add()
   * continues; it may or may not show entries added after it was positioned.
   */
  iterator (): InternalIterator {
    return new MemTableIterator(this.list)
  }
}

/** A cursor over the skiplist: just a node index (0 = not positioned). */
class MemTableIterator implements InternalIterator {
  private node = 0

  constructor (private readonly list: SkipList) {}

  valid (): boolean {
    return this.node !== 0
  }

  seekToFirst (): void {
    this.node = this.list.first()
  }

  seekToLast (): void {
    this.node = this.list.last()
  }

  seek (userKey: Uint8Array, seq: number): void {
    this.node = this.list.seekGE(userKey, seq)
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    this.node = this.list.seekLE(userKey, seq)
  }

  next (): void {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator.next() while not valid')
    this.node = this.list.nextOf(this.node)
  }

  prev (): void {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator.prev() while not valid')
    this.node = this.list.prevOf(this.node)
  }

  userKey (): Buffer {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.keyAt(this.node)
  }

  seq (): number {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.seqAt(this.node)
  }

  kind (): number {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.kindAt(this.node)
  }

  value (): Buffer {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.valueAt(this.node)
  }

  close (): void {
    this.node = 0
  }
}
