// A TypeScript user of lsm-level, importing it by its package name (resolved
// through package.json "exports" to dist/index.d.ts). Type-checked only:
// test/types.test.ts runs `tsc -p test/types/tsconfig.json --noEmit`.
import { LsmLevel, Level, type LsmStats, type LsmPutOptions, type LsmBatchOptions, type LsmSublevel } from 'lsm-level'

interface User { name: string, age: number }
type LsmSublevelOf<V> = LsmSublevel<LsmLevel<string, any>, string, V>

export async function consumer (dir: string): Promise<void> {
  const db = new LsmLevel<string, any>(dir, {
    valueEncoding: 'json',
    writeBufferSize: 1024 * 1024,
    compaction: 'tiered',
    bloomBitsPerKey: 10,
    compactionWorker: false
  })
  await db.open()

  // Writes, with and without the engine's `sync` option.
  await db.put('a', { x: 1 })
  await db.put('b', { x: 2 }, { sync: true })
  await db.put('c', { x: 3 }, { sync: false, valueEncoding: 'json' })
  await db.del('a')
  await db.del('b', { sync: true })
  await db.batch([
    { type: 'put', key: 'd', value: { x: 4 } },
    { type: 'del', key: 'c' }
  ])
  await db.batch([{ type: 'put', key: 'e', value: 5 }], { sync: true })
  await db.batch().put('f', 6).del('e').write({ sync: true })
  await db.batch().put('f', 6).del('e').write()
  const putOptions: LsmPutOptions<string, any> = { sync: true }
  await db.put('g', 7, putOptions)
  const batchOptions: LsmBatchOptions<string, any> = { sync: true, keyEncoding: 'utf8' }
  await db.batch([{ type: 'put', key: 'h', value: 8 }], batchOptions)

  // Per-call encodings keep their generics.
  await db.put<string, Buffer>('raw', Buffer.from('bytes'), { valueEncoding: 'buffer', sync: true })
  const raw: Buffer | undefined = await db.get<string, Buffer>('raw', { valueEncoding: 'buffer' })
  const value: any = await db.get('d')
  const many: any[] = await db.getMany(['d', 'f'])
  const present: boolean = await db.has('d')

  // Extensions.
  const stats: LsmStats = db.stats()
  const wamp: number = stats.writeAmplification
  const levelFiles: number[] = stats.levels.map((l) => l.files)
  const text: string = db.getProperty('lsm.stats')
  const l0: number = Number(db.getProperty('lsm.num-files-at-level0'))
  const size: number = await db.approximateSize('a', 'z')
  await db.compactRange()
  await db.compactRange('a', 'm')
  await db.flush()

  // Iterators and snapshots.
  for await (const [key, v] of db.iterator({ gte: 'a', lt: 'z', limit: 10 })) {
    const k: string = key
    void [k, v]
  }
  const keys: string[] = await db.keys({ reverse: true }).all()
  const values: any[] = await db.values().all()
  const snapshot = db.snapshot()
  const old: any = await db.get('d', { snapshot })
  const it = db.iterator({ snapshot })
  const first: [string, any] | undefined = await it.next()
  await it.close()
  await snapshot.close()

  // Sublevels.
  const users = db.sublevel<string, User>('users', { valueEncoding: 'json' })
  await users.put('u1', { name: 'Ada', age: 36 })
  const user: User | undefined = await users.get('u1')
  // A sublevel's writes take `sync` too, at any depth, and keep the sublevel API.
  await users.put('u2', { name: 'Grace', age: 45 }, { sync: true })
  await users.del('u2', { sync: true })
  await users.batch([{ type: 'put', key: 'u3', value: { name: 'Linus', age: 28 } }], { sync: true })
  await users.batch([{ type: 'del', key: 'u3' }])
  await users.batch().put('u4', { name: 'Ken', age: 81 }).del('u1').write({ sync: true })
  await users.batch().del('u4').write()
  const plainSub = db.sublevel('plain')
  await plainSub.put('k', 'v', { sync: true })
  const pv: string | undefined = await plainSub.get('k')
  const nested = users.sublevel<string, number>('counts', { valueEncoding: 'json' })
  await nested.put('n', 1, { sync: true })
  await nested.batch().put('m', 2).write({ sync: true })
  const count: number | undefined = await nested.get('n')
  const subPath: string[] = nested.path()
  const prefix: string = nested.prefix
  const parentKeys: string[] = await nested.parent.keys().all()
  const deeper = nested.sublevel('deeper')
  await deeper.del('x', { sync: false })
  await db.batch([
    { type: 'put', sublevel: users, key: 'u5', value: { name: 'Barbara', age: 84 } },
    { type: 'del', sublevel: plainSub, key: 'k' }
  ], { sync: true })
  const userSync: LsmSublevelOf<User> = users
  await userSync.put('u6', { name: 'Edsger', age: 72 }, { sync: true })

  await db.close()
  await LsmLevel.repair(dir)
  await Level.destroy(dir)
  const imported = await LsmLevel.importLevelDB(`${dir}-classic`, dir, { writeBufferSize: 1 << 20, compression: true, onProgress: (read: number, total: number) => { void [read, total] } })
  const importedKeys: number = imported.keys

  // A default-typed database: string keys and values.
  const plain = new Level(dir)
  await plain.put('k', 'v', { sync: true })
  const s: string | undefined = await plain.get('k')
  await plain.close()

  void [importedKeys, raw, value, many, present, wamp, levelFiles, text, l0, size, keys, values, old, first, user, s, pv, count, subPath, prefix, parentKeys]
}
