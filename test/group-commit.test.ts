// Group commit: writes issued in the same tick share one write(2) of the log,
// and sync writes waiting together share one fdatasync. Counted through a
// FileSystem wrapper around the node file system.
import test from 'tape'
import { Engine } from '../lib/db'
import { NodeFileSystem } from '../lib/fs/node-fs'
import type { WritableFile } from '../lib/fs/fs'
import { KIND_VALUE } from '../lib/keys'
import { tempDir } from './util/temp'

class CountingFs extends NodeFileSystem {
  logAppends = 0
  logSyncs = 0
  override openWrite (path: string): WritableFile {
    const f = super.openWrite(path)
    if (!path.endsWith('.log')) return f
    return {
      append: (d) => { this.logAppends++; f.append(d) },
      sync: () => { this.logSyncs++; f.sync() },
      syncAsync: () => { this.logSyncs++; return f.syncAsync() },
      size: () => f.size(),
      close: () => f.close()
    }
  }
}

const put = (i: number) => [{ kind: KIND_VALUE, key: Buffer.from('k' + i), value: Buffer.from('v' + i) }]

test('writes issued in one tick share one write(2); sync writes share one fsync', async (t) => {
  const fs = new CountingFs()
  const engine = await Engine.open(tempDir(), { compactionWorker: false }, fs)
  const appends0 = fs.logAppends
  await Promise.all(Array.from({ length: 100 }, (_, i) => engine.write(put(i), false)))
  t.is(fs.logAppends - appends0, 1, '100 default writes in one tick: one append')
  t.is(fs.logSyncs, 0, 'default writes never fsync')

  const appends1 = fs.logAppends
  await Promise.all(Array.from({ length: 64 }, (_, i) => engine.write(put(100 + i), i % 2 === 0)))
  t.is(fs.logAppends - appends1, 1, '64 mixed writes in one tick: one append')
  t.is(fs.logSyncs, 1, 'one fsync covers all the sync writes of the group')

  // 64 concurrent writers, each awaiting its own sync write in a loop: far fewer fsyncs than writes.
  const syncs0 = fs.logSyncs
  let writes = 0
  await Promise.all(Array.from({ length: 64 }, async (_, w) => {
    for (let i = 0; i < 20; i++) { await engine.write(put(1000 + w * 100 + i), true); writes++ }
  }))
  const syncs = fs.logSyncs - syncs0
  t.comment(`${writes} sync writes from 64 writers: ${syncs} fsyncs`)
  t.ok(syncs <= writes / 8, `group commit: ${syncs} fsyncs for ${writes} durable writes`)
  for (let i = 0; i < 100; i++) t.is(engine.get(Buffer.from('k' + i))?.toString(), 'v' + i, `k${i} readable`)
  await engine.close()
})
