// The workloads of the browser benchmark (benchmarks/browser.ts), shared by
// its page (benchmarks/browser-page.ts: BrowserLevel and browser-level) and its
// worker (benchmarks/browser-worker.ts: OpfsLevel used inside a worker). Each
// run is timed where the database is used, with performance.now().
//
// The engines get keys and values as Uint8Arrays with the 'view' encoding,
// which all store natively (IndexedDB keeps binary keys as binary keys, in
// the same byte order): no encoding work on any side.

export type Workload = 'fillrandom' | 'fillsync' | 'fillbatch' | 'readrandom' | 'readsync' | 'readseq' | 'seekrandom'

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

// The globals this file uses, on a page and in a worker (the build has no DOM typings).
interface Globals {
  performance: { now (): number, measure?: (name: string, options: { start: number, end: number }) => unknown }
  navigator: { storage: { getDirectory (): Promise<{ removeEntry (name: string, options: object): Promise<void> }> } }
}
const scope = globalThis as unknown as Globals

// An engine's database, with 'view' keys and values.
export type Db = any

/** How a workload opens and removes an engine's databases. */
export interface Engine {
  open (location: string): Db
  /** Closes a database and deletes its files. */
  destroy (db: Db): Promise<void>
  /** Whether the filled database is compacted (untimed) before the reads. */
  compacts: boolean
}

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

/** Keys and values of the runs (the same for every engine), and the order of the reads. */
interface Data { keys: Uint8Array[], values: Uint8Array[], order: Uint32Array }

export function dataSet (config: BenchConfig): Data {
  const keyRandom = new Lcg(config.seed)
  const valueRandom = new Lcg(config.seed + 1)
  const orderRandom = new Lcg(config.seed + 2)
  const n = Math.max(config.keys, config.puts)
  const keys = Array.from({ length: n }, () => keyRandom.bytes(KEY_BYTES))
  const values = Array.from({ length: n }, () => valueRandom.bytes(VALUE_BYTES))
  const order = Uint32Array.from({ length: Math.max(config.gets, config.seeks) }, () => orderRandom.int(config.keys))
  return { keys, values, order }
}

/**
 * Removes a database's OPFS directory. lsm-level's close() can resolve while a
 * growth of its file pool still opens a sync access handle (closed when it
 * comes: hosts/browser/opfs-fs.ts), and an open handle makes removeEntry() fail with
 * NoModificationAllowedError: so it is retried for a while, then left (the
 * driver deletes the browser's profile at the end). Where there is no OPFS
 * (WebKitGTK without its features: BrowserLevel on its IndexedDB fallback) or
 * no such directory, nothing is removed.
 */
export async function removeOpfsDirectory (name: string): Promise<void> {
  let root: Awaited<ReturnType<typeof scope.navigator.storage.getDirectory>>
  try {
    root = await scope.navigator.storage.getDirectory()
  } catch {
    return
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await root.removeEntry(name, { recursive: true })
      return
    } catch (err) {
      if ((err as Error).name === 'NotFoundError') return
      if ((err as Error).name !== 'NoModificationAllowedError') throw err
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

const timed = (ops: number, ms: number): number => ops / (ms / 1000)

/**
 * Milliseconds since `t0`; also a User Timing measure named `name` over that
 * time, which a browser's profiler records (the Firefox profile of
 * benchmarks/gecko-profile-top.ts finds a workload's samples by it).
 */
function since (name: string, t0: number): number {
  const end = scope.performance.now()
  try {
    scope.performance.measure?.(name, { start: t0, end })
  } catch {}
  return end - t0
}

/** The workloads on one engine; the reads use the database that fillbatch filled in the same run. */
export class Workloads {
  private filled: Db | undefined

  /** `prefix` starts the names of this engine's databases. */
  constructor (private readonly engine: Engine, private readonly prefix: string, private readonly config: BenchConfig, private readonly data: Data) {}

  /** Runs `workload`; resolves to its operations per second. */
  async run (workload: Workload, run: number): Promise<number> {
    switch (workload) {
      case 'fillrandom': return await this.fillrandom(run)
      case 'fillsync': return await this.fillsync(run)
      case 'fillbatch': return await this.fillbatch(run)
      case 'readrandom': return await this.readrandom()
      case 'readsync': return this.readsync()
      case 'readseq': return await this.readseq()
      case 'seekrandom': return await this.seekrandom()
    }
  }

  async finish (): Promise<void> {
    if (this.filled !== undefined) await this.engine.destroy(this.filled)
    this.filled = undefined
  }

  /** Up to 1,000 awaited durable puts; resolves to 1 / the median put's time (per second). */
  private async fillsync (run: number): Promise<number> {
    const { keys, values } = this.data
    const db = this.engine.open(`${this.prefix}-fillsync-${run}`)
    await db.open()
    const times: number[] = []
    for (let i = 0; i < Math.min(this.config.puts, 1000); i++) {
      const t0 = scope.performance.now()
      await db.put(keys[i], values[i], { sync: true })
      times.push(scope.performance.now() - t0)
    }
    await this.engine.destroy(db)
    times.sort((a, b) => a - b)
    return 1000 / times[Math.floor(times.length / 2)]
  }

  private async fillrandom (run: number): Promise<number> {
    const { keys, values } = this.data
    const db = this.engine.open(`${this.prefix}-fillrandom-${run}`)
    await db.open()
    const t0 = scope.performance.now()
    for (let i = 0; i < this.config.puts; i++) await db.put(keys[i], values[i])
    const ms = since(`lsm-bench ${this.prefix} fillrandom`, t0)
    await this.engine.destroy(db)
    return timed(this.config.puts, ms)
  }

  private async fillbatch (run: number): Promise<number> {
    await this.finish()
    const { keys, values } = this.data
    const db = this.engine.open(`${this.prefix}-fillbatch-${run}`)
    await db.open()
    const n = this.config.keys
    const t0 = scope.performance.now()
    for (let i = 0; i < n; i += BATCH_SIZE) {
      const ops = []
      for (let j = i; j < Math.min(n, i + BATCH_SIZE); j++) ops.push({ type: 'put', key: keys[j], value: values[j] })
      await db.batch(ops)
    }
    const ms = since(`lsm-bench ${this.prefix} fillbatch`, t0)
    // Untimed: the reads start from a settled database (IndexedDB's own
    // store compacts on its schedule; lsm-level is compacted here).
    if (this.engine.compacts) await db.compactRange()
    this.filled = db
    return timed(n, ms)
  }

  private async readrandom (): Promise<number> {
    const { keys, order } = this.data
    let missing = 0
    const t0 = scope.performance.now()
    for (let i = 0; i < this.config.gets; i++) if (await this.filled.get(keys[order[i]]) === undefined) missing++
    const ms = since(`lsm-bench ${this.prefix} readrandom`, t0)
    this.checkFound(missing)
    return timed(this.config.gets, ms)
  }

  /** readrandom with getSync (OpfsLevel only). */
  private readsync (): number {
    const { keys, order } = this.data
    let missing = 0
    const t0 = scope.performance.now()
    for (let i = 0; i < this.config.gets; i++) if (this.filled.getSync(keys[order[i]]) === undefined) missing++
    const ms = scope.performance.now() - t0
    this.checkFound(missing)
    return timed(this.config.gets, ms)
  }

  private checkFound (missing: number): void {
    if (missing > 0) throw new Error(`${this.prefix}: ${missing} of ${this.config.gets} present keys not found`)
  }

  private async readseq (): Promise<number> {
    let n = 0
    const t0 = scope.performance.now()
    const it = this.filled.iterator()
    for (let batch = await it.nextv(SCAN_ENTRIES); batch.length > 0; batch = await it.nextv(SCAN_ENTRIES)) n += batch.length
    await it.close()
    const ms = since(`lsm-bench ${this.prefix} readseq`, t0)
    if (n !== this.config.keys) throw new Error(`${this.prefix}: the scan saw ${n} entries, expected ${this.config.keys}`)
    return timed(n, ms)
  }

  private async seekrandom (): Promise<number> {
    const { keys, order } = this.data
    const t0 = scope.performance.now()
    for (let i = 0; i < this.config.seeks; i++) {
      const it = this.filled.iterator({ gte: keys[order[i]] })
      await it.nextv(SEEK_ENTRIES)
      await it.close()
    }
    return timed(this.config.seeks, since(`lsm-bench ${this.prefix} seekrandom`, t0))
  }
}
