// The page test/browser.test.ts loads in a real browser, bundled by
// scripts/build-browser.js --tests. The query string says what to run:
//   ?run=compliance&config=default|tiny   the abstract-level compliance suite
//                                         through the main thread's database
//   ?run=persist-write&location=...       writes a known data set, closes
//   ?run=persist-read&location=...        checks it, loaded in a new page
//   ?run=two-tabs&location=...&hold=1     opens and keeps it open (or not)
//   ?run=engine&seed=N                    the engine checks of engine-checks.ts
//   ?run=in-worker&what=compliance|checks|full|...  OpfsLevel in a dedicated
//                                         worker (worker-runner.ts, which gets
//                                         the other parameters), its lines relayed
//   ?run=dead-worker&location=...         terminates a worker that holds the
//                                         database while it loops in JavaScript,
//                                         and opens it at once in a new worker
//   ?run=in-worker-lock&location=...      OpfsLevel refused on this page; a
//                                         BrowserLevel here refused while the
//                                         worker's OpfsLevel holds the location
//   ?run=worker-cap&location=...&count=N&timeout=MS  with the browser's limit
//                                         of workers reached, an open (with that
//                                         workerStartTimeoutMs) fails, not hangs;
//                                         with one worker free, N databases open
//                                         at once, all in that one worker
// Results go to Node as TAP lines through window.lsmReport (a function the
// test exposes), ending with '# done'.
import test from 'tape'
import { BrowserLevel } from '../../adapters/browser-level'
import { OpfsLevel } from '../../browser-in-worker'
import { registerEngineChecks } from './engine-checks'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

const report = (globalThis as unknown as { lsmReport: (line: string) => void }).lsmReport
interface TestWorker {
  onmessage: ((event: { data: string }) => void) | null
  onerror: ((event: { message: string }) => void) | null
  postMessage (message: string): void
  terminate (): void
}
const TestWorker = (globalThis as unknown as { Worker: new (url: string, options: object) => TestWorker }).Worker
const params = new URLSearchParams((globalThis as unknown as { location: { search: string } }).location.search)
const worker = (): ReturnType<NonNullable<ConstructorParameters<typeof BrowserLevel>[1]>['worker'] & object> => {
  const Worker = (globalThis as unknown as { Worker: new (url: string, options: object) => never }).Worker
  return new Worker('/browser/lsm-level-worker.js', { type: 'module' })
}

const CONFIGS: Record<string, Record<string, unknown>> = {
  default: {},
  tiny: {
    writeBufferSize: 1024,
    blockSize: 256,
    targetFileSize: 1024,
    maxBytesForLevelBase: 4096,
    cacheSize: 16 * 1024,
    level0CompactionTrigger: 1
  }
}

/** Sends tape's output to Node, '# done' at its end. */
function reportTape (): void {
  const stream = test.createStream()
  stream.on('data', (line: string) => report(line.replace(/\n$/, '')))
  stream.on('end', () => report('# done'))
}

function runCompliance (config: string): void {
  const engineOptions = CONFIGS[config]
  const root = `compliance-${config}-${Date.now()}`
  let n = 0
  // Databases not closed, said every 100 opens: the suite's second half runs on
  // sublevels of databases it never closes (all in the page's one worker).
  let live = 0
  reportTape()
  // ?grep=words: only the suite's tests whose name has them (to chase one).
  const grep = params.get('grep')
  suite({
    test: grep === null ? test : (name: string, ...rest: unknown[]) => name.includes(grep) ? (test as unknown as (...a: unknown[]) => unknown)(name, ...rest) : undefined,
    factory (options?: Record<string, unknown>) {
      const db = new BrowserLevel(`${root}/${n++}`, { ...engineOptions, ...options, worker })
      live++
      db.once('closed', () => { live-- })
      if (n % 100 === 0) report(`# ${n} databases made, ${live} not closed`)
      // The suite's failure shows only the error's message ("Database failed
      // to open"): its causes go to Node as a line before it, for the diagnosis.
      const open = db.open.bind(db) as (...args: unknown[]) => Promise<void>
      // The same promise is returned (the suite checks the database's status at the turns it settles in).
      ;(db as unknown as { open: (...args: unknown[]) => Promise<void> }).open = (...args) => {
        const opening = open(...args)
        opening.catch((err: unknown) => report(`# open of ${db.location} failed: ${causes(err)}`))
        return opening
      }
      return db
    }
  })
}

/** An error and its causes, each as code and message. */
function causes (err: unknown): string {
  const parts: string[] = []
  for (let e = err as { code?: string, name?: string, message?: string, cause?: unknown } | undefined, depth = 0; e !== undefined && e !== null && depth < 6; e = e.cause as typeof e, depth++) {
    parts.push(`${String(e.code ?? e.name)}: ${String(e.message)}`)
  }
  return parts.join(' <- ')
}

const PERSIST_KEYS = 2000

async function persistWrite (location: string): Promise<void> {
  const db = new BrowserLevel(location, { worker, writeBufferSize: 16 * 1024 })
  await db.open()
  for (let i = 0; i < PERSIST_KEYS; i += 100) {
    await db.batch(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: `key${String(i + j).padStart(5, '0')}`, value: `value${i + j}` })))
  }
  await db.put('last', 'written before the reload', { sync: true } as object)
  await db.close()
  report('ok 1 wrote the data set')
  report('# done')
}

async function persistRead (location: string): Promise<void> {
  const db = new BrowserLevel(location, { worker })
  await db.open({ createIfMissing: false })
  const entries = await db.iterator({ gte: 'key', lt: 'key~' }).all()
  const wrong = entries.filter(([k, v], i) => k !== `key${String(i).padStart(5, '0')}` || v !== `value${i}`).length
  report(`${entries.length === PERSIST_KEYS && wrong === 0 ? 'ok' : 'not ok'} 1 ${entries.length} of ${PERSIST_KEYS} keys read back by a new page (${wrong} wrong)`)
  const last = await db.get('last')
  report(`${last === 'written before the reload' ? 'ok' : 'not ok'} 2 the synced last write is there (${String(last)})`)
  await db.close()
  report('# done')
}

async function twoTabs (location: string, hold: boolean): Promise<void> {
  const db = new BrowserLevel(location, { worker })
  try {
    await db.open()
    report('# opened')
    if (!hold) await db.close()
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause
    report(`# open failed: ${String((err as { code?: string }).code)} / ${String(cause?.code)}`)
  }
  report('# done')
}

function runEngineChecks (seed: number): void {
  report(`# SEED=${seed}`)
  reportTape()
  registerEngineChecks(worker, seed, `engine-${Date.now()}`)
}

/** Runs worker-runner.ts's `what` in a dedicated worker (with this page's other parameters); its lines (and '# done') go to Node. */
function inWorker (what: string): void {
  const query = new URLSearchParams(params)
  query.set('run', what)
  query.delete('what')
  const w = new TestWorker(`/browser-test/worker.js?${query.toString()}`, { type: 'module' })
  w.onmessage = (event) => report(event.data)
  w.onerror = (event) => {
    report(`not ok - worker error: ${event.message}`)
    report('# done')
  }
}

function codes (err: unknown): string {
  const e = err as { code?: string, cause?: { code?: string } }
  return e.cause === undefined ? String(e.code) : `${String(e.code)} / ${String(e.cause.code)}`
}

async function inWorkerLock (location: string): Promise<void> {
  try {
    const db = new OpfsLevel(location)
    report(`not ok 1 OpfsLevel constructed on the page (${db.location})`)
  } catch (err) {
    report(`${codes(err) === 'LEVEL_NOT_SUPPORTED' ? 'ok' : 'not ok'} 1 on the page, new OpfsLevel() throws ${codes(err)}`)
  }
  const w = new TestWorker(`/browser-test/worker.js?run=hold&location=${encodeURIComponent(location)}`, { type: 'module' })
  const lines: string[] = []
  let wake = (): void => {}
  w.onmessage = (event) => {
    lines.push(event.data)
    wake()
  }
  const until = async (line: string): Promise<void> => {
    while (!lines.includes(line)) {
      if (lines.some((l) => l.startsWith('not ok'))) throw new Error(`the worker: ${lines.join(' | ')}`)
      await new Promise<void>((resolve) => { wake = resolve })
    }
  }
  await until('# opened')
  const db = new BrowserLevel(location, { worker })
  try {
    await db.open()
    report('not ok 2 a BrowserLevel opened the location the worker holds')
  } catch (err) {
    report(`${codes(err) === 'LEVEL_DATABASE_NOT_OPEN / LEVEL_LOCKED' ? 'ok' : 'not ok'} 2 a BrowserLevel on the location the worker's OpfsLevel holds: ${codes(err)}`)
  }
  w.postMessage('close')
  await until('# closed')
  await db.open()
  const held = await db.get('held')
  report(`${held === 'by the worker' ? 'ok' : 'not ok'} 3 once the worker closed it, the BrowserLevel opens it and reads the worker's write (${String(held)})`)
  await db.close()
  w.terminate()
  report('# done')
}

/** Starts worker-runner.ts's `run` in a new worker; resolves its lines once `last` (a line or a prefix) came. */
async function workerUntil (query: string, last: (line: string) => boolean): Promise<{ worker: TestWorker, lines: string[] }> {
  const w = new TestWorker(`/browser-test/worker.js?${query}`, { type: 'module' })
  const lines: string[] = []
  return await new Promise((resolve) => {
    w.onmessage = (event) => {
      lines.push(event.data)
      if (last(event.data) || event.data.startsWith('not ok')) resolve({ worker: w, lines })
    }
    w.onerror = (event) => {
      lines.push(`not ok - worker error: ${event.message}`)
      resolve({ worker: w, lines })
    }
  })
}

async function deadWorker (location: string): Promise<void> {
  const where = `location=${encodeURIComponent(location)}`
  const held = await workerUntil(`run=busy&${where}`, (l) => l === '# opened')
  if (!held.lines.includes('# opened')) {
    report(`not ok 1 the first worker: ${held.lines.join(' | ')}`)
    report('# done')
    return
  }
  await new Promise((resolve) => setTimeout(resolve, 100))
  held.worker.terminate()
  const t0 = performance.now()
  // At once, and again every 20 ms while the Web Lock is still held (the
  // browser releases it soon after the worker ends: that LEVEL_LOCKED is
  // immediate). Then the open meets the files' handles, which the browser may
  // not have closed yet: it waits for them, or fails with LEVEL_LOCKED saying
  // so, and is tried once more after 5 s.
  for (let attempt = 1, lockWaits = 0; attempt <= 2;) {
    const { worker, lines } = await workerUntil(`run=reopen&${where}`, (l) => l === '# done')
    worker.terminate()
    const failed = lines.find((l) => l.startsWith('# open failed'))
    if (failed !== undefined && failed.includes('open in another tab or worker') && lockWaits++ < 500) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      continue
    }
    report(`# attempt ${attempt}: ${(performance.now() - t0).toFixed(0)} ms after the terminate, ${lockWaits} tries found the Web Lock held`)
    // Comments are marked with the attempt; a skipped test's line stays one.
    for (const line of lines) {
      if (!line.startsWith('# ') || line.startsWith('# SKIP ')) report(line)
      else if (line !== '# done') report(`# attempt ${attempt}: ${line.slice(2)}`)
    }
    if (failed === undefined) break
    attempt++
    await new Promise((resolve) => setTimeout(resolve, 5000))
  }
  report('# done')
}

/** Starts a worker that says hello once it runs; resolves with it, or undefined if it did not start within `ms` (queued past the browser's limit). */
async function fillerWorker (ms: number): Promise<TestWorker | undefined> {
  const w = new TestWorker('/browser/lsm-level-worker.js', { type: 'module' })
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    w.onmessage = () => {
      clearTimeout(timer)
      resolve(true)
    }
  })
  if (started) return w
  w.terminate()
  return undefined
}

async function workerCap (location: string, count: number, timeoutMs: number): Promise<void> {
  let started = 0
  const countedWorker: typeof worker = () => {
    started++
    return worker()
  }
  // The site's other workers take every slot.
  const fillers: TestWorker[] = []
  for (let w = await fillerWorker(2000); w !== undefined; w = await fillerWorker(2000)) fillers.push(w)
  // No relay SharedWorker (relay: false): in Firefox 140 a page whose
  // SharedWorker was queued at the limit stopped answering altogether once a
  // worker ended (its close()s, or the next opens, never settled).
  const blocked = new BrowserLevel(`${location}/blocked`, { worker: countedWorker, relay: false, workerStartTimeoutMs: timeoutMs })
  const t0 = performance.now()
  const failure = await blocked.open().then(() => undefined, (err: unknown) => ({ err, ms: performance.now() - t0 }))
  const said = failure === undefined ? 'it opened' : causes(failure.err)
  report(`${failure !== undefined && said.startsWith('LEVEL_DATABASE_NOT_OPEN') && said.includes('did not start within') ? 'ok' : 'not ok'} 1 with ${fillers.length} other workers running, an open failed: ${said}`)
  report(`${failure !== undefined && failure.ms >= timeoutMs && failure.ms < timeoutMs + 10000 ? 'ok' : 'not ok'} 2 the failed open took ${failure?.ms.toFixed(0) ?? '-'} ms (workerStartTimeoutMs ${timeoutMs})`)
  fillers.pop()?.terminate()
  // Firefox 140 stopped answering when a worker started in the same turn as
  // one ended at the limit: the ended one's slot is taken a little later.
  await new Promise((resolve) => setTimeout(resolve, 500))
  // One slot is free: the page's databases all run in the one worker it takes.
  started = 0
  const dbs = Array.from({ length: count }, (_, i) => new BrowserLevel(`${location}/${i}`, { worker: countedWorker, relay: false, workerStartTimeoutMs: timeoutMs }))
  try {
    await Promise.all(dbs.map(async (db, i) => {
      await db.open()
      await db.put('k', `v${i}`)
    }))
    const values = await Promise.all(dbs.map(async (db) => await db.get('k')))
    const right = values.filter((v, i) => v === `v${i}`).length
    report(`${right === count ? 'ok' : 'not ok'} 3 once one worker ended, ${count} databases open at once and each reads its own write (${right} of ${count})`)
    report(`${started === 1 ? 'ok' : 'not ok'} 4 they run in one worker (${started} started)`)
    await Promise.all(dbs.map(async (db) => await db.close()))
  } catch (err) {
    report(`not ok 3 once one worker ended, ${count} databases open: ${causes(err)}`)
  }
  for (const w of fillers) w.terminate()
  report('# done')
}

async function main (): Promise<void> {
  const run = params.get('run')
  const location = params.get('location') ?? 'db'
  if (run === 'compliance') runCompliance(params.get('config') ?? 'default')
  else if (run === 'persist-write') await persistWrite(location)
  else if (run === 'persist-read') await persistRead(location)
  else if (run === 'two-tabs') await twoTabs(location, params.get('hold') === '1')
  else if (run === 'engine') runEngineChecks(Number(params.get('seed')) >>> 0)
  else if (run === 'in-worker') inWorker(params.get('what') ?? 'compliance')
  else if (run === 'in-worker-lock') await inWorkerLock(location)
  else if (run === 'dead-worker') await deadWorker(location)
  else if (run === 'worker-cap') await workerCap(location, Number(params.get('count')), Number(params.get('timeout')))
  else throw new Error(`unknown run: ${String(run)}`)
}

main().catch((err: Error) => {
  // Firefox's stack has no message: the error and its causes first.
  report(`not ok 1 ${causes(err)}: ${err.stack ?? ''}`)
  report('# done')
})
