// The in-memory write buffer: every write lands here (after the log) until the
// table is frozen at writeBufferSize and flushed to a level-0 table.
//
// A memtable holds every version of every key it was given, ordered by internal
// key (userKey ascending, seq descending), in a SkipList. Nothing is ever removed
// or overwritten, which is what makes reading it while writes continue safe: a
// reader either sees a new entry or it does not, and readers filter by seq anyway.
import type { InternalIterator } from '../iterators/internal-iterator'
import { assert, checks } from '../invariants'
import { SkipList, type SkipListState } from './skiplist'
import { RangeTombstoneIndex, type RangeTombstone } from '../range-tombstones'
import { batchCount, readBatchOp, batchOpOut, BATCH_HEADER_SIZE, OP_RANGE_DELETE } from '../wal/batch'
import { KIND_VALUE } from '../keys'

/**
 * An encoded batch at least this large, owning its memory (encodeBatch's
 * Buffer.allocUnsafe: from 4 KiB, half of Buffer.poolSize, a buffer is not a
 * slice of the shared pool), becomes an arena chunk itself
 * (SkipList.adopt): its entries are inserted without a copy.
 * Smaller ones are copied, so that small writes do not leave one buffer each.
 */
export const ADOPT_MIN_BYTES = 16 * 1024

/**
 * Batches of at least this many operations are inserted in key order
 * (addBatchSorted). Up to SORT_INDEX_RANGE operations: an operation's index
 * and its key's 32-bit prefix share one exactly representable number.
 */
const SORTED_INSERT_MIN = 32
const SORT_INDEX_RANGE = 2 ** 21
const SORTED_INSERT_MAX = SORT_INDEX_RANGE - 1
/** Per operation of a sorted batch insert: kind, key offset and length, value offset and length. */
const OP_INTS = 5
/** Scratch arrays for batches up to this many operations are kept between batches. */
const SORT_SCRATCH_KEEP = 65536
let sortKeys = new Float64Array(0)
let opInts = new Int32Array(0)

/** Bookkeeping cost charged per entry on top of key and value bytes. */
export const ENTRY_OVERHEAD = 48

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

  /**
   * Adds the operations of an encoded batch (lib/wal/batch.ts) that this process
   * wrote, operation i at firstSeq + i. A large payload becomes part of the
   * arena (see ADOPT_MIN_BYTES): the caller must never change it afterwards.
   * Returns the user bytes added (keys, values and range bounds).
   */
  addBatch (payload: Buffer, firstSeq: number): number {
    const count = batchCount(payload)
    const o = batchOpOut
    const list = this.list
    const adopt = payload.length >= ADOPT_MIN_BYTES && payload.byteOffset === 0 && payload.buffer.byteLength === payload.length
    const chunk = adopt ? list.adopt(payload) : -1
    if (count >= SORTED_INSERT_MIN && count <= SORTED_INSERT_MAX) return this.addBatchSorted(payload, firstSeq, count, chunk)
    let pos = BATCH_HEADER_SIZE
    let bytes = 0
    // Seqs of the first and last entries (range tombstones count as in add*: not at all).
    let firstEntry = 0
    let lastEntry = 0
    for (let i = 0; i < count; i++) {
      pos = readBatchOp(payload, pos)
      assert(pos >= 0, 'malformed batch operation')
      const kind = o.kind
      const seq = firstSeq + i
      if (kind === OP_RANGE_DELETE) {
        bytes += this.addRangeDeleteOp(payload, seq)
        continue
      }
      const valueLen = kind === KIND_VALUE ? o.valueLen : 0
      if (adopt) list.insertAt(chunk, o.keyOff, o.keyLen, seq, kind, o.valueOff, valueLen)
      else list.insertFrom(payload, o.keyOff, o.keyLen, seq, kind, payload, o.valueOff, valueLen)
      this.bytes += o.keyLen + valueLen + ENTRY_OVERHEAD
      bytes += o.keyLen + valueLen
      if (firstEntry === 0) firstEntry = seq
      lastEntry = seq
    }
    assert(pos === payload.length, 'batch has trailing bytes')
    this.noteSeqRange(firstEntry, lastEntry)
    return bytes
  }

  /**
   * addBatch() of a large batch, inserted in key order: the operations are
   * read first, sorted by their keys' first four bytes, then inserted, each
   * search continuing from the previous insert (SkipList.findSpliceFrom)
   * instead of descending from the top: a batch's keys fall close together in
   * the list once sorted. Operation i still gets seq firstSeq + i.
   */
  private addBatchSorted (payload: Buffer, firstSeq: number, count: number, chunk: number): number {
    let keys = sortKeys
    let ops = opInts
    if (keys.length < count) {
      keys = new Float64Array(count)
      ops = new Int32Array(count * OP_INTS)
      // Kept for the next batch unless outsized (then garbage after this one).
      if (count <= SORT_SCRATCH_KEEP) {
        sortKeys = keys
        opInts = ops
      }
    }
    const o = batchOpOut
    let pos = BATCH_HEADER_SIZE
    let bytes = 0
    let firstEntry = 0
    let lastEntry = 0
    let n = 0
    for (let i = 0; i < count; i++) {
      pos = readBatchOp(payload, pos)
      assert(pos >= 0, 'malformed batch operation')
      const kind = o.kind
      const seq = firstSeq + i
      if (kind === OP_RANGE_DELETE) {
        bytes += this.addRangeDeleteOp(payload, seq)
        continue
      }
      const valueLen = kind === KIND_VALUE ? o.valueLen : 0
      const k = o.keyOff
      const len = o.keyLen
      // The key's first four bytes, big-endian, zero padded: an order-preserving
      // number (ties are left to the list's own comparisons), then the index.
      const prefix = (len > 0 ? payload[k] * 0x1000000 : 0) + (len > 1 ? payload[k + 1] << 16 : 0) +
        (len > 2 ? payload[k + 2] << 8 : 0) + (len > 3 ? payload[k + 3] : 0)
      keys[n] = prefix * SORT_INDEX_RANGE + i
      const r = i * OP_INTS
      ops[r] = kind
      ops[r + 1] = k
      ops[r + 2] = len
      ops[r + 3] = o.valueOff
      ops[r + 4] = valueLen
      n++
      bytes += len + valueLen
      if (firstEntry === 0) firstEntry = seq
      lastEntry = seq
    }
    assert(pos === payload.length, 'batch has trailing bytes')
    const sorted = keys.subarray(0, n).sort()
    const list = this.list
    for (let j = 0; j < n; j++) {
      const i = sorted[j] % SORT_INDEX_RANGE
      const r = i * OP_INTS
      if (chunk >= 0) list.insertAt(chunk, ops[r + 1], ops[r + 2], firstSeq + i, ops[r], ops[r + 3], ops[r + 4])
      else list.insertFrom(payload, ops[r + 1], ops[r + 2], firstSeq + i, ops[r], payload, ops[r + 3], ops[r + 4])
      this.bytes += ops[r + 2] + ops[r + 4] + ENTRY_OVERHEAD
    }
    this.noteSeqRange(firstEntry, lastEntry)
    return bytes
  }

  /**
   * The range delete that readBatchOp just read from `payload` (batchOpOut), at
   * `seq`; returns its user bytes. The bounds are copied: small buffers of their
   * own rather than views pinning the payload.
   */
  private addRangeDeleteOp (payload: Buffer, seq: number): number {
    const o = batchOpOut
    const start = Buffer.from(payload.subarray(o.keyOff, o.keyOff + o.keyLen))
    const end = o.endLen < 0 ? undefined : Buffer.from(payload.subarray(o.endOff, o.endOff + o.endLen))
    this.addRangeTombstone(seq, start, end)
    return o.keyLen + (o.endLen < 0 ? 0 : o.endLen)
  }

  /** Widens [minSeq, maxSeq] to a batch's entries, first..last (first 0: the batch had none). */
  private noteSeqRange (first: number, last: number): void {
    if (last > this.maxSeq) this.maxSeq = last
    if (first !== 0 && (first < this.minSeq || this.minSeq === 0)) this.minSeq = first
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
   * The entries' arrays, for a flush on another thread (MemTable.iteratorOf).
   * REQUIRES: the memtable takes no more writes (it is frozen).
   */
  entriesState (): SkipListState {
    return this.list.state()
  }

  /** entriesState(), copied a slice at a time between turns of the event loop (SkipList.stateInSlices). */
  async entriesStateInSlices (): Promise<SkipListState> {
    return await this.list.stateInSlices()
  }

  /** An iterator over the entries of a memtable's entriesState(), e.g. on another thread. */
  static iteratorOf (state: SkipListState): InternalIterator {
    return new MemTableIterator(SkipList.fromState(state))
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

  seq (): number {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.seqAt(this.node)
  }

  kind (): number {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.kindAt(this.node)
  }

  keySource (): Buffer {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.chunkOf(this.node)
  }

  keyStart (): number {
    return this.list.keyOffset(this.node)
  }

  keyEnd (): number {
    return this.list.keyEnd(this.node)
  }

  valueSource (): Buffer {
    if (checks.paranoid) assert(this.node !== 0, 'MemTableIterator read while not valid')
    return this.list.chunkOf(this.node)
  }

  valueStart (): number {
    return this.list.valueOffset(this.node)
  }

  valueEnd (): number {
    return this.list.valueEnd(this.node)
  }

  close (): void {
    this.node = 0
  }
}
