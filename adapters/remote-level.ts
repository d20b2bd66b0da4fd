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
import { AbstractLevel, AbstractIterator, AbstractSnapshot } from 'abstract-level'
import type { AbstractDatabaseOptions } from 'abstract-level'
import ModuleError = require('module-error')
import type { RemoteConnection } from './remote/connection'
import { PROTOCOL_VERSION, type AttachResult, type BatchOpMessage, type Push, type RangeMessage } from './remote/protocol'
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

function rangeMessage (options: RangeOptions): RangeMessage {
  return { gt: options.gt, gte: options.gte, lt: options.lt, lte: options.lte, reverse: options.reverse === true, limit: options.limit }
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

/** A snapshot held by the server's session, named by the request that made it. */
class RemoteSnapshot extends SnapshotBase {
  readonly handle: number

  constructor (options: object, private readonly connection: RemoteConnection) {
    super(options)
    this.handle = connection.post({ op: 'snapshot' })
  }

  async _close (): Promise<void> {
    // A connection that ended took its session's handles with it.
    if (this.connection.healthy) await this.connection.request({ op: 'snapshotClose', snapshot: this.handle })
  }
}

type Entry = [Uint8Array | undefined, Uint8Array | undefined]

/** Entries fetched per request by next() (nextv() asks for what it is asked). */
const NEXT_BATCH = 64

// abstract-level's typings of the iterator constructor lag its runtime (options).
const IteratorBase = AbstractIterator as unknown as new (db: unknown, options: object) => AbstractIterator<RemoteLevel<unknown, unknown>, unknown, unknown>

/** An iterator held by the server's session, named by the request that made it; next() reads ahead. */
class RemoteIterator extends IteratorBase {
  private readonly handle: number
  private buffered: Entry[] = []
  private ended = false

  constructor (db: RemoteLevel<unknown, unknown>, options: RangeOptions & { keys?: boolean, values?: boolean }, private readonly connection: RemoteConnection) {
    super(db, options)
    this.handle = connection.post({ op: 'iterator', range: rangeMessage(options), keys: options.keys !== false, values: options.values !== false, snapshot: options.snapshot?.handle })
  }

  async _next (): Promise<Entry | undefined> {
    if (this.buffered.length === 0 && !this.ended) {
      this.buffered = await this.fetch(NEXT_BATCH)
      this.buffered.reverse()
      if (this.buffered.length === 0) this.ended = true
    }
    return this.buffered.pop()
  }

  async _nextv (size: number): Promise<Entry[]> {
    if (this.buffered.length > 0) return this.buffered.splice(Math.max(0, this.buffered.length - size)).reverse()
    if (this.ended) return []
    const out = await this.fetch(size)
    if (out.length === 0) this.ended = true
    return out
  }

  private async fetch (size: number): Promise<Entry[]> {
    return await this.connection.request({ op: 'nextv', iterator: this.handle, size }) as Entry[]
  }

  _seek (target: Uint8Array): void {
    this.buffered = []
    this.ended = false
    this.connection.post({ op: 'seek', iterator: this.handle, target })
  }

  async _close (): Promise<void> {
    // A connection that ended took its session's handles with it.
    if (this.connection.healthy) await this.connection.request({ op: 'iteratorClose', iterator: this.handle })
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
      additionalMethods: { approximateSize: true, compactRange: true, flush: true, stats: true }
    } as LevelManifest, withoutEngineOptions(rest) as AbstractDatabaseOptions<K, V>)
    if (typeof connect !== 'function') {
      throw new ModuleError("Invalid option 'connect': must be a function that returns a RemoteConnection", { code: 'LEVEL_INVALID_OPTION' })
    }
    this.location = location
    this.connect = connect
    this.release = release ?? closeConnection
    this.engineOptions = engineOptions
  }

  private get server (): RemoteConnection {
    if (this.connection === undefined) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    return this.connection
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const connection = this.connect()
    const engineOptions = { ...this.engineOptions, ...pickEngineOptions(options), createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists }
    try {
      // A server older than the remote protocol (a stale worker file) replies with no version.
      const attached = await connection.request({ op: 'attach', version: PROTOCOL_VERSION, location: this.location, options: engineOptions }) as AttachResult | undefined
      if (attached?.version !== PROTOCOL_VERSION) {
        throw new ModuleError(`The server speaks version ${String(attached?.version ?? 'none')} of the remote protocol, not ${PROTOCOL_VERSION}`, { code: 'LEVEL_NOT_SUPPORTED' })
      }
    } catch (err) {
      this.release(connection)
      throw err
    }
    connection.onPush = (push) => this.pushed(connection, push)
    this.connection = connection
  }

  async _close (): Promise<void> {
    const connection = this.connection
    this.connection = undefined
    if (connection === undefined) return
    connection.onPush = () => {}
    try {
      await connection.request({ op: 'detach' })
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
    this.release(connection)
    this.close().catch(() => {})
  }

  async _put (key: Uint8Array, value: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.server.request({ op: 'put', key, value, sync: options.sync === true })
  }

  async _del (key: Uint8Array, options: { sync?: boolean }): Promise<void> {
    await this.server.request({ op: 'del', key, sync: options.sync === true })
  }

  async _batch (operations: BatchOpMessage[], options: { sync?: boolean }): Promise<void> {
    const ops = operations.map((op) => op.type === 'put' ? { type: op.type, key: op.key, value: op.value } : { type: op.type, key: op.key })
    await this.server.request({ op: 'batch', ops, sync: options.sync === true })
  }

  async _get (key: Uint8Array, options: { snapshot?: RemoteSnapshot }): Promise<Uint8Array | undefined> {
    return await this.server.request({ op: 'get', key, snapshot: options.snapshot?.handle }) as Uint8Array | undefined
  }

  async _getMany (keys: Uint8Array[], options: { snapshot?: RemoteSnapshot }): Promise<Array<Uint8Array | undefined>> {
    return await this.server.request({ op: 'getMany', keys, snapshot: options.snapshot?.handle }) as Array<Uint8Array | undefined>
  }

  async _has (key: Uint8Array, options: { snapshot?: RemoteSnapshot }): Promise<boolean> {
    return await this.server.request({ op: 'has', key, snapshot: options.snapshot?.handle }) as boolean
  }

  async _hasMany (keys: Uint8Array[], options: { snapshot?: RemoteSnapshot }): Promise<boolean[]> {
    return await this.server.request({ op: 'hasMany', keys, snapshot: options.snapshot?.handle }) as boolean[]
  }

  async _clear (options: RangeOptions): Promise<void> {
    await this.server.request({ op: 'clear', range: rangeMessage(options), snapshot: options.snapshot?.handle })
  }

  _iterator (options: RangeOptions & { keys?: boolean, values?: boolean }): RemoteIterator {
    return new RemoteIterator(this as RemoteLevel<unknown, unknown>, options, this.server)
  }

  _snapshot (options: object): RemoteSnapshot {
    return new RemoteSnapshot(options, this.server)
  }

  /** Compacts the keys in [start, end) (encoded keys; all when omitted). */
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

  /** The database's key encoding (or the one named), to the bytes the server takes. */
  private keyEncoder (options?: { keyEncoding?: string }): (key: K) => Uint8Array {
    // abstract-level resolves any encoding name it knows; its typings list the names as literals.
    const enc = (options?.keyEncoding === undefined ? this.keyEncoding() : this.keyEncoding(options.keyEncoding as 'view')) as { encode (key: unknown): Uint8Array }
    return (key) => enc.encode(key)
  }

  private async callWhenOpen (method: string, args: unknown[]): Promise<unknown> {
    if (this.status === 'opening') await this.open({ passive: true } as object)
    return await this.server.request({ op: 'call', method, args })
  }
}
