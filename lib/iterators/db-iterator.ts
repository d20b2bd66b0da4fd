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
import type { InternalIterator } from './internal-iterator'
import type { RangeTombstoneView } from '../range-tombstones'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../keys'
import { compareBytes } from '../util/coding'

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
  /** Reverse: the newest visible version so far of savedKey is a value no range tombstone hides. */
  private savedLive = false
  private savedKey: Buffer | undefined
  private savedValue: Buffer = EMPTY
  /** Reverse: a step paused in the middle of deciding a key (the saved* fields hold its state). */
  private pausedReverse = false
  /** Forward: the user key last returned or skipped, whose older versions are skipped. */
  private skipKey: Buffer | undefined = undefined
  private readonly onClose: (() => void) | undefined
  private readonly tombstones: RangeTombstoneView | undefined
  private closed = false

  /** The current entry after a successful next(). */
  key: Buffer = EMPTY
  value: Buffer = EMPTY

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

  private beforeLower (k: Uint8Array): boolean {
    if (this.lower === undefined) return false
    const c = compareBytes(k, this.lower)
    return this.lowerInclusive ? c < 0 : c <= 0
  }

  private afterUpper (k: Uint8Array): boolean {
    if (this.upper === undefined) return false
    const c = compareBytes(k, this.upper)
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
   * Moves to the next user entry in iteration order; false at the end. The
   * result is in `key` / `value`: views of immutable engine memory, which the
   * caller copies before handing them out.
   */
  next (): boolean {
    return this.step(Infinity) === FOUND
  }

  /**
   * Like next(), but gives up after visiting `budget` internal entries (older
   * versions, tombstones, versions a range tombstone hides) and returns PAUSED;
   * the next call continues where it stopped. A long run of deleted entries
   * then never holds the event loop for long (the caller yields in between).
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
    let visits = 0
    while (it.valid()) {
      if (++visits > budget) return PAUSED
      if (it.seq() > seq) { it.next(); continue }
      const uk = it.userKey()
      if (this.skipKey !== undefined && compareBytes(uk, this.skipKey) === 0) { it.next(); continue }
      if (this.afterUpper(uk)) return END
      this.skipKey = uk
      if (it.kind() === KIND_DELETE || this.beforeLower(uk)) { it.next(); continue }
      if (this.tombstones !== undefined && this.tombstones.covers(uk, it.seq(), seq)) { it.next(); continue }
      this.key = uk
      this.value = it.value()
      it.next()
      return FOUND
    }
    return END
  }

  private prevUserEntry (budget: number): number {
    const it = this.it
    const seq = this.seq
    if (!this.pausedReverse) {
      this.savedLive = false
      this.savedKey = undefined
      this.savedValue = EMPTY
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
        const uk = it.userKey()
        if (this.savedKey !== undefined && compareBytes(uk, this.savedKey) < 0) {
          if (this.savedLive) break
        }
        if (this.beforeLower(uk)) break
        this.savedLive = it.kind() === KIND_VALUE && (tombstones === undefined || !tombstones.covers(uk, s, seq))
        this.savedKey = uk
        this.savedValue = it.value()
      }
      it.prev()
    }
    const key = this.savedKey
    if (!this.savedLive || key === undefined) return END
    this.key = key
    this.value = this.savedValue
    this.savedKey = undefined
    this.savedValue = EMPTY
    return FOUND
  }

  /**
   * Repositions at the first entry >= target (forward) or <= target (reverse),
   * staying within the range bounds.
   */
  seek (target: Buffer): void {
    this.started = true
    this.done = false
    this.skipKey = undefined
    this.pausedReverse = false
    if (!this.reverse) {
      if (this.lower !== undefined && this.beforeLower(target)) this.it.seek(this.lower, this.lowerInclusive ? MAX_SEQ : 0)
      else this.it.seek(target, MAX_SEQ)
    } else {
      if (this.upper !== undefined && this.afterUpper(target)) this.it.seekForPrev(this.upper, this.upperInclusive ? 0 : MAX_SEQ)
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
