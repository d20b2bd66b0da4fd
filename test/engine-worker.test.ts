// BrowserLevel's worker, one per page (adapters/engine-worker.ts), in Node with
// a fake worker that serves the page's channels as the browser's worker entry
// does (each over a numbered line of the worker's postMessage, messages
// cloned and delivered in a later turn, each with a host of its own, LsmLevel
// for the engine): the databases of one `worker` function share one
// worker, which ends 5 s after the last one closed; a failed worker fails every
// database in it, and the next open starts another.
import test from 'tape'
import * as path from 'node:path'
import { BrowserLevel } from '../adapters/browser-level'
import { LsmLevel } from '../index'
import { WORKER_CONNECT, WORKER_STARTED, type WorkerLike } from '../adapters/remote/channel'
import { LINES_FORMAT, WorkerLines } from '../adapters/remote/worker-lines'
import { serve, type ServerChannel } from '../adapters/remote/server'
import { SharedDatabaseHost, type OwnedDatabase } from '../adapters/remote/shared-host'
import { tempDir } from './util/temp'

/** A fake of the browser's worker: hello at start, and each channel it is handed served over LsmLevel. */
class FakeWorker implements WorkerLike {
  onmessage: ((event: { data: unknown }) => void) | null = null
  onerror: ((event: { message: string, preventDefault (): void }) => void) | null = null
  terminated = false
  channels = 0
  /** The databases it opened, closed when it is terminated (as a browser's ended worker lets go of its files). */
  private readonly dbs: LsmLevel<Uint8Array, Uint8Array>[] = []
  closed: Promise<unknown> = Promise.resolve()
  /** The worker's side of the lines: what it posts reaches the page's onmessage, cloned, in a later turn. */
  private readonly lines = new WorkerLines((message, transfer) => {
    const data = structuredClone(message, { transfer })
    setImmediate(() => { if (!this.terminated) this.onmessage?.({ data }) })
  })

  /** `hello`: what the worker posts once its script runs (a worker file of another version states another format, or none). */
  constructor (hello: object = { [WORKER_STARTED]: true, lines: LINES_FORMAT }) {
    setImmediate(() => this.onmessage?.({ data: hello }))
  }

  postMessage (message: unknown, transfer?: ArrayBuffer[]): void {
    const data = structuredClone(message, { transfer })
    setImmediate(() => { if (!this.terminated) this.receive(data) })
  }

  /** What the worker's scope does with a message from the page. */
  private receive (message: unknown): void {
    if (this.lines.deliver(message)) return
    const connect = (message as { [WORKER_CONNECT]?: { line: number } })[WORKER_CONNECT]
    if (connect === undefined) return
    this.channels++
    serve(this.lines.open(connect.line) as ServerChannel, new SharedDatabaseHost(async (location, options) => {
      const db = new LsmLevel<Uint8Array, Uint8Array>(location, { ...options, keyEncoding: 'view', valueEncoding: 'view' })
      this.dbs.push(db)
      await db.open({ createIfMissing: options.createIfMissing !== false, errorIfExists: options.errorIfExists === true } as object)
      // What BrowserLevel asks at open: the storage in use (LsmLevel in Node has none of the browser's).
      const getProperty = db.getProperty.bind(db)
      db.getProperty = (name: string) => name === 'lsm.storage' ? 'opfs' : getProperty(name)
      return db as unknown as OwnedDatabase
    }))
  }

  terminate (): void {
    this.terminated = true
    this.closed = Promise.allSettled(this.dbs.map(async (db) => await db.close()))
  }

  /** An error escaping the worker's script. */
  fail (message: string): void {
    this.onerror?.({ message, preventDefault: () => {} })
  }
}

function fakeWorkers (): { factory: () => FakeWorker, started: FakeWorker[] } {
  const started: FakeWorker[] = []
  return {
    started,
    factory: () => {
      const w = new FakeWorker()
      started.push(w)
      return w
    }
  }
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

test('BrowserLevel: the databases of one worker function run in one worker, which ends 5 s after the last closed', async (t) => {
  const dir = tempDir('lsm-engine-worker-')
  const { factory, started } = fakeWorkers()
  const dbs = ['a', 'b', 'c'].map((name) => new BrowserLevel<string, string>(path.join(dir, name), { worker: factory, relay: false }))
  await Promise.all(dbs.map(async (db) => await db.open()))
  await Promise.all(dbs.map(async (db, i) => await db.put('k', `v${i}`)))
  t.same(await Promise.all(dbs.map(async (db) => await db.get('k'))), ['v0', 'v1', 'v2'], 'each database reads its own write')
  t.is(started.length, 1, 'one worker started for the three')
  t.is(started[0].channels, 3, 'a line each')
  await dbs[0].close()
  const d = new BrowserLevel<string, string>(path.join(dir, 'd'), { worker: factory, relay: false })
  await d.open()
  t.is(started.length, 1, 'an open while others are open goes to the same worker')
  await Promise.all([...dbs.slice(1), d].map(async (db) => await db.close()))
  await sleep(1000)
  t.is(started[0].terminated, false, 'the worker stays a while after the last close')
  await sleep(5000)
  t.is(started[0].terminated, true, 'and ends 5 s after it')
  const again = new BrowserLevel<string, string>(path.join(dir, 'a'), { worker: factory, relay: false })
  await again.open()
  t.is(await again.get('k'), 'v0', 'an open after that reads the data')
  t.is(started.length, 2, 'in a new worker')
  await again.close()
})

test('BrowserLevel: a failed worker fails every database in it; the next open starts another', async (t) => {
  const dir = tempDir('lsm-engine-worker-')
  const { factory, started } = fakeWorkers()
  const a = new BrowserLevel<string, string>(path.join(dir, 'a'), { worker: factory, relay: false })
  const b = new BrowserLevel<string, string>(path.join(dir, 'b'), { worker: factory, relay: false })
  await a.open()
  await b.open()
  await a.put('k', 'a')
  started[0].fail('out of memory')
  for (const [name, db] of [['a', a], ['b', b]] as const) {
    const err = await db.get('k').then(() => undefined, (e: unknown) => e as { code?: string })
    t.is(err?.code, 'LEVEL_DATABASE_NOT_OPEN', `${name}: an operation fails with LEVEL_DATABASE_NOT_OPEN`)
  }
  t.is(started[0].terminated, true, 'the failed worker is ended')
  await started[0].closed
  const c = new BrowserLevel<string, string>(path.join(dir, 'a'), { worker: factory, relay: false })
  await c.open()
  t.is(await c.get('k'), 'a', 'a new open reads the data')
  t.is(started.length, 2, 'in a new worker')
  await c.close()
  await Promise.allSettled([a.close(), b.close()])
})

test('BrowserLevel: a worker file of another version (its hello states another format of the lines, or none) fails the open with LEVEL_NOT_SUPPORTED, not a wait', async (t) => {
  const dir = tempDir('lsm-engine-worker-')
  for (const hello of [{ [WORKER_STARTED]: true }, { [WORKER_STARTED]: true, lines: LINES_FORMAT + 1 }]) {
    const started: FakeWorker[] = []
    const db = new BrowserLevel<string, string>(path.join(dir, 'old'), { worker: () => { const w = new FakeWorker(hello); started.push(w); return w }, relay: false })
    const t0 = Date.now()
    const outcome = await Promise.race([
      db.open().then(() => 'opened', (e: unknown) => e as { code?: string, cause?: { code?: string, cause?: { code?: string, message?: string } } }),
      sleep(3000).then(() => 'still waiting after 3 s')
    ])
    const err = typeof outcome === 'string' ? undefined : outcome
    t.is(err?.code, 'LEVEL_DATABASE_NOT_OPEN', `hello ${JSON.stringify(hello)}: the open fails (${typeof outcome === 'string' ? outcome : 'failed'}, ${Date.now() - t0} ms)`)
    const causes: Array<{ code?: string, message?: string, cause?: unknown }> = []
    for (let c = err?.cause as { code?: string, message?: string, cause?: unknown } | undefined; c !== undefined; c = c.cause as typeof c) causes.push(c)
    const cause = causes.find((c) => c.code === 'LEVEL_NOT_SUPPORTED')
    t.ok(cause !== undefined && /stale lsm-level-worker\.js/.test(cause.message ?? ''), `its cause is LEVEL_NOT_SUPPORTED naming a stale worker file: ${causes.map((c) => `${String(c.code)}: ${String(c.message)}`).join(' <- ')}`)
    t.is(started[0]?.terminated, true, 'the worker is ended')
    await db.close().catch(() => {})
  }
})
