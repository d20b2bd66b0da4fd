// The page test/browser-tabs.test.ts loads in several tabs at once (bundled by
// scripts/build-browser.js --tests as browser-test/tabs.js): it opens a
// BrowserLevel on the location the query string names and gives Node the
// means to drive it (window.lsmTabs, called through page.evaluate): reads,
// writes, handles held open, a writer loop whose acknowledgements go to Node
// as they come (on the console, or window.lsmAck where the test exposes it), the tabs() view.
//   ?location=...&relay=0|1&ownerTimeoutMs=N
import { BrowserLevel } from '../../adapters/browser-level'

const params = new URLSearchParams((globalThis as unknown as { location: { search: string } }).location.search)
const worker = (): ReturnType<NonNullable<ConstructorParameters<typeof BrowserLevel>[1]>['worker'] & object> => {
  const Worker = (globalThis as unknown as { Worker: new (url: string, options: object) => never }).Worker
  return new Worker('/browser/lsm-level-worker.js', { type: 'module' })
}
const relay = (): { port: { postMessage (m: unknown): void } } => {
  const SharedWorker = (globalThis as unknown as { SharedWorker: new (url: string, options: object) => { port: { postMessage (m: unknown): void } } }).SharedWorker
  return new SharedWorker('/browser/lsm-level-relay.js', { type: 'module', name: 'lsm-level-relay' })
}

type Db = BrowserLevel<string, string>
const scope = globalThis as unknown as { lsmAck?: (line: string) => void, lsmTabs: unknown }

/** A line for Node: through window.lsmAck where the test exposed it, else the console (a page that closes with a call in flight breaks playwright's exposed functions). */
function ack (line: string): void {
  if (scope.lsmAck !== undefined) scope.lsmAck(line)
  else console.log(`lsm: ${line}`)
}

function describe (err: unknown): string {
  const e = err as { code?: string, message?: string, cause?: { code?: string, message?: string } }
  return `${String(e.code)}${e.cause?.code !== undefined ? '/' + e.cause.code : ''}: ${String(e.message)}${e.cause?.message !== undefined ? ` (${e.cause.message})` : ''}`
}

let db: Db | undefined
let hungOwnerRelease: () => void = () => {}
const held: { iterators: Array<ReturnType<Db['iterator']>>, snapshots: Array<ReturnType<Db['snapshot']>> } = { iterators: [], snapshots: [] }
let writing: { stop: boolean, done: Promise<{ acked: number, errors: Record<string, number> }> } | undefined

function database (): Db {
  if (db === undefined) throw new Error('not open')
  return db
}

/** Runs `fn` and resolves to its result, or to { error } with the error's codes (errors do not cross page.evaluate well). */
async function safely<T> (fn: () => Promise<T>): Promise<T | { error: string }> {
  try {
    return await fn()
  } catch (err) {
    return { error: describe(err) }
  }
}

scope.lsmTabs = {
  async open (options: Record<string, unknown> = {}) {
    return await safely(async () => {
      const location = params.get('location') ?? 'tabs'
      const ownerTimeoutMs = params.get('ownerTimeoutMs')
      db = new BrowserLevel<string, string>(location, {
        worker,
        relay: params.get('relay') === '0' ? false : relay,
        ...(ownerTimeoutMs !== null ? { ownerTimeoutMs: Number(ownerTimeoutMs) } : {}),
        ...options
      })
      await db.open()
      return await db.tabs()
    })
  },
  async tabs () { return await safely(async () => await database().tabs()) },
  async put (key: string, value: string) { return await safely(async () => { await database().put(key, value); return true }) },
  async get (key: string) { return await safely(async () => await database().get(key) ?? null) },
  async getMany (keys: string[]) { return await safely(async () => (await database().getMany(keys)).map((v) => v ?? null)) },
  async count (prefix: string) {
    return await safely(async () => (await database().keys({ gte: prefix, lt: prefix + '\uffff' }).all()).length)
  },
  async keys (prefix: string) {
    return await safely(async () => await database().keys({ gte: prefix, lt: prefix + '\uffff' }).all())
  },
  /** Opens an iterator (one entry read) and an explicit snapshot (one read through it), and keeps them. */
  async hold () {
    return await safely(async () => {
      const it = database().iterator()
      await it.next()
      held.iterators.push(it)
      const snapshot = database().snapshot()
      held.snapshots.push(snapshot)
      // A read through it: the snapshot is made on the owner (a client's
      // snapshot() returns at once) before this resolves.
      await database().get('k', { snapshot })
      return true
    })
  },
  /** Uses the held iterator and snapshot: their errors' codes. */
  async useHeld () {
    const it = held.iterators[0]
    const snap = held.snapshots[0]
    return {
      // all(): past what the iterator read ahead before.
      iterator: await safely(async () => { await it.all(); return 'ok' }),
      snapshot: await safely(async () => { await database().get('x', { snapshot: snap } as object); return 'ok' })
    }
  },
  async close () { return await safely(async () => { await database().close(); return true }) },
  /**
   * Plays a hung owner: takes the owner lock of the location (as an owner
   * does) and, if `answer`, announces a made-up owner when asked, which then
   * never answers. Resolves once the lock is held.
   */
  async playHungOwner (answer: boolean) {
    const dir = '/' + (params.get('location') ?? 'tabs')
    const control = new BroadcastChannel(`lsm-level:${dir}`)
    if (answer) control.onmessage = (event: { data: { op: string } }) => { if (event.data.op === 'who') control.postMessage({ op: 'owner', id: 'hung' }) }
    await new Promise<void>((resolve) => {
      const locks = (globalThis as unknown as { navigator: { locks: { request (name: string, f: () => Promise<void>): Promise<void> } } }).navigator.locks
      locks.request(`lsm-level:${dir}:owner`, async () => {
        resolve()
        await new Promise<void>((release) => { hungOwnerRelease = () => { control.close(); release() } })
      }).catch(() => {})
    })
    return true
  },
  releaseHungOwner () {
    hungOwnerRelease()
    return true
  },
  /** Starts writing `${prefix}${n}` (n = 0, 1, ...), each acknowledgement sent to Node as 'ack <key>' and each failure as 'err <key> <code>'. */
  startWriting (prefix: string) {
    const state = { stop: false, done: Promise.resolve({ acked: 0, errors: {} }) }
    state.done = (async () => {
      const errors: Record<string, number> = {}
      let acked = 0
      for (let n = 0; !state.stop; n++) {
        const key = `${prefix}${String(n).padStart(6, '0')}`
        try {
          await database().put(key, `v${n}`)
          acked++
          ack(`ack ${key}`)
        } catch (err) {
          const code = String((err as { code?: string }).code)
          errors[code] = (errors[code] ?? 0) + 1
          ack(`err ${key} ${code}`)
          if (code === 'LEVEL_DATABASE_NOT_OPEN') await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      return { acked, errors }
    })()
    writing = state
    return true
  },
  async stopWriting () {
    if (writing === undefined) return undefined
    writing.stop = true
    return await writing.done
  },
  /** Follows the change feed; resolves to the keys of the first `n` changes (or an error). */
  async follow (n: number) {
    return await safely(async () => {
      const keys: string[] = []
      for await (const batch of database().changes()) {
        for (const op of batch.ops) keys.push(new TextDecoder().decode(op.key))
        if (keys.length >= n) break
      }
      return keys
    })
  }
}

// -- the compliance suite through a client tab ------------------------------
//
// ?run=owner-helper: this tab opens (and closes) databases when the tab that
// runs the suite asks, over the BroadcastChannel 'lsm-test-owner', so that it
// owns each of them first. ?run=compliance-client: the abstract-level suite,
// whose every database opens here as a client of the helper's (BrowserLevel's
// _open and _close wrapped to ask the helper first and last). An open the
// helper fails fails here with the helper's error (errorIfExists, createIfMissing).

interface HelperRequest { id: number, op: 'open' | 'close', location: string, options?: Record<string, unknown> }
interface HelperReply { id: number, error?: { code?: string, message?: string } }

function ownerHelper (): void {
  const opened = new Map<string, Db>()
  const channel = new BroadcastChannel('lsm-test-owner')
  channel.onmessage = async (event: { data: HelperRequest }) => {
    const { id, op, location, options } = event.data
    try {
      if (op === 'open') {
        const db = opened.get(location) ?? new BrowserLevel<string, string>(location, { worker, relay, ...options })
        opened.set(location, db)
        await db.open(options as object)
        const info = await db.tabs()
        if (info.role !== 'owner') throw new Error(`the helper is not the owner of ${location}: ${info.role}`)
      } else {
        await opened.get(location)?.close()
        opened.delete(location)
      }
      channel.postMessage({ id } satisfies HelperReply)
    } catch (err) {
      const cause = (err as { cause?: { code?: string, message?: string } }).cause ?? err as { code?: string, message?: string }
      channel.postMessage({ id, error: { code: cause.code, message: cause.message } } satisfies HelperReply)
    }
  }
  ack('# helper ready')
}

let helperIds = 0
const helperChannel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('lsm-test-owner') : undefined
const helperWaiting = new Map<number, (reply: HelperReply) => void>()
if (helperChannel !== undefined) helperChannel.onmessage = (event: { data: HelperReply }) => helperWaiting.get(event.data.id)?.(event.data)

async function askHelper (request: Omit<HelperRequest, 'id'>): Promise<void> {
  const id = ++helperIds
  const reply = await new Promise<HelperReply>((resolve) => {
    helperWaiting.set(id, resolve)
    helperChannel!.postMessage({ ...request, id })
  })
  helperWaiting.delete(id)
  if (reply.error !== undefined) {
    const err = new Error(String(reply.error.message)) as Error & { code?: string }
    err.code = reply.error.code
    throw err
  }
}

const clientRoles: Record<string, number> = {}

/** The options that reach the engine (plain values; encodings stay with each tab's abstract-level). */
function engineOptions (options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) {
    if (k !== 'keyEncoding' && k !== 'valueEncoding' && ['string', 'number', 'boolean'].includes(typeof v)) out[k] = v
  }
  return out
}

/** A BrowserLevel whose every open is a client's: the helper tab opens the location first. */
class ClientTabLevel<K, V> extends BrowserLevel<K, V> {
  private readonly openOptions: Record<string, unknown>

  constructor (location: string, options: Record<string, unknown>) {
    // The default owner timeout: a shorter one failed an open now and then on a loaded machine.
    super(location, { worker, relay, ...options })
    this.openOptions = options
  }

  override async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    await askHelper({ op: 'open', location: this.location, options: { ...engineOptions(this.openOptions), createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists } })
    try {
      await super._open({ ...options, errorIfExists: false })
      const info = await (this as unknown as { server: { call (m: string, a: unknown[]): Promise<{ role: string }> } }).server.call('tabs', [])
      clientRoles[info.role] = (clientRoles[info.role] ?? 0) + 1
    } catch (err) {
      // The suite sees a failed deferred open only as "Database is not open" at its next call: say why here.
      const e = err as { code?: string, message?: string, cause?: { code?: string, message?: string } }
      scope.lsmAck?.(`# a client's open of ${this.location} failed: ${String(e.code)} ${String(e.message)}${e.cause !== undefined ? ` (cause: ${String(e.cause.code)} ${String(e.cause.message)})` : ''}`)
      await askHelper({ op: 'close', location: this.location })
      throw err
    }
  }

  override async _close (): Promise<void> {
    try {
      await super._close()
    } finally {
      await askHelper({ op: 'close', location: this.location })
    }
  }
}

function complianceThroughClient (): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const suite = require('abstract-level/test')
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const tape = require('tape') as { createStream (): { on (e: string, f: (line: string) => void): void }, onFinish (f: () => void): void }
  const report = (line: string): void => scope.lsmAck?.(line)
  const stream = tape.createStream()
  stream.on('data', (line: string) => report(line.replace(/\n$/, '')))
  stream.on('end', () => {
    report(`# roles ${JSON.stringify(clientRoles)}`)
    report('# done')
  })
  const root = `compliance-client-${Date.now()}`
  let n = 0
  // ?grep=words: only the suite's tests whose name has them (to chase one).
  const grep = params.get('grep')
  const filtered = (name: string, ...rest: unknown[]): unknown => {
    return grep === null || name.includes(grep) ? (tape as unknown as (...a: unknown[]) => unknown)(name, ...rest) : undefined
  }
  suite({
    test: filtered,
    factory (options?: Record<string, unknown>) {
      return new ClientTabLevel(`${root}/${n++}`, { ...options })
    }
  })
}

if (params.get('run') === 'owner-helper') ownerHelper()
else if (params.get('run') === 'compliance-client') complianceThroughClient()
