// The dedicated worker that test/browser/page.ts starts (?run=in-worker):
// OpfsLevel, the engine used directly in this worker, bundled by
// scripts/build-browser.js --tests into dist/browser-test/worker.js. Its own
// query string says what to run:
//   ?run=compliance          the abstract-level compliance suite, default options
//   ?run=checks              getSync against get through flushes and a
//                            compaction; a second database on an open location;
//                            a failed open
//   ?run=hold&location=...   opens the database and holds it until the page
//                            posts 'close' (the page then tries its own)
//   ?run=full&location=...&bytes=<value bytes>[&trace=1]   writes until the
//                            storage quota (which the test made small) is full:
//                            LEVEL_STORAGE_FULL, writes refused, every
//                            acknowledged write readable; '# acked <n>' says
//                            how many batches were, with the origin's usage
//                            beside its files' sizes (trace=1: every 20
//                            batches too, and the failure's causes)
//   ?run=full-reopen&location=...&acked=<n>&bytes=<value bytes>   after the
//                            quota was raised: the database opens with those
//                            n batches
//   ?run=large&mib=<n>       a database of n MiB (default options, at most
//                            64 handles): write, reopen, random reads; timed
//   ?run=busy&location=...   opens the database, writes BUSY_KEYS keys, says
//                            '# opened', then loops in JavaScript for ever
//                            (the page terminates it)
//   ?run=reopen&location=... opens it (timed) and checks the BUSY_KEYS keys
//   ?run=handle-costs        times a sync access handle's open and close,
//                            getFile(), and 4 KiB reads through a handle and
//                            through FileReaderSync (for BENCHMARKS.md)
//   ?run=handle-quota        under a small quota (the test sets it): what 16
//                            open handles that were written to take of it
//   ?run=many-tables&bound=<n>  a database of many more tables than n, with at
//                            most n sync access handles open: every key reads
//                            back, before and after a reopen
// TAP lines (and '# opened', '# closed') go to the page with postMessage, which
// hands them to Node; '# done' ends a run.
import { OpfsLevel } from '../../browser-in-worker'
import { installBrowserPlatform, resolveLocation } from '../../hosts/browser/platform'
import test from 'tape'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

interface WorkerScope {
  postMessage (line: string): void
  onmessage: ((event: { data: string }) => void) | null
  location: { search: string }
}
const scope = globalThis as unknown as WorkerScope
const params = new URLSearchParams(scope.location.search)
const report = (line: string): void => scope.postMessage(line)

/** Sends tape's output to the page, '# done' at its end. */
function reportTape (): void {
  const stream = test.createStream()
  stream.on('data', (line: string) => report(line.replace(/\n$/, '')))
  stream.on('end', () => report('# done'))
}

function runCompliance (): void {
  const root = `in-worker-compliance-${Date.now()}`
  let n = 0
  reportTape()
  suite({
    test,
    factory: (options?: Record<string, unknown>) => new OpfsLevel(`${root}/${n++}`, options)
  })
}

/** Buffers small enough that a few hundred keys go through flushes and compactions. */
const TINY = { writeBufferSize: 2048, blockSize: 256, targetFileSize: 2048, maxBytesForLevelBase: 8192, level0CompactionTrigger: 2 }

function runChecks (): void {
  const root = `in-worker-checks-${Date.now()}`
  reportTape()

  test('in a worker: getSync returns what get returns, after puts, a flush and a compaction', async (t) => {
    const db = new OpfsLevel(`${root}/get-sync`, TINY)
    await db.open()
    const N = 600
    const key = (i: number): string => `k${String(i).padStart(4, '0')}`
    const model = new Map<string, string>()
    // Spread over the key space (7 is coprime to N), then overwrites and deletes.
    for (let j = 0; j < N; j++) {
      const i = (j * 7) % N
      await db.put(key(i), `first ${i} ${'x'.repeat(i % 40)}`)
      model.set(key(i), `first ${i} ${'x'.repeat(i % 40)}`)
    }
    for (let i = 0; i < N; i += 3) {
      await db.put(key(i), `second ${i}`)
      model.set(key(i), `second ${i}`)
    }
    for (let i = 0; i < N; i += 5) {
      await db.del(key(i))
      model.delete(key(i))
    }
    const check = async (when: string): Promise<void> => {
      let wrong = 0
      for (let i = 0; i < N + 10; i++) {
        const sync = db.getSync(key(i))
        if (sync !== await db.get(key(i)) || sync !== model.get(key(i))) wrong++
      }
      t.is(wrong, 0, `${when}: getSync = get = the model for ${N + 10} keys (10 never written)`)
    }
    await check('after the puts')
    await db.flush()
    await check('after a flush')
    await db.compactRange()
    await check('after a compaction')
    const stats = db.stats()
    const deeper = db.levels().filter((l) => l.level > 0 && l.files > 0)
    t.ok(stats.flushes > 1 && deeper.length > 0, `the data went through flushes (${stats.flushes}) and into levels below 0 (${deeper.map((l) => l.level).join(', ')})`)
    await db.close()
  })

  test('in a worker: a second database on an open location gets LEVEL_LOCKED; it opens once the first closes', async (t) => {
    const location = `${root}/lock`
    const first = new OpfsLevel(location)
    await first.open()
    const second = new OpfsLevel(location)
    try {
      await second.open()
      t.fail('the second open succeeded')
    } catch (err) {
      const e = err as { code?: string, cause?: { code?: string } }
      t.is(`${e.code} / ${e.cause?.code}`, 'LEVEL_DATABASE_NOT_OPEN / LEVEL_LOCKED', 'the second open fails, caused by LEVEL_LOCKED')
    }
    await first.put('a', '1')
    t.is(await first.get('a'), '1', 'the first still works')
    await first.close()
    await second.open()
    t.is(await second.get('a'), '1', 'the second opens once the first is closed, and reads its write')
    await second.close()
  })

  test('in a worker: a failed open holds nothing: the next open of the location works', async (t) => {
    const location = `${root}/lock`
    const failed = new OpfsLevel(location)
    await failed.open({ errorIfExists: true }).then(() => t.fail('opened'), (err: { code?: string }) => t.is(err.code, 'LEVEL_DATABASE_NOT_OPEN', 'errorIfExists on an existing database fails'))
    const db = new OpfsLevel(location)
    await db.open()
    t.is(await db.get('a'), '1', 'the next open works and reads the data')
    await db.close()
  })
}

async function hold (location: string): Promise<void> {
  const db = new OpfsLevel(location)
  await db.open()
  await db.put('held', 'by the worker')
  report('# opened')
  scope.onmessage = (event) => {
    if (event.data !== 'close') return
    db.close().then(() => report('# closed'), (err: Error) => report(`not ok - close: ${err.message}`))
  }
}

/**
 * Values of FULL_VALUE_BYTES bytes (the page's `bytes` parameter, 1,000 by
 * default) that do not compress (so that they fill the quota as they are),
 * written in batches of FULL_BATCH keys (about 50 KB a batch: one put of a
 * value of 64 KiB).
 */
const FULL_VALUE_BYTES = Number(params.get('bytes') ?? 1000)
const FULL_BATCH = Math.max(1, Math.floor(50000 / FULL_VALUE_BYTES))

function fullKey (i: number): string {
  return `k${String(i).padStart(8, '0')}`
}

/** Value `i`: bytes of a xorshift stream seeded by i, as hex (incompressible: 4 bits of entropy a character). */
function fullValue (i: number): string {
  let x = (i * 2654435761) >>> 0 || 1
  const words: string[] = []
  for (let n = 0; n < FULL_VALUE_BYTES; n += 8) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    words.push((x >>> 0).toString(16).padStart(8, '0'))
  }
  return words.join('').slice(0, FULL_VALUE_BYTES)
}

function codeChain (err: unknown): string {
  const codes: string[] = []
  for (let e = err as { code?: string, name?: string, cause?: unknown } | undefined; e !== undefined && codes.length < 8; e = e.cause as typeof e) codes.push(e.code ?? e.name ?? '?')
  return codes.join(' <- ')
}

function check (n: number, ok: boolean, what: string): void {
  report(`${ok ? 'ok' : 'not ok'} ${n} ${what}`)
}

interface StorageWithEstimate { estimate: () => Promise<{ usage?: number, quota?: number }>, getDirectory: () => Promise<unknown> }
const storageApi = (): StorageWithEstimate => (globalThis as unknown as { navigator: { storage: StorageWithEstimate } }).navigator.storage

/** The sizes of the files under an OPFS directory (getFile() of each: the bytes written, whatever capacity their handles hold). */
async function fileBytes (dir: unknown): Promise<{ files: number, bytes: number }> {
  let files = 0
  let bytes = 0
  for await (const entry of (dir as { values: () => AsyncIterable<{ kind: string, getFile?: () => Promise<{ size: number }> }> }).values()) {
    if (entry.kind === 'directory') {
      const inner = await fileBytes(entry)
      files += inner.files
      bytes += inner.bytes
    } else {
      files++
      bytes += (await entry.getFile!()).size
    }
  }
  return { files, bytes }
}

/** The origin's usage as the browser counts it against the quota, beside the bytes its OPFS files hold. */
async function usageLine (): Promise<string> {
  const { usage = 0, quota = 0 } = await storageApi().estimate()
  const { files, bytes } = await fileBytes(await storageApi().getDirectory())
  const mib = (n: number): string => (n / 1048576).toFixed(2)
  return `usage ${mib(usage)} MiB of a quota of ${mib(quota)} MiB; ${files} files of ${mib(bytes)} MiB`
}

/** Options for the full-quota runs (the page's `opts` parameter, JSON; for measurements). */
const FULL_OPTIONS = JSON.parse(params.get('opts') ?? '{}') as Record<string, unknown>

async function fill (location: string): Promise<void> {
  const db = new OpfsLevel(location, FULL_OPTIONS)
  await db.open()
  const trace = params.get('trace') === '1'
  let acked = 0
  let failure: unknown
  for (; failure === undefined && acked < 100000; acked++) {
    const ops = Array.from({ length: FULL_BATCH }, (_, j) => ({ type: 'put' as const, key: fullKey(acked * FULL_BATCH + j), value: fullValue(acked * FULL_BATCH + j) }))
    try {
      await db.batch(ops)
    } catch (err) {
      failure = err
      acked--
    }
    if (trace && acked % 20 === 0) report(`# trace: ${acked} batches acked, ${((acked + 1) * FULL_BATCH * (FULL_VALUE_BYTES + 9) / 1048576).toFixed(2)} MiB of data; ${await usageLine()}`)
  }
  const bytes = acked * FULL_BATCH * (FULL_VALUE_BYTES + 9)
  report(`# acked ${acked} (${acked * FULL_BATCH} keys of ${FULL_VALUE_BYTES}-byte values, ${bytes} bytes, ${(bytes / 1048576).toFixed(2)} MiB of keys and values); at the failure: ${await usageLine()}`)
  if (trace) {
    const msgs: string[] = []
    for (let e = failure as { message?: string, cause?: unknown } | undefined; e !== undefined && msgs.length < 8; e = e.cause as typeof e) msgs.push(String(e.message))
    report(`# trace: failure: ${msgs.join(' <- ')}`)
    report(`# trace: levels ${JSON.stringify(db.levels())}; stats ${JSON.stringify(db.stats())}`)
  }
  check(1, codeChain(failure).startsWith('LEVEL_STORAGE_FULL'), `a write fails with LEVEL_STORAGE_FULL once the quota is full: ${codeChain(failure)}: ${String((failure as Error | undefined)?.message)}`)
  const after = await db.put('after', 'x').then(() => undefined, (err: unknown) => err)
  check(2, codeChain(after).startsWith('LEVEL_STORAGE_FULL'), `a later write is refused: ${codeChain(after)}`)
  let wrong = 0
  for (let i = 0; i < acked * FULL_BATCH; i++) if (await db.get(fullKey(i)) !== fullValue(i)) wrong++
  check(3, wrong === 0, `every acknowledged write reads back (${acked * FULL_BATCH} keys, ${wrong} wrong)`)
  await db.close().catch(() => {})
  report('# done')
}

async function fullReopen (location: string, acked: number): Promise<void> {
  const db = new OpfsLevel(location, FULL_OPTIONS)
  await db.open()
  let wrong = 0
  for (let i = 0; i < acked * FULL_BATCH; i++) if (await db.get(fullKey(i)) !== fullValue(i)) wrong++
  check(1, wrong === 0, `with the quota raised, the database opens with every acknowledged write (${acked * FULL_BATCH} keys, ${wrong} wrong)`)
  await db.put('after', 'x')
  check(2, await db.get('after') === 'x', 'and takes writes again')
  await db.close()
  report('# done')
}

interface OpfsFile {
  createSyncAccessHandle: () => Promise<{ read: (b: Uint8Array, o: { at: number }) => number, write: (b: Uint8Array, o: { at: number }) => number, flush: () => void, close: () => void }>
  getFile: () => Promise<{ slice: (a: number, b: number) => unknown }>
}
interface OpfsDir {
  getFileHandle: (name: string, o: { create: boolean }) => Promise<OpfsFile>
  removeEntry: (name: string, o?: object) => Promise<void>
  getDirectoryHandle: (name: string, o: { create: boolean }) => Promise<OpfsDir>
}

/** Microseconds per call of `fn` over `n` calls in a row (one timing: a worker's clock is coarse, 100 us in Chromium). */
async function perCallUs (n: number, fn: (i: number) => unknown): Promise<number> {
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  return (performance.now() - t0) * 1000 / n
}

async function handleCosts (): Promise<void> {
  const storage = (globalThis as unknown as { navigator: { storage: { getDirectory: () => Promise<OpfsDir> } } }).navigator.storage
  const root = await storage.getDirectory()
  const name = `handle-costs-${Date.now()}`
  const dir = await root.getDirectoryHandle(name, { create: true })
  const file = await dir.getFileHandle('f', { create: true })
  const SIZE = 4 << 20
  let handle = await file.createSyncAccessHandle()
  handle.write(new Uint8Array(SIZE).fill(7), { at: 0 })
  handle.flush()
  const buf = new Uint8Array(4096)
  const at = (i: number): number => ((i * 7919) % (SIZE / 4096)) * 4096
  const read = await perCallUs(2000, (i) => handle.read(buf, { at: at(i) }))
  const snapshot = await file.getFile()
  const Reader = (globalThis as unknown as { FileReaderSync: new () => { readAsArrayBuffer: (b: unknown) => ArrayBuffer } }).FileReaderSync
  const reader = new Reader()
  const readSnapshot = await perCallUs(2000, (i) => reader.readAsArrayBuffer(snapshot.slice(at(i), at(i) + 4096)))
  const bigger = await perCallUs(200, (i) => reader.readAsArrayBuffer(snapshot.slice((i % 31) * 131072, (i % 31) * 131072 + 131072)))
  const getFile = await perCallUs(200, async () => await file.getFile())
  handle.close()
  const openClose = await perCallUs(200, async () => {
    handle = await file.createSyncAccessHandle()
    handle.close()
  })
  report(`# 4 KiB read through a sync access handle: ${read.toFixed(1)} us; through FileReaderSync from a getFile() snapshot: ${readSnapshot.toFixed(1)} us (128 KiB: ${bigger.toFixed(1)} us); getFile(): ${getFile.toFixed(1)} us; a handle's open and close: ${openClose.toFixed(1)} us (per call, over 2,000 reads and 200 opens)`)
  await root.removeEntry(name, { recursive: true })
  report('# done')
}

/** Fills a new file of `dir` until a write comes up short or throws (the quota: Chromium 150 returned a bogus count, 156 throws QuotaExceededError); returns its bytes. */
async function fillQuota (dir: OpfsDir, name: string): Promise<number> {
  const handle = await (await dir.getFileHandle(name, { create: true })).createSyncAccessHandle()
  const chunk = new Uint8Array(64 * 1024)
  let at = 0
  try {
    while (handle.write(chunk, { at }) === chunk.length) at += chunk.length
  } catch (err) {
    if ((err as { name?: string }).name !== 'QuotaExceededError') throw err
  }
  handle.close()
  return at
}

/** How much of a small quota (set by the test) open sync access handles that were written to take: a file filled with 0, then with 16 of them open. */
async function handleQuota (): Promise<void> {
  const storage = (globalThis as unknown as { navigator: { storage: { getDirectory: () => Promise<OpfsDir> } } }).navigator.storage
  const root = await storage.getDirectory()
  const results: string[] = []
  for (const open of [0, 16]) {
    const name = `handle-quota-${open}-${Date.now()}`
    const dir = await root.getDirectoryHandle(name, { create: true })
    const handles = []
    for (let i = 0; i < open; i++) {
      const h = await (await dir.getFileHandle(`h${i}`, { create: true })).createSyncAccessHandle()
      for (let j = 0; j < 25; j++) h.write(new Uint8Array(4096), { at: j * 4096 })
      handles.push(h)
    }
    const filled = await fillQuota(dir, 'fill')
    for (const h of handles) h.close()
    results.push(`${open} handles open (each written 100 KiB): a file filled to ${(filled / 1048576).toFixed(2)} MiB, ${((filled + open * 102400) / 1048576).toFixed(2)} MiB in all`)
    await root.removeEntry(name, { recursive: true })
  }
  report(`# under the quota: ${results.join('; ')}`)
  report('# done')
}

const BUSY_KEYS = 3000

async function busy (location: string): Promise<void> {
  const db = new OpfsLevel(location, TINY)
  await db.open()
  for (let i = 0; i < BUSY_KEYS; i += 100) await db.batch(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: fullKey(i + j), value: `busy ${i + j}` })))
  report('# opened')
  // Busy in JavaScript until terminated: reads and writes in a loop, never yielding.
  for (let i = 0; ; i++) db.getSync(fullKey(i % BUSY_KEYS))
}

async function reopen (location: string): Promise<void> {
  const t0 = performance.now()
  const db = new OpfsLevel(location, TINY)
  try {
    await db.open()
  } catch (err) {
    report(`# open failed after ${(performance.now() - t0).toFixed(0)} ms: ${codeChain(err)}: ${String((err as { cause?: Error }).cause?.message)}`)
    report('# done')
    return
  }
  report(`# opened after ${(performance.now() - t0).toFixed(0)} ms`)
  let wrong = 0
  for (let i = 0; i < BUSY_KEYS; i++) if (await db.get(fullKey(i)) !== `busy ${i}`) wrong++
  check(1, wrong === 0, `every key the terminated worker wrote reads back (${BUSY_KEYS} keys, ${wrong} wrong)`)
  await db.close()
  report('# done')
}

async function manyTables (bound: number): Promise<void> {
  const location = `many-tables-${Date.now()}`
  const options = { ...TINY, maxOpenHandles: bound }
  const fs = await installBrowserPlatform()
  let db = new OpfsLevel(location, options)
  await db.open()
  const model = new Map<string, string>()
  let x = 12345
  for (let i = 0; i < 8000; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    const key = `k${String(x % 4000).padStart(5, '0')}`
    model.set(key, `v${i} ${x.toString(36).repeat(4)}`)
    await db.put(key, model.get(key)!)
  }
  await db.flush()
  const tables = db.levels().reduce((n, l) => n + l.files, 0)
  check(1, tables > 3 * bound, `${tables} tables, more than three times the bound of ${bound} handles`)
  const readAll = async (): Promise<number> => {
    let wrong = 0
    for (const [key, value] of model) if (await db.get(key) !== value || db.getSync(key) !== value) wrong++
    return wrong
  }
  check(2, await readAll() === 0, `${model.size} keys read back (get and getSync)`)
  const counts = fs.handleCounts(resolveLocation(location))
  check(3, counts.maxOpen <= bound, `at most ${bound} handles were open at once (${counts.maxOpen}; ${counts.open} now)`)
  await db.close()
  db = new OpfsLevel(location, options)
  const t0 = performance.now()
  await db.open()
  const openMs = performance.now() - t0
  check(4, await readAll() === 0, `after a reopen (${openMs.toFixed(0)} ms), ${model.size} keys read back`)
  const after = fs.handleCounts(resolveLocation(location))
  check(5, after.maxOpen <= bound, `at most ${bound} handles open at once, the mount included (${after.maxOpen})`)
  await db.close()
  report('# done')
}

async function large (mib: number, given: string | null, keep: boolean): Promise<void> {
  const location = given ?? `large-${Date.now()}`
  const fs = await installBrowserPlatform()
  const dir = resolveLocation(location)
  let db = new OpfsLevel(location)
  await db.open()
  const batches = Math.ceil(mib * 1048576 / (FULL_BATCH * (FULL_VALUE_BYTES + 9)))
  let t0 = performance.now()
  // An existing database of this size (location given) is read again, not written.
  for (let b = given === null ? 0 : batches; b < batches; b++) {
    await db.batch(Array.from({ length: FULL_BATCH }, (_, j) => ({ type: 'put' as const, key: fullKey(b * FULL_BATCH + j), value: fullValue(b * FULL_BATCH + j) })))
  }
  await db.flush()
  const keys = batches * FULL_BATCH
  report(`# wrote ${keys} keys (${mib} MiB) in ${((performance.now() - t0) / 1000).toFixed(1)} s; tables ${db.levels().reduce((n, l) => n + l.files, 0)}; levels ${JSON.stringify(db.levels().filter((l) => l.files > 0))}`)
  const written = fs.handleCounts(dir)
  await db.close()
  // Reopened with the default bound (64) and with one above the number of
  // files (every handle open, as before the bound), alternately: open time
  // and random gets (the same keys each time, a cold block cache).
  let wrong = 0
  const most: number[] = []
  for (const bound of [64, 4096, 64, 4096]) {
    t0 = performance.now()
    db = new OpfsLevel(location, { maxOpenHandles: bound })
    await db.open()
    const openMs = performance.now() - t0
    let x = 99991
    t0 = performance.now()
    for (let i = 0; i < 2000; i++) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      const k = (x >>> 0) % keys
      if (await db.get(fullKey(k)) !== fullValue(k)) wrong++
    }
    const getMs = (performance.now() - t0) / 2000
    t0 = performance.now()
    for (let i = 0; i < 2000; i++) {
      const k = (i * 7919) % keys
      if (await db.get(fullKey(k)) !== fullValue(k)) wrong++
    }
    report(`# maxOpenHandles ${bound}: reopened in ${openMs.toFixed(0)} ms; 2000 random gets ${getMs.toFixed(3)} ms each, 2000 more ${((performance.now() - t0) / 2000).toFixed(3)} ms each; at most ${fs.handleCounts(dir).maxOpen} handles open`)
    if (bound === 64) most.push(fs.handleCounts(dir).maxOpen)
    await db.close()
  }
  check(1, wrong === 0, `${keys} keys, 16000 gets read back (${wrong} wrong)`)
  check(2, written.maxOpen <= 64 && most.every((n) => n <= 64), `at most 64 handles open at once (${written.maxOpen} while writing, ${most.join(' and ')} after reopens)`)
  if (keep) {
    report(`# kept at ${location}`)
  } else {
    const storage = (globalThis as unknown as { navigator: { storage: { getDirectory: () => Promise<{ removeEntry: (name: string, options: object) => Promise<void> }> } } }).navigator.storage
    await (await storage.getDirectory()).removeEntry(location, { recursive: true })
  }
  report('# done')
}

const run = params.get('run')
if (run === 'compliance') runCompliance()
else if (run === 'checks') runChecks()
else if (run === 'hold') {
  hold(params.get('location') ?? 'db').catch((err: Error) => {
    report(`not ok - open: ${err.message}`)
    report('# done')
  })
} else if (run === 'full' || run === 'full-reopen') {
  const location = params.get('location') ?? 'full'
  const done = run === 'full' ? fill(location) : fullReopen(location, Number(params.get('acked')))
  done.catch((err: Error) => {
    report(`not ok - ${run}: ${codeChain(err)}: ${err.message}`)
    report('# done')
  })
} else if (run === 'large') {
  large(Number(params.get('mib') ?? 1024), params.get('location'), params.get('keep') === '1').catch((err: Error) => {
    report(`not ok - large: ${codeChain(err)}: ${err.stack ?? err.message}`)
    report('# done')
  })
} else if (run === 'busy' || run === 'reopen') {
  const location = params.get('location') ?? 'busy'
  ;(run === 'busy' ? busy(location) : reopen(location)).catch((err: Error) => {
    report(`not ok - ${run}: ${codeChain(err)}: ${err.stack ?? err.message}`)
    report('# done')
  })
} else if (run === 'handle-quota') {
  handleQuota().catch((err: Error) => {
    report(`not ok - handle-quota: ${err.stack ?? err.message}`)
    report('# done')
  })
} else if (run === 'handle-costs') {
  handleCosts().catch((err: Error) => {
    report(`not ok - handle-costs: ${err.stack ?? err.message}`)
    report('# done')
  })
} else if (run === 'many-tables') {
  manyTables(Number(params.get('bound') ?? 16)).catch((err: Error) => {
    report(`not ok - many-tables: ${codeChain(err)}: ${err.stack ?? err.message}`)
    report('# done')
  })
} else {
  report(`not ok - unknown run: ${String(run)}`)
  report('# done')
}
