// The contract every internal iterator (memtable, table, level, merging)
// follows. Entries come in internal order: userKey ascending, seq descending.
//
// Positioning: an iterator starts unpositioned (valid() === false) until one of
// the seek calls. Accessors may only be called while valid().
//
// Reading the current entry. Its user key is keySource()[keyStart(), keyEnd())
// and its value valueSource()[valueStart(), valueEnd()): byte ranges of buffers
// the iterator holds, so that a consumer of every entry (a scan, a flush, a
// compaction) makes no object per entry. This is the only way to read them, so
// that a wrapper forwards one set of accessors; a caller that wants a Buffer
// makes a view with currentUserKey() or currentValue() below.
//
// Lifetime (LevelDB's rule): the bytes of the current entry stay valid until
// the iterator is next moved (next, prev, any seek) or closed; a table iterator
// then lets go of its block, whose memory the block cache may reuse. A caller
// that needs a key or value after that copies it. Views are read-only: callers
// copy them before handing them to user code that could mutate them.
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
  seq (): number
  kind (): number
  keySource (): Buffer
  keyStart (): number
  keyEnd (): number
  valueSource (): Buffer
  valueStart (): number
  valueEnd (): number
  /** Releases pinned resources (table references, blocks). Idempotent. */
  close (): void
}

/** A view of `it`'s current user key (valid until `it` moves, as the range is). */
export function currentUserKey (it: InternalIterator): Buffer {
  return it.keySource().subarray(it.keyStart(), it.keyEnd())
}

/** A view of `it`'s current value (valid until `it` moves, as the range is). */
export function currentValue (it: InternalIterator): Buffer {
  return it.valueSource().subarray(it.valueStart(), it.valueEnd())
}
