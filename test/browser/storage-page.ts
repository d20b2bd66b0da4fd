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
// Lines go to the test as TAP: pushed to window.lsmLines, which the test
// drains (a WebDriver client cannot expose a function), ending with '# done'.
import test from 'tape'
import { BrowserLevel } from '../../adapters/browser-level'

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
  return `key${String(i).padStart(4, '0')}`
}

let n = 0
function check (ok: boolean, what: string): void {
  report(`${ok ? 'ok' : 'not ok'} ${++n} ${what}`)
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

function compliance (): void {
  const stream = test.createStream()
  stream.on('data', (line: string) => report(line.replace(/\n$/, '')))
  stream.on('end', () => report('# done'))
  const root = `storage-compliance-${Date.now()}`
  let i = 0
  suite({
    test,
    factory (options?: Record<string, unknown>) {
      return new BrowserLevel(`${root}/${i++}`, { ...options, storage, worker })
    }
  })
}

async function main (): Promise<void> {
  const run = params.get('run')
  if (run === 'compliance') {
    compliance()
    return
  }
  try {
    const location = params.get('location') ?? 'storage-test'
    if (run === 'write') await write(location)
    else if (run === 'read') await read(location)
    else if (run === 'option') option()
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
