// A Version: the set of live tables, per level, at one point in time. Published
// versions are immutable; a new one is made by applying a VersionEdit to the
// current one (VersionSet.logAndApply). Readers (iterators, compactions) pin the
// version they read with ref()/unref() so that its tables are not deleted under
// them.
//
// Level 0 holds flushed memtables; its tables may overlap and are ordered newest
// first (highest file number first: flushes allocate numbers in order). Levels
// 1+ hold non-overlapping tables ordered by smallest key.
//
// Point reads (get) look through the tables of a version in this order:
// level 0 newest first, then one table per deeper level found by binary
// search; the first version of the key visible at the read's sequence number
// decides (LevelDB's Version::Get).
//
// A version also holds the flushed range tombstones (lib/range-tombstones.ts)
// that may still hide something: apply() drops each one once every table
// overlapping its range has a floor at or above its seq.
import { containsKey, overlapsHalfOpen, overlapsRange, type FileMeta } from './file-meta'
import { RangeTombstoneIndex, type RangeTombstone } from '../range-tombstones'
import type { VersionEdit } from './version-edit'
import { compareInternalKeys } from '../keys'
import { compareBytes } from '../util/coding'
import { NUM_LEVELS } from '../options'
import { assert, checks } from '../invariants'

/** An entry a point read found: its kind (lib/keys.ts), value and sequence number. */
export interface TableEntry {
  kind: number
  value: Buffer
  seq: number
}

/** What Version.get needs of the table cache: an open table by file number. */
export interface TableSource {
  get (number: number): { get (userKey: Uint8Array, seq: number): TableEntry | undefined }
}

/** Counters of Version.get. */
export interface TableGetStats {
  tableGets: number
  tableGetMisses: number
}

export class Version {
  readonly levels: FileMeta[][]
  /** Pins held by readers plus one while current; managed by VersionSet. */
  refs = 0
  /** Called by unref() when the last pin goes away. */
  onRelease: ((v: Version) => void) | undefined

  readonly rangeTombstones: readonly RangeTombstone[]
  private tombstoneIndex: RangeTombstoneIndex | undefined

  constructor (levels: FileMeta[][], rangeTombstones: readonly RangeTombstone[] = []) {
    this.levels = levels
    this.rangeTombstones = rangeTombstones
  }

  /** Index over this version's range tombstones (built on first use). */
  rangeTombstoneIndex (): RangeTombstoneIndex {
    if (this.tombstoneIndex === undefined) this.tombstoneIndex = RangeTombstoneIndex.build(this.rangeTombstones)
    return this.tombstoneIndex
  }

  /** True if some table overlapping the tombstone's range may hold a version it hides. */
  private tombstoneHidesSomething (t: RangeTombstone): boolean {
    for (let level = 0; level < NUM_LEVELS; level++) {
      const files = this.levels[level]
      let i = level === 0 ? 0 : this.findFile(level, t.start)
      for (; i < files.length; i++) {
        const f = files[i]
        // A sorted level: no table from here on overlaps the range.
        if (level > 0 && t.end !== undefined && compareBytes(f.smallest.userKey, t.end) >= 0) break
        if (overlapsHalfOpen(f, t.start, t.end) && (f.floor ?? 0) < t.seq) return true
      }
    }
    return false
  }

  static empty (): Version {
    const levels: FileMeta[][] = []
    for (let i = 0; i < NUM_LEVELS; i++) levels.push([])
    return new Version(levels)
  }

  ref (): void {
    this.refs++
  }

  unref (): void {
    assert(this.refs > 0, 'version unref below zero')
    if (--this.refs === 0 && this.onRelease) this.onRelease(this)
  }

  /**
   * apply() of each of `edits` in turn, building one version instead of one per
   * edit (a manifest holds an edit per flush and compaction: applied one by one
   * they cost files x edits). REQUIRES: neither this version nor the edits hold
   * range tombstones (apply's pruning of tombstones then never runs, and the
   * result is the same); file numbers are never reused.
   */
  applyAll (edits: readonly VersionEdit[]): Version {
    assert(this.rangeTombstones.length === 0, 'applyAll over range tombstones')
    const added = new Map<string, { level: number, meta: FileMeta }>()
    const deletedFiles: Array<{ level: number, number: number }> = []
    for (const edit of edits) {
      assert(edit.rangeTombstones === undefined || edit.rangeTombstones.length === 0, 'applyAll of a range tombstone')
      for (const d of edit.deletedFiles ?? []) {
        // A table added by an earlier edit of the batch and deleted again: neither.
        if (!added.delete(d.level + ':' + d.number)) deletedFiles.push(d)
      }
      for (const n of edit.newFiles ?? []) added.set(n.level + ':' + n.meta.number, n)
    }
    return this.apply({ deletedFiles, newFiles: [...added.values()] })
  }

  /** A new version: this one with `edit`'s deletions and additions. */
  apply (edit: VersionEdit): Version {
    const deleted = new Set<string>()
    for (const d of edit.deletedFiles ?? []) deleted.add(d.level + ':' + d.number)
    const levels: FileMeta[][] = []
    for (let level = 0; level < NUM_LEVELS; level++) {
      let files = this.levels[level]
      if (deleted.size > 0) files = files.filter((f) => !deleted.has(level + ':' + f.number))
      const added = (edit.newFiles ?? []).filter((n) => n.level === level).map((n) => n.meta)
      if (added.length > 0 || files !== this.levels[level]) {
        files = files.concat(added)
        if (level === 0) files.sort((a, b) => b.number - a.number)
        else files.sort((a, b) => compareInternalKeys(a.smallest, b.smallest))
      }
      levels.push(files)
    }
    let tombstones = this.rangeTombstones
    if (edit.rangeTombstones !== undefined && edit.rangeTombstones.length > 0) tombstones = tombstones.concat(edit.rangeTombstones)
    const v = new Version(levels, tombstones)
    if (tombstones === this.rangeTombstones) v.tombstoneIndex = this.tombstoneIndex
    if (tombstones.length > 0) {
      const kept = tombstones.filter((t) => v.tombstoneHidesSomething(t))
      if (kept.length !== tombstones.length) return new Version(levels, kept).checked()
    }
    return v.checked()
  }

  private checked (): Version {
    if (checks.paranoid) this.checkInvariants()
    return this
  }

  /** Levels 1+ are sorted and do not overlap. Expensive; paranoid mode only. */
  checkInvariants (): void {
    for (let level = 1; level < NUM_LEVELS; level++) {
      const files = this.levels[level]
      for (let i = 1; i < files.length; i++) {
        assert(compareBytes(files[i - 1].largest.userKey, files[i].smallest.userKey) < 0,
          `level ${level} tables ${files[i - 1].number} and ${files[i].number} overlap`)
      }
    }
  }

  levelBytes (level: number): number {
    let sum = 0
    for (const f of this.levels[level]) sum += f.size
    return sum
  }

  totalFiles (): number {
    let n = 0
    for (const files of this.levels) n += files.length
    return n
  }

  /** Index of the first table in a sorted level (1+) whose largest user key is >= userKey. */
  findFile (level: number, userKey: Uint8Array): number {
    const files = this.levels[level]
    let lo = 0
    let hi = files.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareBytes(files[mid].largest.userKey, userKey) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /**
   * The newest entry for `userKey` visible at `seq` in this version's tables,
   * or undefined. `stats` counts the tables searched and those without the key.
   */
  get (tables: TableSource, userKey: Uint8Array, seq: number, stats: TableGetStats): TableEntry | undefined {
    const l0 = this.levels[0]
    for (let i = 0; i < l0.length; i++) {
      if (!containsKey(l0[i], userKey)) continue
      const r = this.getFromTable(tables, l0[i], userKey, seq, stats)
      if (r !== undefined) return r
    }
    for (let level = 1; level < NUM_LEVELS; level++) {
      const files = this.levels[level]
      if (files.length === 0) continue
      const i = this.findFile(level, userKey)
      if (i >= files.length || compareBytes(userKey, files[i].smallest.userKey) < 0) continue
      const r = this.getFromTable(tables, files[i], userKey, seq, stats)
      if (r !== undefined) return r
    }
    return undefined
  }

  private getFromTable (tables: TableSource, f: FileMeta, userKey: Uint8Array, seq: number, stats: TableGetStats): TableEntry | undefined {
    stats.tableGets++
    const r = tables.get(f.number).get(userKey, seq)
    if (r === undefined) stats.tableGetMisses++
    return r
  }

  /** Tables of `level` whose user-key range intersects [smallest, largest] (either bound undefined = open). */
  overlapping (level: number, smallest: Uint8Array | undefined, largest: Uint8Array | undefined): FileMeta[] {
    const out: FileMeta[] = []
    for (const f of this.levels[level]) if (overlapsRange(f, smallest, largest)) out.push(f)
    return out
  }

  /** The set of table numbers in this version. */
  fileNumbers (): number[] {
    const out: number[] = []
    for (const files of this.levels) for (const f of files) out.push(f.number)
    return out
  }
}
