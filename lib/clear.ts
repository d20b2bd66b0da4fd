// Deleting a range of keys (db.clear): one range tombstone
// (lib/range-tombstones.ts) when the whole range goes at the latest state, else
// point deletes read from a snapshot.
import { encodeBatch, OP_RANGE_DELETE, type BatchOp } from './wal/batch'
import { clearBounds } from './range-tombstones'
import { entryKey, FOUND, type DbIterator, type RangeOptions } from './iterators/db-iterator'
import type { Snapshot } from './snapshots'
import { KIND_DELETE } from './keys'
import { compareBytes } from './util/coding'

/** What a clear needs of the engine. */
export interface ClearTarget {
  write: (batch: Buffer, sync: boolean) => Promise<void>
  iterator: (range: RangeOptions, snapshot?: Snapshot) => DbIterator
  snapshot: () => Snapshot
  releaseSnapshot: (s: Snapshot) => void
}

/**
 * Deletes the keys in `range` visible at `snapshot` (default: now), at most
 * `limit` of them. Unlimited and at the latest state: one range tombstone,
 * whatever the size of the range; entries written after the call are not
 * affected. Otherwise point deletes in batches of 1,000 read from a snapshot,
 * so memory stays bounded whatever the range.
 */
export async function clearRange (db: ClearTarget, range: RangeOptions, limit: number, snapshot?: Snapshot): Promise<void> {
  if (limit === Infinity && snapshot === undefined) {
    const { start, end } = clearBounds(range)
    if (end !== undefined && compareBytes(start, end) >= 0) return
    await db.write(encodeBatch([{ kind: OP_RANGE_DELETE, key: start, end }]), false)
    return
  }
  const own = snapshot ? undefined : db.snapshot()
  const it = db.iterator(range, snapshot ?? own)
  let remaining = limit
  try {
    while (remaining > 0) {
      const ops: BatchOp[] = []
      while (ops.length < 1000 && remaining > 0 && it.step(Infinity) === FOUND) {
        ops.push({ kind: KIND_DELETE, key: Buffer.from(entryKey(it)) })
        remaining--
      }
      if (ops.length === 0) break
      await db.write(encodeBatch(ops), false)
    }
  } finally {
    it.close()
    if (own) db.releaseSnapshot(own)
  }
}
