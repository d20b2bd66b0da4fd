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
  SharedWorker: new (url: string, options: object) => { port: { postMessage (m: unknown): void } }
  lsmTabsBench: unknown
}
const lsmWorker = (): never => new page.Worker('/browser/lsm-level-worker.js', { type: 'module' })
const relay = (): { port: { postMessage (m: unknown): void } } => new page.SharedWorker('/browser/lsm-level-relay.js', { type: 'module', name: 'lsm-level-relay' })

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

page.lsmTabsBench = {
  async open (engine: 'lsm' | 'lsm-broadcast' | 'idb', location: string) {
    db = engine === 'idb'
      ? new IdbBrowserLevel(location, VIEW)
      : new LsmBrowserLevel(location, { ...VIEW, worker: lsmWorker, relay: engine === 'lsm' ? relay : false })
    await db.open()
    return engine === 'idb' ? 'idb' : (await db.tabs()).role
  },
  /** `n` awaited puts of keys `prefix`/0..n-1; puts/s. */
  async puts (prefix: number, n: number) {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await db.put(key(prefix, i), VALUE)
    return n / ((performance.now() - t0) / 1000)
  },
  /** `n` awaited gets of those keys, in a scrambled order; gets/s. */
  async gets (prefix: number, n: number) {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const v = await db.get(key(prefix, (i * 7919) % n))
      if (v === undefined) throw new Error('a key is missing')
    }
    return n / ((performance.now() - t0) / 1000)
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
