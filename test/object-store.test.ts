// Object stores (lib/backup/object-store.ts): the contract
// (test/util/object-store-contract.ts) run against the directory store
// (hosts/node/object-store/directory-store.ts), the tests' memory store and,
// where the S3 client and the s3rver emulator are installed, the S3 store on
// 127.0.0.1 (and its list past one page of 1,000 keys); the directory
// store's own promises: keys that would leave its root refused, temporary
// files never listed, an object written whole or not at all.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import * as net from 'node:net'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { S3Store } from '../hosts/node/object-store/s3-store'
import { objectStoreContract } from './util/object-store-contract'
import { MemoryStore } from './util/memory-store'
import { s3Missing, startS3, type LocalS3 } from './util/s3-server'
import { tempDir } from './util/temp'

objectStoreContract(test, 'directory', async () => new DirectoryStore(tempDir('lsm-store-')))
objectStoreContract(test, 'memory (the tests\' store)', async () => new MemoryStore())

// Registered as skipped (listed by the runner, with the reason) only where s3rver or @aws-sdk/client-s3 is not
// installed; where they are, a failure to load or start them fails.
const missing = s3Missing()
const s3Test = (name: string, cb: (t: test.Test) => Promise<void>): void => { test(name, { skip: missing ?? false }, cb) }
let s3: LocalS3 | undefined
s3Test('s3: start the emulator (s3rver) on 127.0.0.1', async (t) => {
  s3 = await startS3()
  t.pass(`s3rver at ${s3.endpoint}`)
})
objectStoreContract(s3Test, 's3 (s3rver, no conditional put)', async () => await s3!.store())

s3Test('s3: a list past one page (ListObjectsV2 answers 1000 keys a request): 2,500 keys, all of them, in order, from any startAfter', async (t) => {
  const s = await s3!.store()
  const keys = Array.from({ length: 2500 }, (_, i) => `many/${String(i).padStart(5, '0')}`)
  for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map(async (k) => await s.put(k, Buffer.from(k.slice(-2)))))
  await s.put('other/x', Buffer.from('x'))
  const all = await s.list('many/')
  t.equal(all.length, keys.length, `${all.length} listed`)
  t.ok(all.every((o, i) => o.key === keys[i] && o.size === 2), 'each key, in order, with its size')
  const after = await s.list('many/', { startAfter: keys[1499] })
  t.same(after.map((o) => o.key), keys.slice(1500), 'startAfter the 1,500th: the 1,000 after it (two pages)')
  t.equal((await s.list('')).length, keys.length + 1, "'' lists the other prefix too")
})

test('s3: the S3 tests are skipped only where a package itself is not installed', (t) => {
  const notFound = (name: string): Error => Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' })
  t.equal(s3Missing(() => '/x'), undefined, 'both resolve: the tests run')
  t.ok(/s3rver is not installed/.test(s3Missing((n) => { if (n === 's3rver') throw notFound(n); return '/x' }) ?? ''), 's3rver not installed: a reason to skip')
  t.ok(/@aws-sdk\/client-s3 is not installed/.test(s3Missing((n) => { if (n !== 's3rver') throw notFound(n); return '/x' }) ?? ''), '@aws-sdk/client-s3 not installed: a reason to skip')
  t.throws(() => s3Missing(() => { throw notFound('busboy') }), /busboy/, 'a module of its own missing: thrown, not skipped')
  t.throws(() => s3Missing(() => { throw new Error('broken package.json') }), /broken/, 'any other failure: thrown')
  t.end()
})

s3Test('s3: a store that does not answer fails within its request timeout, as an error the callers retry', async (t) => {
  // A server that accepts connections and never answers.
  const sockets: Array<net.Socket> = []
  const silent = net.createServer((socket) => { sockets.push(socket) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const port = (silent.address() as net.AddressInfo).port
  const store = await S3Store.create({ bucket: 'b', endpoint: `http://127.0.0.1:${port}`, credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, requestTimeoutMs: 300 })
  const started = Date.now()
  try {
    await store.get('k')
    t.fail('answered')
  } catch (err) {
    const ms = Date.now() - started
    t.ok(ms < 3000, `failed after ${ms} ms`)
    t.notEqual((err as { code?: string }).code, 'LEVEL_NOT_FOUND', `not taken for an answer: ${(err as Error).name}`)
  } finally {
    store.destroy()
    for (const s of sockets) s.destroy()
    silent.close()
  }
})

s3Test('s3: stop the emulator', async (t) => {
  await s3!.close()
  t.pass('stopped')
})

test('directory: keys that leave the root or name temporary files are refused', async (t) => {
  const s = new DirectoryStore(tempDir('lsm-store-'))
  for (const key of ['../x', 'a/../../x', '/abs', 'a//b', '.hidden', 'a/.b', 'a/', '']) {
    try {
      await s.put(key, Buffer.from('x'))
      t.fail(`accepted ${JSON.stringify(key)}`)
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', `refused ${JSON.stringify(key)}`)
    }
  }
})

test('directory: an unfinished put (its temporary file) is not an object', async (t) => {
  const root = tempDir('lsm-store-')
  const s = new DirectoryStore(root)
  await s.put('a/b', Buffer.from('whole'))
  // What a put killed before its rename leaves.
  fs.writeFileSync(path.join(root, 'a', '.c.0123456789ab.tmp'), 'half')
  t.same((await s.list('a/')).map((o) => o.key), ['a/b'], 'not listed')
  try {
    await s.get('a/c')
    t.fail('found')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_NOT_FOUND', 'not found')
  }
})
