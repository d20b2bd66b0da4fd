// The OPFS file system (hosts/browser/opfs-fs.ts) over a fake of the OPFS API
// (test/fs/fake-opfs.ts): its file semantics, the manifest switch across
// crashes at every point, pool growth, a second opener, and the engine on it.
import test from 'tape'
import { OpfsFileSystem, HEADER_BYTES } from '../hosts/browser/opfs-fs'
import { createWhenRoom } from '../lib/fs/fs'
import { Engine, encodeBatch } from '../hosts/node/index'
import { KIND_VALUE } from '../lib/keys'
import { isStorageFull } from '../lib/errors'
import { FakeDirectory, CRASHED, readFakeSnapshot, snapshotReads } from './fs/fake-opfs'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()

async function put (db: Engine, key: string, value: string, sync = false): Promise<void> {
  await db.write(encodeBatch([{ kind: KIND_VALUE, key, value }]), sync)
}

function get (db: Engine, key: string): string | undefined {
  return db.get(Buffer.from(key))?.toString()
}
const DIR = '/db'

/** A file system with DIR mounted and its reserve of free files created. */
async function mounted (root: FakeDirectory, maxOpenHandles?: number): Promise<OpfsFileSystem> {
  return await mountedWith(root, maxOpenHandles)
}

async function mountedWith (root: FakeDirectory, maxOpenHandles?: number): Promise<OpfsFileSystem> {
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR, { maxOpenHandles })
  await fs.settled()
  return fs
}

function writeFile (fs: OpfsFileSystem, path: string, text: string): void {
  const f = fs.openWrite(path)
  f.append(Buffer.from(text))
  f.sync()
  f.close()
}

test('opfs fs: files, names, rename, remove, and a remount', async (t) => {
  const root = new FakeDirectory()
  const fs = await mounted(root)
  t.notOk(fs.exists(DIR), 'an empty mounted directory holds no database')
  writeFile(fs, `${DIR}/a`, 'alpha')
  writeFile(fs, `${DIR}/b`, 'bravo')
  writeFile(fs, `${DIR}/sub/c`, 'charlie')
  t.ok(fs.exists(DIR), 'the directory exists once it holds a file')
  t.same(fs.list(DIR).sort(), ['a', 'b', 'sub'], 'list shows files and subdirectories')
  t.same(fs.list(`${DIR}/sub`), ['c'], 'list of a subdirectory')
  const r = fs.openRead(`${DIR}/a`)
  const buf = Buffer.alloc(10)
  t.is(r.size(), 5, 'size excludes the header')
  t.is(r.read(buf, 0, 10, 1), 4, 'a read is short at the end')
  t.is(buf.toString('utf8', 0, 4), 'lpha', 'bytes read at a position')
  r.close()
  fs.rename(`${DIR}/a`, `${DIR}/b`)
  t.notOk(fs.exists(`${DIR}/a`), 'the source name is gone')
  t.is(fs.readSmallFile(`${DIR}/b`).toString(), 'alpha', 'the target carries the source contents')
  fs.remove(`${DIR}/sub/c`)
  t.notOk(fs.exists(`${DIR}/sub`), 'an emptied subdirectory is gone')
  t.throws(() => fs.openRead(`${DIR}/c`), /ENOENT/, 'a missing file is ENOENT')
  t.throws(() => fs.openRead('/elsewhere/x'), /ENOENT/, 'outside the mounted directory is ENOENT')
  fs.syncDir(DIR)
  fs.unmount(DIR)
  const again = await mounted(root)
  t.same(again.list(DIR), ['b'], 'names survive a remount')
  t.is(again.readSmallFile(`${DIR}/b`).toString(), 'alpha', 'contents survive a remount')
})

test('opfs fs: a second opener of the same directory retries for busyWaitMs, then gets LEVEL_LOCKED saying why', async (t) => {
  const root = new FakeDirectory()
  const first = await mounted(root)
  writeFile(first, `${DIR}/data`, 'kept')
  const second = new OpfsFileSystem(root, readFakeSnapshot)
  const t0 = Date.now()
  const err = await second.mount(DIR, { busyWaitMs: 300 }).then(() => undefined, (e: unknown) => e as { code?: string, message?: string })
  const ms = Date.now() - t0
  t.is(err?.code, 'LEVEL_LOCKED', `LEVEL_LOCKED while the first holds the files: ${String(err?.message)}`)
  t.ok(ms >= 300 && ms < 5000, `after retrying for the wait asked (${ms} ms)`)
  t.ok(/held by another context/.test(String(err?.message)) && /waited \d+ ms/.test(String(err?.message)), 'the message says the files are held elsewhere and how long it waited')
  first.unmount(DIR)
  await second.mount(DIR)
  t.is(second.readSmallFile(`${DIR}/data`).toString(), 'kept', 'mounts once the first has unmounted, with its files')
  second.unmount(DIR)
})

test('opfs fs: a context that died holding its handles: a mount waits until the browser closes them, and opens with every file', async (t) => {
  const root = new FakeDirectory()
  const dead = await mounted(root)
  for (let i = 0; i < 20; i++) await writeWhenRoom(dead, `${DIR}/f${i}`, `file ${i}`)
  dead.syncDir(DIR)
  // The context is gone, but its handles stay open for 400 ms more.
  setTimeout(() => dead.unmount(DIR), 400)
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  const t0 = Date.now()
  await fs.mount(DIR, { busyWaitMs: 5000 })
  const ms = Date.now() - t0
  t.ok(ms >= 400, `the mount waited for the handles (${ms} ms)`)
  t.is(fs.list(DIR).length, 20, 'and sees every file: none was skipped')
  let wrong = 0
  for (let i = 0; i < 20; i++) if (fs.readSmallFile(`${DIR}/f${i}`).toString() !== `file ${i}`) wrong++
  t.is(wrong, 0, 'every file reads back')
  fs.unmount(DIR)
})

test('opfs fs: a removed file still being read is not reused until its reader closes', async (t) => {
  const root = new FakeDirectory()
  const fs = await mounted(root)
  writeFile(fs, `${DIR}/old`, 'old contents')
  const reader = fs.openRead(`${DIR}/old`)
  fs.remove(`${DIR}/old`)
  // Take every free file: none of them may be the one the reader reads.
  for (let i = 0; i < 15; i++) writeFile(fs, `${DIR}/new${i}`, 'x'.repeat(20))
  const buf = Buffer.alloc(12)
  reader.read(buf, 0, 12, 0)
  t.is(buf.toString(), 'old contents', 'the reader still reads the removed file')
  reader.close()
  await fs.settled()
  t.is(fs.list(DIR).length, 15, 'the new files are all there')
})

test('opfs fs: the pool grows in the background, and an exhausted pool fails with LEVEL_IO_ERROR', async (t) => {
  const root = new FakeDirectory()
  const fs = await mounted(root)
  let thrown: unknown
  let made = 0
  try {
    for (; made < 100; made++) writeFile(fs, `${DIR}/f${made}`, 'data')
  } catch (err) {
    thrown = err
  }
  t.is((thrown as { code?: string } | undefined)?.code, 'LEVEL_IO_ERROR', `LEVEL_IO_ERROR after ${made} files without a turn of the event loop`)
  await fs.settled()
  for (; made < 100; made++) {
    writeFile(fs, `${DIR}/f${made}`, 'data')
    await fs.settled()
  }
  t.is(fs.list(DIR).length, 100, 'with turns in between, the pool grows to 100 files')
})

/** One manifest switch as the engine makes it: temp file, sync, rename onto CURRENT, directory sync. */
function switchCurrent (fs: OpfsFileSystem, text: string, temp: string): void {
  writeFile(fs, `${DIR}/${temp}`, text)
  fs.rename(`${DIR}/${temp}`, `${DIR}/CURRENT`)
  fs.syncDir(DIR)
}

test('opfs fs: the CURRENT switch survives a crash at every point (no atomic rename)', async (t) => {
  const rnd = new Random(seed)
  const runs = 400
  let bad = 0
  const outcomes = { old: 0, new: 0 }
  for (let run = 0; run < runs; run++) {
    const root = new FakeDirectory()
    const fs = await mounted(root)
    switchCurrent(fs, 'v0', 't0')
    // Crash after a random number of OPFS operations within the next switches.
    root.counters.opsLeft = rnd.int(40)
    let done = 0
    try {
      for (let v = 1; v <= 4; v++) {
        switchCurrent(fs, `v${v}`, `t${v}`)
        done = v
      }
    } catch (err) {
      if ((err as Error).message !== CRASHED) throw err
    }
    const image = root.crash(rnd)
    const after = await mounted(image)
    const text = after.exists(`${DIR}/CURRENT`) ? after.readSmallFile(`${DIR}/CURRENT`).toString() : '(missing)'
    const ok = text === `v${done}` || text === `v${done + 1}`
    if (text === `v${done}`) outcomes.old++
    else if (ok) outcomes.new++
    if (!ok && bad++ < 5) t.fail(`run ${run}: CURRENT is ${text} after ${done} completed switches`)
  }
  t.is(bad, 0, `${runs} crashes: CURRENT is always the last completed switch or the one in progress`)
  t.ok(outcomes.old > 0 && outcomes.new > 0, `both outcomes happened (old ${outcomes.old}, new ${outcomes.new})`)
})

test('opfs fs: a torn header frees the file; the older of two claimants is freed at mount', async (t) => {
  const root = new FakeDirectory()
  const fs = await mounted(root)
  writeFile(fs, `${DIR}/x`, 'one')
  fs.syncDir(DIR)
  fs.unmount(DIR)
  // Damage x's header: a torn write leaves a CRC mismatch.
  const pool = root.dirs.get('db')!
  const [name, file] = [...pool.files].find(([, f]) => f.current.length > HEADER_BYTES)!
  file.current[30] ^= 0xff
  file.durable = file.current
  const again = await mounted(root)
  t.notOk(again.exists(`${DIR}/x`), `the file with a damaged header (${name}) is free space`)
  t.ok(again.list(DIR).length === 0, 'no names remain')
})

for (const bound of [undefined, 16]) {
  test(`opfs fs: the engine on OPFS keeps its data across a close and a crash${bound === undefined ? '' : ` (at most ${bound} handles open)`}`, async (t) => {
    const rnd = new Random(seed + 1)
    const root = new FakeDirectory()
    const mounted = async (root: FakeDirectory): Promise<OpfsFileSystem> => await mountedWith(root, bound)
    let fs = await mounted(root)
    const options = { writeBufferSize: 4096, compactionWorker: false }
    let db = await Engine.open(DIR, options, fs)
    const model = new Map<string, string>()
    for (let i = 0; i < 3000; i++) {
      const key = `k${rnd.int(1000)}`
      const value = `v${i}`
      model.set(key, value)
      await put(db, key, value)
    }
    await db.close()
    fs.unmount(DIR)
    fs = await mounted(root)
    db = await Engine.open(DIR, options, fs)
    let wrong = 0
    for (const [key, value] of model) if (get(db, key) !== value) wrong++
    t.is(wrong, 0, `${model.size} keys read back after a reopen`)
    // Synced writes, then a crash at a random point of the writes that follow.
    for (let i = 0; i < 200; i++) {
      const key = `s${i}`
      model.set(key, 'synced')
      await put(db, key, 'synced', true)
    }
    root.counters.opsLeft = rnd.int(500)
    try {
      for (let i = 0; i < 2000; i++) await put(db, `u${i}`, 'x'.repeat(100))
    } catch {}
    const image = root.crash(rnd)
    // The crashed engine lets go of the directory lock (its process would be gone).
    root.counters.opsLeft = Infinity
    try { await db.close() } catch {}
    fs = await mounted(image)
    db = await Engine.open(DIR, options, fs)
    wrong = 0
    for (const [key, value] of model) if (get(db, key) !== value) wrong++
    t.is(wrong, 0, `${model.size} keys (200 written with sync) read back after a crash`)
    if (bound !== undefined) t.ok(fs.handleCounts(DIR).maxOpen <= bound, `at most ${bound} handles were open at once (${fs.handleCounts(DIR).maxOpen})`)
    await db.close()
  })
}

test('opfs fs: a burst of flushes on a freshly mounted pool whose growth is slow waits for files, never fails', async (t) => {
  // As in Firefox: a new database, a tiny write buffer, and writes in a burst
  // take free files (a log per rotation, a table per flush or compaction
  // output) faster than new pool files' sync access handles come.
  const root = new FakeDirectory()
  root.handleCreation.delayMs = 25
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR)
  const db = await Engine.open(DIR, { writeBufferSize: 512, targetFileSize: 512, maxBytesForLevelBase: 2048, level0CompactionTrigger: 2, compactionWorker: false }, fs)
  const N = 2000
  let failure: unknown
  for (let i = 0; i < N && failure === undefined; i++) {
    try {
      await put(db, `k${String(i % 700).padStart(4, '0')}`, `value ${i} ${'x'.repeat(40)}`)
    } catch (err) {
      failure = err
    }
  }
  t.is(failure, undefined, `${N} writes in a row all succeeded${failure === undefined ? '' : ': ' + String((failure as Error).message)}`)
  if (failure === undefined) {
    await db.flushMemTable()
    const stats = db.stats() as { flushes: number }
    t.ok(stats.flushes >= 20, `the burst went through ${stats.flushes} flushes`)
    let wrong = 0
    for (let i = N - 700; i < N; i++) if (get(db, `k${String(i % 700).padStart(4, '0')}`) !== `value ${i} ${'x'.repeat(40)}`) wrong++
    t.is(wrong, 0, 'every key reads back its last value')
  }
  try { await db.close() } catch {}
  await fs.settled()
  t.ok(root.handleCreation.maxInFlight > 1, `new files' handles were opened several at once (up to ${root.handleCreation.maxInFlight})`)
  fs.unmount(DIR)
})

test('opfs fs: new files\' handles that come later than the first wait (a browser under load) are waited for longer: the mount succeeds', async (t) => {
  // Firefox at its worker limit, under load: every new file's sync access
  // handle took over HANDLE_WAIT_MS (1 s); the pool passed each over.
  const root = new FakeDirectory()
  root.handleCreation.delayMs = 1500
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  const t0 = Date.now()
  const failure = await fs.mount(DIR).then(() => undefined, (err: Error) => err)
  const ms = Date.now() - t0
  t.is(failure, undefined, `the mount succeeded in ${ms} ms${failure === undefined ? '' : ': ' + failure.message}`)
  if (failure === undefined) {
    writeFile(fs, `${DIR}/f`, 'data')
    t.is(fs.list(DIR).length, 1, 'a file is created in it')
    root.handleCreation.delayMs = 0
    await fs.settled()
    fs.unmount(DIR)
  }
})

test('opfs fs: new files\' handles that never come fail the mount with LEVEL_IO_ERROR once growthGiveUpMs has passed; once they come, it mounts', async (t) => {
  const root = new FakeDirectory()
  root.handleCreation.never = true
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  const t0 = Date.now()
  const failure = await fs.mount(DIR, { handleWaitMs: 20, growthGiveUpMs: 400 }).then(() => undefined, (err: Error & { code?: string }) => err)
  const ms = Date.now() - t0
  t.is(failure?.code, 'LEVEL_IO_ERROR', `the mount failed with LEVEL_IO_ERROR: ${String(failure?.message)}`)
  t.ok(/sync access handle came in \d+ ms/.test(String(failure?.message)) && /growthGiveUpMs, is 400 ms/.test(String(failure?.message)), 'the message says what did not come, and for how long')
  t.ok(ms >= 400 && ms < 2000, `after the bound, not before (${ms} ms for growthGiveUpMs 400)`)
  t.ok(!fs.isMounted(DIR), 'nothing is left mounted')
  root.handleCreation.never = false
  await fs.mount(DIR)
  writeFile(fs, `${DIR}/f`, 'data')
  t.is(fs.list(DIR).length, 1, 'once handles come, the directory mounts and a file is created')
  await fs.settled()
  fs.unmount(DIR)
})

/** Creates `path` once the pool has room, as the engine does. */
async function writeWhenRoom (fs: OpfsFileSystem, path: string, text: string): Promise<void> {
  await createWhenRoom(fs, DIR, 1, () => writeFile(fs, path, text))
}

test('opfs fs: creates that wait for room never fail on a slow pool; it grows in parallel, to a bounded reserve', async (t) => {
  const root = new FakeDirectory()
  root.handleCreation.delayMs = 20
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR)
  t.ok(fs.roomToCreate(DIR, 1) === undefined, 'room for a file right after the mount')
  // Three creators at once, as a flush, a compaction and a log rotation can be.
  const N = 150
  const t0 = Date.now()
  await Promise.all([0, 1, 2].map(async (c) => {
    for (let i = c; i < N; i += 3) await writeWhenRoom(fs, `${DIR}/f${i}`, `file ${i}`)
  }))
  const ms = Date.now() - t0
  t.is(fs.list(DIR).length, N, `${N} files created by three creators at once, none failed (${ms} ms)`)
  t.ok(ms < N * 20, `faster than one handle at a time would allow (${N} x 20 ms)`)
  t.ok(root.handleCreation.maxInFlight > 1, `handles opened several at once (up to ${root.handleCreation.maxInFlight})`)
  await fs.settled()
  const files = root.dirs.get('db')!.files.size
  t.ok(files - N <= 32, `the free files kept ahead stay bounded (${files - N} free)`)
  fs.unmount(DIR)
})

test('opfs fs: a failure to grow the pool rejects the creates that wait; an unmount rejects them too', async (t) => {
  const root = new FakeDirectory()
  const fs = await mounted(root)
  const quota = Object.assign(new Error('the quota is full'), { name: 'QuotaExceededError' })
  root.handleCreation.failure = quota
  let made = 0
  let thrown: unknown
  try {
    for (; made < 100; made++) await writeWhenRoom(fs, `${DIR}/f${made}`, 'data')
  } catch (err) {
    thrown = err
  }
  t.is(thrown, quota, `the growth's failure reaches the creator (after ${made} files): ${String(thrown)}`)
  t.ok(made >= 15, 'the files already made were used first')
  root.handleCreation.failure = undefined
  await writeWhenRoom(fs, `${DIR}/again`, 'data')
  t.pass('once handles can be created again, so can files')

  root.handleCreation.delayMs = 50
  let empty: Promise<void> | undefined
  while ((empty = fs.roomToCreate(DIR, 1)) === undefined) writeFile(fs, `${DIR}/g${made++}`, 'data')
  empty.catch(() => {})
  const waiting = writeWhenRoom(fs, `${DIR}/late`, 'data')
  fs.unmount(DIR)
  try {
    await waiting
    t.fail('a create waiting across an unmount succeeded')
  } catch (err) {
    t.is((err as { code?: string }).code, 'EBADF', `a create waiting across an unmount fails: ${String(err)}`)
  }
})

/** The codes along an error's cause chain, e.g. 'LEVEL_STORAGE_FULL <- ENOSPC'. */
function codeChain (err: unknown): string {
  const codes: string[] = []
  for (let e = err as { code?: string, name?: string, cause?: unknown } | undefined; e !== undefined && codes.length < 8; e = e.cause as typeof e) codes.push(e.code ?? e.name ?? '?')
  return codes.join(' <- ')
}

// With a small write buffer the quota runs out in a flush or compaction
// (mostly) or on a new log; with a write buffer larger than the quota, on the
// log's append.
const FULL_CASES = [
  { full: 'short', writeBufferSize: 16 * 1024, failsIn: 'flushes' },
  { full: 'bogus', writeBufferSize: 16 * 1024, failsIn: 'flushes' },
  { full: 'short', writeBufferSize: 1024 * 1024, failsIn: 'the log' },
  { full: 'bogus', writeBufferSize: 1024 * 1024, failsIn: 'the log' }
] as const

for (const { full, writeBufferSize, failsIn } of FULL_CASES) {
  test(`opfs fs: a full quota (${full === 'short' ? 'short writes, as in Firefox' : 'a bogus count from write(), as in Chrome'}, in ${failsIn}) is LEVEL_STORAGE_FULL; writes stop, nothing acknowledged is lost, and the database opens again once space is freed`, async (t) => {
    const rnd = new Random(seed + 7)
    const root = new FakeDirectory()
    let fs = await mounted(root)
    const options = { writeBufferSize, targetFileSize: 16 * 1024, compactionWorker: false }
    let db = await Engine.open(DIR, options, fs)
    root.quota.full = full
    root.quota.bytes = root.quota.usedBytes + 300 * 1024
    const model = new Map<string, string>()
    let failure: unknown
    for (let i = 0; failure === undefined && i < 100000; i++) {
      const key = `k${String(rnd.int(5000)).padStart(5, '0')}`
      const value = rnd.bytes(150).toString('hex')
      try {
        await put(db, key, value, i % 10 === 0)
        model.set(key, value)
      } catch (err) {
        failure = err
      }
    }
    t.is(codeChain(failure).split(' <- ')[0], 'LEVEL_STORAGE_FULL', `a write fails once the quota is full: ${codeChain(failure)} (${String((failure as Error | undefined)?.message)})`)
    t.ok(codeChain(failure).endsWith('ENOSPC'), 'caused by ENOSPC from the pool file system')
    if (failsIn === 'the log') t.ok(String((failure as Error | undefined)?.message).includes('log'), 'in the log')
    t.ok(model.size > 300, `${model.size} keys written before`)
    const after = await put(db, 'after', 'x').then(() => undefined, (err: unknown) => err)
    t.is((after as { code?: string } | undefined)?.code, 'LEVEL_STORAGE_FULL', 'a later write is refused with LEVEL_STORAGE_FULL')
    let wrong = 0
    for (const [key, value] of model) if (get(db, key) !== value) wrong++
    t.is(wrong, 0, `every acknowledged write reads back (${model.size} keys)`)
    await db.close().catch(() => {})
    fs.unmount(DIR)

    // Still full: the mount or the open fails with LEVEL_STORAGE_FULL, or both succeed; either way nothing is lost.
    const remount = await mounted(root).then((f) => f, (err: unknown) => err)
    if (remount instanceof OpfsFileSystem) {
      fs = remount
      const opened = await Engine.open(DIR, options, fs).then((e) => e, (err: unknown) => err)
      if (opened instanceof Engine) {
        t.pass('while still full, the database opens')
        await opened.close().catch(() => {})
      } else {
        t.is((opened as { code?: string }).code, 'LEVEL_STORAGE_FULL', `while still full, the open fails with LEVEL_STORAGE_FULL (${codeChain(opened)})`)
      }
      fs.unmount(DIR)
    } else {
      t.is((remount as { code?: string }).code, 'LEVEL_STORAGE_FULL', `while still full, the mount fails with LEVEL_STORAGE_FULL (${codeChain(remount)})`)
    }

    root.quota.bytes = Infinity
    fs = await mounted(root)
    db = await Engine.open(DIR, options, fs)
    wrong = 0
    for (const [key, value] of model) if (get(db, key) !== value) wrong++
    t.is(wrong, 0, `once space is freed, it opens with every acknowledged write (${model.size} keys)`)
    await put(db, 'after', 'x')
    t.is(get(db, 'after'), 'x', 'and takes writes again')
    await db.close()
    fs.unmount(DIR)
  })
}

test('opfs fs: the pool\'s free files take none of the quota: a mount with no room mounts; an open there fails with LEVEL_STORAGE_FULL, and opens once there is room', async (t) => {
  const root = new FakeDirectory()
  root.quota.bytes = 0
  let fs = await mounted(root)
  t.pass('the mount succeeds with no room (its free files are empty)')
  const failed = await Engine.open(DIR, { compactionWorker: false }, fs).then(() => undefined, (err: unknown) => err)
  t.ok(codeChain(failed).includes('LEVEL_STORAGE_FULL'), `the open fails: ${codeChain(failed)}`)
  t.ok(isStorageFull(failed), 'isStorageFull says so')
  fs.unmount(DIR)
  root.quota.bytes = Infinity
  fs = await mounted(root)
  const db = await Engine.open(DIR, { compactionWorker: false }, fs)
  await put(db, 'a', '1')
  t.is(get(db, 'a'), '1', 'the database opens and takes writes')
  await db.close()
  fs.unmount(DIR)
})

test('opfs fs: a database of many tables keeps at most maxOpenHandles sync access handles open; tables whose handle closed are read through snapshots; a remount opens them within the bound', async (t) => {
  const rnd = new Random(seed + 11)
  const root = new FakeDirectory()
  const BOUND = 16
  let fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR, { maxOpenHandles: BOUND })
  const options = { writeBufferSize: 4096, targetFileSize: 2048, maxBytesForLevelBase: 8192, level0CompactionTrigger: 4, compactionWorker: false }
  let db = await Engine.open(DIR, options, fs)
  const model = new Map<string, string>()
  for (let i = 0; i < 6000; i++) {
    const key = `k${String(rnd.int(3000)).padStart(5, '0')}`
    const value = `v${i} ${rnd.bytes(20).toString('hex')}`
    model.set(key, value)
    await put(db, key, value)
  }
  await db.flushMemTable()
  await db.waitForIdle()
  const tables = fs.list(DIR).filter((n) => n.endsWith('.sst')).length
  t.ok(tables > 3 * BOUND, `${tables} tables, more than three times the bound of ${BOUND} handles`)
  const before = snapshotReads.count
  let wrong = 0
  for (const [key, value] of model) if (get(db, key) !== value) wrong++
  t.is(wrong, 0, `${model.size} keys read back`)
  t.ok(snapshotReads.count > before, `reads of tables whose handle was closed went through snapshots (${snapshotReads.count - before})`)
  let counts = fs.handleCounts(DIR)
  t.ok(counts.maxOpen <= BOUND, `at most ${BOUND} handles were open at once (${counts.maxOpen}; ${counts.open} now)`)
  t.is(root.dirs.get('db')!.openFiles(), counts.open, 'the pool counts the handles the fake has open')
  await db.close()
  fs.unmount(DIR)
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.is(root.dirs.get('db')!.openFiles(), 0, 'an unmount closes them all (those being opened as they come)')

  fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR, { maxOpenHandles: BOUND })
  db = await Engine.open(DIR, options, fs)
  wrong = 0
  for (const [key, value] of model) if (get(db, key) !== value) wrong++
  t.is(wrong, 0, `after a remount: ${model.size} keys read back`)
  for (let i = 0; i < 2000; i++) {
    const key = `k${String(rnd.int(3000)).padStart(5, '0')}`
    model.set(key, `w${i}`)
    await put(db, key, `w${i}`)
  }
  await db.compactRange()
  wrong = 0
  for (const [key, value] of model) if (get(db, key) !== value) wrong++
  t.is(wrong, 0, 'writes and a full compaction after it: every key reads back')
  counts = fs.handleCounts(DIR)
  t.ok(counts.maxOpen <= BOUND, `at most ${BOUND} handles were open at once, mount included (${counts.maxOpen})`)
  await db.close()
  fs.unmount(DIR)
})

// Firefox under load, CI: a handle reopened for reads came after the pool had
// stopped waiting for it (HANDLE_WAIT_MS); left open, it held its file, and
// the next open of the database in that worker failed with LEVEL_LOCKED.
test('opfs fs: a handle that comes after the pool stopped waiting for it is closed: the next mount finds every file free', async (t) => {
  const rnd = new Random(seed + 12)
  const root = new FakeDirectory()
  const BOUND = 16
  const fs = new OpfsFileSystem(root, readFakeSnapshot)
  await fs.mount(DIR, { maxOpenHandles: BOUND })
  const options = { writeBufferSize: 4096, targetFileSize: 2048, maxBytesForLevelBase: 8192, level0CompactionTrigger: 4, compactionWorker: false }
  const db = await Engine.open(DIR, options, fs)
  const model = new Map<string, string>()
  for (let i = 0; i < 3000; i++) {
    const key = `k${String(rnd.int(1500)).padStart(5, '0')}`
    model.set(key, `v${i} ${rnd.bytes(20).toString('hex')}`)
    await put(db, key, model.get(key)!)
  }
  await db.flushMemTable()
  await db.waitForIdle()
  // Handles now take longer than the pool waits; the reads below ask for the
  // closed tables' handles again in the background.
  root.handleCreation.delayMs = 1500
  let wrong = 0
  for (const [key, value] of model) if (get(db, key) !== value) wrong++
  t.is(wrong, 0, `${model.size} keys read back`)
  // Every handle asked for has come (the pool stopped waiting for each after 1 s).
  const until = Date.now() + 10_000
  do await new Promise((resolve) => setTimeout(resolve, 100))
  while ((root.handleCreation.inFlight > 0 || Date.now() < until - 8000) && Date.now() < until)
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(root.handleCreation.maxInFlight > 0, `handles were asked for while slow (up to ${root.handleCreation.maxInFlight} at once)`)
  const counts = fs.handleCounts(DIR)
  t.is(root.dirs.get('db')!.openFiles(), counts.open, `the fake has as many handles open as the pool counts (${counts.open}; in flight ${root.handleCreation.inFlight})`)
  await db.close()
  fs.unmount(DIR)
  root.handleCreation.delayMs = 0
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.is(root.dirs.get('db')!.openFiles(), 0, 'after the unmount no file has a handle open')
  const again = new OpfsFileSystem(root, readFakeSnapshot)
  const failure = await again.mount(DIR, { maxOpenHandles: BOUND, busyWaitMs: 200 }).then(() => undefined, (err: Error & { code?: string }) => err)
  t.is(failure, undefined, `a new mount succeeds${failure === undefined ? '' : `: ${String(failure.code)} ${failure.message}`}`)
  if (failure === undefined) again.unmount(DIR)
})

test('opfs fs: a browser whose OPFS gives no sync access handles (WebKitGTK: NotSupportedError) fails the mount with LEVEL_NOT_SUPPORTED naming what is missing', async (t) => {
  for (const existing of [false, true]) {
    const root = new FakeDirectory()
    if (existing) {
      const fs = await mounted(root)
      writeFile(fs, `${DIR}/CURRENT`, 'x')
      fs.unmount(DIR)
    }
    root.handleCreation.failure = Object.assign(new Error('Backend does not support this operation'), { name: 'NotSupportedError' })
    const fs = new OpfsFileSystem(root, readFakeSnapshot)
    const err = await fs.mount(DIR).then(() => undefined, (e: unknown) => e as { code?: string, message?: string })
    t.is(err?.code, 'LEVEL_NOT_SUPPORTED', `${existing ? 'an existing' : 'a new'} database: ${String(err?.message)}`)
    t.ok(/sync access handles/.test(String(err?.message)) && /NotSupportedError/.test(String(err?.message)), 'the message names what is missing and the browser\'s error')
    t.notOk(fs.isMounted(DIR), 'nothing stays mounted')
  }
})
