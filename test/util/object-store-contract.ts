// The object-store contract (lib/backup/object-store.ts), run against every
// implementation: test/object-store.test.ts (directory, S3 against a local
// emulator) calls objectStoreContract once per store.
import type { Test } from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import type { ObjectStore } from '../../lib/backup/object-store'

type TestFn = (name: string, cb: (t: Test) => Promise<void>) => void

async function code (p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
    return undefined
  } catch (err) {
    return (err as { code?: string }).code ?? 'no code: ' + String(err)
  }
}

export function objectStoreContract (test: TestFn, name: string, make: () => Promise<ObjectStore>): void {
  test(`${name}: put, get whole and by range`, async (t) => {
    const s = await make()
    const body = Buffer.from('0123456789abcdef')
    await s.put('p/a/one', body)
    t.same(await s.get('p/a/one'), body, 'whole')
    t.same(await s.get('p/a/one', { offset: 3, length: 4 }), Buffer.from('3456'), 'a range')
    t.same(await s.get('p/a/one', { offset: 10, length: 100 }), Buffer.from('abcdef'), 'a range past the end: what there is')
    await s.put('p/a/empty', Buffer.alloc(0))
    t.equal((await s.get('p/a/empty')).length, 0, 'an empty object')
    const big = Buffer.alloc(3 * 1024 * 1024 + 17)
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff
    await s.put('p/big', big)
    t.ok((await s.get('p/big')).equals(big), 'a 3 MiB object')
  })

  test(`${name}: get of an absent key is LEVEL_NOT_FOUND`, async (t) => {
    const s = await make()
    t.equal(await code(s.get('q/none')), 'LEVEL_NOT_FOUND')
    t.equal(await code(s.get('q/none', { offset: 0, length: 1 })), 'LEVEL_NOT_FOUND', 'by range too')
  })

  test(`${name}: list by prefix, ascending, with sizes`, async (t) => {
    const s = await make()
    const keys = ['l/b/2', 'l/a/1', 'l/a/10', 'l/ab', 'l/a/0/deep/x', 'm/other', 'lx/not']
    for (const k of keys) await s.put(k, Buffer.from(k))
    const list = async (prefix: string): Promise<string[]> => (await s.list(prefix)).map((o) => o.key)
    t.same(await list('l/'), ['l/a/0/deep/x', 'l/a/1', 'l/a/10', 'l/ab', 'l/b/2'], 'a folder-like prefix, recursive, sorted')
    t.same(await list('l/a'), ['l/a/0/deep/x', 'l/a/1', 'l/a/10', 'l/ab'], 'a prefix that is not at a slash')
    t.same(await list('l/a/1'), ['l/a/1', 'l/a/10'], 'a prefix inside a name')
    t.same(await list('nothing/'), [], 'no key')
    const sizes = await s.list('l/b')
    t.same(sizes, [{ key: 'l/b/2', size: 5 }], 'sizes')
    t.ok((await list('')).length >= keys.length, "'' lists everything")
    t.same((await s.list('l/', { startAfter: 'l/a/10' })).map((o) => o.key), ['l/ab', 'l/b/2'], 'startAfter: the keys after it')
    t.same((await s.list('l/', { startAfter: 'l/a/0' })).map((o) => o.key), ['l/a/0/deep/x', 'l/a/1', 'l/a/10', 'l/ab', 'l/b/2'], 'startAfter: a key that is not there')
  })

  test(`${name}: delete is idempotent; a put replaces`, async (t) => {
    const s = await make()
    await s.put('d/x', Buffer.from('1'))
    await s.put('d/y', Buffer.from('2'))
    await s.delete(['d/x', 'd/absent'])
    t.equal(await code(s.get('d/x')), 'LEVEL_NOT_FOUND', 'deleted')
    t.same((await s.list('d/')).map((o) => o.key), ['d/y'], 'the other is there')
    await s.delete(['d/x'])
    await s.put('d/y', Buffer.from('22'))
    t.same(await s.get('d/y'), Buffer.from('22'), 'replaced')
  })

  test(`${name}: conditional put`, async (t) => {
    const s = await make()
    if (!s.conditionalPut) {
      t.equal(await code(s.put('c/x', Buffer.from('1'), { ifAbsent: true })), 'LEVEL_NOT_SUPPORTED', 'refused where the store has none')
      return
    }
    await s.put('c/x', Buffer.from('1'), { ifAbsent: true })
    t.equal(await code(s.put('c/x', Buffer.from('2'), { ifAbsent: true })), 'LEVEL_OBJECT_EXISTS', 'a second one fails')
    t.same(await s.get('c/x'), Buffer.from('1'), 'the first stays')
    // Many at once: exactly one wins.
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => code(s.put('c/race', Buffer.from(String(i)), { ifAbsent: true }))))
    t.equal(results.filter((r) => r === undefined).length, 1, 'one of eight concurrent conditional puts wins')
    t.ok(results.every((r) => r === undefined || r === 'LEVEL_OBJECT_EXISTS'), 'the others: LEVEL_OBJECT_EXISTS')
  })

  test(`${name}: concurrent puts of many keys`, async (t) => {
    const s = await make()
    await Promise.all(Array.from({ length: 40 }, (_, i) => s.put(`n/${String(i).padStart(3, '0')}`, Buffer.alloc(i, i))))
    const list = await s.list('n/')
    t.equal(list.length, 40, 'all listed')
    t.ok(list.every((o, i) => o.key === `n/${String(i).padStart(3, '0')}` && o.size === i), 'in order, with their sizes')
  })

  test(`${name}: putFile (optional) puts a local file's bytes`, async (t) => {
    const s = await make()
    if (s.putFile === undefined) {
      t.skip('this store has no putFile')
      return
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-putfile-'))
    try {
      const big = Buffer.alloc(2 * 1024 * 1024 + 5)
      for (let i = 0; i < big.length; i++) big[i] = (i * 17) & 0xff
      fs.writeFileSync(path.join(dir, 'big'), big)
      await s.putFile('f/big', path.join(dir, 'big'))
      t.ok((await s.get('f/big')).equals(big), 'its bytes, whole')
      t.deepEqual((await s.list('f/')).map((o) => [o.key, o.size]), [['f/big', big.length]], 'listed with its size')
      t.ok(await code(s.putFile('f/none', path.join(dir, 'absent'))) !== undefined, 'an absent file fails the put')
      t.deepEqual((await s.list('f/')).map((o) => o.key), ['f/big'], 'and leaves no object')
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
}
