// What abstract-level's README documents, for the cases its compliance suite
// runs without asserting anything (test/compliance-audit.ts lists those tests;
// docs/TESTING.md has the list). Each scenario records what it observes as a
// list of lines and compares it with the documented behaviour, on lsm-level,
// classic-level and memory-level in the same test, so a pass shows the three
// agree (those about iterators, chained batches and snapshots also on a
// sublevel of each, as the suite runs its tests on sublevels too):
//
// - iterators, keys() and values() with a signal that is not aborted read as
//   usual; once it is aborted, further reads fail with LEVEL_ABORTED, the
//   iterator stays open until closed, and no abort listener is left behind;
// - db.close() and an iterator's or chained batch's close() are idempotent,
//   open() and close() called together end in the state of the last call, and
//   db.close() closes the iterators and batches left open;
// - empty batches (array and chained, with and without options) resolve and
//   change nothing;
// - open({}) means the default options (create if missing, keep what exists);
// - `passive: true` in the constructor's options is ignored;
// - `for await` over iterators, keys() and values() yields what next() would,
//   within the limit, follows a seek or an abort made in the loop's body at
//   the next item, and closes the iterator when the loop ends, breaks or throws;
// - Symbol.asyncDispose closes a database (releasing its lock), an iterator,
//   a chained batch (discarding its operations) and a snapshot.
import test from 'tape'
import { getEventListeners } from 'node:events'
import * as path from 'node:path'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

/** The part of a database these tests use, common to the three engines. */
interface Db {
  readonly status: string
  readonly supports: { signals?: { iterators?: boolean } }
  open (options?: object): Promise<void>
  close (): Promise<void>
  put (key: string, value: string): Promise<void>
  get (key: string, options?: object): Promise<string | undefined>
  batch (operations: object[], options?: object | null): Promise<void>
  batch (): ChainedBatch
  iterator (options?: object): Iterator
  keys (options?: object): Iterator
  values (options?: object): Iterator
  snapshot (): Snapshot
  on (event: string, listener: (...args: unknown[]) => void): void
  once (event: string, listener: (...args: unknown[]) => void): void
}

interface Iterator extends AsyncIterable<unknown> {
  seek (target: string): void
  next (): Promise<unknown>
  nextv (size: number): Promise<unknown[]>
  all (): Promise<unknown[]>
  close (): Promise<void>
}

interface ChainedBatch {
  readonly length: number
  put (key: string, value: string): ChainedBatch
  clear (): ChainedBatch
  write (options?: object): Promise<void>
  close (): Promise<void>
}

interface Snapshot { close (): Promise<void> }

interface Engine {
  name: string
  /** Whether data outlives the instance (another instance can open the location). */
  persistent: boolean
  /** A new instance at `location` (a new temporary directory if none). */
  make (location?: string, options?: Record<string, unknown>): Db
}

const asDb = (db: unknown): Db => db as Db

const ENGINES: Engine[] = [
  { name: 'lsm-level', persistent: true, make: (location = tempDir(), options) => asDb(new LsmLevel(location, options)) },
  { name: 'classic-level', persistent: true, make: (location = tempDir(), options) => asDb(new ClassicLevel(location, options)) },
  { name: 'memory-level', persistent: false, make: (_location, options) => asDb(new MemoryLevel(options)) }
]

/**
 * The same engine, with the scenario's database a sublevel of a new database
 * (the compliance suite runs each of its tests on a sublevel too). Closing the
 * sublevel closes its database: scenarios run on sublevels close it once, at the end.
 */
function onSublevel (base: Engine): Engine {
  return {
    name: `${base.name}, sublevel`,
    persistent: base.persistent,
    make (location, options) {
      const root = base.make(location) as Db & { sublevel (name: string, options?: object): unknown }
      const sub = asDb(root.sublevel('s', options))
      const closeSublevel = sub.close.bind(sub)
      return Object.assign(sub, { close: async () => { await closeSublevel(); await root.close() } })
    }
  }
}

// Node 20.4+ has the symbol; TypeScript's ES2022 library does not declare it.
const asyncDispose = (Symbol as unknown as { asyncDispose?: symbol }).asyncDispose
type Disposable = Record<symbol, () => Promise<void>>
const dispose = async (resource: object): Promise<void> => { await (resource as Disposable)[asyncDispose!]() }

/** "ok" (with the value, if any) or the error's code, and its name when not a plain Error. */
async function outcome (work: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    const value = await (typeof work === 'function' ? work() : work)
    return value === undefined ? 'ok' : `ok ${JSON.stringify(value)}`
  } catch (err) {
    const e = err as { code?: string, name?: string }
    return `${e.code ?? 'no code'}${e.name !== undefined && e.name !== 'Error' && e.name !== 'ModuleError' ? ` (${e.name})` : ''}`
  }
}

async function entries (db: Db): Promise<string> {
  return JSON.stringify(await db.iterator().all())
}

/**
 * Runs `scenario` on each engine (and on a sublevel of each, with `sublevels`)
 * and checks it observes `expected` (documented behaviour). A scenario that
 * does not apply to an engine returns undefined.
 */
function agree (name: string, expected: string[], scenario: (engine: Engine) => Promise<string[] | undefined>, sublevels = false): void {
  test(name, async (t) => {
    for (const engine of sublevels ? [...ENGINES, ...ENGINES.map(onSublevel)] : ENGINES) {
      const observed = await scenario(engine)
      if (observed === undefined) t.comment(`${engine.name}: not applicable`)
      else t.same(observed, expected, engine.name)
    }
  })
}

async function opened (engine: Engine): Promise<Db> {
  const db = engine.make()
  await db.open()
  await db.batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'b', value: '2' }, { type: 'put', key: 'c', value: '3' }])
  return db
}

// ------------------------------------------------------------ signals

const MODES = ['iterator', 'keys', 'values'] as const
const FIRST_READ: Record<typeof MODES[number], Record<string, string>> = {
  iterator: { next: 'ok ["a","1"]', nextv: 'ok [["a","1"],["b","2"]]', all: 'ok [["a","1"],["b","2"],["c","3"]]' },
  keys: { next: 'ok "a"', nextv: 'ok ["a","b"]', all: 'ok ["a","b","c"]' },
  values: { next: 'ok "1"', nextv: 'ok ["1","2"]', all: 'ok ["1","2","3"]' }
}
const read = (it: Iterator, method: string): Promise<unknown> =>
  method === 'next' ? it.next() : method === 'nextv' ? it.nextv(2) : it.all()

for (const mode of MODES) {
  for (const method of ['next', 'nextv']) {
    // all() ends by closing the iterator, so the reads after it are covered below.
    agree(`${mode}().${method}() with a signal not aborted reads; aborted later, reads fail and close() works`, [
      `read: ${FIRST_READ[mode][method]}`,
      'after abort next(): LEVEL_ABORTED (AbortError)',
      'after abort nextv(): LEVEL_ABORTED (AbortError)',
      'after abort all(): LEVEL_ABORTED (AbortError)',
      'close(): ok',
      'next() after close(): LEVEL_ITERATOR_NOT_OPEN',
      'abort listeners left: 0',
      'db reads: ok "2"'
    ], async (engine) => {
      const db = await opened(engine)
      const ac = new AbortController()
      const it = db[mode]({ signal: ac.signal })
      const log = [`read: ${await outcome(read(it, method))}`]
      ac.abort()
      for (const m of ['next', 'nextv', 'all']) log.push(`after abort ${m}(): ${await outcome(read(it, m))}`)
      log.push(`close(): ${await outcome(it.close())}`)
      log.push(`next() after close(): ${await outcome(it.next())}`)
      log.push(`abort listeners left: ${getEventListeners(ac.signal, 'abort').length}`)
      log.push(`db reads: ${await outcome(db.get('b'))}`)
      await db.close()
      return log
    }, true)
  }

  agree(`${mode}().all() with a signal not aborted reads everything and closes the iterator`, [
    `all(): ${FIRST_READ[mode].all}`,
    'next() after abort: LEVEL_ITERATOR_NOT_OPEN',
    'close(): ok',
    'abort listeners left: 0'
  ], async (engine) => {
    const db = await opened(engine)
    const ac = new AbortController()
    const it = db[mode]({ signal: ac.signal })
    const log = [`all(): ${await outcome(it.all())}`]
    ac.abort()
    log.push(`next() after abort: ${await outcome(it.next())}`)
    log.push(`close(): ${await outcome(it.close())}`)
    log.push(`abort listeners left: ${getEventListeners(ac.signal, 'abort').length}`)
    await db.close()
    return log
  }, true)
}

agree('a signal shared by iterators created before open: reads work, no abort listener is left', [
  'reads: ok ["a","1"] | ok "b" | ok "3"',
  'abort listeners left: 0'
], async (engine) => {
  const location = tempDir()
  const first = engine.make(location)
  await first.batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'b', value: '2' }, { type: 'put', key: 'c', value: '3' }])
  const db = engine.persistent ? (await first.close(), engine.make(location)) : first
  // Created while the database is opening: abstract-level defers them.
  const ac = new AbortController()
  const its = [db.iterator({ signal: ac.signal }), db.keys({ signal: ac.signal, gt: 'a' }), db.values({ signal: ac.signal, gt: 'b' })]
  const reads = []
  for (const it of its) reads.push(await outcome(it.next()))
  for (const it of its) await it.close()
  const log = [`reads: ${reads.join(' | ')}`, `abort listeners left: ${getEventListeners(ac.signal, 'abort').length}`]
  await db.close()
  return log
})

// "Once signaled, [the signal] aborts an in-progress read operation": here the
// abort comes from a later turn of the event loop, while a long nextv() or
// all() is still reading. Only where db.supports.signals.iterators says so
// (not memory-level, which reads in one go).
const LONG_READ_ENTRIES = 50_000

agree('a long nextv() or all() aborted from a later turn fails with LEVEL_ABORTED', [
  'nextv(): LEVEL_ABORTED (AbortError)',
  'all(): LEVEL_ABORTED (AbortError)'
], async (engine) => {
  const db = engine.make()
  if (db.supports.signals?.iterators !== true) {
    await db.close()
    return
  }
  const value = 'v'.repeat(100)
  await db.batch(Array.from({ length: LONG_READ_ENTRIES }, (_, i) => ({ type: 'put', key: String(i).padStart(6, '0'), value })))
  const log = []
  for (const method of ['nextv', 'all']) {
    const ac = new AbortController()
    const it = db.iterator({ signal: ac.signal })
    const reading = method === 'nextv' ? it.nextv(LONG_READ_ENTRIES) : it.all()
    setImmediate(() => ac.abort())
    log.push(`${method}(): ${await outcome(reading.then((items) => items.length))}`)
    await it.close()
  }
  await db.close()
  return log
}, true)

// ------------------------------------------------------------ close() and open()

agree('db.close() is idempotent; open() and close() together end as the last call says', [
  'after close() x4: closed, get: LEVEL_DATABASE_NOT_OPEN',
  'open() and close() in one tick: ok ok, closed',
  'close() and open() in one tick: ok ok, open, get: ok "1"',
  'open() while opening: ok ok, open',
  // The listeners are added once the database is open: the first events are its closing.
  'events: closing closed opening open closing closed opening open closing closed opening open closing closed opening open closing closed',
  'close() after close(): ok, closed'
], async (engine) => {
  const db = await opened(engine)
  const events: string[] = []
  for (const e of ['opening', 'open', 'closing', 'closed']) db.on(e, () => events.push(e))
  await db.close()
  await db.close()
  await Promise.all([db.close(), db.close()])
  const log = [`after close() x4: ${db.status}, get: ${await outcome(db.get('a'))}`]
  const openClose = await Promise.all([outcome(db.open()), outcome(db.close())])
  log.push(`open() and close() in one tick: ${openClose.join(' ')}, ${db.status}`)
  await db.open()
  const closeOpen = await Promise.all([outcome(db.close()), outcome(db.open())])
  log.push(`close() and open() in one tick: ${closeOpen.join(' ')}, ${db.status}, get: ${await outcome(db.get('a'))}`)
  await db.close()
  const twice = await Promise.all([outcome(db.open()), outcome(db.open())])
  log.push(`open() while opening: ${twice.join(' ')}, ${db.status}`)
  await db.close()
  log.push(`events: ${events.join(' ')}`)
  log.push(`close() after close(): ${await outcome(db.close())}, ${db.status}`)
  return log
})

agree('db.close() frees the location: another instance opens it and reads the data', [
  'second instance: ok, get: ok "1"',
  'first instance after close() again: closed'
], async (engine) => {
  if (!engine.persistent) return
  const location = tempDir()
  const db = engine.make(location)
  await db.put('a', '1')
  await Promise.all([db.close(), db.close()])
  const other = engine.make(location)
  const log = [`second instance: ${await outcome(other.open())}, get: ${await outcome(other.get('a'))}`]
  await other.close()
  await db.close()
  log.push(`first instance after close() again: ${db.status}`)
  return log
})

for (const mode of MODES) {
  agree(`${mode}().close() is idempotent, and db.close() closes an iterator left open`, [
    'close() x4: ok',
    'next() after close(): LEVEL_ITERATOR_NOT_OPEN',
    'left open, after db.close(): LEVEL_ITERATOR_NOT_OPEN',
    'after db.open() again: LEVEL_ITERATOR_NOT_OPEN, close(): ok',
    'new iterator: ok ["a","b","c"]'
  ], async (engine) => {
    const db = await opened(engine)
    const it = db[mode]()
    await it.close()
    await it.close()
    const closes = await Promise.all([outcome(it.close()), outcome(it.close())])
    const log = [`close() x4: ${[...new Set(closes)].join(' ')}`, `next() after close(): ${await outcome(it.next())}`]
    const left = db[mode]()
    await left.next()
    await db.close()
    log.push(`left open, after db.close(): ${await outcome(left.next())}`)
    await db.open()
    log.push(`after db.open() again: ${await outcome(left.next())}, close(): ${await outcome(left.close())}`)
    log.push(`new iterator: ${await outcome(db.keys().all())}`)
    await db.close()
    return log
  })
}

agree('chained batch close() is idempotent, and db.close() closes a batch left open', [
  'close() x4: ok',
  'put() after close(): LEVEL_BATCH_NOT_OPEN, write(): LEVEL_BATCH_NOT_OPEN',
  'left open, after db.close(): LEVEL_BATCH_NOT_OPEN',
  'after db.open() again: LEVEL_BATCH_NOT_OPEN, x: ok'
], async (engine) => {
  const db = await opened(engine)
  const batch = db.batch().put('x', '1')
  await batch.close()
  await batch.close()
  const closes = await Promise.all([outcome(batch.close()), outcome(batch.close())])
  const log = [`close() x4: ${[...new Set(closes)].join(' ')}`]
  log.push(`put() after close(): ${await outcome(() => batch.put('y', '1'))}, write(): ${await outcome(batch.write())}`)
  const left = db.batch().put('x', '2')
  await db.close()
  log.push(`left open, after db.close(): ${await outcome(() => left.put('z', '1'))}`)
  await db.open()
  log.push(`after db.open() again: ${await outcome(left.write())}, x: ${await outcome(db.get('x'))}`)
  await db.close()
  return log
})

// ------------------------------------------------------------ empty batches

const BEFORE = '[["a","1"],["b","2"],["c","3"]]'

agree('batch([]) with and without options resolves and writes nothing', [
  'batch([]): ok',
  'batch([], null): ok',
  'batch([], undefined): ok',
  'batch([], {}): ok',
  'batch([], { sync: true }): ok',
  'write events: 0',
  `entries: ${BEFORE}`,
  'on a closed database: LEVEL_DATABASE_NOT_OPEN',
  'while opening: ok, open'
], async (engine) => {
  const db = await opened(engine)
  let writes = 0
  db.on('write', () => writes++)
  const log = [
    `batch([]): ${await outcome(db.batch([]))}`,
    `batch([], null): ${await outcome(db.batch([], null))}`,
    `batch([], undefined): ${await outcome(db.batch([], undefined))}`,
    `batch([], {}): ${await outcome(db.batch([], {}))}`,
    `batch([], { sync: true }): ${await outcome(db.batch([], { sync: true }))}`,
    `write events: ${writes}`,
    `entries: ${await entries(db)}`
  ]
  await db.close()
  log.push(`on a closed database: ${await outcome(db.batch([]))}`)
  const opening = db.open()
  log.push(`while opening: ${await outcome(db.batch([], {}))}, ${db.status}`)
  await opening
  await db.close()
  return log
})

agree('an empty chained batch: write() (with and without options) and clear() resolve and write nothing', [
  'length 0, write(): ok, put() after: LEVEL_BATCH_NOT_OPEN',
  'write({}): ok',
  'write({ sync: true }): ok',
  'clear() on empty, close(): ok',
  'put, clear(), write(): length 0, ok, x: ok',
  'write events: 0',
  `entries: ${BEFORE}`
], async (engine) => {
  const db = await opened(engine)
  let writes = 0
  db.on('write', () => writes++)
  const empty = db.batch()
  const log = [`length ${empty.length}, write(): ${await outcome(empty.write())}, put() after: ${await outcome(() => empty.put('x', '1'))}`]
  log.push(`write({}): ${await outcome(db.batch().write({}))}`)
  log.push(`write({ sync: true }): ${await outcome(db.batch().write({ sync: true }))}`)
  log.push(`clear() on empty, close(): ${await outcome(db.batch().clear().close())}`)
  const cleared = db.batch().put('x', '1').clear()
  log.push(`put, clear(), write(): length ${cleared.length}, ${await outcome(cleared.write())}, x: ${await outcome(db.get('x'))}`)
  log.push(`write events: ${writes}`)
  log.push(`entries: ${await entries(db)}`)
  await db.close()
  return log
}, true)

// ------------------------------------------------------------ options

agree('open({}) creates a missing database and keeps an existing one', [
  'open({}) where nothing exists: ok, open',
  'after close() and open({}): ok, a: ok "1"'
], async (engine) => {
  // A location whose parent does not exist yet.
  const db = engine.make(path.join(tempDir(), 'nested', 'db'))
  const log = [`open({}) where nothing exists: ${await outcome(db.open({}))}, ${db.status}`]
  await db.put('a', '1')
  await db.close()
  log.push(`after close() and open({}): ${await outcome(db.open({}))}, a: ${await outcome(db.get('a'))}`)
  await db.close()
  return log
})

agree('open({}) on a new instance at the location keeps the data', [
  'a new instance, open({}): ok, a: ok "1"'
], async (engine) => {
  // Nothing outlives a memory-level instance.
  if (!engine.persistent) return
  const location = tempDir()
  const db = engine.make(location)
  await db.put('a', '1')
  await db.close()
  const other = engine.make(location)
  const log = [`a new instance, open({}): ${await outcome(other.open({}))}, a: ${await outcome(other.get('a'))}`]
  await other.close()
  return log
})

agree('get(): a promise whatever happens (a bad key, a value that does not decode, a closed database), deferred while opening; json values decoded', [
  'while opening: ok "1"',
  'get(null) returns: a promise; LEVEL_INVALID_KEY',
  'get(undefined): LEVEL_INVALID_KEY',
  'missing: ok',
  'json: ok {"n":1}',
  'not json: LEVEL_DECODE_ERROR',
  'with an encoding option: ok "{\\"n\\":1}"',
  'after close: returns a promise; LEVEL_DATABASE_NOT_OPEN'
], async (engine) => {
  const location = engine.persistent ? tempDir() : undefined
  const first = engine.make(location)
  await first.open()
  await first.put('a', '1')
  await first.put('j', '{"n":1}')
  await first.put('bad', 'not json')
  // The same location again for the persistent engines; memory-level keeps its data on the instance.
  const db = engine.persistent ? (await first.close(), engine.make(location)) : first
  const log = [`while opening: ${await outcome(db.get('a'))}`]
  const nullGet = (db.get as (key: unknown) => unknown)(null)
  log.push(`get(null) returns: ${nullGet instanceof Promise ? 'a promise' : typeof nullGet}; ${await outcome(nullGet as Promise<unknown>)}`)
  log.push(`get(undefined): ${await outcome((db.get as (key: unknown) => Promise<unknown>)(undefined))}`)
  log.push(`missing: ${await outcome(db.get('nothing'))}`)
  await db.close()
  const json = engine.persistent ? engine.make(location, { valueEncoding: 'json' }) : first
  if (!engine.persistent) await json.open()
  const parsed = engine.persistent ? json : (json as unknown as { sublevel: (n: string, o: object) => Db }).sublevel('j', { valueEncoding: 'json' })
  if (!engine.persistent) {
    await (json as unknown as { put: (k: string, v: string, o: object) => Promise<void> }).put('!j!j', '{"n":1}', { valueEncoding: 'utf8' })
    await (json as unknown as { put: (k: string, v: string, o: object) => Promise<void> }).put('!j!bad', 'not json', { valueEncoding: 'utf8' })
  }
  log.push(`json: ${await outcome(parsed.get('j'))}`)
  log.push(`not json: ${await outcome(parsed.get('bad'))}`)
  log.push(`with an encoding option: ${await outcome(parsed.get('j', { valueEncoding: 'utf8' }))}`)
  await json.close()
  const closedGet = parsed.get('a')
  log.push(`after close: returns ${closedGet instanceof Promise ? 'a promise' : typeof closedGet}; ${await outcome(closedGet)}`)
  return log
})

/** A database with abstract-level's hooks and listener removal (the three engines have both). */
type HookedDb = Db & { hooks: { prewrite: { add: (fn: (op: { type: string, key: string }) => void) => void, delete: (fn: unknown) => void } }, off: (e: string, l: unknown) => void }

/** "type key" of each operation a prewrite hook saw during `work`. */
async function prewriteSeen (db: HookedDb, work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = []
  const hook = (op: { type: string, key: string }): void => { seen.push(`${op.type} ${op.key}`) }
  db.hooks.prewrite.add(hook)
  try { await work() } finally { db.hooks.prewrite.delete(hook) }
  return seen
}

/** "type key" of each operation the 'write' events of `work` carried. */
async function writeEvents (db: HookedDb, work: () => Promise<unknown>): Promise<string[]> {
  const events: string[] = []
  const listener = (ops: Array<{ type: string, key: string }>): void => { events.push(...ops.map((op) => `${op.type} ${op.key}`)) }
  db.on('write', listener as (...args: unknown[]) => void)
  try { await work() } finally { db.off('write', listener) }
  return events
}

agree('batch([...]): a promise of undefined; each bad operation rejected as abstract-level checks it; options, per-operation encodings, hooks and write events honoured', [
  'plain: ok; with { sync: true }: ok',
  'entries: [["a","1"],["b","2"],["n","{\\"n\\":1}"]]',
  'not an array: no code (TypeError); null operation: LEVEL_INVALID_KEY; no key: LEVEL_INVALID_KEY',
  'bad type: no code (TypeError); bad type and no key: LEVEL_INVALID_KEY; put without value: LEVEL_INVALID_VALUE',
  'a bad operation after good ones writes nothing: [["a","1"],["b","2"],["n","{\\"n\\":1}"]]',
  'returns a promise: true; a thrown error: false',
  'per-operation valueEncoding json: ok {"x":[1]}',
  'prewrite hook saw: put c, del a',
  'write event: put c, del a',
  'entries: [["b","2"],["c","3"],["n","{\\"n\\":1}"],["o","{\\"x\\":[1]}"]]'
], async (engine) => {
  const db = engine.make() as HookedDb
  await db.open()
  const batch = db.batch.bind(db) as (ops: unknown, options?: unknown) => Promise<unknown>
  const log = [`plain: ${await outcome(batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'n', value: '{"n":1}' }]))}; with { sync: true }: ${await outcome(batch([{ type: 'put', key: 'b', value: '2' }], { sync: true }))}`]
  log.push(`entries: ${await entries(db)}`)
  log.push(`not an array: ${await outcome(() => batch('x'))}; null operation: ${await outcome(() => batch([null]))}; no key: ${await outcome(() => batch([{ type: 'put', value: '1' }]))}`)
  log.push(`bad type: ${await outcome(() => batch([{ type: 'merge', key: 'k', value: '1' }]))}; bad type and no key: ${await outcome(() => batch([{ type: 'merge' }]))}; put without value: ${await outcome(() => batch([{ type: 'put', key: 'k' }]))}`)
  await outcome(() => batch([{ type: 'put', key: 'z', value: '1' }, { type: 'del', key: 'a' }, { type: 'put', key: 'y' }]))
  log.push(`a bad operation after good ones writes nothing: ${await entries(db)}`)
  let thrown = false
  let returned: unknown
  try { returned = batch([{ type: 'put', key: null, value: '1' }]) } catch { thrown = true }
  await outcome(returned as Promise<unknown>)
  log.push(`returns a promise: ${returned instanceof Promise}; a thrown error: ${thrown}`)
  await batch([{ type: 'put', key: 'o', value: { x: [1] }, valueEncoding: 'json' }])
  log.push(`per-operation valueEncoding json: ${await outcome(db.get('o', { valueEncoding: 'json' }))}`)
  let events: string[] = []
  const seen = await prewriteSeen(db, async () => { events = await writeEvents(db, async () => await batch([{ type: 'put', key: 'c', value: '3' }, { type: 'del', key: 'a' }])) })
  log.push(`prewrite hook saw: ${seen.join(', ')}`, `write event: ${events.join(', ')}`)
  log.push(`entries: ${await entries(db)}`)
  await db.close()
  return log
})

agree('put(): a promise of undefined; a bad key or value rejected (not thrown); deferred while opening; options, hooks and write events honoured', [
  'while opening: ok',
  'plain: ok; with { sync: true }: ok',
  'null key: returns a promise; LEVEL_INVALID_KEY',
  'undefined value: LEVEL_INVALID_VALUE; null value: LEVEL_INVALID_VALUE',
  'valueEncoding json: ok {"x":1}',
  'prewrite hook saw: put h',
  'write event: put w',
  'entries: [["a","1"],["b","2"],["h","3"],["j","{\\"x\\":1}"],["w","4"]]',
  'after close: LEVEL_DATABASE_NOT_OPEN'
], async (engine) => {
  const db = engine.make() as HookedDb
  const put = db.put.bind(db) as (key: unknown, value: unknown, options?: unknown) => Promise<unknown>
  const log = [`while opening: ${await outcome(put('a', '1'))}`]
  log.push(`plain: ${await outcome(put('a', '1'))}; with { sync: true }: ${await outcome(put('b', '2', { sync: true }))}`)
  let returned: unknown
  try { returned = put(null, '1') } catch { returned = 'thrown' }
  log.push(`null key: returns ${returned instanceof Promise ? 'a promise' : String(returned)}; ${await outcome(returned as Promise<unknown>)}`)
  log.push(`undefined value: ${await outcome(() => put('k', undefined))}; null value: ${await outcome(() => put('k', null))}`)
  await put('j', { x: 1 }, { valueEncoding: 'json' })
  log.push(`valueEncoding json: ${await outcome(db.get('j', { valueEncoding: 'json' }))}`)
  const seen = await prewriteSeen(db, async () => await put('h', '3'))
  const events = await writeEvents(db, async () => await put('w', '4'))
  log.push(`prewrite hook saw: ${seen.join(', ')}`, `write event: ${events.join(', ')}`)
  log.push(`entries: ${await entries(db)}`)
  await db.close()
  log.push(`after close: ${await outcome(() => put('z', '1'))}`)
  return log
})

agree('passive: true in the constructor options is ignored: the database opens itself', [
  'opened by itself: open',
  'open(): ok',
  'open({ passive: true }) when open: ok',
  'put, get: ok "1"',
  'open({ passive: true }) when closed: LEVEL_DATABASE_NOT_OPEN, closed',
  'open() when closed: ok, open'
], async (engine) => {
  const db = engine.make(undefined, { passive: true })
  // Bounded, so that a database that never opens fails here rather than hangs.
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    new Promise((resolve) => db.once('open', resolve)),
    new Promise((resolve) => { timer = setTimeout(resolve, 5000) })
  ])
  clearTimeout(timer)
  const log = [`opened by itself: ${db.status}`]
  log.push(`open(): ${await outcome(db.open())}`)
  log.push(`open({ passive: true }) when open: ${await outcome(db.open({ passive: true }))}`)
  await db.put('a', '1')
  log.push(`put, get: ${await outcome(db.get('a'))}`)
  await db.close()
  log.push(`open({ passive: true }) when closed: ${await outcome(db.open({ passive: true }))}, ${db.status}`)
  log.push(`open() when closed: ${await outcome(db.open())}, ${db.status}`)
  await db.close()
  return log
})

// ------------------------------------------------------------ for await

const TEN = 'abcdefghij'.split('')

async function openedTen (engine: Engine): Promise<Db> {
  const db = engine.make()
  await db.open()
  await db.batch(TEN.map((k, i) => ({ type: 'put', key: k, value: String(i) })))
  return db
}

for (const mode of MODES) {
  const show = (item: unknown): string => JSON.stringify(item)
  const items = (keys: string[]): string[] => keys.map((k) => show(mode === 'iterator' ? [k, String(TEN.indexOf(k))] : mode === 'keys' ? k : String(TEN.indexOf(k))))

  agree(`for await over ${mode}(): every item, a put made meanwhile unseen, closed at the end`, [
    ...items(TEN),
    'next() after the loop: LEVEL_ITERATOR_NOT_OPEN'
  ], async (engine) => {
    const db = await openedTen(engine)
    const it = db[mode]()
    const log: string[] = []
    for await (const item of it) {
      log.push(show(item))
      if (log.length === 1) await db.put('bb', 'new')
    }
    log.push(`next() after the loop: ${await outcome(it.next())}`)
    await db.close()
    return log
  }, true)

  agree(`for await over ${mode}() with a limit, and broken out of`, [
    ...items(['a', 'b', 'c']),
    'limit 3: next() after the loop: LEVEL_ITERATOR_NOT_OPEN',
    ...items(['a', 'b']),
    'break: next() after the loop: LEVEL_ITERATOR_NOT_OPEN'
  ], async (engine) => {
    const db = await openedTen(engine)
    const log: string[] = []
    const limited = db[mode]({ limit: 3 })
    for await (const item of limited) log.push(show(item))
    log.push(`limit 3: next() after the loop: ${await outcome(limited.next())}`)
    const broken = db[mode]()
    let seen = 0
    for await (const item of broken) {
      log.push(show(item))
      if (++seen === 2) break
    }
    log.push(`break: next() after the loop: ${await outcome(broken.next())}`)
    await db.close()
    return log
  }, true)

  agree(`for await over ${mode}(): a seek in the loop's body moves the next item`, [
    ...items(['a', 'b', 'h', 'i', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'])
  ], async (engine) => {
    const db = await openedTen(engine)
    const it = db[mode]()
    const log: string[] = []
    let seeks = 0
    for await (const item of it) {
      log.push(show(item))
      if (log.length === 2 && seeks++ === 0) it.seek('h')
      if (log.length === 4 && seeks++ === 1) it.seek('c')
    }
    await db.close()
    return log
  }, true)

  agree(`for await over ${mode}(): an abort in the loop's body fails the next item, and the iterator is closed`, [
    ...items(['a', 'b']),
    'the loop: LEVEL_ABORTED (AbortError)',
    'next() after the loop: LEVEL_ITERATOR_NOT_OPEN'
  ], async (engine) => {
    const db = await openedTen(engine)
    const ac = new AbortController()
    const it = db[mode]({ signal: ac.signal })
    const log: string[] = []
    log.push(`the loop: ${await outcome(async () => {
      for await (const item of it) {
        log.push(show(item))
        if (log.length === 2) ac.abort()
      }
    })}`)
    log.push(`next() after the loop: ${await outcome(it.next())}`)
    await db.close()
    return log
  }, true)
}

// ------------------------------------------------------------ Symbol.asyncDispose

if (asyncDispose === undefined) {
  test('Symbol.asyncDispose', (t) => {
    t.comment(`skipped: this runtime (Node ${process.version}) has no Symbol.asyncDispose`)
    t.end()
  })
} else {
  agree('Symbol.asyncDispose closes the database', [
    'after dispose: closed, get: LEVEL_DATABASE_NOT_OPEN',
    'dispose again: ok'
  ], async (engine) => {
    const db = await opened(engine)
    await dispose(db)
    const log = [`after dispose: ${db.status}, get: ${await outcome(db.get('a'))}`, `dispose again: ${await outcome(dispose(db))}`]
    return log
  })

  agree('Symbol.asyncDispose on a database frees its location', [
    'second instance: ok, a: ok "1"'
  ], async (engine) => {
    if (!engine.persistent) return
    const location = tempDir()
    const db = engine.make(location)
    await db.put('a', '1')
    await dispose(db)
    const other = engine.make(location)
    const log = [`second instance: ${await outcome(other.open())}, a: ${await outcome(other.get('a'))}`]
    await other.close()
    return log
  })

  agree('Symbol.asyncDispose closes iterators, keys() and values()', [
    'iterator: ok ["a","1"], disposed, next(): LEVEL_ITERATOR_NOT_OPEN',
    'keys: ok "a", disposed, next(): LEVEL_ITERATOR_NOT_OPEN',
    'values: ok "1", disposed, next(): LEVEL_ITERATOR_NOT_OPEN',
    'db.close(): ok'
  ], async (engine) => {
    const db = await opened(engine)
    const log = []
    for (const mode of MODES) {
      const it = db[mode]()
      const first = await outcome(it.next())
      await dispose(it)
      log.push(`${mode}: ${first}, disposed, next(): ${await outcome(it.next())}`)
    }
    log.push(`db.close(): ${await outcome(db.close())}`)
    return log
  }, true)

  agree('Symbol.asyncDispose closes a chained batch without writing it', [
    'disposed: put(): LEVEL_BATCH_NOT_OPEN, write(): LEVEL_BATCH_NOT_OPEN',
    'x: ok',
    `entries: ${BEFORE}`
  ], async (engine) => {
    const db = await opened(engine)
    const batch = db.batch().put('x', '1').put('a', 'changed')
    await dispose(batch)
    const log = [
      `disposed: put(): ${await outcome(() => batch.put('y', '1'))}, write(): ${await outcome(batch.write())}`,
      `x: ${await outcome(db.get('x'))}`,
      `entries: ${await entries(db)}`
    ]
    await db.close()
    return log
  }, true)

  agree('Symbol.asyncDispose closes a snapshot', [
    'read at the snapshot before: ok "1"',
    'after dispose, get: LEVEL_SNAPSHOT_NOT_OPEN, iterator: LEVEL_SNAPSHOT_NOT_OPEN',
    'latest: ok "changed"'
  ], async (engine) => {
    const db = await opened(engine)
    const snapshot = db.snapshot()
    await db.put('a', 'changed')
    const log = [`read at the snapshot before: ${await outcome(db.get('a', { snapshot }))}`]
    await dispose(snapshot)
    log.push(`after dispose, get: ${await outcome(db.get('a', { snapshot }))}, iterator: ${await outcome(() => db.iterator({ snapshot }).all())}`)
    log.push(`latest: ${await outcome(db.get('a'))}`)
    await db.close()
    return log
  }, true)
}
