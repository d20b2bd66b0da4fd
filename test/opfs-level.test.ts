// OpfsLevel (adapters/opfs-level.ts) in Node, with the browser's globals
// faked: first none (LEVEL_NOT_SUPPORTED, as on a page), then a dedicated
// worker's: OPFS over the fake of test/fs/fake-opfs.ts and a Web Locks
// manager. Open and close take and give back the lock and the directory's
// mount; a failed open leaves neither held; getSync reads. test/browser.test.ts
// runs OpfsLevel in a real browser's worker.
import test from 'tape'
import { OpfsLevel } from '../adapters/opfs-level'
import { installBrowserPlatform } from '../hosts/browser/platform'
import { FakeDirectory } from './fs/fake-opfs'
import { FakeLocks } from './fs/fake-locks'
import type { BrowserFileSystem } from '../hosts/browser/storage'

function codes (err: unknown): string {
  const e = err as { code?: string, cause?: { code?: string } }
  return e.cause?.code === undefined ? String(e.code) : `${String(e.code)} / ${e.cause.code}`
}

const settle = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

test('OpfsLevel without OPFS sync access handles (on a page, in Node): LEVEL_NOT_SUPPORTED at construction', (t) => {
  try {
    const db = new OpfsLevel('db')
    t.fail(`constructed (${db.location})`)
  } catch (err) {
    t.is(codes(err), 'LEVEL_NOT_SUPPORTED', 'LEVEL_NOT_SUPPORTED')
  }
  t.end()
})

const LOCK = 'lsm-level:/dbs/a'

/** Fakes a dedicated worker's globals (once; after the test above, which needs none). */
async function fakeWorker (): Promise<{ locks: FakeLocks, fs: BrowserFileSystem }> {
  const locks = new FakeLocks()
  const root = new FakeDirectory()
  Object.defineProperty(globalThis, 'navigator', { value: { storage: { getDirectory: async () => root }, locks }, configurable: true })
  Object.defineProperty(globalThis, 'FileSystemFileHandle', { value: class { createSyncAccessHandle (): void {} }, configurable: true })
  return { locks, fs: await installBrowserPlatform() }
}
let worker: ReturnType<typeof fakeWorker> | undefined

test('OpfsLevel in a (faked) worker: open and close take and give back the Web Lock and the mount; getSync', async (t) => {
  const { locks, fs } = await (worker ??= fakeWorker())
  const db = new OpfsLevel('dbs/a')
  await db.open()
  t.ok(locks.held.has(LOCK) && fs.isMounted('/dbs/a'), 'open: the lock is held and the directory mounted')
  await db.put('k', 'v')
  t.is(db.getSync('k'), 'v', 'getSync reads a put')
  const second = new OpfsLevel('dbs/./a')
  await second.open().then(() => t.fail('a second database opened'), (err) => t.is(codes(err), 'LEVEL_DATABASE_NOT_OPEN / LEVEL_LOCKED', 'a second database on the location: LEVEL_LOCKED'))
  await db.close()
  await settle()
  t.ok(!locks.held.has(LOCK) && !fs.isMounted('/dbs/a'), 'close: the lock released and the directory unmounted')
})

test('OpfsLevel in a (faked) worker: a failed open leaves neither the lock nor the mount held', async (t) => {
  const { locks, fs } = await (worker ??= fakeWorker())
  const db = new OpfsLevel('dbs/a')
  await db.open({ errorIfExists: true }).then(() => t.fail('opened'), (err) => t.is(String((err as { code?: string }).code), 'LEVEL_DATABASE_NOT_OPEN', 'errorIfExists on an existing database fails'))
  await settle()
  t.ok(!locks.held.has(LOCK) && !fs.isMounted('/dbs/a'), 'nothing held after the failure')
  const again = new OpfsLevel('dbs/a')
  await again.open()
  t.is(await again.get('k'), 'v', 'the next open works and reads the data')
  await again.close()
})
