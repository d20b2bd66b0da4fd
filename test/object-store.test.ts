// Object stores (lib/backup/object-store.ts): the contract
// (test/util/object-store-contract.ts) run against the directory store
// (hosts/node/object-store/directory-store.ts) and, where the S3 client and
// the s3rver emulator are installed, the S3 store on 127.0.0.1; the directory
// store's own promises: keys that would leave its root refused, temporary
// files never listed, an object written whole or not at all.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { objectStoreContract } from './util/object-store-contract'
import { tempDir } from './util/temp'

objectStoreContract(test, 'directory', async () => new DirectoryStore(tempDir('lsm-store-')))

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
