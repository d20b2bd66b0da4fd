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
// A version also holds the flushed range tombstones (lib/range-tombstones.ts)
// that may still hide something: apply() drops each one once every table
// overlapping its range has a floor at or above its seq.
import type { FileMeta } from './file-meta'
import { RangeTombstoneIndex, type RangeTombstone } from '../range-tombstones'
import type { VersionEdit } from './version-edit'
import { compareInternalKeys } from '../keys'
import { compareBytes } from '../util/coding'
import { NUM_LEVELS } from '../options'
import { assert, checks } from '../invariants'

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
        if (t.end !== undefined && compareBytes(f.smallest.userKey, t.end) >= 0) {
          if (level === 0) continue
          break
        }
        if (compareBytes(f.largest.userKey, t.start) < 0) continue
        if ((f.floor ?? 0) < t.seq) return true
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

  /** Tables of `level` whose user-key range intersects [smallest, largest] (either bound undefined = open). */
  overlapping (level: number, smallest: Uint8Array | undefined, largest: Uint8Array | undefined): FileMeta[] {
    const out: FileMeta[] = []
    for (const f of this.levels[level]) {
      if (largest !== undefined && compareBytes(f.smallest.userKey, largest) > 0) continue
      if (smallest !== undefined && compareBytes(f.largest.userKey, smallest) < 0) continue
      out.push(f)
    }
    return out
  }

  /** The set of table numbers in this version. */
  fileNumbers (): number[] {
    const out: number[] = []
    for (const files of this.levels) for (const f of files) out.push(f.number)
    return out
  }
}
