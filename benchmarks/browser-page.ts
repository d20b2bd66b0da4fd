// The page of the browser benchmark (benchmarks/browser.ts), bundled by
// scripts/build-browser.js into dist/browser-bench/page.js. It holds three
// engines: lsm-level's BrowserLevel (OPFS, engine in a worker, used from this
// page), OpfsLevel used inside a worker (benchmarks/browser-worker.ts, which
// this page starts and relays to) and the Level project's browser-level
// (IndexedDB, on this thread). The Node driver calls
// `lsmBench.run(engine, workload, run)` through page.evaluate, one
// measurement at a time, so that it decides the interleaving; each call
// resolves to the operations per second measured, with performance.now(),
// where the database is used (the workloads: browser-workloads.ts).
import { BrowserLevel as LsmBrowserLevel } from '../adapters/browser-level'
import { BrowserLevel as IdbBrowserLevel } from 'browser-level'
import { dataSet, removeOpfsDirectory, type BenchConfig, type Db, type Engine, type Workload, Workloads } from './browser-workloads'
import type { WorkerCall, WorkerReply, WorkerRequest } from './browser-worker'

export type { BenchConfig, Workload }
export type EngineName = 'lsm-level' | 'lsm-level in a worker' | 'browser-level'

// The page's globals this file uses (the build has no DOM typings).
interface BenchWorker {
  onmessage: ((event: { data: WorkerReply }) => void) | null
  postMessage (call: WorkerCall): void
}
interface PageGlobals {
  Worker: new (url: string, options: object) => never
  MessageChannel: new () => { port1: FloorPort, port2: FloorPort }
  performance: { now (): number }
  indexedDB: { deleteDatabase (name: string): unknown }
  lsmBench: unknown
}
const page = globalThis as unknown as PageGlobals

const lsmWorker = (): never => new page.Worker('/browser/lsm-level-worker.js', { type: 'module' })
const VIEW = { keyEncoding: 'view', valueEncoding: 'view' }

const ENGINES: Record<'lsm-level' | 'browser-level', Engine> = {
  'lsm-level': {
    open: (location) => new LsmBrowserLevel(location, { ...VIEW, worker: lsmWorker }),
    async destroy (db) {
      await db.close()
      await removeOpfsDirectory(db.location)
    },
    compacts: true
  },
  'browser-level': {
    open: (location) => new IdbBrowserLevel(location, VIEW),
    async destroy (db) {
      await db.close()
      page.indexedDB.deleteDatabase(db.namePrefix + db.location)
    },
    compacts: false
  }
}

/** The benchmark's worker: the workloads on OpfsLevel, timed there. */
class InWorker {
  private readonly worker = new page.Worker('/browser-bench/worker.js', { type: 'module' }) as BenchWorker
  private nextId = 1
  private readonly waiting = new Map<number, (reply: WorkerReply) => void>()

  constructor () {
    this.worker.onmessage = (event) => {
      this.waiting.get(event.data.id)?.(event.data)
      this.waiting.delete(event.data.id)
    }
  }

  async call (call: WorkerRequest): Promise<number | undefined> {
    const id = this.nextId++
    const reply = await new Promise<WorkerReply>((resolve) => {
      this.waiting.set(id, resolve)
      this.worker.postMessage({ ...call, id })
    })
    if (reply.error !== undefined) throw new Error(`the benchmark's worker: ${reply.error}`)
    return reply.result
  }
}

interface FloorPort {
  onmessage: ((event: { data: unknown }) => void) | null
  postMessage (message: unknown, transfer?: unknown[]): void
}

/** The ways floor() measures a round trip. */
export type FloorKind = 'worker' | 'worker, 100 bytes' | 'worker, 100 bytes, a turn in the worker' | 'worker, 100 bytes, a 0 ms timer in the worker' | 'port' | 'port, 100 bytes'

/**
 * The floor under an awaited operation of BrowserLevel: microseconds per round
 * trip of a message from this page to a dedicated worker (browser-floor-worker.ts)
 * and back, awaited one at a time: on the worker's own postMessage and over a
 * MessagePort handed to it, with no payload or a Uint8Array of 100 bytes
 * (cloned, as a small value is) each way, and on the worker's postMessage with
 * the worker answering after one more MessageChannel turn (setImmediate in a
 * worker, with which a server may gather a turn's replies), or after a timer
 * of 0 ms there.
 */
async function floor (trips: number): Promise<Record<FloorKind, number>> {
  const worker = new page.Worker('/browser-bench/floor.js', { type: 'module' }) as unknown as FloorPort & { terminate (): void }
  const next = async (on: FloorPort, message: unknown): Promise<unknown> => await new Promise((resolve) => {
    on.onmessage = (event) => resolve(event.data)
    if (message !== undefined) on.postMessage(message)
  })
  await next(worker, undefined)
  const { port1, port2 } = new page.MessageChannel()
  const ready = next(worker, undefined)
  worker.postMessage({ port: port2 }, [port2])
  await ready
  const bytes = new Uint8Array(100).fill(7)
  const kinds: Array<[FloorKind, FloorPort, () => unknown]> = [
    ['worker', worker, () => 1],
    ['worker, 100 bytes', worker, () => ({ value: bytes })],
    ['worker, 100 bytes, a turn in the worker', worker, () => ({ value: bytes, turn: true })],
    ['worker, 100 bytes, a 0 ms timer in the worker', worker, () => ({ value: bytes, timer: true })],
    ['port', port1, () => 1],
    ['port, 100 bytes', port1, () => ({ value: bytes })]
  ]
  const out = {} as Record<FloorKind, number>
  for (const [kind, on, message] of kinds) {
    for (let i = 0; i < Math.min(100, trips); i++) await next(on, message())
    const t0 = page.performance.now()
    for (let i = 0; i < trips; i++) await next(on, message())
    out[kind] = (page.performance.now() - t0) * 1000 / trips
  }
  worker.terminate()
  return out
}

let onPage: Map<EngineName, Workloads>
let inWorker: InWorker

/** What `supports.snapshots` says and what `db.snapshot()` does, on a small database of each engine on this page. */
async function snapshots (engine: 'lsm-level' | 'browser-level'): Promise<string> {
  const db: Db = ENGINES[engine].open('bench-snapshots')
  await db.open()
  const key = Uint8Array.of(1, 2, 3)
  await db.put(key, Uint8Array.of(1))
  let does: string
  try {
    const snapshot = db.snapshot()
    await db.put(key, Uint8Array.of(2))
    const seen = await db.get(key, { snapshot })
    await snapshot.close()
    does = `\`db.snapshot()\` works: a get through it after an overwrite returns the ${seen?.[0] === 1 ? 'old value' : 'NEW value (wrong)'}`
  } catch (err) {
    does = `\`db.snapshot()\` throws ${String((err as { code?: string }).code ?? (err as Error).message)}`
  }
  await ENGINES[engine].destroy(db)
  return `\`supports.snapshots\` ${String(db.supports.snapshots)}; ${does}`
}

/** What the driver calls, as the page's global `lsmBench`. */
const bench = {
  async setup (config: BenchConfig): Promise<void> {
    const data = dataSet(config)
    onPage = new Map([
      ['lsm-level', new Workloads(ENGINES['lsm-level'], 'bench', config, data)],
      ['browser-level', new Workloads(ENGINES['browser-level'], 'bench', config, data)]
    ])
    inWorker = new InWorker()
    await inWorker.call({ method: 'setup', config })
  },
  async run (engine: EngineName, workload: Workload, run: number): Promise<number> {
    if (engine === 'lsm-level in a worker') return (await inWorker.call({ method: 'run', workload, run }))!
    return await onPage.get(engine)!.run(workload, run)
  },
  snapshots,
  floor,
  async finish (): Promise<void> {
    for (const workloads of onPage.values()) await workloads.finish()
    await inWorker.call({ method: 'finish' })
  }
}

export type Bench = typeof bench
page.lsmBench = bench
