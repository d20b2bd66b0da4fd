// Object stores (lib/backup/object-store.ts): the contract
// (test/util/object-store-contract.ts) run against the directory store
// (hosts/node/object-store/directory-store.ts) and, where the S3 client and
// the s3rver emulator are installed, the S3 store on 127.0.0.1; the directory
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
import { startS3, type LocalS3 } from './util/s3-server'
import { tempDir } from './util/temp'

objectStoreContract(test, 'directory', async () => new DirectoryStore(tempDir('lsm-store-')))
objectStoreContract(test, 'memory (the tests\' store)', async () => new MemoryStore())

let s3: LocalS3 | undefined
test('s3: start the emulator (s3rver) on 127.0.0.1', async (t) => {
  s3 = await startS3()
  if (s3 === undefined) {
    t.skip('s3rver or @aws-sdk/client-s3 is not installed: the S3 store is not tested')
    return
  }
  t.pass(`s3rver at ${s3.endpoint}`)
})
objectStoreContract((name, cb) => test(name, async (t) => {
  if (s3 === undefined) { t.skip('no emulator'); return }
  await cb(t)
}), 's3 (s3rver, no conditional put)', async () => await s3!.store())

test('s3: a store that does not answer fails within its request timeout, as an error the callers retry', async (t) => {
  if (s3 === undefined) { t.skip('no emulator'); return }
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

test('s3: stop the emulator', async (t) => {
  await s3?.close()
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
