// An internal iterator limited to the user keys in [start, end), forward only:
// a subcompaction's share of a compaction's merged input (lib/compaction/
// scheduler.ts). seekToFirst() seeks to the newest version of `start`; the
// iterator ends at the first entry whose user key is `end` or after it. Every
// version of a user key thus falls on the same side of a split.
import type { InternalIterator } from './internal-iterator'
import { MAX_SEQ } from '../keys'
import { compareRange } from '../util/coding'

export class KeyRangeIterator implements InternalIterator {
  constructor (private readonly inner: InternalIterator, private readonly start: Uint8Array | undefined, private readonly end: Uint8Array | undefined) {}

  valid (): boolean {
    if (!this.inner.valid()) return false
    const end = this.end
    if (end === undefined) return true
    const src = this.inner.keySource()
    return compareRange(src, this.inner.keyStart(), this.inner.keyEnd(), end, 0, end.length) < 0
  }

  seekToFirst (): void {
    if (this.start === undefined) this.inner.seekToFirst()
    else this.inner.seek(this.start, MAX_SEQ)
  }

  next (): void { this.inner.next() }
  seq (): number { return this.inner.seq() }
  kind (): number { return this.inner.kind() }
  keySource (): Buffer { return this.inner.keySource() }
  keyStart (): number { return this.inner.keyStart() }
  keyEnd (): number { return this.inner.keyEnd() }
  valueSource (): Buffer { return this.inner.valueSource() }
  valueStart (): number { return this.inner.valueStart() }
  valueEnd (): number { return this.inner.valueEnd() }
  close (): void { this.inner.close() }

  seekToLast (): void { throw new Error('KeyRangeIterator is forward only') }
  seek (): void { throw new Error('KeyRangeIterator is forward only') }
  seekForPrev (): void { throw new Error('KeyRangeIterator is forward only') }
  prev (): void { throw new Error('KeyRangeIterator is forward only') }
}
