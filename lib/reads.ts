// The read path, over the state a read sees (a ReadView, lib/snapshots.ts):
// the memtables (active, then frozen newest first), then the version's tables
// (Version.get: L0 newest first, then one table per level by binary search,
// each Bloom-gated). The first version of a key visible at the read's sequence
// number decides; a range tombstone that covers it hides it.
import type { Version } from './manifest/version'
import type { FileMeta } from './manifest/file-meta'
import type { MemTableSet } from './memtable/memtable-set'
import type { TableCache } from './sstable/table-cache'
import { RangeTombstoneView, type RangeTombstoneIndex } from './range-tombstones'
import { MergingIterator } from './iterators/merging-iterator'
import { LevelIterator } from './iterators/level-iterator'
import type { InternalIterator } from './iterators/internal-iterator'
import { DbIterator, type RangeOptions } from './iterators/db-iterator'
import type { ReadView } from './snapshots'
import { KIND_VALUE } from './keys'

/** The value of `key` in `view`, or undefined; `tableReads` counts the tables searched and those that missed. */
export function readKey (view: ReadView, tableCache: TableCache, key: Uint8Array, tableReads: { tableGets: number, tableGetMisses: number }): Buffer | undefined {
  const { seq, version: v, memtables } = view
  const r = memtables.get(key, seq) ?? v.get(tableCache, key, seq, tableReads)
  if (r === undefined || r.kind !== KIND_VALUE) return undefined
  if (memtables.hides(key, r.seq, seq)) return undefined
  if (v.rangeTombstones.length > 0 && v.rangeTombstoneIndex().covers(key, r.seq, seq)) return undefined
  return r.value
}

/** The range tombstones a new iterator consults (undefined: none). */
function rangeTombstoneView (v: Version, memtables: MemTableSet): RangeTombstoneView | undefined {
  const indexes: RangeTombstoneIndex[] = []
  memtables.tombstoneIndexes(indexes)
  if (v.rangeTombstones.length > 0) indexes.push(v.rangeTombstoneIndex())
  return RangeTombstoneView.of(indexes)
}

/** A lazy iterator over `view` within `range`; it holds a reference to the view's version until closed. */
export function openIterator (view: ReadView, tableCache: TableCache, range: RangeOptions): DbIterator {
  const { seq, version: v, memtables } = view
  v.ref()
  const children: InternalIterator[] = memtables.iterators()
  // Each L0 table as a one-file level: opened on the first seek that needs it, so
  // that a damaged table fails the iterator's next() (LEVEL_CORRUPTION) rather
  // than its creation, which would leak the tables opened before it.
  const fillCache = range.fillCache
  const open = (meta: FileMeta): InternalIterator => tableCache.get(meta.number).iterator(fillCache)
  for (const f of v.levels[0]) children.push(new LevelIterator([f], open))
  for (let level = 1; level < v.levels.length; level++) {
    if (v.levels[level].length > 0) children.push(new LevelIterator(v.levels[level], open))
  }
  return new DbIterator(new MergingIterator(children), seq, range, () => v.unref(), rangeTombstoneView(v, memtables))
}
