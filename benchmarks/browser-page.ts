// The page of the browser benchmark (benchmarks/browser.ts), bundled by
// scripts/build-browser.js into dist/browser-bench/page.js. It holds both
// engines: lsm-level's BrowserLevel (OPFS, engine in a worker) and the Level
// project's browser-level (IndexedDB, on this thread). The Node driver calls
// `lsmBench.run(engine, workload, run)` through page.evaluate, one
// measurement at a time, so that it decides the interleaving; each call
// resolves to the operations per second measured here with performance.now().
//
// Both engines get keys and values as Uint8Arrays with the 'view' encoding,
// which both store natively (IndexedDB keeps binary keys as binary keys, in
// the same byte order): no encoding work on either side.
import { BrowserLevel as LsmBrowserLevel } from '../browser'
import { BrowserLevel as IdbBrowserLevel } from 'browser-level'

export type EngineName = 'lsm-level' | 'browser-level'
export type Workload = 'fillrandom' | 'fillbatch' | 'readrandom' | 'readseq' | 'seekrandom'

/** Sizes and seed, set by the driver (BENCH_* variables). */
export interface BenchConfig {
  puts: number
  keys: number
  gets: number
  seeks: number
  seed: number
}

const KEY_BYTES = 16
const VALUE_BYTES = 100
const BATCH_SIZE = 1000
const SEEK_ENTRIES = 100
const SCAN_ENTRIES = 1000

// The page's globals this file uses (the build has no DOM typings).
interface PageGlobals {
  Worker: new (url: string, options: object) => never
  performance: { now (): number }
  indexedDB: { deleteDatabase (name: string): unknown }
  navigator: { storage: { getDirectory (): Promise<{ removeEntry (name: string, options: object): Promise<void> }> } }
  lsmBench: unknown
}
const page = globalThis as unknown as PageGlobals

// Either engine's database, with 'view' keys and values.
type Db = any

/** A linear congruential generator (Numerical Recipes' constants); bytes from its high bits. */
class Lcg {
  private state: number
  constructor (seed: number) { this.state = seed >>> 0 }
  next (): number {
    this.state = (Math.imul(this.state, 1664525) + 1013904223) >>> 0
    return this.state
  }

  int (n: number): number { return Math.floor(this.next() / 2 ** 32 * n) }
  bytes (n: number): Uint8Array {
    const out = new Uint8Array(n)
    for (let i = 0; i < n; i++) out[i] = this.next() >>> 24
    return out
  }
}

/** Keys and values of the runs (the same for both engines), and the order of the reads. */
interface Data { keys: Uint8Array[], values: Uint8Array[], order: Uint32Array }

function dataSet (config: BenchConfig): Data {
  const keyRandom = new Lcg(config.seed)
  const valueRandom = new Lcg(config.seed + 1)
  const orderRandom = new Lcg(config.seed + 2)
  const n = Math.max(config.keys, config.puts)
  const keys = Array.from({ length: n }, () => keyRandom.bytes(KEY_BYTES))
  const values = Array.from({ length: n }, () => valueRandom.bytes(VALUE_BYTES))
  const order = Uint32Array.from({ length: Math.max(config.gets, config.seeks) }, () => orderRandom.int(config.keys))
  return { keys, values, order }
}

const lsmWorker = (): never => new page.Worker('/browser/lsm-level-worker.js', { type: 'module' })

function open (engine: EngineName, location: string): Db {
  const options = { keyEncoding: 'view', valueEncoding: 'view' }
  return engine === 'lsm-level' ? new LsmBrowserLevel(location, { ...options, worker: lsmWorker }) : new IdbBrowserLevel(location, options)
}

/** Closes a database and deletes its files (OPFS directory or IndexedDB database). */
async function destroy (engine: EngineName, db: Db): Promise<void> {
  await db.close()
  if (engine === 'lsm-level') await removeOpfsDirectory(db.location)
  else page.indexedDB.deleteDatabase(db.namePrefix + db.location)
}

/**
 * Removes a database's OPFS directory. lsm-level's close() can resolve while a
 * growth of its file pool still opens a sync access handle (closed when it
 * comes: lib/fs/opfs-fs.ts), and an open handle makes removeEntry() fail with
 * NoModificationAllowedError: so it is retried for a while, then left (the
 * driver deletes the browser's profile at the end).
 */
async function removeOpfsDirectory (name: string): Promise<void> {
  const root = await page.navigator.storage.getDirectory()
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await root.removeEntry(name, { recursive: true })
      return
    } catch (err) {
      if ((err as Error).name !== 'NoModificationAllowedError') throw err
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

async function fillInBatches (db: Db, { keys, values }: Data, n: number): Promise<void> {
  for (let i = 0; i < n; i += BATCH_SIZE) {
    const ops = []
    for (let j = i; j < Math.min(n, i + BATCH_SIZE); j++) ops.push({ type: 'put', key: keys[j], value: values[j] })
    await db.batch(ops)
  }
}

let config: BenchConfig
let data: Data
/** Per engine, the database fillbatch filled in this run: the reads use it. */
const filled = new Map<EngineName, Db>()

/** What one workload does: returns the number of operations. */
type Run = (engine: EngineName, run: number) => Promise<number>

const WORKLOAD_RUNS: Record<Workload, Run> = {
  async fillrandom (engine, run) {
    const db = open(engine, `bench-fillrandom-${run}`)
    await db.open()
    const t0 = page.performance.now()
    for (let i = 0; i < config.puts; i++) await db.put(data.keys[i], data.values[i])
    const ms = page.performance.now() - t0
    await destroy(engine, db)
    return timed(config.puts, ms)
  },
  async fillbatch (engine, run) {
    const previous = filled.get(engine)
    if (previous !== undefined) await destroy(engine, previous)
    const db = open(engine, `bench-fillbatch-${run}`)
    await db.open()
    const t0 = page.performance.now()
    await fillInBatches(db, data, config.keys)
    const ms = page.performance.now() - t0
    // Untimed: the reads start from a settled database (IndexedDB's own
    // store compacts on its schedule; lsm-level is compacted here).
    if (engine === 'lsm-level') await db.compactRange()
    filled.set(engine, db)
    return timed(config.keys, ms)
  },
  async readrandom (engine) {
    const db = filled.get(engine)
    let missing = 0
    const t0 = page.performance.now()
    for (let i = 0; i < config.gets; i++) if (await db.get(data.keys[data.order[i]]) === undefined) missing++
    const ms = page.performance.now() - t0
    if (missing > 0) throw new Error(`${engine}: ${missing} of ${config.gets} present keys not found`)
    return timed(config.gets, ms)
  },
  async readseq (engine) {
    const db = filled.get(engine)
    let n = 0
    const t0 = page.performance.now()
    const it = db.iterator()
    for (let batch = await it.nextv(SCAN_ENTRIES); batch.length > 0; batch = await it.nextv(SCAN_ENTRIES)) n += batch.length
    await it.close()
    const ms = page.performance.now() - t0
    if (n !== config.keys) throw new Error(`${engine}: the scan saw ${n} entries, expected ${config.keys}`)
    return timed(n, ms)
  },
  async seekrandom (engine) {
    const db = filled.get(engine)
    const t0 = page.performance.now()
    for (let i = 0; i < config.seeks; i++) {
      const it = db.iterator({ gte: data.keys[data.order[i]] })
      await it.nextv(SEEK_ENTRIES)
      await it.close()
    }
    return timed(config.seeks, page.performance.now() - t0)
  }
}

const timed = (ops: number, ms: number): number => ops / (ms / 1000)

/** What `supports.snapshots` says and what `db.snapshot()` does, on a small database of each engine. */
async function snapshots (engine: EngineName): Promise<string> {
  const db = open(engine, 'bench-snapshots')
  await db.open()
  const key = data.keys[0]
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
  await destroy(engine, db)
  return `\`supports.snapshots\` ${String(db.supports.snapshots)}; ${does}`
}

/** What the driver calls, as the page's global `lsmBench`. */
const bench = {
  setup (c: BenchConfig): void {
    config = c
    data = dataSet(c)
  },
  run: async (engine: EngineName, workload: Workload, run: number): Promise<number> => await WORKLOAD_RUNS[workload](engine, run),
  snapshots,
  async finish (): Promise<void> {
    for (const [engine, db] of filled) await destroy(engine, db)
    filled.clear()
  }
}

export type Bench = typeof bench
page.lsmBench = bench
