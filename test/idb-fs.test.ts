// The fallback storage (hosts/browser/idb-fs.ts, idb-store.ts: files in
// memory persisted to IndexedDB) and its choice (hosts/browser/storage.ts),
// in Node over the IndexedDB fake of test/fs/fake-idb.ts, with a (faked)
// worker's globals: the file semantics across chunk boundaries and reopen;
// OpfsLevel on it (round trip, reopen, db.storage); a crash after every
// committed transaction of a seeded workload with flushes and compactions
// (each image opens to a prefix of the writes holding every acknowledged sync
// write); a full quota as LEVEL_STORAGE_FULL with nothing acknowledged lost;
// the `storage` option and the automatic choice. test/browser-idb.test.ts
// (Chromium) and test/browser-webkit.test.ts (WebKitGTK) run it in browsers.
import test from 'tape'
import { OpfsLevel } from '../adapters/opfs-level'
import { installBrowserPlatform } from '../hosts/browser/platform'
import { IndexedDbFileSystem } from '../hosts/browser/idb-fs'
import { CHUNK_BYTES } from '../hosts/browser/idb-store'
import { FakeIdbFactory, FakeKeyRange, type IdbImage } from './fs/fake-idb'
import { FakeLocks } from './fs/fake-locks'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()

/** The factory `indexedDB` answers with now (a test swaps it to reload from a crash image). */
let factory: FakeIdbFactory | undefined = new FakeIdbFactory()

// A worker's globals without OPFS sync access handles (as in WebKitGTK, or a shared worker).
Object.defineProperty(globalThis, 'navigator', { value: { locks: new FakeLocks() }, configurable: true })
Object.defineProperty(globalThis, 'indexedDB', { get: () => factory, configurable: true })
Object.defineProperty(globalThis, 'IDBKeyRange', { value: FakeKeyRange, configurable: true })
Object.defineProperty(globalThis, 'WorkerGlobalScope', { value: class {}, configurable: true })

function codes (err: unknown): string {
  const e = err as { code?: string, cause?: { code?: string } }
  return e.cause?.code === undefined ? String(e.code) : `${String(e.code)} / ${e.cause.code}`
}

const idb = (): { factory: FakeIdbFactory, keyRange: typeof FakeKeyRange } => ({ factory: factory!, keyRange: FakeKeyRange })

function pattern (n: number, salt: number): Buffer {
  const out = Buffer.alloc(n)
  for (let i = 0; i < n; i++) out[i] = (i * 31 + salt) & 0xff
  return out
}

function readAll (fs: IndexedDbFileSystem, path: string): Buffer {
  const f = fs.openRead(path)
  const out = Buffer.alloc(f.size())
  f.read(out, 0, out.length, 0)
  f.close()
  return out
}

test('idb-fs: files across chunk boundaries, rename, remove; all back after a reopen', async (t) => {
  factory = new FakeIdbFactory()
  const fs = await IndexedDbFileSystem.open('/files', idb())
  const sizes = [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 17]
  for (const [i, size] of sizes.entries()) {
    const w = fs.openWrite(`/files/f${i}`)
    // In uneven appends, so that appends cross chunks.
    const data = pattern(size, i)
    for (let at = 0; at < size; at += 7919) w.append(data.subarray(at, Math.min(size, at + 7919)))
    await w.syncAsync()
    w.close()
  }
  // A log: appends synced as they come (each sync rewrites its last chunk).
  const log = fs.openWrite('/files/000003.log')
  for (let at = 0; at < 3 * CHUNK_BYTES + 5; at += 1000) {
    log.append(pattern(1000, at))
    if (at % 7000 === 0) await log.syncAsync()
  }
  log.close()
  // A file removed while its writer still appends stays removed.
  const zombie = fs.openWrite('/files/zombie')
  zombie.append(pattern(10, 1))
  await zombie.syncAsync()
  fs.remove('/files/zombie')
  zombie.append(pattern(10, 2))
  await zombie.syncAsync()
  fs.openWrite('/files/sub/gone').close()
  fs.remove('/files/sub/gone')
  fs.createExclusive('/files/tmp', Buffer.from('current'))
  fs.rename('/files/tmp', '/files/CURRENT')
  fs.openWrite('/files/f1').append(Buffer.from('rewritten'))
  t.deepEqual(fs.list('/files').sort(), ['000003.log', 'CURRENT', 'f0', 'f1', 'f2', 'f3', 'f4', 'f5'], 'list()')
  t.throws(() => fs.createExclusive('/files/CURRENT', Buffer.from('x')), /EEXIST/, 'createExclusive of an existing file: EEXIST')
  await fs.close()
  t.deepEqual(factory.durabilities.filter((d) => d !== undefined), factory.durabilities.filter((d) => d === 'strict'), "every readwrite transaction asked for durability 'strict'")

  const again = await IndexedDbFileSystem.open('/files', idb())
  t.deepEqual(again.list('/files').sort(), ['000003.log', 'CURRENT', 'f0', 'f1', 'f2', 'f3', 'f4', 'f5'], 'the same names after a reopen')
  for (const [i, size] of sizes.entries()) {
    if (i === 1) continue
    t.ok(readAll(again, `/files/f${i}`).equals(pattern(size, i)), `f${i} (${size} bytes) read back`)
  }
  const logBytes = readAll(again, '/files/000003.log')
  let logOk = logBytes.length === 3 * CHUNK_BYTES + 1000 - (3 * CHUNK_BYTES) % 1000
  for (let at = 0; logOk && at < logBytes.length; at += 1000) logOk = logBytes.subarray(at, at + 1000).equals(pattern(1000, at))
  t.ok(logOk, `the log (${logBytes.length} bytes in ${CHUNK_BYTES}-byte chunks) read back`)
  t.is(readAll(again, '/files/f1').toString(), 'rewritten', 'a file written anew holds its new contents only')
  t.is(again.readSmallFile('/files/CURRENT').toString(), 'current', 'the renamed file')
  t.notOk(again.exists('/files/tmp') || again.exists('/files/sub') || again.exists('/files/zombie'), 'the rename source and the removed files are gone')
  // Nothing orphaned: the chunks stored are exactly those of the files named.
  const stored = factory.snapshot().get('lsm-level:/files')!.stores.get('chunks')!
  const want = sizes.reduce((n, size, i) => n + (i === 1 ? 1 : Math.ceil(size / CHUNK_BYTES)), 0) + 1 + Math.ceil(logBytes.length / CHUNK_BYTES)
  t.is(stored.size, want, `${want} chunks stored, none orphaned`)
  await again.close()
})

test('idb-fs: a damaged store (a chunk missing) is LEVEL_CORRUPTION naming the file', async (t) => {
  factory = new FakeIdbFactory()
  const fs = await IndexedDbFileSystem.open('/damaged', idb())
  const w = fs.openWrite('/damaged/000005.sst')
  w.append(pattern(2 * CHUNK_BYTES, 1))
  await fs.close()
  const image = factory.snapshot()
  const chunks = image.get('lsm-level:/damaged')!.stores.get('chunks')!
  chunks.delete([...chunks.keys()][1])
  factory = new FakeIdbFactory(image)
  try {
    await IndexedDbFileSystem.open('/damaged', idb())
    t.fail('opened')
  } catch (err) {
    t.is(codes(err), 'LEVEL_CORRUPTION', 'LEVEL_CORRUPTION')
    t.match(String((err as Error).message), /000005\.sst/, 'naming the file')
  }
})

test('OpfsLevel on the IndexedDB storage: round trip, reopen, db.storage, lsm.storage', async (t) => {
  factory = new FakeIdbFactory()
  await installBrowserPlatform()
  const db = new OpfsLevel('dbs/round', { storage: 'indexeddb' })
  await db.open()
  t.is(db.storage, 'indexeddb', "db.storage is 'indexeddb'")
  t.is(db.getProperty('lsm.storage'), 'indexeddb', "getProperty('lsm.storage')")
  await db.put('a', '1')
  await db.batch([{ type: 'put', key: 'b', value: '2' }, { type: 'put', key: 'c', value: '3' }, { type: 'del', key: 'a' }])
  await db.put('d', '4', { sync: true })
  t.deepEqual(await db.iterator().all(), [['b', '2'], ['c', '3'], ['d', '4']], 'iterator')
  t.is(db.getSync('c'), '3', 'getSync')
  await db.close()
  t.is(db.storage, undefined, 'db.storage undefined once closed')
  const again = new OpfsLevel('dbs/round', { storage: 'indexeddb' })
  await again.open()
  t.deepEqual(await again.iterator().all(), [['b', '2'], ['c', '3'], ['d', '4']], 'all back after a reopen (a clean close persists writes without sync)')
  await again.close()
})

/** One write of the crash workload: what it did to the model. */
interface Op { sync: boolean, puts: Array<[string, string]>, dels: string[] }

function applyOp (model: Map<string, string>, op: Op): void {
  for (const k of op.dels) model.delete(k)
  for (const [k, v] of op.puts) model.set(k, v)
}

/** The largest k such that the state is the model after the first k ops (an op may change nothing), or -1. */
function prefixLength (ops: Op[], state: Map<string, string>): number {
  const model = new Map<string, string>()
  const same = (): boolean => model.size === state.size && [...state].every(([k, v]) => model.get(k) === v)
  let found = same() ? 0 : -1
  for (let i = 0; i < ops.length; i++) {
    applyOp(model, ops[i])
    if (same()) found = i + 1
  }
  return found
}

test('IndexedDB storage: a crash after any committed transaction reopens to a prefix of the writes holding every acknowledged sync write', async (t) => {
  console.log(`# SEED=${seed}`)
  const random = new Random(seed)
  factory = new FakeIdbFactory()
  /** Committed images, and for each the number of ops acknowledged with sync before it. */
  const images: IdbImage[] = []
  let syncedOps = 0
  const syncedAt: number[] = []
  factory.onCommit = () => {
    images.push(factory!.snapshot())
    syncedAt.push(syncedOps)
  }
  const db = new OpfsLevel('dbs/crash', { storage: 'indexeddb', writeBufferSize: 4096 })
  await db.open()
  const ops: Op[] = []
  const keys = 40
  const pending: Array<Promise<void>> = []
  for (let i = 0; i < 400; i++) {
    const sync = random.int(4) === 0
    const op: Op = { sync, puts: [], dels: [] }
    const r = random.int(10)
    if (r < 6) op.puts.push([`k${random.int(keys)}`, `v${i}-${'x'.repeat(random.int(200))}`])
    else if (r < 8) op.dels.push(`k${random.int(keys)}`)
    else for (let j = 0; j < 3; j++) op.puts.push([`k${random.int(keys)}`, `v${i}.${j}`])
    ops.push(op)
    const index = i + 1
    const write = op.puts.length > 1
      ? db.batch(op.puts.map(([key, value]) => ({ type: 'put' as const, key, value })), { sync })
      : op.puts.length === 1 ? db.put(op.puts[0][0], op.puts[0][1], { sync }) : db.del(op.dels[0], { sync })
    // A sync write's acknowledgement: every op up to it is durable.
    pending.push(write.then(() => { if (sync && index > syncedOps) syncedOps = index }))
    // Some writes in one turn (one group), some awaited, some a few turns apart.
    if (random.int(3) === 0) await write
    else if (random.int(5) === 0) await new Promise((resolve) => setTimeout(resolve, 1))
  }
  await Promise.all(pending)
  const stats = await db.stats()
  await db.close()
  t.ok(stats.flushes > 3 && stats.compactions.done > 0, `flushes (${stats.flushes}) and compactions (${stats.compactions.done}) ran`)
  t.ok(images.length > 20, `${images.length} committed transactions, each a crash image`)
  let failures = 0
  for (let i = 0; i < images.length; i++) {
    factory = new FakeIdbFactory(images[i])
    const reopened = new OpfsLevel('dbs/crash', { storage: 'indexeddb' })
    let state: Map<string, string>
    try {
      await reopened.open()
      state = new Map(await reopened.iterator().all())
      await reopened.close()
    } catch (err) {
      failures++
      t.fail(`image ${i}: the open failed: ${codes(err)} ${String(err)}`)
      continue
    }
    const k = prefixLength(ops, state)
    if (k < 0 || k < syncedAt[i]) {
      failures++
      t.fail(`image ${i}: ${k < 0 ? 'not a prefix of the writes' : `a prefix of ${k} ops, but ${syncedAt[i]} were acknowledged with sync before it`}`)
    }
  }
  t.is(failures, 0, `every image (${images.length}) opened to a prefix holding the acknowledged sync writes`)
})

test('IndexedDB storage: a full quota is LEVEL_STORAGE_FULL; writes stop; nothing acknowledged is lost; the database opens again with room', async (t) => {
  factory = new FakeIdbFactory()
  factory.quotaBytes = 600 * 1024
  const random = new Random(seed)
  const db = new OpfsLevel('dbs/full', { storage: 'indexeddb', writeBufferSize: 64 * 1024 })
  await db.open()
  const acknowledged = new Map<string, string>()
  let failure: unknown
  for (let i = 0; i < 2000 && failure === undefined; i++) {
    const value = random.bytes(2000).toString('hex')
    try {
      await db.put(`k${i}`, value, { sync: true })
      acknowledged.set(`k${i}`, value)
    } catch (err) {
      failure = err
    }
  }
  t.is((failure as { code?: string }).code, 'LEVEL_STORAGE_FULL', `a write failed with LEVEL_STORAGE_FULL after ${acknowledged.size} acknowledged`)
  try {
    await db.put('later', 'x')
    t.fail('a later write succeeded')
  } catch (err) {
    t.is((err as { code?: string }).code, 'LEVEL_STORAGE_FULL', 'a later write: LEVEL_STORAGE_FULL')
  }
  let readable = 0
  for (const [k, v] of acknowledged) if (await db.get(k) === v) readable++
  t.is(readable, acknowledged.size, 'every acknowledged write readable')
  // The close says the last changes are not stored; a second close then succeeds.
  const closed = await db.close().then(() => undefined, (err: unknown) => err)
  t.is(closed === undefined ? 'closed' : codes(closed), 'LEVEL_DATABASE_NOT_CLOSED / LEVEL_STORAGE_FULL', 'close: LEVEL_STORAGE_FULL (the last changes are not stored)')
  await db.close()
  t.pass('a second close succeeds')
  factory.quotaBytes = undefined
  const again = new OpfsLevel('dbs/full', { storage: 'indexeddb' })
  await again.open()
  let back = 0
  for (const [k, v] of acknowledged) if (await again.get(k) === v) back++
  t.is(back, acknowledged.size, `with room again: all ${acknowledged.size} acknowledged writes there after a reopen`)
  await again.put('later', 'x', { sync: true })
  t.is(await again.get('later'), 'x', 'and it takes writes')
  await again.close()
})

test('the storage option and the automatic choice', async (t) => {
  t.throws(() => new OpfsLevel('dbs/x', { storage: 'disk' as 'opfs' }), /Invalid option 'storage'.*'auto', 'opfs' or 'indexeddb'/, "storage: 'disk' is LEVEL_INVALID_OPTION naming the choices")
  try {
    const db = new OpfsLevel('dbs/x', { storage: 'opfs' })
    t.fail(`constructed (${db.location})`)
  } catch (err) {
    t.is(codes(err), 'LEVEL_NOT_SUPPORTED', "storage: 'opfs' without sync access handles: LEVEL_NOT_SUPPORTED at construction")
  }
  factory = new FakeIdbFactory()
  const auto = new OpfsLevel('dbs/auto')
  await auto.open()
  t.is(auto.storage, 'indexeddb', "'auto' in a worker without sync access handles: IndexedDB")
  await auto.close()
  factory = undefined
  const neither = new OpfsLevel('dbs/none')
  const t0 = Date.now()
  try {
    await neither.open()
    t.fail('opened')
  } catch (err) {
    t.is(codes(err), 'LEVEL_DATABASE_NOT_OPEN / LEVEL_NOT_SUPPORTED', 'neither storage: LEVEL_NOT_SUPPORTED')
    const message = String((err as { cause?: Error }).cause?.message)
    t.ok(/createSyncAccessHandle/.test(message) && /indexedDB is missing/.test(message), `naming what is missing: ${message}`)
    t.ok(Date.now() - t0 < 1000, 'at once')
  }
  const forced = new OpfsLevel('dbs/none', { storage: 'indexeddb' })
  try {
    await forced.open()
    t.fail('opened')
  } catch (err) {
    t.is(codes(err), 'LEVEL_DATABASE_NOT_OPEN / LEVEL_NOT_SUPPORTED', "storage: 'indexeddb' without IndexedDB: LEVEL_NOT_SUPPORTED")
  }
})
