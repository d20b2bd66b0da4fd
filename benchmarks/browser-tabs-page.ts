// The page of the many-tabs benchmark (benchmarks/browser-tabs.ts), opened in
// several tabs: each opens one database (lsm-level's BrowserLevel, as the owner
// or as a client of another tab, through the relay or over BroadcastChannels;
// or browser-level on IndexedDB, which lets every tab in) and times awaited
// puts and gets in this tab, on its main thread.
import { BrowserLevel as LsmBrowserLevel } from '../adapters/browser-level'
import { BrowserLevel as IdbBrowserLevel } from 'browser-level'

// The DOM's globals, which the build's typings (Node's) do not describe.
const page = globalThis as unknown as {
  Worker: new (url: string, options: object) => never
  SharedWorker: new (url: string, options: object) => { port: FloorPort }
  MessageChannel: new () => { port1: FloorPort, port2: FloorPort }
  lsmTabsBench: unknown
}
interface FloorPort {
  onmessage: ((event: { data: unknown }) => void) | null
  postMessage (message: unknown, transfer?: unknown[]): void
  close?: () => void
}
type FloorWorker = FloorPort & { terminate (): void }
const lsmWorker = (): never => new page.Worker('/browser/lsm-level-worker.js', { type: 'module' })
const relay = (): { port: FloorPort } => new page.SharedWorker('/browser/lsm-level-relay.js', { type: 'module', name: 'lsm-level-relay' })

// Awaited operations on 'view' keys and values: what both engines store as they are.
const VIEW = { keyEncoding: 'view', valueEncoding: 'view' } as const

/** Keys of 16 bytes (`prefix` and a counter), values of 100 bytes. */
function key (prefix: number, i: number): Uint8Array {
  const k = new Uint8Array(16)
  new DataView(k.buffer).setUint32(0, prefix)
  new DataView(k.buffer).setUint32(12, i)
  return k
}
const VALUE = new Uint8Array(100).fill(7)

let db: any
/** What this tab's database is: 'owner', 'client' (lsm-level) or 'idb' (browser-level); it names the User Timing measures. */
let role = ''

/** Milliseconds since `t0`; also a User Timing measure `name` over them (for a profiler: benchmarks/gecko-profile-top.ts). */
function since (name: string, t0: number): number {
  const end = performance.now()
  try {
    performance.measure(name, { start: t0, end })
  } catch {}
  return end - t0
}

/** The next message on `on`, after sending `message` (if any). */
const next = async (on: FloorPort, message: unknown, transfer: unknown[] = []): Promise<unknown> => await new Promise((resolve) => {
  on.onmessage = (event) => resolve(event.data)
  if (message !== undefined) on.postMessage(message, transfer)
})

/** A started echo worker of the floor (browser-floor-worker.ts). */
async function floorWorker (): Promise<FloorWorker> {
  const worker = new page.Worker('/browser-bench/floor.js', { type: 'module' }) as unknown as FloorWorker
  await next(worker, undefined)
  return worker
}

/** µs per awaited round trip of `message` on `on` (after 100 untimed). */
async function roundTrips (on: FloorPort, trips: number, message: unknown): Promise<number> {
  for (let i = 0; i < Math.min(100, trips); i++) await next(on, message)
  const t0 = performance.now()
  for (let i = 0; i < trips; i++) await next(on, message)
  return (performance.now() - t0) * 1000 / trips
}

page.lsmTabsBench = {
  async open (engine: 'lsm' | 'lsm-broadcast' | 'idb', location: string) {
    db = engine === 'idb'
      ? new IdbBrowserLevel(location, VIEW)
      : new LsmBrowserLevel(location, { ...VIEW, worker: lsmWorker, relay: engine === 'lsm' ? relay : false })
    await db.open()
    role = engine === 'idb' ? 'idb' : (await db.tabs()).role
    return role
  },
  /** `n` awaited puts of keys `prefix`/0..n-1; puts/s. */
  async puts (prefix: number, n: number) {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await db.put(key(prefix, i), VALUE)
    return n / (since(`lsm-tabs ${role} puts`, t0) / 1000)
  },
  /** `n` awaited gets of those keys, in a scrambled order; gets/s. */
  async gets (prefix: number, n: number) {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const v = await db.get(key(prefix, (i * 7919) % n))
      if (v === undefined) throw new Error('a key is missing')
    }
    return n / (since(`lsm-tabs ${role} gets`, t0) / 1000)
  },
  /**
   * The floor under a client tab's awaited operation, µs per round trip with
   * 100 bytes each way: page -> dedicated worker -> page (the owner tab's
   * path), and page -> worker -> a second worker over a MessagePort -> back
   * (a client tab's: its own worker, then the owner's; here both workers
   * belong to this page, where the owner's is another tab's).
   */
  async floor (trips: number) {
    const message = { value: new Uint8Array(100).fill(7) }
    const one = await floorWorker()
    const worker = await roundTrips(one, trips, message)
    const owner = await floorWorker()
    const { port1, port2 } = new page.MessageChannel()
    await next(owner, { port: port2 }, [port2])
    await next(one, { forward: port1 }, [port1])
    const twoHops = await roundTrips(one, trips, message)
    one.terminate()
    owner.terminate()
    return { worker, 'worker, then a port to a second worker': twoHops }
  },
  /**
   * The owner's end of the floor across tabs: an echo worker that the relay
   * (the SharedWorker BrowserLevel uses) hands the ports of `floorAcross` in
   * other tabs to, under the directory name `dir`.
   */
  async floorServe (dir: string) {
    const echo = await floorWorker()
    const { port } = relay()
    port.onmessage = (event) => {
      const m = event.data as { op: string, port?: FloorPort }
      if (m.op === 'connect') echo.postMessage({ port: m.port }, [m.port])
    }
    port.postMessage({ op: 'own', dir, ownerId: 'floor' })
    return 'serving'
  },
  /**
   * µs per round trip with 100 bytes each way from this page to its worker,
   * and from there over a MessagePort to the echo worker of another tab
   * (its `floorServe(dir)`), handed on by the relay: a client tab's path to
   * its owner, with nothing else on it; and straight from this page over
   * such a port (what a client tab would pay if its page talked to the
   * owner's worker itself).
   */
  async floorAcross (dir: string, trips: number) {
    const message = { value: new Uint8Array(100).fill(7) }
    const one = await floorWorker()
    const { port1, port2 } = new page.MessageChannel()
    relay().port.postMessage({ op: 'connect', dir, ownerId: 'floor', clientId: 'floor', port: port2 }, [port2])
    await next(one, { forward: port1 }, [port1])
    const across = await roundTrips(one, trips, message)
    one.terminate()
    // The same without this page's worker: the page's own port to the other tab's.
    const direct = new page.MessageChannel()
    relay().port.postMessage({ op: 'connect', dir, ownerId: 'floor', clientId: 'floor-direct', port: direct.port2 }, [direct.port2])
    const straight = await roundTrips(direct.port1, trips, message)
    direct.port1.close?.()
    return { across, straight }
  },
  /**
   * `n` keys of `prefix` with values of 100 random bytes put in batches of
   * 1,000 and compacted (untimed), then one scan with `nextv(1000)`: the
   * milliseconds of each `nextv` call, in order.
   */
  async scan (prefix: number, n: number) {
    let seed = prefix
    const random = (): Uint8Array => Uint8Array.from({ length: 100 }, () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24)
    for (let i = 0; i < n; i += 1000) {
      const ops = []
      for (let j = i; j < Math.min(n, i + 1000); j++) ops.push({ type: 'put', key: key(prefix, j), value: random() })
      await db.batch(ops)
    }
    await db.compactRange()
    const it = db.iterator({ gte: key(prefix, 0), lt: key(prefix + 1, 0) })
    const times: number[] = []
    for (;;) {
      const t0 = performance.now()
      const batch = await it.nextv(1000)
      times.push(performance.now() - t0)
      if (batch.length === 0) break
    }
    await it.close()
    return times
  },
  /** One put; its error's code, if any. */
  async put1 (i: number) {
    try {
      await db.put(key(0xffff, i), VALUE)
      return 'ok'
    } catch (err) {
      return String((err as { code?: string }).code)
    }
  },
  async close () {
    await db.close()
  }
}
