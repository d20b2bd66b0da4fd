// A small fake of IndexedDB, as far as the fallback storage uses it
// (hosts/browser/idb-store.ts): databases with a schema version, object stores
// with out-of-line keys (strings, or arrays of numbers), put / delete /
// getAll / getAllKeys with bound key ranges, and transactions that run one at
// a time per database, see their own writes, and commit all at once when
// their requests are done (as IndexedDB auto-commits), or abort.
//
// For the crash tests: the committed state of every database can be copied
// (image()) and a new factory started from a copy (a reload after a crash at
// that moment: uncommitted transactions are gone); onCommit sees each commit
// just before its oncomplete. For the full-quota tests: a transaction that
// would take the stored bytes over quotaBytes aborts with QuotaExceededError.

type Key = string | number[]
type Store = Map<string, { key: Key, value: unknown }>
interface Database { version: number, stores: Map<string, Store> }
/** The committed state of every database of a factory. */
export type IdbImage = Map<string, Database>

function compareKeys (a: Key, b: Key): number {
  if (typeof a === 'string' || typeof b === 'string') {
    if (typeof a !== typeof b) return typeof a === 'string' ? 1 : -1
    return a < b ? -1 : a > b ? 1 : 0
  }
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1
  return a.length - b.length
}

function cloneValue (v: unknown): unknown {
  return structuredClone(v)
}

function copyImage (image: IdbImage): IdbImage {
  const out: IdbImage = new Map()
  for (const [name, db] of image) {
    const stores = new Map<string, Store>()
    for (const [s, store] of db.stores) stores.set(s, new Map(store))
    out.set(name, { version: db.version, stores })
  }
  return out
}

function bytesOf (value: unknown): number {
  if (value instanceof Uint8Array) return value.length
  return 64
}

export class FakeKeyRange {
  constructor (readonly lower: Key, readonly upper: Key) {}
  static bound (lower: Key, upper: Key): FakeKeyRange { return new FakeKeyRange(lower, upper) }
  includes (key: Key): boolean { return compareKeys(this.lower, key) <= 0 && compareKeys(key, this.upper) <= 0 }
}

class Request<T = unknown> {
  result!: T
  error: { name: string, message: string } | null = null
  onsuccess: ((e: unknown) => void) | null = null
  onerror: ((e: unknown) => void) | null = null
  onupgradeneeded: ((e: { oldVersion: number }) => void) | null = null
  onblocked: ((e: unknown) => void) | null = null
}

class FakeObjectStore {
  constructor (private readonly tx: FakeTransaction, private readonly name: string) {}

  private get store (): Store { return this.tx.working(this.name) }

  put (value: unknown, key: Key): Request {
    this.tx.writable()
    const v = cloneValue(value)
    return this.tx.request(() => { this.store.set(JSON.stringify(key), { key, value: v }); return key })
  }

  delete (query: Key | FakeKeyRange): Request {
    this.tx.writable()
    return this.tx.request(() => {
      if (query instanceof FakeKeyRange) {
        for (const [k, e] of this.store) if (query.includes(e.key)) this.store.delete(k)
      } else {
        this.store.delete(JSON.stringify(query))
      }
      return undefined
    })
  }

  private entries (query?: FakeKeyRange): Array<{ key: Key, value: unknown }> {
    return [...this.store.values()].filter((e) => query === undefined || query.includes(e.key)).sort((a, b) => compareKeys(a.key, b.key))
  }

  getAll (query?: FakeKeyRange): Request<unknown[]> {
    return this.tx.request(() => this.entries(query).map((e) => cloneValue(e.value)))
  }

  getAllKeys (query?: FakeKeyRange): Request<unknown[]> {
    return this.tx.request(() => this.entries(query).map((e) => e.key))
  }
}

export class FakeTransaction {
  error: { name: string, message: string } | null = null
  oncomplete: ((e: unknown) => void) | null = null
  onerror: ((e: unknown) => void) | null = null
  onabort: ((e: unknown) => void) | null = null
  private readonly queue: Array<() => void> = []
  private readonly copies = new Map<string, Store>()
  private started = false
  private done = false

  constructor (private readonly db: FakeDatabase, readonly mode: string, readonly durability: string | undefined) {}

  objectStore (name: string): FakeObjectStore {
    if (!this.db.state.stores.has(name)) throw Object.assign(new Error(`no object store ${name}`), { name: 'NotFoundError' })
    return new FakeObjectStore(this, name)
  }

  writable (): void {
    if (this.mode !== 'readwrite') throw Object.assign(new Error('read-only transaction'), { name: 'ReadOnlyError' })
    if (this.done) throw Object.assign(new Error('transaction finished'), { name: 'TransactionInactiveError' })
  }

  working (name: string): Store {
    let store = this.copies.get(name)
    if (store === undefined) this.copies.set(name, store = new Map(this.db.state.stores.get(name)))
    return store
  }

  request<T> (run: () => T): Request<T> {
    if (this.done) throw Object.assign(new Error('transaction finished'), { name: 'TransactionInactiveError' })
    const req = new Request<T>()
    this.queue.push(() => {
      req.result = run()
      req.onsuccess?.({})
    })
    return req
  }

  abort (): void {
    this.finish({ name: 'AbortError', message: 'aborted' })
  }

  /** Runs the queued requests (each callback may queue more), then commits. */
  run (): void {
    this.started = true
    const step = (): void => {
      if (this.done) return
      const next = this.queue.shift()
      if (next !== undefined) {
        next()
        setImmediate(step)
        return
      }
      this.commit()
    }
    setImmediate(step)
  }

  private commit (): void {
    const factory = this.db.factory
    if (this.mode === 'readwrite') {
      const next = new Map(this.db.state.stores)
      for (const [name, store] of this.copies) next.set(name, store)
      if (factory.quotaBytes !== undefined && factory.bytesWith(this.db.name, next) > factory.quotaBytes) {
        this.finish({ name: 'QuotaExceededError', message: 'the quota has been exceeded' })
        return
      }
      this.db.state.stores = next
      factory.commits++
      factory.onCommit?.(this)
    }
    this.done = true
    factory.finished(this)
    this.oncomplete?.({})
  }

  private finish (error: { name: string, message: string }): void {
    if (this.done) return
    this.done = true
    this.error = error
    this.db.factory.finished(this)
    setImmediate(() => this.onabort?.({}))
  }

  get isStarted (): boolean { return this.started }
}

class FakeDatabase {
  onversionchange: ((e: unknown) => void) | null = null
  closed = false

  constructor (readonly factory: FakeIdbFactory, readonly name: string, readonly state: Database) {}

  get objectStoreNames (): { contains (name: string): boolean } {
    return { contains: (name: string) => this.state.stores.has(name) }
  }

  createObjectStore (name: string): void {
    this.state.stores.set(name, new Map())
  }

  transaction (stores: string[], mode: 'readonly' | 'readwrite', options?: { durability?: string }): FakeTransaction {
    if (this.closed) throw Object.assign(new Error('the database connection is closing'), { name: 'InvalidStateError' })
    for (const s of stores) if (!this.state.stores.has(s)) throw Object.assign(new Error(`no object store ${s}`), { name: 'NotFoundError' })
    const tx = new FakeTransaction(this, mode, options?.durability)
    this.factory.durabilities.push(options?.durability)
    this.factory.enqueue(tx)
    return tx
  }

  close (): void {
    this.closed = true
  }
}

export class FakeIdbFactory {
  private readonly image: IdbImage
  /** Transactions waiting to run, per factory (one runs at a time). */
  private readonly waiting: FakeTransaction[] = []
  private running: FakeTransaction | undefined
  commits = 0
  quotaBytes: number | undefined
  onCommit: ((tx: FakeTransaction) => void) | undefined
  /** The durability each transaction asked for. */
  readonly durabilities: Array<string | undefined> = []

  constructor (image?: IdbImage) {
    this.image = image === undefined ? new Map() : copyImage(image)
  }

  /** A copy of the committed state of every database (a crash now loses the rest). */
  snapshot (): IdbImage {
    return copyImage(this.image)
  }

  /** Stored bytes of every database, with database `name`'s stores replaced by `stores`. */
  bytesWith (name: string, stores: Map<string, Store>): number {
    let n = 0
    for (const [dbName, db] of this.image) {
      for (const store of (dbName === name ? stores : db.stores).values()) for (const e of store.values()) n += bytesOf(e.value)
    }
    return n
  }

  open (name: string, version: number): Request<FakeDatabase> {
    const req = new Request<FakeDatabase>()
    setImmediate(() => {
      let state = this.image.get(name)
      if (state !== undefined && state.version > version) {
        req.error = { name: 'VersionError', message: `stored version ${state.version} is newer than ${version}` }
        req.onerror?.({})
        return
      }
      const oldVersion = state?.version ?? 0
      if (state === undefined) {
        state = { version, stores: new Map() }
        this.image.set(name, state)
      }
      const db = new FakeDatabase(this, name, state)
      req.result = db
      if (oldVersion < version) {
        state.version = version
        req.onupgradeneeded?.({ oldVersion })
      }
      req.onsuccess?.({})
    })
    return req
  }

  async databases (): Promise<Array<{ name: string, version: number }>> {
    return [...this.image].map(([name, db]) => ({ name, version: db.version }))
  }

  enqueue (tx: FakeTransaction): void {
    this.waiting.push(tx)
    this.next()
  }

  finished (tx: FakeTransaction): void {
    if (this.running === tx) this.running = undefined
    this.next()
  }

  private next (): void {
    if (this.running !== undefined) return
    const tx = this.waiting.shift()
    if (tx === undefined) return
    this.running = tx
    tx.run()
  }
}
