// The user-facing iterator: turns the merged internal stream (every version of
// every key, newest first per key) into the user's view at one sequence number:
// each user key once, with its newest version visible at `seq`, tombstoned keys
// hidden, within the range bounds, in either direction.
//
// Forward: the first visible entry of a user key decides it; the older versions
// that follow are skipped. Reverse: the internal stream runs oldest-first per user
// key when walked backwards, so the iterator keeps the last visible version it
// saw for a key and decides the key when it reaches a smaller one.
//
// A version hidden by a range tombstone (lib/range-tombstones.ts) the reader
// sees counts as deleted.
//
// An internal iterator's key and value are valid only until it moves
// (internal-iterator.ts), so what this iterator holds across moves is a copy:
// the user key whose older versions it is skipping (forward) and the entry it
// is deciding (reverse; LevelDB's DBIter keeps saved_key_ and saved_value_ the
// same way). A forward result is not copied: the internal iterator stays on it
// until the next step.
import type { InternalIterator } from './internal-iterator'
import type { RangeTombstoneView } from '../range-tombstones'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../keys'
import { compareRange } from '../util/coding'

/** step() results. */
export const END = 0
export const FOUND = 1
/** step() visited its budget of internal entries without deciding: call it again (on a later turn). */
export const PAUSED = -1

export interface RangeOptions {
  gt?: Buffer
  gte?: Buffer
  lt?: Buffer
  lte?: Buffer
  reverse?: boolean
  /**
   * Whether the table blocks the iterator reads go into the block cache
   * (LevelDB's fill_cache); default: not those of a long run of consecutive
   * blocks (lib/sstable/readahead.ts).
   */
  fillCache?: boolean
}

export class DbIterator {
  private readonly it: InternalIterator
  private readonly seq: number
  private readonly reverse: boolean
  private readonly lower: Buffer | undefined
  private readonly lowerInclusive: boolean
  private readonly upper: Buffer | undefined
  private readonly upperInclusive: boolean
  private started = false
  private done = false
  /** Forward: the internal iterator is still on the entry last returned (moved at the next step). */
  private advance = false
  /** Forward: a copy of the user key last returned or skipped, whose older versions are skipped (-1: none). */
  private skipKey = Buffer.allocUnsafe(64)
  private skipLen = -1
  /** Reverse: a copy of the newest visible version so far of a user key (savedKeyLen -1: none). */
  private savedKey = EMPTY
  private savedKeyLen = -1
  private savedValue = EMPTY
  private savedValueLen = 0
  /** Reverse: the saved version is a value no range tombstone hides. */
  private savedLive = false
  /** Reverse: a step paused in the middle of deciding a key (the saved* fields hold its state). */
  private pausedReverse = false
  private readonly onClose: (() => void) | undefined
  private readonly tombstones: RangeTombstoneView | undefined
  private closed = false

  // The current entry after a successful step(): its user key is
  // keySource[keyStart, keyEnd) and its value valueSource[valueStart, valueEnd),
  // valid until the next step, seek or close.
  keySource: Buffer = EMPTY
  keyStart = 0
  keyEnd = 0
  valueSource: Buffer = EMPTY
  valueStart = 0
  valueEnd = 0

  constructor (it: InternalIterator, seq: number, range: RangeOptions, onClose?: () => void, tombstones?: RangeTombstoneView) {
    this.it = it
    this.seq = seq
    this.reverse = range.reverse === true
    // As in abstract-level: gte and lte take precedence over gt and lt.
    if (range.gte !== undefined) { this.lower = range.gte; this.lowerInclusive = true } else { this.lower = range.gt; this.lowerInclusive = false }
    if (range.lte !== undefined) { this.upper = range.lte; this.upperInclusive = true } else { this.upper = range.lt; this.upperInclusive = false }
    this.onClose = onClose
    this.tombstones = tombstones
  }

  private beforeLower (src: Uint8Array, start: number, end: number): boolean {
    const lower = this.lower
    if (lower === undefined) return false
    const c = compareRange(src, start, end, lower, 0, lower.length)
    return this.lowerInclusive ? c < 0 : c <= 0
  }

  private afterUpper (src: Uint8Array, start: number, end: number): boolean {
    const upper = this.upper
    if (upper === undefined) return false
    const c = compareRange(src, start, end, upper, 0, upper.length)
    return this.upperInclusive ? c > 0 : c >= 0
  }

  private start (): void {
    this.started = true
    if (!this.reverse) {
      if (this.lower === undefined) this.it.seekToFirst()
      else this.it.seek(this.lower, this.lowerInclusive ? MAX_SEQ : 0)
    } else {
      if (this.upper === undefined) this.it.seekToLast()
      else this.it.seekForPrev(this.upper, this.upperInclusive ? 0 : MAX_SEQ)
    }
  }

  /**
   * Moves to the next user entry in iteration order: FOUND, with the entry in
   * the key and value ranges (engine memory, valid until the next step, seek or
   * close, which the caller copies before handing it out), or END. Gives up
   * after visiting `budget` internal entries (older versions, tombstones,
   * versions a range tombstone hides) and returns PAUSED; the next call
   * continues where it stopped. A long run of deleted entries then never holds
   * the event loop for long (the caller yields in between). A budget of
   * Infinity never pauses.
   */
  step (budget: number): number {
    if (this.done) return END
    if (!this.started) this.start()
    const r = this.reverse ? this.prevUserEntry(budget) : this.nextUserEntry(budget)
    if (r === END) this.done = true
    return r
  }

  private nextUserEntry (budget: number): number {
    const it = this.it
    const seq = this.seq
    if (this.advance) {
      this.advance = false
      it.next()
    }
    let visits = 0
    while (it.valid()) {
      if (++visits > budget) return PAUSED
      const s = it.seq()
      if (s > seq) { it.next(); continue }
      const src = it.keySource()
      const start = it.keyStart()
      const end = it.keyEnd()
      const len = end - start
      if (this.skipLen === len && compareRange(src, start, end, this.skipKey, 0, len) === 0) { it.next(); continue }
      if (this.afterUpper(src, start, end)) return END
      let skip = this.skipKey
      if (skip.length < len) skip = this.skipKey = Buffer.allocUnsafe(Math.max(len, 2 * skip.length))
      for (let i = 0; i < len; i++) skip[i] = src[start + i]
      this.skipLen = len
      if (it.kind() === KIND_DELETE || this.beforeLower(src, start, end)) { it.next(); continue }
      if (this.tombstones !== undefined && this.tombstones.covers(src.subarray(start, end), s, seq)) { it.next(); continue }
      this.keySource = src
      this.keyStart = start
      this.keyEnd = end
      this.valueSource = it.valueSource()
      this.valueStart = it.valueStart()
      this.valueEnd = it.valueEnd()
      this.advance = true
      return FOUND
    }
    return END
  }

  private prevUserEntry (budget: number): number {
    const it = this.it
    const seq = this.seq
    if (!this.pausedReverse) {
      this.savedLive = false
      this.savedKeyLen = -1
    }
    this.pausedReverse = false
    const tombstones = this.tombstones
    let visits = 0
    while (it.valid()) {
      if (++visits > budget) {
        this.pausedReverse = true
        return PAUSED
      }
      const s = it.seq()
      if (s <= seq) {
        const src = it.keySource()
        const start = it.keyStart()
        const end = it.keyEnd()
        if (this.savedKeyLen >= 0 && compareRange(src, start, end, this.savedKey, 0, this.savedKeyLen) < 0) {
          if (this.savedLive) break
        }
        if (this.beforeLower(src, start, end)) break
        this.savedLive = it.kind() === KIND_VALUE && (tombstones === undefined || !tombstones.covers(src.subarray(start, end), s, seq))
        this.save(src, start, end, this.savedLive)
      }
      it.prev()
    }
    if (!this.savedLive || this.savedKeyLen < 0) return END
    this.keySource = this.savedKey
    this.keyStart = 0
    this.keyEnd = this.savedKeyLen
    this.valueSource = this.savedValue
    this.valueStart = 0
    this.valueEnd = this.savedValueLen
    this.savedKeyLen = -1
    return FOUND
  }

  /** Reverse: copies the internal iterator's current key (and, if `live`, its value) into the saved entry. */
  private save (src: Buffer, start: number, end: number, live: boolean): void {
    const len = end - start
    if (this.savedKey.length < len) this.savedKey = Buffer.allocUnsafe(Math.max(len, 2 * this.savedKey.length, 64))
    src.copy(this.savedKey, 0, start, end)
    this.savedKeyLen = len
    this.savedValueLen = 0
    if (!live) return
    const it = this.it
    const vStart = it.valueStart()
    const vLen = it.valueEnd() - vStart
    if (this.savedValue.length < vLen) this.savedValue = Buffer.allocUnsafe(Math.max(vLen, 2 * this.savedValue.length, 256))
    it.valueSource().copy(this.savedValue, 0, vStart, vStart + vLen)
    this.savedValueLen = vLen
  }

  /**
   * Repositions at the first entry >= target (forward) or <= target (reverse).
   * A target outside the range ends the iterator (abstract-level's seek(): "if
   * target does not fall within that range, the iterator will reach its
   * natural end"), as classic-level and memory-level do; a target past the
   * far bound ends it anyway.
   */
  seek (target: Buffer): void {
    this.started = true
    this.done = false
    this.advance = false
    this.skipLen = -1
    this.pausedReverse = false
    if (!this.reverse) {
      if (this.beforeLower(target, 0, target.length)) this.done = true
      else this.it.seek(target, MAX_SEQ)
    } else {
      if (this.afterUpper(target, 0, target.length)) this.done = true
      else this.it.seekForPrev(target, 0)
    }
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.done = true
    this.it.close()
    if (this.onClose) this.onClose()
  }
}

const EMPTY = Buffer.alloc(0)

/** A view of `it`'s current user key, after a step that returned FOUND (valid as the range is). */
export function entryKey (it: DbIterator): Buffer {
  return it.keySource.subarray(it.keyStart, it.keyEnd)
}

/** A view of `it`'s current value, after a step that returned FOUND (valid as the range is). */
export function entryValue (it: DbIterator): Buffer {
  return it.valueSource.subarray(it.valueStart, it.valueEnd)
}
