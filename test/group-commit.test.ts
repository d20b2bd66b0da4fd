// Group commit: writes issued in the same tick share one write(2) of the log,
// and sync writes waiting together share one fdatasync. Counted through a
// FileSystem wrapper around the node file system.
import test from 'tape'
import { Engine, encodeBatch } from '../hosts/node/index'
import { NodeFileSystem } from '../hosts/node/node-fs'
import type { WritableFile } from '../lib/fs/fs'
import { KIND_VALUE } from '../lib/keys'
import { tempDir } from './util/temp'
import { MemFileSystem } from './fs/mem-fs'

/** `f` with some of its methods replaced. */
function wrapFile (f: WritableFile, over: Partial<WritableFile>): WritableFile {
  return {
    append: (d) => f.append(d),
    sync: () => f.sync(),
    syncAsync: () => f.syncAsync(),
    size: () => f.size(),
    close: () => f.close(),
    ...over
  }
}

class CountingFs extends NodeFileSystem {
  logAppends = 0
  logSyncs = 0
  override openWrite (path: string, options?: { preallocate?: boolean }): WritableFile {
    const f = super.openWrite(path, options)
    if (!path.endsWith('.log')) return f
    return wrapFile(f, {
      append: (d) => { this.logAppends++; f.append(d) },
      sync: () => { this.logSyncs++; f.sync() },
      syncAsync: () => { this.logSyncs++; return f.syncAsync() }
    })
  }
}

const put = (i: number) => [{ kind: KIND_VALUE, key: Buffer.from('k' + i), value: Buffer.from('v' + i) }]

test('writes issued in one tick share one write(2); sync writes share one fsync', async (t) => {
  const fs = new CountingFs()
  const engine = await Engine.open(tempDir(), { compactionWorker: false }, fs)
  const appends0 = fs.logAppends
  await Promise.all(Array.from({ length: 100 }, (_, i) => engine.write(encodeBatch(put(i)), false)))
  t.is(fs.logAppends - appends0, 1, '100 default writes in one tick: one append')
  t.is(fs.logSyncs, 0, 'default writes never fsync')

  const appends1 = fs.logAppends
  await Promise.all(Array.from({ length: 64 }, (_, i) => engine.write(encodeBatch(put(100 + i)), i % 2 === 0)))
  t.is(fs.logAppends - appends1, 1, '64 mixed writes in one tick: one append')
  t.is(fs.logSyncs, 1, 'one fsync covers all the sync writes of the group')

  // 64 concurrent writers, each awaiting its own sync write in a loop: far fewer fsyncs than writes.
  const syncs0 = fs.logSyncs
  let writes = 0
  await Promise.all(Array.from({ length: 64 }, async (_, w) => {
    for (let i = 0; i < 20; i++) { await engine.write(encodeBatch(put(1000 + w * 100 + i)), true); writes++ }
  }))
  const syncs = fs.logSyncs - syncs0
  t.comment(`${writes} sync writes from 64 writers: ${syncs} fsyncs`)
  t.ok(syncs <= writes / 8, `group commit: ${syncs} fsyncs for ${writes} durable writes`)
  for (let i = 0; i < 100; i++) t.is(engine.get(Buffer.from('k' + i))?.toString(), 'v' + i, `k${i} readable`)
  await engine.close()
})

// inlineSync: a sync write's fdatasync runs on the event loop (WritableFile.sync)
// while it is fast; one slower than 1 ms sends the next 256 to the thread pool
// (syncAsync), after which inline syncs are tried again. On the in-memory file
// system and a clock of the test's own (performance.now, which the pipeline
// times a sync with, stands still but for the wrapper's slowMs), so that only
// the wrapper decides what is slow: with the real clock, a process descheduled
// during a sync on a loaded machine made a fast sync slow.
let clockMs = 0
class SlowSyncFs extends MemFileSystem {
  inline = 0
  pooled = 0
  /** Milliseconds each inline log sync takes on the test's clock. */
  slowMs = 0
  override openWrite (path: string): WritableFile {
    const f = super.openWrite(path)
    if (!path.endsWith('.log')) return f
    return wrapFile(f, {
      sync: () => {
        this.inline++
        f.sync()
        clockMs += this.slowMs
      },
      syncAsync: () => { this.pooled++; return f.syncAsync() }
    })
  }
}

test('inlineSync: fast fdatasyncs run inline; a slow one sends the next 256 to the thread pool', async (t) => {
  const realNow = Object.getOwnPropertyDescriptor(performance, 'now')
  performance.now = () => clockMs
  t.teardown(() => {
    if (realNow !== undefined) Object.defineProperty(performance, 'now', realNow)
    else delete (performance as { now?: unknown }).now
  })
  const fs = new SlowSyncFs()
  const engine = await Engine.open(tempDir(), { compactionWorker: false }, fs)
  for (let i = 0; i < 20; i++) await engine.write(encodeBatch(put(i)), true)
  t.is(fs.inline, 20, 'fast fdatasyncs: each sync write synced inline')
  t.is(fs.pooled, 0, 'none on the thread pool')

  fs.slowMs = 3
  await engine.write(encodeBatch(put(20)), true)
  t.is(fs.inline, 21, 'the slow fdatasync ran inline')
  fs.slowMs = 0
  for (let i = 0; i < 256; i++) await engine.write(encodeBatch(put(100 + i)), true)
  t.is(fs.inline, 21, 'after it, no inline fdatasync for 256 sync writes')
  t.is(fs.pooled, 256, 'they went to the thread pool')
  await engine.write(encodeBatch(put(400)), true)
  t.is(fs.inline, 22, 'then inline again')
  let readable = 0
  for (let i = 0; i < 256; i++) if (engine.get(Buffer.from('k' + (100 + i)))?.toString() === 'v' + (100 + i)) readable++
  t.is(readable, 256, 'every write readable')
  await engine.close()

  const off = new SlowSyncFs()
  const pooledOnly = await Engine.open(tempDir(), { compactionWorker: false, inlineSync: false }, off)
  for (let i = 0; i < 10; i++) await pooledOnly.write(encodeBatch(put(i)), true)
  t.is(off.inline, 0, 'inlineSync: false never syncs a sync write on the event loop')
  t.is(off.pooled, 10, 'each went to the thread pool')
  await pooledOnly.close()
})
