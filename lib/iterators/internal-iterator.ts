// The contract every internal iterator (memtable, block, table, level, merging)
// follows. Entries come in internal order: userKey ascending, seq descending.
//
// Positioning: an iterator starts unpositioned (valid() === false) until one of
// the seek calls. Accessors may only be called while valid(). Buffers returned by
// userKey() and value() are immutable views that stay valid for the lifetime of
// the iterator (they point into immutable blocks or memtable entries); callers
// must copy them before handing them to user code that could mutate them.
//
// Errors: reading damaged data throws a LEVEL_CORRUPTION error naming the file.

export interface InternalIterator {
  valid (): boolean
  seekToFirst (): void
  seekToLast (): void
  /** Positions at the first entry whose internal key is >= (userKey, seq). */
  seek (userKey: Uint8Array, seq: number): void
  /** Positions at the last entry whose internal key is <= (userKey, seq). */
  seekForPrev (userKey: Uint8Array, seq: number): void
  next (): void
  prev (): void
  userKey (): Buffer
  seq (): number
  kind (): number
  value (): Buffer
  /** Releases pinned resources (table references). Idempotent. */
  close (): void
}

/**
 * An iterator whose current key and value can also be read as byte ranges of
 * buffers it keeps (the memtable's arena), so that a consumer of every entry
 * (a flush) makes no view per entry. The ranges stay valid, like userKey() and
 * value(), for the iterator's lifetime.
 */
export interface RangeIterator extends InternalIterator {
  keySource (): Uint8Array
  keyStart (): number
  keyLength (): number
  valueSource (): Uint8Array
  valueStart (): number
  valueLength (): number
}

export function isRangeIterator (it: InternalIterator): it is RangeIterator {
  return typeof (it as Partial<RangeIterator>).keySource === 'function'
}
