// db.stats(), getProperty(), approximateSize(): structured, consistent with the
// tree, and moving the right way as work happens.
import test from 'tape'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

const key = (i: number): string => 'k' + String(i).padStart(8, '0')

test('stats, properties and approximate sizes follow the tree', async (t) => {
  // Uncompressed tables: the values compress, and stored bytes would fall below the user bytes.
  const db = new LsmLevel(tempDir(), { writeBufferSize: 8 * 1024, blockSize: 512, targetFileSize: 8 * 1024, maxBytesForLevelBase: 32 * 1024, compression: false })
  await db.open()
  const empty = db.stats()
  t.is(empty.writeAmplification, 0, 'empty: no write amplification')
  t.is(empty.bytes.user, 0, 'empty: no user bytes')
  const value = 'x'.repeat(100)
  const N = 10_000
  for (let i = 0; i < N; i += 100) {
    await db.batch(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value })))
  }
  for (let i = 0; i < N; i += 10) await db.put(key(i), value) // overwrites
  await db.engine.waitForIdle()
  const s = db.stats()
  t.is(s.levels.length, 7, 'seven levels')
  t.same(s.levels, db.levels(), 'levels() and stats().levels agree')
  const userBytes = (N + N / 10) * (9 + 100)
  t.is(s.bytes.user, userBytes, 'user bytes count keys and values')
  t.ok(s.bytes.wal > userBytes, 'the log holds at least the user bytes')
  t.ok(s.flushes > 0 && s.bytes.flushed > 0, `flushes counted (${s.flushes})`)
  t.ok(s.compactions.done + s.compactions.trivialMoves > 0, `compactions counted (${s.compactions.done} + ${s.compactions.trivialMoves} moves)`)
  t.ok(s.writeAmplification >= 1, `write amplification ${s.writeAmplification.toFixed(2)} >= 1`)
  t.is(s.bytes.tables, s.levels.reduce((a, l) => a + l.bytes, 0), 'table bytes are the sum of the levels')
  const expectedRuns = 1 + s.levels[0].files + s.levels.slice(1).filter((l) => l.files > 0).length
  t.is(s.readAmplification, expectedRuns, `read amplification counts sorted runs (${expectedRuns})`)
  t.ok(s.spaceAmplification >= 1, `space amplification ${s.spaceAmplification.toFixed(2)} >= 1`)

  for (let i = 0; i < 2000; i++) await db.get(key(i * 5) + '-absent') // inside tables' key ranges
  for (let i = 0; i < 2000; i++) await db.get(key(i * 5))
  const r = db.stats()
  t.ok(r.bloom.useful > 1000, `Bloom filters skipped tables for absent keys (${r.bloom.useful} useful, ${r.bloom.falsePositives} false positives)`)
  t.ok(r.bloom.falsePositives < r.bloom.useful / 10, 'false positives are rare')
  t.ok(r.blockCache.hits > 0 && r.blockCache.misses > 0, `block cache counted (${r.blockCache.hits} hits, ${r.blockCache.misses} misses)`)
  t.ok(r.blockCache.bytes <= r.blockCache.capacity, 'block cache within capacity')

  const text = db.getProperty('lsm.stats')
  t.ok(/write amplification/.test(text) && /Level\s+Files/.test(text), 'lsm.stats renders text')
  for (let level = 0; level < 7; level++) {
    t.is(db.getProperty(`lsm.num-files-at-level${level}`), String(r.levels[level].files), `num-files-at-level${level}`)
  }
  t.is(db.getProperty('leveldb.num-files-at-level0'), String(r.levels[0].files), 'leveldb.* alias')
  t.ok(db.getProperty('lsm.sstables').includes('--- level 0 ---'), 'lsm.sstables lists tables')
  t.throws(() => db.getProperty('lsm.nope'), /Unknown property/, 'unknown property: clear error')
  t.throws(() => db.getProperty('lsm.num-files-at-level9'), /No level 9/, 'level out of range: clear error')

  await db.compactRange()
  const total = db.stats().bytes.tables
  const all = await db.approximateSize(key(0), key(N))
  t.ok(Math.abs(all - total) <= total * 0.05, `approximateSize of everything ${all} ~ table bytes ${total}`)
  const half = await db.approximateSize(key(0), key(N / 2))
  t.ok(Math.abs(half - total / 2) <= total * 0.1, `approximateSize of half ${half} ~ ${Math.round(total / 2)}`)
  t.is(await db.approximateSize(key(N), key(0)), 0, 'empty range: 0')
  await db.close()
})

test('stats().memory: the memtables, the block cache and the open tables\' indexes and filters, each as bounded by its option', async (t) => {
  const db = new LsmLevel(tempDir(), { writeBufferSize: 64 * 1024, cacheSize: 256 * 1024, compression: false })
  await db.open()
  const empty = db.stats().memory
  t.same(empty, { memtables: 0, blockCache: 0, tables: 0, total: 0 }, 'an empty database holds nothing')
  const N = 20_000
  for (let i = 0; i < N; i += 500) {
    await db.batch(Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'v'.repeat(50) })))
  }
  await db.engine.waitForIdle()
  for (let i = 0; i < N; i += 7) await db.get(key(i)) // opens every table, fills the cache
  const s = db.stats()
  const m = s.memory
  t.is(m.memtables, s.memtableBytes, 'memtables: as memtableBytes')
  t.ok(m.memtables <= 64 * 1024 * 3, `memtables within (1 + maxImmutableMemtables) write buffers (${m.memtables})`)
  t.is(m.blockCache, s.blockCache.bytes, 'block cache: its bytes')
  t.ok(m.blockCache > 128 * 1024 && m.blockCache <= 256 * 1024, `block cache used and within cacheSize (${m.blockCache})`)
  // 10 bits per key of Bloom filter, and an index entry per 4 KiB block, for every key in a table.
  const inTables = N - s.memtableBytes / 60
  t.ok(m.tables >= inTables * 10 / 8, `tables: at least the filters' bytes (${m.tables} for about ${Math.round(inTables)} keys)`)
  t.ok(m.tables < inTables * 10, `tables: far below the data (${m.tables})`)
  t.is(m.total, m.memtables + m.blockCache + m.tables, 'total: the sum')
  t.ok(db.getProperty('lsm.stats').includes('memory: memtables'), 'lsm.stats prints it')
  await db.close()
})

test('iterators and the block cache: a full scan caches only the first blocks of its runs, unless fillCache: true; fillCache false none; a fillCache not boolean is LEVEL_INVALID_OPTION', async (t) => {
  const location = tempDir()
  const db = new LsmLevel(location, { compression: false })
  await db.open()
  const N = 20_000
  for (let i = 0; i < N; i += 500) {
    await db.batch(Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'v'.repeat(100) })))
  }
  await db.compactRange()
  await db.close()
  const bytes: Record<string, number> = {}
  for (const fillCache of [undefined, true, false]) {
    const reopened = new LsmLevel(location)
    await reopened.open()
    let n = 0
    for await (const [k, v] of reopened.iterator(fillCache === undefined ? {} : { fillCache })) if (k === key(n) && v.length === 100) n++
    t.is(n, N, `fillCache ${String(fillCache)}: the scan sees every entry`)
    bytes[String(fillCache)] = reopened.stats().blockCache.bytes
    await reopened.close()
  }
  // 20,000 entries of 110 bytes: over 2 MB of 4 KiB blocks.
  t.ok(bytes.true > 2_000_000, `fillCache true: every block cached (${bytes.true} bytes)`)
  t.ok(bytes.undefined > 0 && bytes.undefined * 10 < bytes.true, `default: only the first blocks of each table's run cached (${bytes.undefined} bytes)`)
  t.is(bytes.false, 0, 'fillCache false: nothing cached')
  const again = new LsmLevel(location)
  await again.open()
  let code: unknown
  try {
    const it = again.iterator({ fillCache: 'yes' } as never)
    await it.next()
    await it.close()
  } catch (err) {
    code = (err as { code?: unknown }).code
  }
  t.is(code, 'LEVEL_INVALID_OPTION', 'fillCache must be a boolean')
  await again.close()
})

test('stats().pendingWrites counts the writes issued and not yet committed', async (t) => {
  const db = new LsmLevel(tempDir())
  await db.open()
  const writes = Array.from({ length: 100 }, (_, i) => db.put('k' + i, 'v'))
  let most = 0
  for (let i = 0; i < 50; i++) {
    most = Math.max(most, db.stats().pendingWrites)
    await null
  }
  await Promise.all(writes)
  t.ok(most > 0 && most <= 100, `the writes in flight wait in the queue until the commit (${most} seen at most)`)
  t.is(db.stats().pendingWrites, 0, 'none once they resolved')
  await db.close()
})
