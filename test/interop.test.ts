// Interop with the Level ecosystem: the same scenario runs unchanged on
// classic-level and on lsm-level and must give identical results; plus nested
// sublevels with different encodings, batches across sublevels, hooks, events,
// every built-in encoding, multi-byte UTF-8 keys in bytewise order, and
// level-read-stream.
import test from 'tape'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

import { ClassicLevel } from 'classic-level'
// Its typings lack the Node stream methods the test uses (on, pipe).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { EntryStream, KeyStream } = require('level-read-stream')

/** A scenario written against the Level API only; returns everything it observed. */
async function scenario (db: any): Promise<unknown[]> {
  const seen: unknown[] = []
  const events: string[] = []
  db.on('write', (ops: any[]) => events.push(ops.map((o) => `${o.type}:${o.key}`).join(',')))
  db.hooks.prewrite.add((op: any, batch: any) => {
    if (op.type === 'put' && typeof op.key === 'string' && op.key.startsWith('user:')) {
      batch.add({ type: 'put', key: 'index:' + op.value.name, value: op.key, keyEncoding: 'utf8', valueEncoding: 'utf8' })
    }
  })
  const subs: string[] = []
  db.hooks.newsub.add((sub: any) => subs.push(sub.prefix))
  db.hooks.postopen.add(async () => { await db.put('opened', 'yes') })
  await db.open()
  seen.push(await db.get('opened'))
  const users = db.sublevel('users', { valueEncoding: 'json' })
  const counters = db.sublevel('counters', { keyEncoding: 'utf8', valueEncoding: 'utf8' })
  const nested = users.sublevel('archive', { keyEncoding: 'hex', valueEncoding: 'base64' })
  await db.put('user:1', { name: 'ada' }, { valueEncoding: 'json' })
  await db.batch([
    { type: 'put', sublevel: users, key: 'u2', value: { name: 'grace', langs: ['cobol'] } },
    { type: 'put', sublevel: counters, key: 'visits', value: '42' },
    { type: 'put', sublevel: nested, key: 'cafe', value: 'aGVsbG8=' },
    { type: 'put', key: 'ключ', value: 'значение' },
    { type: 'put', key: 'äbc', value: 'umlaut' },
    { type: 'put', key: 'abc', value: 'ascii' },
    { type: 'put', key: '日本', value: 'cjk' },
    { type: 'put', key: Buffer.from([0xff, 0x00]), value: Buffer.from([1, 2, 3]), keyEncoding: 'buffer', valueEncoding: 'buffer' }
  ])
  await db.del('abc')
  await db.put('abc', 'again')
  seen.push(await users.get('u2'))
  seen.push(await counters.get('visits'))
  seen.push(await nested.get('cafe'))
  seen.push(await db.get('index:ada'))
  seen.push(await db.get('user:1', { valueEncoding: 'json' }))
  seen.push(await db.getMany(['abc', 'missing', 'ключ']))
  seen.push(await db.keys().all())
  seen.push(await db.keys({ keyEncoding: 'buffer' }).all().then((ks: Buffer[]) => ks.map((k) => k.toString('hex'))))
  seen.push(await db.iterator({ gte: 'a', lt: 'z', reverse: true }).all())
  seen.push(await users.iterator({ gte: 'a' }).all()) // the nested sublevel's entries sort first and are not JSON
  seen.push(await nested.keys().all())
  seen.push(await db.values({ valueEncoding: 'view', gte: 'ä' }).all().then((vs: Uint8Array[]) => vs.map((v) => Buffer.from(v).toString('hex'))))
  seen.push(await db.get(Buffer.from([0xff, 0x00]), { keyEncoding: 'buffer', valueEncoding: 'hex' }))
  const stream: unknown[] = []
  await new Promise<void>((resolve, reject) => {
    new EntryStream(db, { gte: 'a' }).on('data', (e: any) => stream.push([e.key, e.value])).on('end', resolve).on('error', reject)
  })
  seen.push(stream)
  const keys: unknown[] = []
  await new Promise<void>((resolve, reject) => {
    new KeyStream(users).on('data', (k: any) => keys.push(k)).on('end', resolve).on('error', reject)
  })
  seen.push(keys)
  const snap = db.snapshot()
  await db.put('abc', 'after-snapshot')
  seen.push(await db.get('abc', { snapshot: snap }))
  await snap.close()
  await db.clear({ gte: 'a', lt: 'b' })
  seen.push(await db.keys({ lt: 'b' }).all())
  seen.push(events)
  seen.push(subs)
  await db.close()
  return seen
}

test('the same scenario gives the same results on classic-level and lsm-level', async (t) => {
  const classic = await scenario(new ClassicLevel(path.join(tempDir(), 'classic')))
  const lsm = await scenario(new LsmLevel(path.join(tempDir(), 'lsm')))
  t.same(lsm, classic, 'identical observations')
  t.comment(`${classic.length} observations, ${JSON.stringify(classic).length} characters of JSON`)
  t.ok(JSON.stringify(classic).includes('ключ'), 'multi-byte keys were part of it')
  t.ok((classic[14] as unknown[]).length >= 5, 'the read stream saw the entries')
  const keys = lsm[7] as string[]
  const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
  t.same(keys, sorted, 'keys come back in bytewise (UTF-8) order')
})

test('the scenario also holds with tiny buffers (flushes and compactions underneath)', async (t) => {
  const classic = await scenario(new ClassicLevel(path.join(tempDir(), 'classic')))
  const lsm = await scenario(new LsmLevel(path.join(tempDir(), 'lsm'), { writeBufferSize: 256, blockSize: 64, level0CompactionTrigger: 1, targetFileSize: 256, maxBytesForLevelBase: 512 }))
  t.same(lsm, classic, 'identical observations')
})
