// The page of the fallback-storage tests in browsers (test/browser-idb.test.ts
// in Chromium, test/browser-webkit.test.ts in WebKitGTK), bundled by
// scripts/build-browser.js --tests into dist/browser-test/storage.js. The
// query string says what to run, through BrowserLevel with `storage` (default
// 'auto'):
//   ?run=write&location=...    a known data set (batches, a put with sync,
//                              a delete), read back by get, getMany and an
//                              iterator; '# storage <kind>' says db.storage
//   ?run=read&location=...     the data set again, in a new page load
//   ?run=option                an invalid `storage` is LEVEL_INVALID_OPTION
//   ?run=compliance            the abstract-level compliance suite
//   ?run=engine&seed=N         the engine checks of engine-checks.ts (on the
//                              storage `auto` picks: IndexedDB in WebKitGTK)
//   ?run=size&mib=<n>          a database of n MiB of incompressible values:
//                              times the writes, 100 puts with sync, the close, the open (the
//                              IndexedDB storage loads it all) and 1,000
//                              random gets ('# size ...', for the README's limits)
//   ?run=full-close&location=...  under a small quota (the test sets it with
//                              CDP): writes with sync that fit, then one
//                              batch without sync larger than the quota,
//                              then close(): it must fail with
//                              LEVEL_DATABASE_NOT_CLOSED / LEVEL_STORAGE_FULL
//                              and a second close() succeed; '# raise the
//                              quota' then waits for window.lsmGo() (the test
//                              raises it), and the database reopens in this
//                              page with every write acknowledged with sync
//   ?run=full-reopen&location=...  those writes, in a new page load
// Lines go to the test as TAP: pushed to window.lsmLines, which the test
// drains (a WebDriver client cannot expose a function), ending with '# done'.
import test from 'tape'
import { BrowserLevel } from '../../adapters/browser-level'
import { registerEngineChecks } from './engine-checks'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

const page = globalThis as unknown as { lsmLines: string[], location: { search: string } }
page.lsmLines = []
const report = (line: string): void => { page.lsmLines.push(line) }
const params = new URLSearchParams(page.location.search)
const storage = (params.get('storage') ?? 'auto') as 'auto'
const worker = (): never => {
  const Worker = (globalThis as unknown as { Worker: new (url: string, options: object) => never }).Worker
  return new Worker('/browser/lsm-level-worker.js', { type: 'module' })
}

const KEYS = 500

function key (i: number): string {
  return `key${String(i).padStart(7, '0')}`
}

let n = 0
function check (ok: boolean, what: string): void {
  report(`${ok ? 'ok' : 'not ok'} ${++n} ${what}`)
}

/** The codes along an error's cause chain: 'LEVEL_A / LEVEL_B / ...'. */
function codeChain (err: unknown): string {
  const codes: string[] = []
  for (let e = err as { code?: string, name?: string, cause?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) codes.push(String(e.code ?? e.name))
  return codes.join(' / ')
}

function codes (err: unknown): string {
  const e = err as { code?: string, cause?: { code?: string, message?: string }, message?: string }
  return e.cause === undefined ? `${String(e.code)} (${String(e.message)})` : `${String(e.code)} / ${String(e.cause.code)} (${String(e.cause.message)})`
}

/** The data set: keys 0..KEYS-1 but every tenth deleted, and 'last' written with sync. */
async function readBack (db: BrowserLevel): Promise<void> {
  const entries = await db.iterator({ gte: 'key', lt: 'key~' }).all()
  const want = Array.from({ length: KEYS }, (_, i) => i).filter((i) => i % 10 !== 0)
  const wrong = entries.filter(([k, v], j) => k !== key(want[j]) || v !== `value${want[j]}`).length
  check(entries.length === want.length && wrong === 0, `iterator: ${entries.length} of ${want.length} entries in order (${wrong} wrong)`)
  check(await db.get(key(7)) === 'value7' && await db.get(key(10)) === undefined, 'get: a key written, a key deleted')
  const many = await db.getMany([key(1), key(20), key(21)])
  check(many[0] === 'value1' && many[1] === undefined && many[2] === 'value21', `getMany: ${JSON.stringify(many)}`)
  check(await db.get('last') === 'synced', 'the write with { sync: true } is there')
}

async function write (location: string): Promise<void> {
  const db = new BrowserLevel(location, { worker, storage, writeBufferSize: 16 * 1024 })
  await db.open()
  report(`# storage ${String(db.storage)}`)
  for (let i = 0; i < KEYS; i += 50) {
    await db.batch(Array.from({ length: 50 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: `value${i + j}` })))
  }
  for (let i = 0; i < KEYS; i += 10) await db.del(key(i))
  await db.put('last', 'synced', { sync: true } as object)
  await readBack(db)
  await db.close()
}

async function read (location: string): Promise<void> {
  const db = new BrowserLevel(location, { worker, storage })
  await db.open({ createIfMissing: false })
  report(`# storage ${String(db.storage)}`)
  await readBack(db)
  await db.close()
}

function option (): void {
  try {
    const db = new BrowserLevel('x', { worker, storage: 'disk' as 'auto' })
    check(false, `constructed with storage: 'disk' (${db.location})`)
  } catch (err) {
    check((err as { code?: string }).code === 'LEVEL_INVALID_OPTION', `storage: 'disk': ${codes(err)}`)
  }
}

/** Sends tape's output to the test, '# done' at its end. */
function reportTape (): void {
  const stream = test.createStream()
  stream.on('data', (line: string) => report(line.replace(/\n$/, '')))
  stream.on('end', () => report('# done'))
}

function compliance (): void {
  reportTape()
  const root = `storage-compliance-${Date.now()}`
  let i = 0
  suite({
    test,
    factory (options?: Record<string, unknown>) {
      return new BrowserLevel(`${root}/${i++}`, { ...options, storage, worker })
    }
  })
}

/** Writes `mib` MiB of incompressible 1,000-byte values, then times a close, an open and random gets. */
async function size (mib: number): Promise<void> {
  const location = `size-${storage}-${mib}-${Date.now()}`
  const count = Math.floor(mib * 1024 * 1024 / 1000)
  const value = (i: number): string => {
    let out = ''
    for (let x = (i + 1) * 2654435761; out.length < 1000; x = (x * 1103515245 + 12345) >>> 0) out += (x >>> 8).toString(36)
    return out.slice(0, 1000)
  }
  let db = new BrowserLevel(location, { worker, storage })
  await db.open()
  let t0 = performance.now()
  for (let i = 0; i < count; i += 256) {
    await db.batch(Array.from({ length: Math.min(256, count - i) }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: value(i + j) })))
  }
  const writeMs = performance.now() - t0
  t0 = performance.now()
  for (let i = 0; i < 100; i++) await db.put(`sync${i}`, value(i), { sync: true } as object)
  const syncMs = (performance.now() - t0) / 100
  t0 = performance.now()
  await db.close()
  const closeMs = performance.now() - t0
  db = new BrowserLevel(location, { worker, storage })
  t0 = performance.now()
  await db.open()
  const openMs = performance.now() - t0
  t0 = performance.now()
  let wrong = 0
  for (let i = 0; i < 1000; i++) {
    const k = (i * 7919) % count
    if (await db.get(key(k)) !== value(k)) wrong++
  }
  const getMs = (performance.now() - t0) / 1000
  check(wrong === 0, `${mib} MiB on ${String(db.storage)}: every value read back`)
  report(`# size ${String(db.storage)} ${mib} MiB: writes ${(mib / (writeMs / 1000)).toFixed(1)} MiB/s, sync put ${syncMs.toFixed(1)} ms, close ${closeMs.toFixed(0)} ms, open ${openMs.toFixed(0)} ms, get ${getMs.toFixed(3)} ms`)
  await db.close()
}

/** The writes acknowledged with sync in ?run=full-close: FULL_SYNCED keys of 1,000 bytes, in batches of 20. */
const FULL_SYNCED = 400
const fullKey = (i: number): string => `synced${String(i).padStart(6, '0')}`

/** 1,000 bytes that do not compress (IndexedDB's backing store compresses). */
function incompressible (i: number): string {
  let out = ''
  for (let x = (i + 1) * 2654435761; out.length < 1000; x = (x * 1103515245 + 12345) >>> 0) out += (x >>> 8).toString(36)
  return out.slice(0, 1000)
}

async function readSynced (db: BrowserLevel): Promise<number> {
  const values = await db.getMany(Array.from({ length: FULL_SYNCED }, (_, i) => fullKey(i)))
  return values.filter((v, i) => v !== incompressible(i)).length
}

async function fullClose (location: string, unsyncedMib: number): Promise<void> {
  const db = new BrowserLevel(location, { worker, storage })
  await db.open()
  for (let i = 0; i < FULL_SYNCED; i += 20) {
    await db.batch(Array.from({ length: 20 }, (_, j) => ({ type: 'put' as const, key: fullKey(i + j), value: incompressible(i + j) })), { sync: true } as object)
  }
  report(`# acked ${FULL_SYNCED} keys with sync`)
  // Acknowledged before it reaches IndexedDB: its transaction meets the quota during close().
  const count = Math.floor(unsyncedMib * 1048576 / 1000)
  await db.batch(Array.from({ length: count }, (_, i) => ({ type: 'put' as const, key: `unsynced${String(i).padStart(7, '0')}`, value: incompressible(FULL_SYNCED + i) })))
  const closed = await db.close().then(() => undefined, (err: Error & { cause?: Error }) => err)
  const chain = closed === undefined ? 'closed' : `${codeChain(closed)} (${String(closed.cause?.message)})`
  check(chain.startsWith('LEVEL_DATABASE_NOT_CLOSED / LEVEL_STORAGE_FULL / '), `close() after a write without sync that did not fit in the quota (${unsyncedMib} MiB): ${chain}`)
  const again = await db.close().then(() => 'closed', (err: unknown) => codes(err))
  check(again === 'closed', `a second close() succeeds: ${again}`)
  report('# raise the quota')
  await new Promise<void>((resolve) => { (globalThis as unknown as { lsmGo: () => void }).lsmGo = resolve })
  const reopened = new BrowserLevel(location, { worker, storage })
  const opened = await reopened.open().then(() => 'opened', (err: unknown) => codes(err))
  check(opened === 'opened', `with the quota raised, it opens again in this page: ${opened}`)
  if (opened !== 'opened') return
  const wrong = await readSynced(reopened)
  check(wrong === 0, `every write acknowledged with sync is there (${FULL_SYNCED} keys, ${wrong} missing or wrong)`)
  const unsynced = await reopened.get('unsynced0000000')
  report(`# the batch without sync is ${unsynced === undefined ? 'not there' : 'there'}`)
  await reopened.put('after', 'x', { sync: true } as object)
  check(await reopened.get('after') === 'x', 'and it takes writes')
  await reopened.close()
}

async function fullReopen (location: string): Promise<void> {
  const db = new BrowserLevel(location, { worker, storage })
  await db.open({ createIfMissing: false })
  const wrong = await readSynced(db)
  check(wrong === 0, `in a new page load, every write acknowledged with sync is there (${FULL_SYNCED} keys, ${wrong} missing or wrong)`)
  check(await db.get('after') === 'x', 'and the write made after the reopen')
  await db.close()
}

async function main (): Promise<void> {
  const run = params.get('run')
  if (run === 'compliance') {
    compliance()
    return
  }
  if (run === 'engine') {
    reportTape()
    const seed = Number(params.get('seed')) >>> 0
    report(`# SEED=${seed}`)
    registerEngineChecks(worker, seed, `engine-${seed}-${Date.now()}`)
    return
  }
  try {
    const location = params.get('location') ?? 'storage-test'
    if (run === 'write') await write(location)
    else if (run === 'read') await read(location)
    else if (run === 'option') option()
    else if (run === 'size') await size(Number(params.get('mib') ?? '16'))
    else if (run === 'full-close') await fullClose(location, Number(params.get('mib') ?? '8'))
    else if (run === 'full-reopen') await fullReopen(location)
    else check(false, `unknown run ${String(run)}`)
  } catch (err) {
    check(false, `threw ${codes(err)}`)
  }
  report('# done')
}

main().catch((err: unknown) => {
  report(`not ok - ${String(err)}`)
  report('# done')
})
