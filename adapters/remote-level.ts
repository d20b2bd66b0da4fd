// An abstract-level database whose engine runs elsewhere: its operations go as
// messages (adapters/remote/protocol.ts) over a channel to a server
// (adapters/remote/server.ts) that serves lsm-level's engine, in a worker, another
// thread or another process. Each open attaches a session on a new connection
// (or one a launcher kept); close detaches it. Keys and values cross as
// Uint8Arrays; abstract-level does the encodings here.
//
// The browser's BrowserLevel (adapters/browser-level.ts) is this database with a worker
// launcher; in Node, a RemoteLevel can use a MessagePort to an engine served
// on another thread.
import { AbstractLevel, AbstractSnapshot } from 'abstract-level'
import type { AbstractDatabaseOptions } from 'abstract-level'
import ModuleError = require('module-error')
import type { RemoteConnection } from './remote/connection'
import type { BatchOpMessage, ChangeBatchMessage, Push, RangeMessage } from './remote/protocol'
import { RemoteDatabase, type RemoteSnapshotHandle } from './remote/remote-database'
import { ReadAheadIterator } from './remote/read-ahead'
import { resolveOptions } from '../lib/options'
import { pickEngineOptions, withoutEngineOptions } from './engine-options'
import type { LsmStats } from '../lib/stats'

export interface RemoteLevelOptions<K = string, V = string> {
  keyEncoding?: AbstractDatabaseOptions<K, V>['keyEncoding']
  valueEncoding?: AbstractDatabaseOptions<K, V>['valueEncoding']
  /** A connection to the server (`new RemoteConnection(channel)`), for one open of the database. */
  connect: () => RemoteConnection
  /**
   * Takes the connection back after close (default: closes it). A launcher
   * may keep it for a later open, if it is still healthy.
   */
  release?: (connection: RemoteConnection) => void
  /** Engine options (lib/options.ts), sent to the server as they are. */
  [engineOption: string]: unknown
}

interface RangeOptions extends RangeMessage {
  snapshot?: RemoteSnapshot
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

/** A snapshot held by the server's session. */
class RemoteSnapshot extends SnapshotBase {
  readonly remote: RemoteSnapshotHandle

  constructor (options: object, db: RemoteDatabase) {
    super(options)
    this.remote = db.snapshot()
  }

  /** The handle's number in the server's session. */
  get handle (): number {
    return this.remote.handle
  }

  async _close (): Promise<void> {
    await this.remote.close()
  }
}

// abstract-level's typings lag its manifest (snapshots, signals, ...).
type LevelManifest = ConstructorParameters<typeof AbstractLevel>[0]

function closeConnection (connection: RemoteConnection): void {
  connection.close()
}

/**
 * An abstract-level database served by lsm-level's engine over a channel.
 * Several RemoteLevels (in one place or many) may use one server's database
 * at once, each through its own channel and session.
 */
export class RemoteLevel<K = string, V = string> extends AbstractLevel<Uint8Array, K, V> {
  readonly location: string
  private connection: RemoteConnection | undefined
  private remote: RemoteDatabase | undefined
  private readonly connect: () => RemoteConnection
  private readonly release: (connection: RemoteConnection) => void
  private readonly engineOptions: Record<string, unknown>

  constructor (location: string, options: RemoteLevelOptions<K, V>) {
    if (typeof location !== 'string' || location === '') {
      throw new ModuleError("Invalid option 'location': must be a non-empty string", { code: 'LEVEL_INVALID_OPTION' })
    }
    const { connect, release, ...rest } = options
    const engineOptions = pickEngineOptions(rest)
    // Validated here, so that bad options fail at construction with a clear message.
    resolveOptions(engineOptions)
    super({
      encodings: { view: true },
      has: true,
      seek: true,
      implicitSnapshots: true,
      explicitSnapshots: true,
      snapshots: true,
      createIfMissing: true,
      errorIfExists: true,
      permanence: true,
      deferredOpen: true,
      additionalMethods: { approximateSize: true, compactRange: true, flush: true, stats: true, changes: true, currentSequence: true }
    } as LevelManifest, withoutEngineOptions(rest) as AbstractDatabaseOptions<K, V>)
    if (typeof connect !== 'function') {
      throw new ModuleError("Invalid option 'connect': must be a function that returns a RemoteConnection", { code: 'LEVEL_INVALID_OPTION' })
    }
    this.location = location
    this.connect = connect
    this.release = release ?? closeConnection
    this.engineOptions = engineOptions
  }

  private get server (): RemoteDatabase {
    if (this.remote === undefined) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    return this.remote
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const connection = this.connect()
    const engineOptions = { ...this.engineOptions, ...pickEngineOptions(options), createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists }
    try {
      this.remote = await RemoteDatabase.attach(connection, this.location, engineOptions)
    } catch (err) {
      this.release(connection)
      throw err
    }
    connection.onPush = (push) => this.pushed(connection, push)
    this.connection = connection
  }

  async _close (): Promise<void> {
    const connection = this.connection
    const remote = this.remote
    this.connection = undefined
    this.remote = undefined
    if (connection === undefined || remote === undefined) return
    connection.onPush = () => {}
    try {
      await remote.detach()
    } finally {
      this.release(connection)
    }
  }

  /**
   * A message from the server, unasked. 'closed': the server closed the
   * database (its session is detached already), so this database closes too;
   * operations then fail with LEVEL_DATABASE_NOT_OPEN.
   */
  private pushed (connection: RemoteConnection, push: Push): void {
    if (push.push !== 'closed' || this.connection !== connection) return
    this.connection = undefined
    this.remote = undefined
    this.release(connection)
    this.close().catch(() => {})
  }

  async _put (key: Uint8Array, value: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.server.put(key, value, { sync: options.sync === true })
  }

  async _del (key: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.server.del(key, { sync: options.sync === true })
  }

  async _batch (operations: BatchOpMessage[], options: { sync?: boolean }): Promise<void> {
    const ops = operations.map((op) => op.type === 'put' ? { type: op.type, key: op.key, value: op.value } : { type: op.type, key: op.key })
    await this.server.batch(ops, { sync: options.sync === true })
  }

  async _get (key: Uint8Array, options: { snapshot?: RemoteSnapshot }): Promise<Uint8Array | undefined> {
    return await this.server.get(key, { snapshot: options.snapshot?.remote })
  }

  async _getMany (keys: Uint8Array[], options: { snapshot?: RemoteSnapshot }): Promise<Array<Uint8Array | undefined>> {
    return await this.server.getMany(keys, { snapshot: options.snapshot?.remote })
  }

  async _has (key: Uint8Array, options: { snapshot?: RemoteSnapshot }): Promise<boolean> {
    return await this.server.has(key, { snapshot: options.snapshot?.remote })
  }

  async _hasMany (keys: Uint8Array[], options: { snapshot?: RemoteSnapshot }): Promise<boolean[]> {
    return await this.server.hasMany(keys, { snapshot: options.snapshot?.remote })
  }

  async _clear (options: RangeOptions): Promise<void> {
    await this.server.clear({ ...options, snapshot: options.snapshot?.remote })
  }

  _iterator (options: RangeOptions & { keys?: boolean, values?: boolean }): ReadAheadIterator {
    return new ReadAheadIterator(this, options, this.server.iterator({ ...options, snapshot: options.snapshot?.remote }))
  }

  _snapshot (options: object): RemoteSnapshot {
    return new RemoteSnapshot(options, this.server)
  }

  /**
   * Compacts the tables overlapping [start, end) (either open), as
   * LsmLevel#compactRange: the keys are encoded with the database's key
   * encoding, or `options.keyEncoding`.
   */
  async compactRange (start?: K, end?: K, options?: { keyEncoding?: string }): Promise<void> {
    const encode = this.keyEncoder(options)
    await this.callWhenOpen('compactRange', [start === undefined ? undefined : encode(start), end === undefined ? undefined : encode(end)])
  }

  /** Writes the memtable to a table. */
  async flush (): Promise<void> {
    await this.callWhenOpen('flush', [])
  }

  /** The engine's statistics (see LsmLevel#stats); asynchronous here, since they come from the server. */
  async stats (): Promise<LsmStats> {
    return await this.callWhenOpen('stats', []) as LsmStats
  }

  /** Approximate bytes on disk for keys in [start, end), encoded as LsmLevel#approximateSize encodes them. */
  async approximateSize (start: K, end: K, options?: { keyEncoding?: string }): Promise<number> {
    const encode = this.keyEncoder(options)
    return await this.callWhenOpen('approximateSize', [encode(start), encode(end)]) as number
  }

  /**
   * The committed batches after sequence number `since` (default: the
   * server's current one), in commit order, then live ones, as
   * LsmLevel#changes: keys and values as Uint8Arrays in their stored form.
   */
  async* changes (options: { since?: number } = {}): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    if (this.status === 'opening') await this.open({ passive: true } as object)
    yield* this.server.changes(options)
  }

  /** The sequence number of the server's last committed write (asynchronous here: it comes from the server). */
  async currentSequence (): Promise<number> {
    if (this.status === 'opening') await this.open({ passive: true } as object)
    return await this.server.currentSequence()
  }

  /** The database's key encoding (or the one named), to the bytes the server takes. */
  private keyEncoder (options?: { keyEncoding?: string }): (key: K) => Uint8Array {
    // abstract-level resolves any encoding name it knows; its typings list the names as literals.
    const enc = (options?.keyEncoding === undefined ? this.keyEncoding() : this.keyEncoding(options.keyEncoding as 'view')) as { encode (key: unknown): Uint8Array }
    return (key) => enc.encode(key)
  }

  /** Calls one of the server's additional methods now (in _open, after the attach: callWhenOpen would wait for the open itself). */
  protected async callServer (method: string, args: unknown[]): Promise<unknown> {
    return await this.server.call(method, args)
  }

  /** Calls one of the server's additional methods by name, once open. */
  protected async callWhenOpen (method: string, args: unknown[]): Promise<unknown> {
    if (this.status === 'opening') await this.open({ passive: true } as object)
    return await this.server.call(method, args)
  }
}
