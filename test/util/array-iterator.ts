// An InternalIterator over a sorted in-memory array: stands in for a table in
// iterator tests. It records whether it was closed and refuses use after close,
// so tests can check that owners open lazily and release what they open.
import { compareInternal } from '../../lib/keys'
import { type InternalIterator, currentUserKey, currentValue } from '../../lib/iterators/internal-iterator'

export interface Entry {
  userKey: Buffer
  seq: number
  kind: number
  value: Buffer
}

export function compareEntries (a: Entry, b: Entry): number {
  return compareInternal(a.userKey, a.seq, b.userKey, b.seq)
}

/** Index of the first entry >= (userKey, seq) in a sorted array (length if none). */
export function lowerBound (entries: readonly Entry[], userKey: Uint8Array, seq: number): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareInternal(entries[mid].userKey, entries[mid].seq, userKey, seq) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Index of the first entry > (userKey, seq) in a sorted array (length if none). */
export function upperBound (entries: readonly Entry[], userKey: Uint8Array, seq: number): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareInternal(entries[mid].userKey, entries[mid].seq, userKey, seq) <= 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Compares `it`'s position with model[pos] (a pos outside the model means `it`
 * must not be valid): '' if they agree, else a description of the difference.
 */
export function diffAt (it: InternalIterator, model: readonly Entry[], pos: number): string {
  const expectValid = pos >= 0 && pos < model.length
  if (it.valid() !== expectValid) return `valid() is ${it.valid()}, model position ${pos}/${model.length}`
  if (!expectValid) return ''
  const e = model[pos]
  const key = currentUserKey(it)
  const value = currentValue(it)
  if (!key.equals(e.userKey) || it.seq() !== e.seq || it.kind() !== e.kind || !value.equals(e.value)) {
    return `at ${pos}: got (${key.toString('hex')}, ${it.seq()}, ${it.kind()}, ${value.toString('hex')}) want (${e.userKey.toString('hex')}, ${e.seq}, ${e.kind}, ${e.value.toString('hex')})`
  }
  return ''
}

export class ArrayIterator implements InternalIterator {
  private pos = -1
  closed = false

  /** `entries` must be sorted in internal order. */
  constructor (private readonly entries: readonly Entry[]) {}

  valid (): boolean {
    this.check()
    return this.pos >= 0 && this.pos < this.entries.length
  }

  seekToFirst (): void {
    this.check()
    this.pos = 0
    this.moved()
  }

  seekToLast (): void {
    this.check()
    this.pos = this.entries.length - 1
    this.moved()
  }

  seek (userKey: Uint8Array, seq: number): void {
    this.check()
    this.pos = lowerBound(this.entries, userKey, seq)
    this.moved()
  }

  seekForPrev (userKey: Uint8Array, seq: number): void {
    this.check()
    this.pos = upperBound(this.entries, userKey, seq) - 1
    this.moved()
  }

  next (): void {
    this.checkValid()
    this.pos++
    this.moved()
  }

  prev (): void {
    this.checkValid()
    this.pos--
    this.moved()
  }

  seq (): number {
    this.checkValid()
    return this.entries[this.pos].seq
  }

  kind (): number {
    this.checkValid()
    return this.entries[this.pos].kind
  }

  // The current entry is copied into `scratch` (key, then value), which every
  // move overwrites with garbage: a consumer that holds a key or value past a
  // move (the contract forbids it) reads wrong bytes and fails its test.
  keySource (): Buffer {
    this.load()
    return this.scratch
  }

  keyStart (): number {
    return 0
  }

  keyEnd (): number {
    this.checkValid()
    return this.entries[this.pos].userKey.length
  }

  valueSource (): Buffer {
    this.load()
    return this.scratch
  }

  valueStart (): number {
    return this.keyEnd()
  }

  valueEnd (): number {
    this.checkValid()
    const e = this.entries[this.pos]
    return e.userKey.length + e.value.length
  }

  private scratch = Buffer.alloc(64)
  private loaded = false

  private load (): void {
    this.checkValid()
    if (this.loaded) return
    const e = this.entries[this.pos]
    const need = e.userKey.length + e.value.length
    if (need > this.scratch.length) this.scratch = Buffer.alloc(need * 2)
    e.userKey.copy(this.scratch, 0)
    e.value.copy(this.scratch, e.userKey.length)
    this.loaded = true
  }

  private moved (): void {
    this.scratch.fill(0xee)
    this.loaded = false
  }

  close (): void {
    this.closed = true
    this.moved()
  }

  private check (): void {
    if (this.closed) throw new Error('ArrayIterator used after close')
  }

  private checkValid (): void {
    this.check()
    if (this.pos < 0 || this.pos >= this.entries.length) throw new Error('ArrayIterator used while not valid')
  }
}
