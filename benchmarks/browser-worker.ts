// The worker of the browser benchmark, bundled by scripts/build-browser.js
// into dist/browser-bench/worker.js: the workloads (browser-workloads.ts) on
// OpfsLevel, the engine used directly in this dedicated worker. The page
// (browser-page.ts) starts it and relays the driver's calls; each call is
// timed here, so a measurement holds no message between page and worker.
import { OpfsLevel } from '../browser-in-worker'
import { dataSet, removeOpfsDirectory, type BenchConfig, type Db, type Workload, Workloads } from './browser-workloads'

/** A call from the page (with an id), and the reply to it. */
export type WorkerRequest = { method: 'setup', config: BenchConfig } | { method: 'run', workload: Workload, run: number } | { method: 'finish' }
export type WorkerCall = WorkerRequest & { id: number }
export interface WorkerReply { id: number, result?: number, error?: string }

interface WorkerScope {
  onmessage: ((event: { data: WorkerCall }) => void) | null
  postMessage (reply: WorkerReply): void
}
const scope = globalThis as unknown as WorkerScope

const engine = {
  open: (location: string): Db => new OpfsLevel(location, { keyEncoding: 'view', valueEncoding: 'view' }),
  async destroy (db: Db): Promise<void> {
    await db.close()
    await removeOpfsDirectory(db.location)
  },
  compacts: true
}

let workloads: Workloads | undefined

async function call (c: WorkerCall): Promise<number | undefined> {
  switch (c.method) {
    case 'setup':
      workloads = new Workloads(engine, 'bench-in-worker', c.config, dataSet(c.config))
      return undefined
    case 'run': return await workloads!.run(c.workload, c.run)
    case 'finish':
      await workloads!.finish()
      return undefined
  }
}

scope.onmessage = (event) => {
  const c = event.data
  call(c).then(
    (result) => scope.postMessage({ id: c.id, result }),
    (err: Error) => scope.postMessage({ id: c.id, error: err.stack ?? err.message })
  )
}
