// The dedicated worker that runs one database for browser.ts: the engine in a
// worker (OpfsLevel, adapters/opfs-level.ts), serving the requests of
// lib/browser/protocol.ts in arrival order. Flushes and compactions run here,
// on this worker's event loop, in slices between requests.
import '../../hosts/browser/globals'
import { OpfsLevel } from '../../adapters/opfs-level'
import { installBrowserPlatform } from '../../hosts/browser/platform'
import { errorMessage, transferables, type RangeMessage, type Reply, type Request } from './protocol'
import { levelError } from '../errors'

type Db = OpfsLevel<Uint8Array, Uint8Array>
type Iterator = ReturnType<Db['iterator']>
type Snapshot = ReturnType<Db['snapshot']>

interface WorkerScope {
  onmessage: ((event: { data: Request[] }) => void) | null
  postMessage (message: Reply[], transfer: ArrayBuffer[]): void
}

const scope = globalThis as unknown as WorkerScope
// Started now, so that the first open does not wait for it (an open that finds it failed tries again).
installBrowserPlatform().catch(() => {})
let db: Db | undefined
const iterators = new Map<number, Iterator>()
const snapshots = new Map<number, Snapshot>()

// Replies of one turn go back in one message.
let outbox: Reply[] = []
function reply (r: Reply): void {
  if (outbox.length === 0) setImmediate(sendReplies)
  outbox.push(r)
}
function sendReplies (): void {
  const batch = outbox
  outbox = []
  const transfer = new Set<ArrayBuffer>()
  for (const r of batch) transferables(r.result, transfer)
  scope.postMessage(batch, [...transfer])
}

function database (): Db {
  if (db === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')
  return db
}

function withSnapshot<T extends object> (options: T, id: number | undefined): T & { snapshot?: Snapshot } {
  if (id === undefined) return options
  const snapshot = snapshots.get(id)
  if (snapshot === undefined) throw levelError('LEVEL_INVALID_OPTION', `Unknown snapshot ${id}`)
  return { ...options, snapshot }
}

/** A range with only the bounds that are set (abstract-level treats a present undefined bound as a bound). */
function rangeOptions (range: RangeMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(range)) if (v !== undefined) out[k] = v
  return out
}

/** Opens the database; an error goes back as its cause (the main thread's open wraps it again). */
async function openDb (location: string, options: Record<string, unknown>): Promise<void> {
  const candidate: Db = new OpfsLevel(location, { ...options, keyEncoding: 'view', valueEncoding: 'view' })
  try {
    await candidate.open({ passive: false, createIfMissing: options.createIfMissing !== false, errorIfExists: options.errorIfExists === true })
  } catch (err) {
    throw (err as { cause?: unknown }).cause ?? err
  }
  db = candidate
}

async function closeDb (): Promise<void> {
  if (db === undefined) return
  const closing = db
  db = undefined
  iterators.clear()
  snapshots.clear()
  await closing.close()
}

/** Starts `req` (its synchronous part runs now, in arrival order); returns its result. */
function handle (req: Request): unknown {
  switch (req.op) {
    case 'open': return openDb(req.location, req.options)
    case 'close': return closeDb()
    case 'put': return database().put(req.key, req.value, { sync: req.sync } as object)
    case 'del': return database().del(req.key, { sync: req.sync } as object)
    case 'batch': return database().batch(req.ops as never, { sync: req.sync } as object)
    case 'get': return database().get(req.key, withSnapshot({}, req.snapshot))
    case 'getMany': return database().getMany(req.keys, withSnapshot({}, req.snapshot))
    case 'has': return database().has(req.key, withSnapshot({}, req.snapshot))
    case 'hasMany': return database().hasMany(req.keys, withSnapshot({}, req.snapshot))
    case 'clear': return database().clear(withSnapshot(rangeOptions(req.range), req.snapshot))
    case 'iterator':
      iterators.set(req.iterator, database().iterator(withSnapshot({ ...rangeOptions(req.range), keys: req.keys, values: req.values }, req.snapshot)))
      return undefined
    case 'nextv': return iteratorOf(req.iterator).nextv(req.size)
    case 'seek': return iteratorOf(req.iterator).seek(req.target)
    case 'iteratorClose': {
      const it = iterators.get(req.iterator)
      iterators.delete(req.iterator)
      return it?.close()
    }
    case 'snapshot':
      snapshots.set(req.snapshot, database().snapshot())
      return undefined
    case 'snapshotClose': {
      const s = snapshots.get(req.snapshot)
      snapshots.delete(req.snapshot)
      return s?.close()
    }
    case 'call': return callMethod(req.method, req.args)
  }
}

function iteratorOf (id: number): Iterator {
  const it = iterators.get(id)
  if (it === undefined) throw new Error(`lsm-level worker: iterator ${id} is not open`)
  return it
}

/** The engine's additional methods that take and return plain data. */
const CALLABLE = new Set(['compactRange', 'flush', 'getProperty', 'approximateSize', 'stats', 'levels'])

function callMethod (method: string, args: unknown[]): unknown {
  if (!CALLABLE.has(method)) throw levelError('LEVEL_NOT_SUPPORTED', `${method}() is not available through the browser entry`)
  return (database() as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args)
}

scope.onmessage = (event) => {
  for (const req of event.data) {
    let result: unknown
    try {
      result = handle(req)
    } catch (err) {
      reply({ id: req.id, error: errorMessage(err) })
      continue
    }
    Promise.resolve(result).then(
      (value) => reply({ id: req.id, result: value }),
      (err: unknown) => reply({ id: req.id, error: errorMessage(err) })
    )
  }
}
