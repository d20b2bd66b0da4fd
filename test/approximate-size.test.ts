// approximateSize() across reopens, on lsm-level and classic-level in the same
// test. What applications rely on (a real application's own test suite checks
// a sub-database's size this way):
//
// - after writes, a close and a reopen, a range holding data has a size above
//   zero, though the writes were only in the log at close (classic-level counts
//   them because LevelDB writes the replayed log to a table during its open;
//   lsm-level flushes the replayed memtables after the open and approximateSize
//   waits for that flush);
// - with no writes in between, two reopens give the same size;
// - once the range is cleared and compacted, its size is zero, before and
//   after a reopen.
//
// Also what levels() and stats() report in the window before the replayed
// memtable is in a table (lsm-level only: classic-level has no such window).
import test from 'tape'
import { ClassicLevel } from 'classic-level'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

interface Db {
  open (): Promise<void>
  close (): Promise<void>
  put (key: string, value: Uint8Array): Promise<void>
  batch (ops: Array<{ type: 'put', key: string, value: Uint8Array }>): Promise<void>
  clear (): Promise<void>
  compactRange (start: string, end: string): Promise<void>
  approximateSize (start: string, end: string): Promise<number>
}

const engines: Array<[string, (dir: string) => Db]> = [
  ['lsm-level', (dir) => new LsmLevel<string, Uint8Array>(dir, { valueEncoding: 'view' }) as unknown as Db],
  ['classic-level', (dir) => new ClassicLevel<string, Uint8Array>(dir, { valueEncoding: 'view' }) as unknown as Db]
]

/** The range the application measures: everything from 'a' on. */
const size = (db: Db): Promise<number> => db.approximateSize('a', '\uffff')

for (const [name, make] of engines) {
  test(`${name}: one put, closed, reopened: its size is above zero and the same after a second reopen`, async (t) => {
    const db = make(tempDir())
    await db.open()
    await db.put('some-key', new Uint8Array([123]))
    await db.close()
    await db.open()
    const first = await size(db)
    t.ok(first > 0, `size after the first reopen: ${first}`)
    await db.close()
    await db.open()
    t.is(await size(db), first, 'the same size after a second reopen')
    await db.close()
  })

  test(`${name}: 2,000 writes in batches, closed, reopened twice, cleared and compacted`, async (t) => {
    const db = make(tempDir())
    await db.open()
    for (let b = 0; b < 20; b++) {
      const ops = []
      for (let i = 0; i < 100; i++) ops.push({ type: 'put' as const, key: 'k' + String(b * 100 + i).padStart(6, '0'), value: new Uint8Array(100).fill(i) })
      await db.batch(ops)
    }
    await db.close()
    await db.open()
    const first = await size(db)
    // 2,000 values of 100 bytes, compressed at most tenfold (each is one byte repeated).
    t.ok(first > 20_000, `size after a reopen: ${first}`)
    t.ok(await db.approximateSize('k000000', 'k001000') < first, 'a part of the range is smaller than the whole')
    await db.close()
    await db.open()
    t.is(await size(db), first, 'the same size after a second reopen')
    await db.clear()
    await db.compactRange('a', '\uffff')
    t.is(await size(db), 0, 'zero once cleared and compacted')
    await db.close()
    await db.open()
    t.is(await size(db), 0, 'still zero after a reopen')
    await db.close()
  })
}

test('lsm-level: before the replayed memtable is in a table, levels() and stats() say where the data is', async (t) => {
  const dir = tempDir()
  // The write stays in the log at close (flushOnClose: false), for the open to replay.
  const db = new LsmLevel<string, Uint8Array>(dir, { valueEncoding: 'view', flushOnClose: false })
  await db.put('some-key', new Uint8Array([123]))
  await db.close()
  await db.open()
  // In the turn open() resolves in, the replay's flush has not run.
  const tablesAtOpen = db.levels().reduce((n, l) => n + l.files, 0)
  t.is(tablesAtOpen, 0, 'levels(): no table yet (the write is in a replayed memtable)')
  t.ok(db.stats().memtableBytes > 0, `stats().memtableBytes counts the replayed memtable: ${db.stats().memtableBytes}`)
  t.is(db.getProperty('lsm.num-files-at-level0'), '0', 'getProperty: no level-0 file yet')
  const bytes = await size(db)
  t.ok(bytes > 0, `approximateSize waited for the replay's table: ${bytes}`)
  t.is(db.levels()[0].files, 1, 'levels(): the replay\'s table, once approximateSize resolved')
  await db.close()
})
