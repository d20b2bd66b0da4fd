// The memtables a read consults: the active one, which takes the writes, and
// the frozen ones (oldest first) waiting for their flush to level 0.
//
// Freezing makes a new active memtable; a frozen one never changes again once
// the writes already in its log are applied, and only then may it be flushed:
// writes waiting for a sync (lib/commit-pipeline.ts) may still be on their way
// into it. `groupWritten` and `groupApplied` count them.
import { MemTable, type MemTableEntry } from './memtable'
import type { InternalIterator } from '../iterators/internal-iterator'
import type { RangeTombstoneIndex } from '../range-tombstones'

export interface FrozenMemTable {
  mem: MemTable
  /** The log that holds its writes: deleted once it is flushed. */
  logNumber: number
  /** Write groups written to its log and not yet applied; flushed only at 0. */
  writesInFlight: number
}

/**
 * A memtable is frozen once it holds this many range tombstones, however few its
 * bytes: reads rebuild its tombstone index after each one is added.
 */
const MAX_MEMTABLE_RANGE_TOMBSTONES = 1000

export class MemTableSet {
  active: MemTable
  /** Oldest first. */
  readonly frozen: FrozenMemTable[] = []
  /**
   * How many times the level-0 table counts (compaction trigger, slowdown,
   * stop) are multiplied while the write buffer is smaller than configured
   * (writeBufferFor): level 0 then holds as many bytes before a compaction as
   * with the configured buffer, so small flushes do not add compactions.
   */
  level0Scale = 1
  /** Write groups written to the active memtable's log and not yet applied. */
  private activeWritesInFlight = 0

  /** `writeBufferSize`: the bytes at which the active memtable is full (the engine may change it between memtables); `active`: the active memtable to start with (a new one if omitted). */
  constructor (public writeBufferSize: number, active?: MemTable) {
    this.active = active ?? new MemTable()
  }

  /** True once `mem` should be frozen; `factor`: once it holds that many times the write buffer's bytes. */
  isFull (mem: MemTable, factor = 1): boolean {
    return mem.approximateBytes() >= factor * this.writeBufferSize || mem.rangeTombstoneCount() >= MAX_MEMTABLE_RANGE_TOMBSTONES
  }

  /** Freezes the active memtable, whose writes are in log `logNumber`, and starts a new one. */
  freeze (logNumber: number): void {
    this.frozen.push({ mem: this.active, logNumber, writesInFlight: this.activeWritesInFlight })
    this.active = new MemTable()
    this.activeWritesInFlight = 0
  }

  /** At open: memtables replayed from logs and not yet in tables (oldest first, each with its log) wait for their flush. */
  adoptReplayed (replayed: ReadonlyArray<{ mem: MemTable, logNumber: number }>): void {
    for (const r of replayed) this.frozen.push({ mem: r.mem, logNumber: r.logNumber, writesInFlight: 0 })
  }

  /**
   * A read-only open (lib/follower.ts): the memtables are now `mems`, one per
   * replayed log, oldest first (the last one is active). Sets published before
   * (copy()) keep theirs.
   */
  follow (mems: readonly MemTable[]): void {
    this.frozen.length = 0
    for (let i = 0; i < mems.length - 1; i++) this.frozen.push({ mem: mems[i], logNumber: -1, writesInFlight: 0 })
    this.active = mems.length > 0 ? mems[mems.length - 1] : new MemTable()
  }

  /** A set of the same memtables that later calls to follow() leave alone (a read-only open's snapshot). */
  copy (): MemTableSet {
    // No new memtable for a set that shares this one's: a skiplist's arrays are
    // about 100 KiB, and a read-only open copies its set at every point in time.
    const set = new MemTableSet(this.writeBufferSize, this.active)
    for (const f of this.frozen) set.frozen.push({ ...f })
    return set
  }

  /** A write group went to the active memtable's log; returns that memtable, where it will apply. */
  groupWritten (): MemTable {
    this.activeWritesInFlight++
    return this.active
  }

  /** A group written by groupWritten() was applied to `mem`. True if that made a frozen memtable ready to flush. */
  groupApplied (mem: MemTable): boolean {
    if (mem === this.active) { this.activeWritesInFlight--; return false }
    const f = this.frozen.find((x) => x.mem === mem)
    return f !== undefined && --f.writesInFlight === 0
  }

  /** The oldest frozen memtable if it may be flushed now. */
  flushable (): FrozenMemTable | undefined {
    const f = this.frozen[0]
    return f !== undefined && f.writesInFlight === 0 ? f : undefined
  }

  /** The oldest frozen memtable is flushed: drops it. */
  dropOldest (): void {
    this.frozen.shift()
  }

  /** The log the memtables' writes start in once the oldest frozen one is flushed (`currentLogNumber`: the active one's). */
  logAfterOldest (currentLogNumber: number): number {
    return this.frozen.length > 1 ? this.frozen[1].logNumber : currentLogNumber
  }

  /** The newest version of `userKey` visible at `seq`, newest memtable first. */
  get (userKey: Uint8Array, seq: number): MemTableEntry | undefined {
    const r = this.active.get(userKey, seq)
    if (r !== undefined) return r
    for (let i = this.frozen.length - 1; i >= 0; i--) {
      const f = this.frozen[i].mem.get(userKey, seq)
      if (f !== undefined) return f
    }
    return undefined
  }

  /** True if a memtable's range tombstone visible at `readSeq` hides version `seq` of `userKey`. */
  hides (userKey: Uint8Array, seq: number, readSeq: number): boolean {
    if (this.active.rangeTombstoneCount() > 0 && this.active.rangeTombstoneIndex().covers(userKey, seq, readSeq)) return true
    for (let i = 0; i < this.frozen.length; i++) {
      const m = this.frozen[i].mem
      if (m.rangeTombstoneCount() > 0 && m.rangeTombstoneIndex().covers(userKey, seq, readSeq)) return true
    }
    return false
  }

  /** Adds the memtables' non-empty range tombstone indexes to `out`. */
  tombstoneIndexes (out: RangeTombstoneIndex[]): void {
    if (this.active.rangeTombstoneCount() > 0) out.push(this.active.rangeTombstoneIndex())
    for (const f of this.frozen) if (f.mem.rangeTombstoneCount() > 0) out.push(f.mem.rangeTombstoneIndex())
  }

  /** One iterator per memtable, newest first. */
  iterators (): InternalIterator[] {
    const out: InternalIterator[] = [this.active.iterator()]
    for (let i = this.frozen.length - 1; i >= 0; i--) out.push(this.frozen[i].mem.iterator())
    return out
  }

  rangeTombstoneCount (): number {
    let n = this.active.rangeTombstoneCount()
    for (const f of this.frozen) n += f.mem.rangeTombstoneCount()
    return n
  }

  approximateBytes (): number {
    let n = this.active.approximateBytes()
    for (const f of this.frozen) n += f.mem.approximateBytes()
    return n
  }
}
