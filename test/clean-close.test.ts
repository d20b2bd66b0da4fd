// A clean close leaves nothing to replay, and nothing to excuse. By default
// (flushOnClose) close() writes the memtables to level-0 tables: the logs left
// hold no record, the next open replays none, and a damaged table is reported
// as any damaged table (LEVEL_CORRUPTION naming it). Without flushOnClose (and
// whenever that flush did not happen), close() records in the manifest the
// logs the database still needs, synced, with where their records end, and
// the newest sequence number; the next open (walRecovery 'torn-tail', the
// default, and 'absolute') refuses with LEVEL_CORRUPTION naming the log any
// log that differs: a crash cannot damage a closed database's files. Each case
// below damages a cleanly closed database's log in a way the default recovery
// takes for what a crash leaves (a truncation, lost pages read as zeros) or
// cannot tell from it (several flipped bytes followed by valid records), and
// checks:
//   - after a clean close, the open fails with LEVEL_CORRUPTION naming the log;
//   - 'point-in-time' still opens it, at a prefix of the write order;
//   - after a crash (the manifest as it was while the database ran, so no close
//     record), the same damage a crash can leave still opens, at a prefix:
//     the record must not make a crash look like damage;
//   - once reopened, the record no longer holds: a crash after the reopen
//     tears the log, and the open accepts it.
// The cases on logs run with flushOnClose: false, which leaves the writes in
// the logs. Replay a run with SEED=<n>.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { isLevelError } from '../lib/errors'
import { logName, parseFileName } from '../lib/filenames'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const N = 400
const key = (i: number): string => 'k' + String(i).padStart(6, '0')
const value = (i: number): string => 'v'.repeat(60) + i
/** The writes stay in the logs at close: what the cases on damaged logs damage. */
const KEEP_LOGS = { flushOnClose: false }

interface Built {
  /** A cleanly closed database. */
  closed: string
  /** The same files, but the manifest and CURRENT as they were before close(): what a crash right after the last write leaves. */
  crashed: string
  /** The logs holding records, oldest first. */
  logs: string[]
}

function copyDir (from: string, to: string): void {
  for (const name of fs.readdirSync(from)) if (name !== 'LOCK') fs.copyFileSync(path.join(from, name), path.join(to, name))
}

function logFiles (dir: string): string[] {
  return fs.readdirSync(dir)
    .map((n) => ({ n, p: parseFileName(n) }))
    .filter((x) => x.p?.type === 'log' && fs.statSync(path.join(dir, x.n)).size > 0)
    .sort((a, b) => a.p!.number - b.p!.number)
    .map((x) => x.n)
}

/** N single puts (and a two-key batch) in the log only. */
async function build (): Promise<Built> {
  const dir = tempDir()
  const db = new LsmLevel(dir, KEEP_LOGS)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.batch([{ type: 'put', key: 'batch-a', value: '1' }, { type: 'put', key: 'batch-b', value: '2' }])
  const manifestWhileOpen = new Map<string, Buffer>()
  for (const name of fs.readdirSync(dir)) if (name === 'CURRENT' || name.startsWith('MANIFEST-')) manifestWhileOpen.set(name, fs.readFileSync(path.join(dir, name)))
  await db.close()
  const crashed = tempDir()
  copyDir(dir, crashed)
  for (const name of fs.readdirSync(crashed)) if (name === 'CURRENT' || name.startsWith('MANIFEST-')) fs.rmSync(path.join(crashed, name))
  for (const [name, data] of manifestWhileOpen) fs.writeFileSync(path.join(crashed, name), data)
  return { closed: dir, crashed, logs: logFiles(dir) }
}

type Damage = (file: string, rnd: Random) => void

const damages: Array<[string, Damage]> = [
  ['truncated to half', (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2))],
  ['truncated to zero', (f) => fs.truncateSync(f, 0)],
  ['truncated by its last byte', (f) => fs.truncateSync(f, fs.statSync(f).size - 1)],
  ['its last 4 KiB zeroed', (f) => {
    const size = fs.statSync(f).size
    const fd = fs.openSync(f, 'r+')
    fs.writeSync(fd, Buffer.alloc(Math.min(4096, size)), 0, Math.min(4096, size), Math.max(0, size - 4096))
    fs.closeSync(fd)
  }],
  ['a 4 KiB block in the middle zeroed', (f) => {
    const size = fs.statSync(f).size
    const at = Math.floor(size / 2 / 4096) * 4096
    const fd = fs.openSync(f, 'r+')
    fs.writeSync(fd, Buffer.alloc(4096), 0, Math.min(4096, size - at), at)
    fs.closeSync(fd)
  }],
  ['8 bytes flipped in the middle', (f, rnd) => {
    const data = fs.readFileSync(f)
    const at = Math.floor(data.length / 2)
    for (let i = 0; i < 8; i++) data[at + i] ^= 1 + rnd.int(255)
    fs.writeFileSync(f, data)
  }]
]

/** Every key the database holds, and whether they are a prefix of the write order (the batch whole or absent). */
async function readBack (db: LsmLevel<string, string>): Promise<{ writes: number, prefix: boolean }> {
  const keys = await db.keys().all()
  const ks = keys.filter((k) => k.startsWith('k'))
  const a = await db.get('batch-a')
  const b = await db.get('batch-b')
  const prefix = ks.every((k, i) => k === key(i)) && (a === undefined) === (b === undefined) && (a === undefined || ks.length === N)
  return { writes: ks.length + (a === undefined ? 0 : 1), prefix }
}

async function openError (dir: string): Promise<unknown> {
  const db = new LsmLevel<string, string>(dir, KEEP_LOGS)
  try {
    await db.open()
  } catch (err) {
    return err
  }
  await db.close()
  return undefined
}

test(`a cleanly closed database whose log was damaged is refused (SEED=${seed})`, async (t) => {
  const built = await build()
  t.is(built.logs.length, 1, 'one log holds the writes')
  const log = built.logs[0]
  const rnd = new Random(seed)
  for (const [what, damage] of damages) {
    const dir = tempDir()
    copyDir(built.closed, dir)
    damage(path.join(dir, log), rnd)
    const err = await openError(dir) as { cause?: unknown } | undefined
    const cause = err?.cause
    t.ok(isLevelError(cause, 'LEVEL_CORRUPTION') && cause.message.includes(log), `${what}: refused, naming the log (${(cause as Error | undefined)?.message ?? 'opened'})`)
    t.ok(fs.readdirSync(dir).includes(log), `${what}: the refused open left the log in place`)

    const pitr = new LsmLevel<string, string>(dir, { walRecovery: 'point-in-time' })
    await pitr.open()
    const back = await readBack(pitr)
    await pitr.close()
    t.ok(back.prefix && back.writes <= N, `${what}: 'point-in-time' opens a prefix (${back.writes} of ${N + 1} writes)`)
  }
})

test('the same damage after a crash is what a crash can leave, or refused as before: never taken for a clean close', async (t) => {
  const built = await build()
  const log = built.logs[0]
  const rnd = new Random(seed)
  for (const [what, damage] of damages) {
    const dir = tempDir()
    copyDir(built.crashed, dir)
    damage(path.join(dir, log), rnd)
    const err = await openError(dir) as { cause?: { message?: string } } | undefined
    if (err === undefined) {
      const db = new LsmLevel<string, string>(dir)
      await db.open()
      const back = await readBack(db)
      await db.close()
      t.ok(back.prefix, `${what}: opened after a crash at a prefix (${back.writes} of ${N + 1} writes)`)
    } else {
      // Several flipped bytes with valid records after them may be refused or
      // taken for lost pages; either way it never cites a clean close.
      t.notOk(/closed cleanly/.test(err.cause?.message ?? ''), `${what}: refused, not for a clean close (${err.cause?.message ?? ''})`)
    }
  }
  // Truncations and zeros are what a crash leaves: they must open.
  for (const [what, damage] of damages.slice(0, 5)) {
    const dir = tempDir()
    copyDir(built.crashed, dir)
    damage(path.join(dir, log), rnd)
    t.is(await openError(dir), undefined, `${what}: a crash can leave it, the open succeeds`)
  }
})

test('an undamaged cleanly closed database opens with every write, and the record holds only until the reopen', async (t) => {
  const built = await build()
  const db = new LsmLevel<string, string>(built.closed, KEEP_LOGS)
  await db.open()
  t.deepEqual(await readBack(db), { writes: N + 1, prefix: true }, 'every write')
  await db.put('after-reopen', 'x')
  // A crash now: the files as they are while it runs (its new manifest holds no close record).
  const crashed = tempDir()
  copyDir(built.closed, crashed)
  await db.close()
  const logs = logFiles(crashed)
  const newest = path.join(crashed, logs[logs.length - 1])
  // The torn end of the newest log (its last record cut short) is what a crash leaves.
  const data = fs.readFileSync(newest)
  let end = data.length
  while (end > 0 && data[end - 1] === 0) end--
  fs.writeFileSync(newest, data.subarray(0, end - 1))
  t.is(await openError(crashed), undefined, 'a torn newest log after the reopen and a crash: the open succeeds')
})

test('a log of a cleanly closed database deleted, or one added after it, is refused', async (t) => {
  const built = await build()
  const deleted = tempDir()
  copyDir(built.closed, deleted)
  const victim = built.logs[built.logs.length - 1]
  fs.rmSync(path.join(deleted, victim))
  const err = await openError(deleted) as { cause?: unknown } | undefined
  t.ok(isLevelError(err?.cause, 'LEVEL_CORRUPTION') && err.cause.message.includes(victim), `the newest log deleted: refused naming it (${(err?.cause as Error | undefined)?.message ?? 'opened'})`)

  const added = tempDir()
  copyDir(built.closed, added)
  const numbers = fs.readdirSync(added).map((n) => parseFileName(n)?.number ?? 0)
  const extra = logName(Math.max(...numbers) + 1)
  fs.copyFileSync(path.join(added, built.logs[built.logs.length - 1]), path.join(added, extra))
  const err2 = await openError(added) as { cause?: unknown } | undefined
  t.ok(isLevelError(err2?.cause, 'LEVEL_CORRUPTION') && err2.cause.message.includes(extra), `a log with records added after the close: refused naming it (${(err2?.cause as Error | undefined)?.message ?? 'opened'})`)
})

test('two logs at close (the replayed one not yet flushed, the new one): damage to either is refused', async (t) => {
  const built = await build()
  // Closed in the turn after the open's first write: the replayed memtable's
  // flush, scheduled after open, has not started, and its log stays live.
  const db = new LsmLevel<string, string>(built.closed, KEEP_LOGS)
  await db.open()
  await db.put('after-reopen', 'x')
  await db.close()
  const logs = logFiles(built.closed)
  t.is(logs.length, 2, `two logs hold records at close: ${logs.join(', ')}`)
  const rnd = new Random(seed)
  for (const log of logs) {
    const dir = tempDir()
    copyDir(built.closed, dir)
    damages[2][1](path.join(dir, log), rnd)
    const err = await openError(dir) as { cause?: unknown } | undefined
    t.ok(isLevelError(err?.cause, 'LEVEL_CORRUPTION') && err.cause.message.includes(log), `${log} truncated by its last byte: refused naming it (${(err?.cause as Error | undefined)?.message ?? 'opened'})`)
  }
})

/** The logs in `dir` with their sizes. */
function logSizes (dir: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const n of fs.readdirSync(dir)) if (parseFileName(n)?.type === 'log') out[n] = fs.statSync(path.join(dir, n)).size
  return out
}

test('a clean close writes the memtables to tables: the logs hold no record, the next open replays none', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.del(key(7))
  await db.close()
  const sizes = logSizes(dir)
  t.ok(Object.values(sizes).every((s) => s === 0), `every log is empty after close: ${JSON.stringify(sizes)}`)
  const reopened = new LsmLevel<string, string>(dir)
  await reopened.open()
  const { recordsReplayed } = reopened.stats().recovery
  t.is(recordsReplayed, 0, 'the open replayed no record')
  const keys = await reopened.keys().all()
  t.is(keys.length, N - 1, 'every write, the delete too')
  t.is(await reopened.get(key(N - 1)), value(N - 1), 'the last put')
  t.is(await reopened.get(key(7)), undefined, 'the deleted key')
  await reopened.close()
})

test('a table damaged after a clean close is LEVEL_CORRUPTION naming it', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.close()
  const tables = fs.readdirSync(dir).filter((n) => parseFileName(n)?.type === 'table')
  t.is(tables.length, 1, `one table after close: ${tables.join(', ')}`)
  if (tables.length !== 1) return
  const file = path.join(dir, tables[0])
  const data = fs.readFileSync(file)
  // A data block's bytes (the first block starts the file).
  for (let i = 0; i < 8; i++) data[100 + i] ^= 0x5a
  fs.writeFileSync(file, data)
  const reopened = new LsmLevel<string, string>(dir)
  let err: unknown
  try {
    await reopened.open()
    await reopened.keys().all()
  } catch (e) {
    err = e
  }
  await reopened.close().catch(() => {})
  const cause = (err as { cause?: unknown } | undefined)?.cause ?? err
  t.ok(isLevelError(cause, 'LEVEL_CORRUPTION') && (cause as Error).message.includes(tables[0]), `LEVEL_CORRUPTION naming ${tables[0]} (${(cause as Error | undefined)?.message ?? 'no error'})`)
})

test('the open after a clean close appends its edit to the manifest: no new manifest, CURRENT as it was', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.close()
  // The first reopen writes a manifest whose snapshot names the live log (a new database's does not).
  await db.open()
  await db.close()
  const manifests = (): string[] => fs.readdirSync(dir).filter((n) => n.startsWith('MANIFEST-'))
  const before = manifests()
  const current = fs.readFileSync(path.join(dir, 'CURRENT'), 'latin1')
  const size = fs.statSync(path.join(dir, before[0])).size
  for (let round = 0; round < 3; round++) {
    const again = new LsmLevel<string, string>(dir)
    await again.open()
    t.deepEqual(manifests(), before, `open ${round + 1}: the same manifest`)
    t.is(fs.readFileSync(path.join(dir, 'CURRENT'), 'latin1'), current, `open ${round + 1}: CURRENT as it was`)
    await again.put(key(round), 'new ' + String(round))
    await again.close()
  }
  t.ok(fs.statSync(path.join(dir, before[0])).size > size, 'the manifest grew by the edits')
  const last = new LsmLevel<string, string>(dir)
  await last.open()
  t.is(await last.get(key(2)), 'new 2', 'the writes between the opens')
  t.is((await last.keys().all()).length, N, 'every key')
  await last.close()
})

test('a torn edit after a clean close\'s record (the next open\'s, appended) ends the record: the open takes the logs as a crash left them', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  await db.put('before', 'x')
  await db.close()
  // The first reopen writes a manifest whose snapshot names the live log: the next open appends to it.
  await db.open()
  await db.close()
  const again = new LsmLevel<string, string>(dir)
  await again.open()
  for (let i = 0; i < 20; i++) await again.put(key(i), value(i))
  // A crash now, with the open's edit (the manifest's last record) torn.
  const crashed = tempDir()
  copyDir(dir, crashed)
  await again.close()
  const manifest = fs.readdirSync(crashed).find((n) => n.startsWith('MANIFEST-'))!
  const data = fs.readFileSync(path.join(crashed, manifest))
  fs.writeFileSync(path.join(crashed, manifest), data.subarray(0, data.length - 3))
  const err = await openError(crashed) as { cause?: Error } | undefined
  t.is(err, undefined, `opened (${err?.cause?.message ?? 'no error'})`)
})

/** Every file of `dir` but LOCK, by name: its bytes. */
function snapshotFiles (dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const n of fs.readdirSync(dir).sort()) if (n !== 'LOCK') out[n] = fs.readFileSync(path.join(dir, n)).toString('base64')
  return out
}

test('a clean close of a new database leaves a manifest the next open appends to: the open writes no new manifest', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.close()
  const manifests = (): string[] => fs.readdirSync(dir).filter((n) => n.startsWith('MANIFEST-'))
  const atClose = manifests()
  t.is(atClose.length, 1, 'one manifest')
  const again = new LsmLevel<string, string>(dir)
  await again.open()
  await again.put('after', 'x')
  t.deepEqual(manifests(), atClose, 'the open and its first write kept the manifest of the close')
  await again.close()
  const last = new LsmLevel<string, string>(dir)
  await last.open()
  t.is(await last.get('after'), 'x', 'the write after the reopen')
  t.is((await last.keys().all()).length, N + 1, 'every key')
  await last.close()
})

test('an open after a clean close that only reads writes nothing: every file as it was, through the close too', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.close()
  const before = snapshotFiles(dir)
  const reader = new LsmLevel<string, string>(dir)
  await reader.open()
  t.deepEqual(snapshotFiles(dir), before, 'after the open')
  t.is(await reader.get(key(3)), value(3), 'a read')
  t.is((await reader.keys().all()).length, N, 'a scan')
  await reader.close()
  t.deepEqual(snapshotFiles(dir), before, 'after the close')
  // The record of the clean close is still the manifest's last, and still true: the next open takes it.
  const next = new LsmLevel<string, string>(dir)
  await next.open()
  t.is((await next.keys().all()).length, N, 'every key at the next open')
  await next.close()
})

test('the first write after such an open ends the clean close\'s record before the log takes it: a crash then keeps the write', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  for (let i = 0; i < N; i++) await db.put(key(i), value(i))
  await db.close()
  // The close flushed the writes: the log the next open takes over is empty, and it replays nothing.
  const again = new LsmLevel<string, string>(dir)
  await again.open()
  await again.put('after', 'x')
  // A crash now: the files as they are while it runs.
  const crashed = tempDir()
  copyDir(dir, crashed)
  await again.close()
  const reopened = new LsmLevel<string, string>(crashed)
  let err: unknown
  try {
    await reopened.open()
  } catch (e) {
    err = e
  }
  t.is(err, undefined, `opened (${((err as { cause?: Error } | undefined)?.cause ?? err as Error | undefined)?.message ?? 'no error'})`)
  if (err !== undefined) return
  t.is(await reopened.get('after'), 'x', 'the write after the reopen')
  t.is((await reopened.keys().all()).length, N + 1, 'every key')
  await reopened.close()
})
