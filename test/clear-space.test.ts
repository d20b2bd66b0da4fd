// Deleted data frees disk space: clearing 90% of a database and compacting the
// range brings the bytes on disk and approximateSize down to about a tenth.
// The clear is one range tombstone (lib/range-tombstones.ts); the compaction
// drops what it hides, then the tombstone itself.
// (LevelDB users complain that deleted data never frees space.) CLEAR_KEYS=<n>
// sets the size (default 200,000; the compaction issue's figure is 1,000,000).
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

const N = Number(process.env.CLEAR_KEYS ?? 200_000)
const key = (i: number): string => 'k' + String(i).padStart(8, '0')

function tableBytes (dir: string): number {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.sst')).reduce((s, n) => s + fs.statSync(path.join(dir, n)).size, 0)
}

test(`clearing 90% of ${N.toLocaleString('en-US')} keys and compacting frees ~90% of the space`, async (t) => {
  const dir = tempDir()
  const db = new LsmLevel(dir)
  await db.open()
  const value = 'v'.repeat(100)
  for (let i = 0; i < N; i += 1000) {
    await db.batch(Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value })))
  }
  await db.compactRange()
  const before = tableBytes(dir)
  const sizeBefore = await db.approximateSize(key(0), key(N))
  const cut = Math.floor(N * 0.9)
  const t0 = Date.now()
  await db.clear({ lt: key(cut) })
  const clearMs = Date.now() - t0
  await db.compactRange()
  const after = tableBytes(dir)
  const sizeAfter = await db.approximateSize(key(0), key(N))
  t.comment(`tables ${(before / 1e6).toFixed(1)} MB -> ${(after / 1e6).toFixed(1)} MB; approximateSize ${(sizeBefore / 1e6).toFixed(1)} MB -> ${(sizeAfter / 1e6).toFixed(1)} MB; clear() took ${clearMs} ms`)
  t.ok(after < before * 0.15, `bytes on disk down to ${(after / before * 100).toFixed(1)}% (about a tenth)`)
  t.ok(sizeAfter < sizeBefore * 0.15, `approximateSize down to ${(sizeAfter / sizeBefore * 100).toFixed(1)}%`)
  t.is(await db.get(key(cut - 1)), undefined, 'cleared keys are gone')
  t.is(await db.get(key(cut)), value, 'the rest remains')
  t.is((await db.keys().all()).length, N - cut, 'exactly the uncleared keys remain')
  t.is(db.stats().rangeTombstones, 0, 'the range tombstone is gone too: nothing older is left under it')
  await db.close()
})
