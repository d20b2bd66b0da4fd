// Checkpoints (lib/checkpoint.ts): during a write storm with flushes and
// compactions, many checkpoints, each opened and compared with a snapshot taken
// in the same turn (so at the same sequence number); tables hard-linked, or
// copied where linking fails; the unflushed writes included; a non-empty target
// refused. SEED=<n> replays the storm.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Engine, encodeBatch } from '../hosts/node/index'
import { nodeFileSystem } from '../hosts/node/node-fs'
import type { FileSystem } from '../lib/fs/fs'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

async function contents (db: LsmLevel<string, string>, snapshot?: ReturnType<LsmLevel['snapshot']>): Promise<Array<[string, string]>> {
  return await db.iterator({ snapshot }).all()
}

test('checkpoints during a write storm each hold exactly the state at their sequence number', async (t) => {
  const rnd = new Random(seed)
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir, { writeBufferSize: 16 * 1024, level0CompactionTrigger: 2, targetFileSize: 8 * 1024 })
  await db.open()
  let writing = true
  const key = (): string => 'k' + String(rnd.int(3000)).padStart(5, '0')
  const writer = async (): Promise<void> => {
    while (writing) {
      const r = rnd.int(100)
      if (r < 70) await db.put(key(), rnd.bytes(1 + rnd.int(60)).toString('hex'))
      else if (r < 85) await db.del(key())
      else if (r < 99) await db.batch([{ type: 'put', key: key(), value: 'b' + rnd.int(1e6) }, { type: 'del', key: key() }])
      else { const a = key(); await db.clear({ gte: a, lt: a + 'z' }) }
    }
  }
  const writers = [writer(), writer(), writer()]
  const CHECKPOINTS = 25
  let compared = 0
  let withUnflushed = 0
  try {
    for (let i = 0; i < CHECKPOINTS; i++) await checkpointAndCompare(i)
  } finally {
    writing = false
    await Promise.all(writers)
  }
  async function checkpointAndCompare (i: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20 + rnd.int(40)))
    const target = path.join(tempDir(), 'cp')
    // The same turn: the snapshot and the checkpoint see the same sequence number.
    const snapshot = db.snapshot()
    const sequence = db.sequence
    const made = await db.checkpoint(target)
    t.equal(made.sequence, sequence, `checkpoint ${i} is at sequence ${sequence}`)
    if (made.records > 0) withUnflushed++
    const expected = await contents(db, snapshot)
    await snapshot.close()
    const copy = new LsmLevel<string, string>(target, { createIfMissing: false })
    await copy.open()
    const got = await contents(copy)
    t.equal(copy.sequence, sequence, `checkpoint ${i} opens at its sequence number`)
    if (JSON.stringify(got) === JSON.stringify(expected)) compared++
    else t.fail(`checkpoint ${i}: ${got.length} entries, the snapshot has ${expected.length}`)
    await copy.close()
  }
  const c = db.engine.counters
  t.equal(compared, CHECKPOINTS, `${CHECKPOINTS} checkpoints equal their snapshots`)
  t.ok(withUnflushed > 0, `${withUnflushed} checkpoints carried unflushed writes`)
  t.ok(c.flushes > 0 && c.compactions > 0, `flushes (${c.flushes}) and compactions (${c.compactions}) ran under them`)
  await db.close()
})

test('a checkpoint links its tables and includes writes not yet in tables', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < 100; i++) await db.put('a' + i, 'v' + i)
  await db.flush()
  await db.put('unflushed', 'yes')
  await db.clear({ gte: 'a5', lt: 'a6' })
  const target = path.join(tempDir(), 'cp')
  const made = await db.checkpoint(target)
  t.ok(made.linked > 0 && made.copied === 0, `${made.linked} tables linked`)
  const table = fs.readdirSync(target).find((n) => n.endsWith('.sst'))!
  t.equal(fs.statSync(path.join(target, table)).ino, fs.statSync(path.join(dir, table)).ino, 'the same inode as the database\'s table')
  t.equal(made.records, 2, 'the put and the clear were copied from the log')
  const copy = new LsmLevel<string, string>(target)
  await copy.open()
  t.equal(await copy.get('unflushed'), 'yes', 'an unflushed put is in the checkpoint')
  t.equal(await copy.get('a55'), undefined, 'an unflushed clear is in the checkpoint')
  t.equal(await copy.get('a42'), 'v42', 'a table\'s key is in the checkpoint')
  await copy.put('new', 'x')
  t.equal(await db.get('new'), undefined, 'writes to the checkpoint do not reach the database')
  await copy.close()
  try {
    await db.checkpoint(target)
    t.fail('a non-empty target was taken')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'a non-empty target is refused')
  }
  await db.close()
})

test('where a table cannot be linked (EXDEV), it is copied', async (t) => {
  const dir = tempDir()
  const noLinks: FileSystem = Object.create(nodeFileSystem)
  noLinks.hardLink = () => { throw Object.assign(new Error('cross-device link'), { code: 'EXDEV' }) }
  const engine = await Engine.open(dir, {}, noLinks)
  await engine.write(encodeBatch([{ kind: 1, key: 'k', value: 'v' }]), false)
  await engine.flushMemTable()
  const target = path.join(tempDir(), 'cp')
  const made = await engine.checkpoint(target)
  t.equal(made.linked, 0, 'nothing linked')
  t.equal(made.copied, 1, 'the table copied')
  await engine.close()
  const copy = await Engine.open(target, { createIfMissing: false })
  t.equal(copy.get(Buffer.from('k'))?.toString(), 'v', 'the copied table reads')
  await copy.close()
})
