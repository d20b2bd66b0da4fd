// The memtable's ordered index: an insert-only skiplist of internal-key entries
// (userKey ascending, seq descending; see compareInternal in lib/keys.ts).
//
// Layout. Nodes are not objects. Each node is a record in one Int32Array,
// `nodes`, and is identified by the offset of its record:
//
//   +------+------+------+-------+-------+-----+---------+-----+-------------+
//   | pre0 | pre1 | pre2 | seqHi | seqLo | row | link[0] | ... | link[h - 1] |
//   +------+------+------+-------+-------+-----+---------+-----+-------------+
//
//   pre0-pre2   the first 12 bytes of the user key (see "Key prefixes")
//   seqHi/Lo    the seq, split at bit 32
//   row         index of the node's entry in `rows` (key and value) and `kinds`
//   link[l]     offset of the next node on level l (0: none)
//
// A search step therefore reads a link and the prefix it leads to from the same
// few bytes of one record, typically one cache line, instead of chasing a node
// object, its `next` array and its key Buffer. An insert allocates nothing but
// its slot in the key/value arrays (amortised), and the garbage collector sees a
// handful of large arrays instead of millions of small objects.
//
// The record at offset 0 is the head (MAX_HEIGHT links, no entry). Since no link
// ever points back at the head, 0 doubles as "no node", which lets the
// zero-filled tail of `nodes` stand for empty towers.
//
// Key prefixes. pre0, pre1 and pre2 hold key bytes 0-3, 4-7 and 8-11,
// big-endian, zero padded, with the sign bit flipped so that signed int32
// comparison orders them as unsigned. For bytewise order, prefix(a) < prefix(b)
// implies a < b (zero padding never sorts a key after its own extensions), so a
// search compares the prefixes first and reads the key bytes only when they
// tie; when they tie, the first min(12, both lengths) bytes are equal and the
// byte comparison starts after them. Twelve bytes rather than eight: keys
// often share a first 8 bytes (ids such as "ord_00012345", a sublevel's
// prefix), and then the third word still decides most comparisons without a
// read of the arena (measured: JSON documents under such ids, filled in
// batches of 100, spent 33% of the main thread in the skiplist search with two
// words).
//
// Node offsets stay valid forever (nothing is removed) and an insert only adds
// links, so a cursor holding an offset keeps working while inserts continue.
// `nodes` is replaced when it grows, so readers must always go through the
// list and never keep the array.
//
// Keys and values. An insert copies the key and the value, back to back, into
// an arena of large chunks; row r of `rows` holds [chunk, key offset, key
// length, value offset, value length]. A chunk may also be a buffer the list
// adopts (`adopt`): an encoded write batch large enough to serve as a chunk
// itself, whose entries are then inserted without a copy (insertAt). The list
// thus holds no object per entry (a Buffer per key and per value would be millions of long-lived objects for the garbage collector
// to trace and promote); keyAt/valueAt make short-lived views on demand, valid
// forever (arena bytes are never overwritten).
//
// Handing over. `state()` copies a frozen list (one that takes no more inserts):
// its index arrays and arena chunks, each a buffer of its own, so that another
// thread (a flush on a worker, hosts/node/job-thread.ts) can read it: posting
// the state transfers the copies (no clone), and the worker transfers them
// back when done, so that no memory stays pinned by a worker that is idle and
// never collects garbage. `SkipList.fromState` rebuilds a read-only list from it.
import { compareRange } from '../util/coding'
import { assert } from '../invariants'

/** Levels of the tallest tower. With branching 4 this suits lists of up to ~4^12 = 16M entries. */
export const MAX_HEIGHT = 12

const PRE0 = 0
const PRE1 = 1
const PRE2 = 2
const SEQ_HI = 3
const SEQ_LO = 4
const ROW = 5
const LINKS = 6
/** Key bytes held in a node's prefix words. */
const PREFIX_BYTES = 12

const HEAD = 0
const NIL = 0
const EMPTY = Buffer.alloc(0)
const TWO_32 = 0x100000000
/** Arena chunk size: entries are copied into chunks of this size (or their own size, if larger). */
const CHUNK_BYTES = 256 * 1024
// rows: ROW_INTS ints per entry.
const ROW_INTS = 5
const R_CHUNK = 0
const R_OFF = 1
const R_KEYLEN = 2
const R_VALOFF = 3
const R_VALLEN = 4

/**
 * Bytes [from, from + 4) of the key src[off, off + len), big-endian, zero
 * padded, sign-flipped: compare as signed int32.
 */
function prefixWord (src: Uint8Array, off: number, len: number, from: number): number {
  if (len >= from + 4) {
    const at = off + from
    return ((src[at] << 24) | (src[at + 1] << 16) | (src[at + 2] << 8) | src[at + 3]) ^ 0x80000000
  }
  let w = 0
  for (let i = from; i < from + 4; i++) w = (w << 8) | (i < len ? src[off + i] : 0)
  return w ^ 0x80000000
}

/** A copy of a list, as posted to another thread (see "Handing over"); read-only once handed out. */
export interface SkipListState {
  nodes: Int32Array
  end: number
  count: number
  rows: Int32Array
  kinds: Uint8Array
  chunks: Uint8Array[]
  height: number
  tails: Int32Array
}

export class SkipList {
  private nodes: Int32Array
  /** Offset at which the next record goes. */
  private end = LINKS + MAX_HEIGHT
  private count = 0
  /** Per entry: chunk index, offset, key length, value length. */
  private rows: Int32Array
  private readonly chunks: Buffer[] = []
  private chunk: Buffer = EMPTY
  private chunkPos = 0
  /** Index of `chunk` in `chunks` (adopted buffers may follow it there). */
  private chunkIndex = -1
  private kinds: Uint8Array
  /** Height of the tallest tower so far; searches start there. */
  private height = 1
  /** Last node on each level (HEAD while a level is empty); makes appends in key order O(height). */
  private readonly tails = new Int32Array(MAX_HEIGHT)
  /**
   * Predecessors found by an insert's search; reused so an insert allocates
   * nothing here. Between inserts it holds, on every level, the last node <= the
   * last inserted node (`lastInserted`): the finger that findSpliceFrom starts from.
   */
  private readonly splice = new Int32Array(MAX_HEIGHT)
  /** The node inserted last (HEAD: none yet). */
  private lastInserted = HEAD
  /** xorshift32 state for tower heights; a fixed seed keeps the shape reproducible. */
  private rng: number
  /** A list rebuilt by fromState: read only. */
  private frozen = false

  constructor (seed = 0x2545f491) {
    this.nodes = new Int32Array(8192)
    this.kinds = new Uint8Array(1024)
    this.rows = new Int32Array(ROW_INTS * 1024)
    this.rng = (seed | 0) === 0 ? 1 : seed | 0
  }

  /**
   * A copy of the list, for a reader on another thread (see "Handing over"):
   * the used part of the index arrays and the arena chunks, each in a buffer
   * of its own (a memcpy), which the caller may transfer (stateTransferList).
   * REQUIRES: no insert after this call (the list is frozen).
   */
  state (): SkipListState {
    return {
      nodes: this.nodes.slice(0, this.end),
      end: this.end,
      count: this.count,
      rows: this.rows.slice(0, this.count * ROW_INTS),
      kinds: this.kinds.slice(0, this.count),
      chunks: this.chunks.map((c) => new Uint8Array(c.buffer, c.byteOffset, c.byteLength).slice()),
      height: this.height,
      tails: this.tails.slice()
    }
  }

  /**
   * state(), copying one arena chunk at a time and letting the event loop turn
   * between chunks once a copy took more than `sliceMs` (a memtable is
   * megabytes: copied at once it would hold the loop for many milliseconds).
   * REQUIRES: no insert from this call on (the list is frozen).
   */
  async stateInSlices (sliceMs = 1): Promise<SkipListState> {
    const chunks: Uint8Array[] = []
    let sliceStart = performance.now()
    for (const c of this.chunks) {
      if (performance.now() - sliceStart > sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        sliceStart = performance.now()
      }
      chunks.push(new Uint8Array(c.buffer, c.byteOffset, c.byteLength).slice())
    }
    return {
      nodes: this.nodes.slice(0, this.end),
      end: this.end,
      count: this.count,
      rows: this.rows.slice(0, this.count * ROW_INTS),
      kinds: this.kinds.slice(0, this.count),
      chunks,
      height: this.height,
      tails: this.tails.slice()
    }
  }

  /** The buffers of a state(), which postMessage may transfer: each belongs to that state alone. */
  static stateTransferList (state: SkipListState): ArrayBuffer[] {
    const out = [state.nodes.buffer, state.rows.buffer, state.kinds.buffer, state.tails.buffer] as ArrayBuffer[]
    for (const c of state.chunks) out.push(c.buffer as ArrayBuffer)
    return out
  }

  /** A list over `state` (as received from another thread), for reading only. */
  static fromState (state: SkipListState): SkipList {
    const list = new SkipList()
    list.nodes = state.nodes
    list.end = state.end
    list.count = state.count
    list.rows = state.rows
    list.kinds = state.kinds
    for (const c of state.chunks) list.chunks.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength))
    list.chunk = EMPTY
    list.chunkPos = 0
    list.height = state.height
    list.tails.set(state.tails)
    list.frozen = true
    return list
  }

  /** Number of entries. */
  get size (): number {
    return this.count
  }

  /**
   * Inserts an entry. REQUIRES: no entry with the same (userKey, seq) exists. The
   * key and value bytes are copied into the arena.
   */
  insert (userKey: Uint8Array, seq: number, kind: number, value: Uint8Array): void {
    this.insertFrom(userKey, 0, userKey.length, seq, kind, value, 0, value.length)
  }

  /**
   * insert() of the key src[keyOff, keyOff + keyLen) and the value
   * valueSrc[valueOff, valueOff + valueLen): both are copied into the arena, so
   * they may be ranges of a larger buffer (an encoded batch) that the caller keeps.
   */
  insertFrom (src: Uint8Array, keyOff: number, keyLen: number, seq: number, kind: number, valueSrc: Uint8Array, valueOff: number, valueLen: number): void {
    assert(!this.frozen, 'insert into a read-only skiplist')
    // A first entry with an empty key and value needs a chunk too (its row names one).
    if (this.chunkPos + keyLen + valueLen > this.chunk.length || this.chunkIndex < 0) {
      this.chunk = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, keyLen + valueLen))
      this.chunks.push(this.chunk)
      this.chunkIndex = this.chunks.length - 1
      this.chunkPos = 0
    }
    const chunk = this.chunk
    const at = this.chunkPos
    // Short copies by hand (TypedArray.set costs more than a few bytes' loop).
    if (keyLen <= 16) for (let i = 0; i < keyLen; i++) chunk[at + i] = src[keyOff + i]
    else chunk.set(src.subarray(keyOff, keyOff + keyLen), at)
    const vat = at + keyLen
    if (valueLen <= 16) for (let i = 0; i < valueLen; i++) chunk[vat + i] = valueSrc[valueOff + i]
    else chunk.set(valueSrc.subarray(valueOff, valueOff + valueLen), vat)
    this.chunkPos = vat + valueLen
    this.insertAt(this.chunkIndex, at, keyLen, seq, kind, vat, valueLen)
  }

  /**
   * Makes `buf` a chunk of the arena, as is: its bytes must never change
   * afterwards.
   * Returns its chunk index, for insertAt.
   */
  adopt (buf: Buffer): number {
    assert(!this.frozen, 'adopt into a read-only skiplist')
    this.chunks.push(buf)
    return this.chunks.length - 1
  }

  /**
   * Inserts an entry whose key and value are already in the arena: key
   * chunk[keyOff, keyOff + keyLen), value chunk[valueOff, valueOff + valueLen).
   * REQUIRES: no entry with the same (key, seq) exists.
   */
  insertAt (chunkIndex: number, keyOff: number, keyLen: number, seq: number, kind: number, valueOff: number, valueLen: number): void {
    const src = this.chunks[chunkIndex]
    const pre0 = prefixWord(src, keyOff, keyLen, 0)
    const pre1 = prefixWord(src, keyOff, keyLen, 4)
    const pre2 = prefixWord(src, keyOff, keyLen, 8)
    const splice = this.splice
    const last = this.tails[0]
    if (last !== HEAD && this.compareNode(last, src, keyOff, keyLen, pre0, pre1, pre2, seq) < 0) {
      // Append after the current largest entry: on every level the predecessor
      // is that level's tail. Loads in key order take this path and skip the search.
      for (let l = 0; l < MAX_HEIGHT; l++) splice[l] = this.tails[l]
    } else if (this.lastInserted !== HEAD && this.compareNode(this.lastInserted, src, keyOff, keyLen, pre0, pre1, pre2, seq) < 0) {
      // After the last inserted entry (a batch inserted in key order, see
      // MemTable.addBatch): search on from where that insert left off.
      this.findSpliceFrom(src, keyOff, keyLen, pre0, pre1, pre2, seq)
    } else {
      this.findSplice(src, keyOff, keyLen, pre0, pre1, pre2, seq)
    }

    const h = this.randomHeight()
    if (h > this.height) this.height = h
    const row = this.count
    if (row === this.kinds.length) {
      const kinds = new Uint8Array(row * 2)
      kinds.set(this.kinds)
      this.kinds = kinds
      const rows = new Int32Array(row * 2 * ROW_INTS)
      rows.set(this.rows)
      this.rows = rows
    }
    const r = row * ROW_INTS
    const rows = this.rows
    rows[r + R_CHUNK] = chunkIndex
    rows[r + R_OFF] = keyOff
    rows[r + R_KEYLEN] = keyLen
    rows[r + R_VALOFF] = valueOff
    rows[r + R_VALLEN] = valueLen
    this.kinds[row] = kind
    this.count = row + 1

    if (this.end + LINKS + h > this.nodes.length) {
      const nodes = new Int32Array(this.nodes.length * 2)
      nodes.set(this.nodes)
      this.nodes = nodes
    }
    const nodes = this.nodes
    const node = this.end
    this.end = node + LINKS + h
    nodes[node + PRE0] = pre0
    nodes[node + PRE1] = pre1
    nodes[node + PRE2] = pre2
    nodes[node + SEQ_HI] = Math.floor(seq / TWO_32)
    nodes[node + SEQ_LO] = seq | 0
    nodes[node + ROW] = row
    for (let l = 0; l < h; l++) {
      const at = splice[l] + LINKS + l
      const succ = nodes[at]
      nodes[node + LINKS + l] = succ
      nodes[at] = node
      if (succ === NIL) this.tails[l] = node
      // The finger: the last node <= the new one on this level is the new one.
      splice[l] = node
    }
    this.lastInserted = node
  }

  /** First node, or 0 if the list is empty. */
  first (): number {
    return this.nodes[HEAD + LINKS]
  }

  /** Last node, or 0 if the list is empty. */
  last (): number {
    return this.tails[0]
  }

  /** Successor of `node` (0 at the end). */
  nextOf (node: number): number {
    return this.nodes[node + LINKS]
  }

  /** Predecessor of `node` (0 at the start). O(log n): a search from the head. */
  prevOf (node: number): number {
    const nodes = this.nodes
    const key = this.keyAt(node)
    return this.findLast(key, 0, key.length, nodes[node + PRE0], nodes[node + PRE1], nodes[node + PRE2], this.seqAt(node), 0)
  }

  /** First node >= (userKey, seq) in internal order, or 0. */
  seekGE (userKey: Uint8Array, seq: number): number {
    const len = userKey.length
    return this.findGreaterOrEqual(userKey, 0, len, prefixWord(userKey, 0, len, 0), prefixWord(userKey, 0, len, 4), prefixWord(userKey, 0, len, 8), seq)
  }

  /** Last node <= (userKey, seq) in internal order, or 0. */
  seekLE (userKey: Uint8Array, seq: number): number {
    const len = userKey.length
    return this.findLast(userKey, 0, len, prefixWord(userKey, 0, len, 0), prefixWord(userKey, 0, len, 4), prefixWord(userKey, 0, len, 8), seq, 1)
  }

  /** The newest node for `userKey` with seq <= snapshotSeq, or 0. */
  findVisible (userKey: Uint8Array, snapshotSeq: number): number {
    const len = userKey.length
    const pre0 = prefixWord(userKey, 0, len, 0)
    const pre1 = prefixWord(userKey, 0, len, 4)
    const pre2 = prefixWord(userKey, 0, len, 8)
    const node = this.findGreaterOrEqual(userKey, 0, len, pre0, pre1, pre2, snapshotSeq)
    if (node === NIL) return NIL
    const nodes = this.nodes
    if (nodes[node + PRE0] !== pre0 || nodes[node + PRE1] !== pre1 || nodes[node + PRE2] !== pre2) return NIL
    return this.compareKey(nodes[node + ROW], userKey, 0, len) === 0 ? node : NIL
  }

  /** A view of the node's user key (arena bytes, never overwritten). */
  keyAt (node: number): Buffer {
    const r = this.nodes[node + ROW] * ROW_INTS
    const rows = this.rows
    const off = rows[r + R_OFF]
    return this.chunks[rows[r + R_CHUNK]].subarray(off, off + rows[r + R_KEYLEN])
  }

  /** The arena chunk holding the node's key and value (see keyOffset, valueOffset). */
  chunkOf (node: number): Buffer {
    return this.chunks[this.rows[this.nodes[node + ROW] * ROW_INTS + R_CHUNK]]
  }

  /** Where the node's key starts in chunkOf(node). */
  keyOffset (node: number): number {
    return this.rows[this.nodes[node + ROW] * ROW_INTS + R_OFF]
  }

  /** Where the node's key ends in chunkOf(node). */
  keyEnd (node: number): number {
    const r = this.nodes[node + ROW] * ROW_INTS
    return this.rows[r + R_OFF] + this.rows[r + R_KEYLEN]
  }

  /** Where the node's value starts in chunkOf(node). */
  valueOffset (node: number): number {
    return this.rows[this.nodes[node + ROW] * ROW_INTS + R_VALOFF]
  }

  /** Where the node's value ends in chunkOf(node). */
  valueEnd (node: number): number {
    const r = this.nodes[node + ROW] * ROW_INTS
    return this.rows[r + R_VALOFF] + this.rows[r + R_VALLEN]
  }

  /** A view of the node's value (arena bytes, never overwritten). */
  valueAt (node: number): Buffer {
    const r = this.nodes[node + ROW] * ROW_INTS
    const rows = this.rows
    const valueLen = rows[r + R_VALLEN]
    if (valueLen === 0) return EMPTY
    const off = rows[r + R_VALOFF]
    return this.chunks[rows[r + R_CHUNK]].subarray(off, off + valueLen)
  }

  /**
   * Bytewise comparison of row `row`'s user key with the key src[off, off + len).
   * REQUIRES: their prefix words are equal (so are their first min(PREFIX_BYTES, both lengths) bytes).
   */
  private compareKey (row: number, src: Uint8Array, off: number, len: number): number {
    const r = row * ROW_INTS
    const rows = this.rows
    const at = rows[r + R_OFF]
    const keyLen = rows[r + R_KEYLEN]
    const skip = Math.min(PREFIX_BYTES, keyLen, len)
    return compareRange(this.chunks[rows[r + R_CHUNK]], at + skip, at + keyLen, src, off + skip, off + len)
  }

  seqAt (node: number): number {
    return this.nodes[node + SEQ_HI] * TWO_32 + (this.nodes[node + SEQ_LO] >>> 0)
  }

  kindAt (node: number): number {
    return this.kinds[this.nodes[node + ROW]]
  }

  /** Sign of node vs (key src[off, off + len), seq) in internal order; pre0-pre2 are the key's prefix words. */
  private compareNode (node: number, src: Uint8Array, off: number, len: number, pre0: number, pre1: number, pre2: number, seq: number): number {
    const nodes = this.nodes
    let p = nodes[node + PRE0]
    if (p !== pre0) return p < pre0 ? -1 : 1
    p = nodes[node + PRE1]
    if (p !== pre1) return p < pre1 ? -1 : 1
    p = nodes[node + PRE2]
    if (p !== pre2) return p < pre2 ? -1 : 1
    const c = this.compareKey(nodes[node + ROW], src, off, len)
    if (c !== 0) return c
    return seq - (nodes[node + SEQ_HI] * TWO_32 + (nodes[node + SEQ_LO] >>> 0))
  }

  private findGreaterOrEqual (src: Uint8Array, off: number, len: number, pre0: number, pre1: number, pre2: number, seq: number): number {
    const nodes = this.nodes
    let x = HEAD
    // The node that stopped the descent on the level above: if it is also next on
    // this level we already know it is >= the target and need not compare it again.
    let known = NIL
    for (let l = this.height - 1; ; l--) {
      let next = nodes[x + LINKS + l]
      while (next !== NIL && next !== known && this.compareNode(next, src, off, len, pre0, pre1, pre2, seq) < 0) {
        x = next
        next = nodes[x + LINKS + l]
      }
      if (l === 0) return next
      known = next
    }
  }

  /**
   * Last node whose comparison with the target is < `limit`: limit 0 finds the
   * last node < target, limit 1 the last node <= target. Returns 0 (the head) if
   * there is none.
   */
  private findLast (src: Uint8Array, off: number, len: number, pre0: number, pre1: number, pre2: number, seq: number, limit: number): number {
    const nodes = this.nodes
    let x = HEAD
    let known = NIL
    for (let l = this.height - 1; ; l--) {
      let next = nodes[x + LINKS + l]
      while (next !== NIL && next !== known && this.compareNode(next, src, off, len, pre0, pre1, pre2, seq) < limit) {
        x = next
        next = nodes[x + LINKS + l]
      }
      if (l === 0) return x
      known = next
    }
  }

  /** Fills `splice` with the last node < target on every level. */
  private findSplice (src: Uint8Array, off: number, len: number, pre0: number, pre1: number, pre2: number, seq: number): void {
    const nodes = this.nodes
    const splice = this.splice
    let x = HEAD
    let known = NIL
    for (let l = MAX_HEIGHT - 1; l >= this.height; l--) splice[l] = HEAD
    for (let l = this.height - 1; l >= 0; l--) {
      let next = nodes[x + LINKS + l]
      while (next !== NIL && next !== known && this.compareNode(next, src, off, len, pre0, pre1, pre2, seq) < 0) {
        x = next
        next = nodes[x + LINKS + l]
      }
      splice[l] = x
      known = next
    }
  }

  /**
   * findSplice for a target above the last inserted node, starting from the
   * finger (`splice`: the last node <= that node on every level, so < the
   * target). On each level the walk starts from the further of two nodes below
   * the target: the finger, or where the walk on the level above stopped if it
   * moved past the finger there (a node beyond the finger on the level above is
   * beyond it on this level too). Either way it never takes more steps than
   * findSplice from the head, and for a target just above the last insert it
   * takes a few steps on the low levels instead of a descent from the top.
   */
  private findSpliceFrom (src: Uint8Array, off: number, len: number, pre0: number, pre1: number, pre2: number, seq: number): void {
    const nodes = this.nodes
    const splice = this.splice
    let x = HEAD
    let moved = false
    let known = NIL
    for (let l = this.height - 1; l >= 0; l--) {
      if (!moved) x = splice[l]
      let next = nodes[x + LINKS + l]
      while (next !== NIL && next !== known && this.compareNode(next, src, off, len, pre0, pre1, pre2, seq) < 0) {
        x = next
        next = nodes[x + LINKS + l]
        moved = true
      }
      splice[l] = x
      known = next
    }
  }

  /** Heights 1..MAX_HEIGHT with P(h > k) = 4^-k, as in LevelDB. */
  private randomHeight (): number {
    let r = this.rng
    r ^= r << 13
    r ^= r >>> 17
    r ^= r << 5
    this.rng = r
    let h = 1
    while (h < MAX_HEIGHT && (r & 3) === 0) {
      h++
      r >>>= 2
    }
    return h
  }
}
