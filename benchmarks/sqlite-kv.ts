// SQLite as a key/value store, beside lsm-level in the benchmarks: one table
// `kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` (a B-tree ordered by key, as
// bytes), in WAL mode with `synchronous=NORMAL`: a commit is written to the WAL
// in the OS, not fsynced (as lsm-level's `sync: false`); the WAL is fsynced at
// its checkpoints. It offers the part of abstract-level's interface the
// benchmarks call (open, close, put, get, getSync, del, batch, iterator with
// nextv and `for await`), through prepared statements; each awaited call is a
// synchronous SQLite call behind a resolved promise, as an app that wraps
// SQLite in a Level-like API would write it. Keys and values are stored as
// bytes; with `utf8` encodings they are encoded here and decoded on the way out.
//
// The library: node:sqlite where the Node running the benchmark has it (22.5
// and later), else better-sqlite3, which `npm run bench:sqlite-install` puts in
// benchmarks/sqlite/ (it compiles SQLite from source: kept out of `npm ci`).
import * as fs from 'node:fs'
import * as path from 'node:path'

/** The statements of either library, as the benchmarks use them. */
interface Statement {
  get: (...params: unknown[]) => any
  run: (...params: unknown[]) => unknown
  iterate: (...params: unknown[]) => IterableIterator<any>
}
interface Database {
  exec: (sql: string) => unknown
  prepare: (sql: string) => Statement
  close: () => void
}

/** Which library is there: 'node:sqlite', 'better-sqlite3', or undefined. */
export function sqliteLibrary (): 'node:sqlite' | 'better-sqlite3' | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    if (typeof require('node:sqlite').DatabaseSync === 'function') return 'node:sqlite'
  } catch {}
  return fs.existsSync(betterSqlitePath()) ? 'better-sqlite3' : undefined
}

function betterSqlitePath (): string {
  // From dist/benchmarks/ (compiled) or benchmarks/ (source) to the repository's benchmarks/sqlite/.
  const root = __dirname.includes(`${path.sep}dist${path.sep}`) ? path.join(__dirname, '..', '..') : path.join(__dirname, '..')
  return path.join(root, 'benchmarks', 'sqlite', 'node_modules', 'better-sqlite3')
}

/** The library's version, for the report. */
export function sqliteVersion (): string {
  const lib = sqliteLibrary()
  if (lib === undefined) return 'not installed'
  const db = openDatabase(':memory:')
  const v = db.prepare('SELECT sqlite_version() AS v').get().v as string
  db.close()
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pkg = lib === 'better-sqlite3' ? ` (better-sqlite3 ${require(path.join(betterSqlitePath(), 'package.json')).version as string})` : ' (node:sqlite)'
  return `SQLite ${v}${pkg}`
}

function openDatabase (file: string): Database {
  /* eslint-disable @typescript-eslint/no-require-imports */
  if (sqliteLibrary() === 'node:sqlite') return new (require('node:sqlite').DatabaseSync)(file)
  return new (require(betterSqlitePath()))(file)
  /* eslint-enable @typescript-eslint/no-require-imports */
}

type Encoding = 'utf8' | 'buffer'
interface Options { keyEncoding?: Encoding, valueEncoding?: Encoding }
interface BatchOp { type: 'put' | 'del', key: any, value?: any }
interface IteratorOptions { gt?: any, gte?: any, lt?: any, lte?: any }

export class SqliteKv {
  private db: Database | undefined
  private stmts!: { get: Statement, put: Statement, del: Statement }
  private readonly utf8Keys: boolean
  private readonly utf8Values: boolean

  constructor (readonly location: string, options: Options = {}) {
    this.utf8Keys = options.keyEncoding === 'utf8'
    this.utf8Values = options.valueEncoding === 'utf8'
  }

  async open (): Promise<void> {
    fs.mkdirSync(this.location, { recursive: true })
    const db = openDatabase(path.join(this.location, 'kv.sqlite'))
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = NORMAL')
    db.exec('CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID')
    this.stmts = {
      get: db.prepare('SELECT v FROM kv WHERE k = ?'),
      put: db.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)'),
      del: db.prepare('DELETE FROM kv WHERE k = ?')
    }
    this.db = db
  }

  async close (): Promise<void> {
    this.db?.close()
    this.db = undefined
  }

  private key (k: any): Uint8Array { return typeof k === 'string' ? Buffer.from(k, 'utf8') : k }
  private value (v: any): Uint8Array { return typeof v === 'string' ? Buffer.from(v, 'utf8') : v }
  private outKey (k: Uint8Array): any { return this.utf8Keys ? Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('utf8') : Buffer.from(k.buffer, k.byteOffset, k.byteLength) }
  private outValue (v: Uint8Array): any { return this.utf8Values ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength) }

  getSync (key: any): any {
    const row = this.stmts.get.get(this.key(key))
    return row === undefined ? undefined : this.outValue(row.v)
  }

  async get (key: any): Promise<any> { return this.getSync(key) }

  async put (key: any, value: any, options?: { sync?: boolean }): Promise<void> {
    if (options?.sync === true) throw new Error('SqliteKv: sync writes are not measured (synchronous=NORMAL)')
    this.stmts.put.run(this.key(key), this.value(value))
  }

  async del (key: any): Promise<void> { this.stmts.del.run(this.key(key)) }

  /** One transaction. */
  async batch (ops: BatchOp[]): Promise<void> {
    this.db!.exec('BEGIN')
    try {
      for (const op of ops) {
        if (op.type === 'put') this.stmts.put.run(this.key(op.key), this.value(op.value))
        else this.stmts.del.run(this.key(op.key))
      }
      this.db!.exec('COMMIT')
    } catch (err) {
      this.db!.exec('ROLLBACK')
      throw err
    }
  }

  /** What a full compaction is to SQLite here: the WAL checkpointed into the database file and truncated. */
  async compactRange (): Promise<void> { this.db!.exec('PRAGMA wal_checkpoint(TRUNCATE)') }

  iterator (options: IteratorOptions = {}): SqliteIterator {
    const where: string[] = []
    const params: Uint8Array[] = []
    for (const [op, sql] of [['gt', '>'], ['gte', '>='], ['lt', '<'], ['lte', '<=']] as const) {
      if (options[op] !== undefined) { where.push(`k ${sql} ?`); params.push(this.key(options[op])) }
    }
    const stmt = this.db!.prepare(`SELECT k, v FROM kv${where.length > 0 ? ' WHERE ' + where.join(' AND ') : ''} ORDER BY k`)
    return new SqliteIterator(stmt.iterate(...params), (k) => this.outKey(k), (v) => this.outValue(v))
  }
}

/** A cursor over a statement's rows, stepped as they are asked for. */
class SqliteIterator {
  private done = false

  constructor (private readonly rows: IterableIterator<any>, private readonly outKey: (k: Uint8Array) => any, private readonly outValue: (v: Uint8Array) => any) {}

  async next (): Promise<[any, any] | undefined> {
    if (this.done) return undefined
    const r = this.rows.next()
    if (r.done === true) { this.done = true; return undefined }
    return [this.outKey(r.value.k), this.outValue(r.value.v)]
  }

  async nextv (size: number): Promise<Array<[any, any]>> {
    const out: Array<[any, any]> = []
    while (!this.done && out.length < size) {
      const r = this.rows.next()
      if (r.done === true) this.done = true
      else out.push([this.outKey(r.value.k), this.outValue(r.value.v)])
    }
    return out
  }

  async close (): Promise<void> {
    if (!this.done) this.rows.return?.()
    this.done = true
  }

  async* [Symbol.asyncIterator] (): AsyncGenerator<[any, any]> {
    try {
      for (let e = await this.next(); e !== undefined; e = await this.next()) yield e
    } finally {
      await this.close()
    }
  }
}
