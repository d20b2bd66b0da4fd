// MergingIterator: the union of several sorted internal iterators, in internal
// order. This is how a read sees the whole tree at once: its children are the
// active memtable, the immutable memtables, the level-0 tables (newest first)
// and one LevelIterator per deeper level.
//
// Order and ties. Children are given newest first. Entries are yielded in
// internal order (userKey ascending, seq descending). Two children should never
// hold the same (userKey, seq), but if they do, the child index breaks the tie:
// the iterator behaves as if every entry carried the key (userKey, seq, child),
// so forward iteration yields the earlier (newer) child's entry first and reverse
// iteration yields exactly the reverse sequence. A reverse reader that keeps the
// last-seen version of a key therefore prefers the earlier child too.
//
// How it works. Every child is positioned at its own candidate entry and the
// children are kept in a binary heap keyed on those entries: a min-heap while
// moving forward, a max-heap while moving backward. The heap top is the current
// entry. next() (or prev()) steps only the top child and sifts it down, so one
// step costs O(log k) comparisons for k children, and a seek costs one seek per
// child plus an O(k) heapify. The current key and seq of each child are cached
// in flat arrays so that heap comparisons never call into the children.
//
// Changing direction. While moving forward, every non-current child sits at its
// first entry AFTER the current one; the entries before the current one are not
// represented in the heap at all. To step backward we need the opposite: every
// non-current child at its last entry BEFORE the current one. So on a direction
// change each non-current child is repositioned relative to the current entry
// (seekForPrev to it, stepping back once if it landed exactly on a tie that
// sorts after the current child; symmetrically seek and step forward when
// turning around to go forward) and the heap is rebuilt with the opposite
// ordering. The current child itself is already where it must be. This is the
// scheme of LevelDB's MergingIterator; it costs one seek per child, paid only
// on the step that changes direction.
import { compareRange } from '../util/coding'
import { assert, checks } from '../invariants'
import type { InternalIterator } from './internal-iterator'

const FORWARD = 1
const REVERSE = -1

export class MergingIterator implements InternalIterator {
  private readonly children: InternalIterator[]
  // The current key (keySource, keyStart, keyEnd) and seq of each child, read
  // when it moved: valid while the child is in the heap (until it moves again).
  private readonly keySrcs: Buffer[]
  private readonly keyStarts: Int32Array
  private readonly keyEnds: Int32Array
  private readonly seqs: Float64Array
  /** Child indices; heap[0] is the current child. */
  private readonly heap: Int32Array
  private size = 0
  /** FORWARD: min-heap, the children sit at or after the current entry. REVERSE: max-heap, at or before it. */
  private direction = FORWARD
  private closed = false

  constructor (children: InternalIterator[]) {
    this.children = children.slice()
    const n = this.children.length
    this.keySrcs = new Array<Buffer>(n)
    this.keyStarts = new Int32Array(n)
    this.keyEnds = new Int32Array(n)
    this.seqs = new Float64Array(n)
    this.heap = new Int32Array(n)
  }

  valid (): boolean {
    return this.size > 0
  }

  seekToFirst (): void {
    for (const child of this.children) child.seekToFirst()
    this.rebuild(FORWARD)
  }

  seekToLast (): void {
    for (const child of this.children) child.seekToLast()
    this.rebuild(REVERSE)
  }

  seek (userKey: Uint8Array, seq: number): void {
    for (const child of this.children) child.seek(userKey, seq)
    this.rebuild(FORWARD)
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    for (const child of this.children) child.seekForPrev(userKey, seq)
    this.rebuild(REVERSE)
  }

  next (): void {
    if (checks.paranoid) assert(this.size > 0, 'MergingIterator.next() while not valid')
    if (this.direction !== FORWARD) this.turn(FORWARD)
    const top = this.heap[0]
    const child = this.children[top]
    child.next()
    this.replaceTop(top, child)
  }

  prev (): void {
    if (checks.paranoid) assert(this.size > 0, 'MergingIterator.prev() while not valid')
    if (this.direction !== REVERSE) this.turn(REVERSE)
    const top = this.heap[0]
    const child = this.children[top]
    child.prev()
    this.replaceTop(top, child)
  }

  seq (): number {
    return this.seqs[this.heap[0]]
  }

  kind (): number {
    return this.children[this.heap[0]].kind()
  }

  keySource (): Buffer {
    return this.keySrcs[this.heap[0]]
  }

  keyStart (): number {
    return this.keyStarts[this.heap[0]]
  }

  keyEnd (): number {
    return this.keyEnds[this.heap[0]]
  }

  valueSource (): Buffer {
    return this.children[this.heap[0]].valueSource()
  }

  valueStart (): number {
    return this.children[this.heap[0]].valueStart()
  }

  valueEnd (): number {
    return this.children[this.heap[0]].valueEnd()
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.size = 0
    let failure: unknown
    for (const child of this.children) {
      try {
        child.close()
      } catch (err) {
        if (failure === undefined) failure = err
      }
    }
    if (failure !== undefined) throw failure
  }

  /**
   * Repositions every non-current child on the `direction` side of the current
   * entry (see the file comment), then rebuilds the heap for that direction.
   */
  private turn (direction: number): void {
    const cur = this.heap[0]
    // The current child does not move here, so its key stays valid throughout.
    const key = this.keySrcs[cur].subarray(this.keyStarts[cur], this.keyEnds[cur])
    const seq = this.seqs[cur]
    const children = this.children
    for (let i = 0; i < children.length; i++) {
      if (i === cur) continue
      const child = children[i]
      if (direction === FORWARD) {
        child.seek(key, seq)
        // A tie from an earlier child sorts before the current entry: skip it.
        if (i < cur && child.valid() && isAt(child, key, seq)) child.next()
      } else {
        child.seekForPrev(key, seq)
        // A tie from a later child sorts after the current entry: skip it.
        if (i > cur && child.valid() && isAt(child, key, seq)) child.prev()
      }
    }
    this.rebuild(direction)
  }

  /** Collects the valid children into a heap ordered for `direction`. */
  private rebuild (direction: number): void {
    this.direction = direction
    const children = this.children
    const heap = this.heap
    let size = 0
    for (let i = 0; i < children.length; i++) {
      const child = children[i]
      if (child.valid()) {
        this.keySrcs[i] = child.keySource()
        this.keyStarts[i] = child.keyStart()
        this.keyEnds[i] = child.keyEnd()
        this.seqs[i] = child.seq()
        heap[size++] = i
      }
    }
    this.size = size
    for (let pos = (size >> 1) - 1; pos >= 0; pos--) this.siftDown(pos)
  }

  /** The top child `top` has moved: refresh its cache and restore the heap. */
  private replaceTop (top: number, child: InternalIterator): void {
    if (child.valid()) {
      this.keySrcs[top] = child.keySource()
      this.keyStarts[top] = child.keyStart()
      this.keyEnds[top] = child.keyEnd()
      this.seqs[top] = child.seq()
    } else {
      const last = --this.size
      if (last === 0) return
      this.heap[0] = this.heap[last]
    }
    this.siftDown(0)
  }

  private siftDown (pos: number): void {
    const heap = this.heap
    const size = this.size
    const item = heap[pos]
    for (;;) {
      let child = 2 * pos + 1
      if (child >= size) break
      if (child + 1 < size && this.before(heap[child + 1], heap[child])) child++
      if (!this.before(heap[child], item)) break
      heap[pos] = heap[child]
      pos = child
    }
    heap[pos] = item
  }

  /** True if child a's entry comes out before child b's in the current direction. */
  private before (a: number, b: number): boolean {
    let c = compareRange(this.keySrcs[a], this.keyStarts[a], this.keyEnds[a], this.keySrcs[b], this.keyStarts[b], this.keyEnds[b])
    if (c === 0) {
      c = this.seqs[b] - this.seqs[a]
      if (c === 0) c = a - b
    }
    return this.direction === FORWARD ? c < 0 : c > 0
  }
}

/** True if `it`'s current entry is (userKey, seq). */
function isAt (it: InternalIterator, userKey: Uint8Array, seq: number): boolean {
  return it.seq() === seq && compareRange(it.keySource(), it.keyStart(), it.keyEnd(), userKey, 0, userKey.length) === 0
}
