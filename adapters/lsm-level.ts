// lsm-level: an abstract-level database over the LSM engine in lib/. This file
// only translates between the Level API (encodings, options, iterators,
// snapshots) and the engine; it holds no storage logic.
import { AbstractLevel, AbstractSnapshot } from 'abstract-level'
import type { AbstractIterator, AbstractIteratorOptions, AbstractDatabaseOptions, AbstractPutOptions, AbstractDelOptions, AbstractBatchOptions, AbstractBatchOperation, AbstractChainedBatch, AbstractChainedBatchWriteOptions, AbstractSublevel, AbstractSublevelOptions } from 'abstract-level'
import ModuleError = require('module-error')
import { Engine, encodeBatch, type BatchOp, type LevelInfo, type RecoveryReport, type ChangeBatch, type CheckpointResult } from '../lib/engine'
import type { Snapshot } from '../lib/snapshots'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { resolveOptions, type EngineOptions } from '../lib/options'
import { pickEngineOptions, withoutEngineOptions } from './engine-options'
import { invalidOption, levelError } from '../lib/errors'
import type { LsmStats } from '../lib/stats'
import { engineProperty } from './engine-property'
import type { FileMeta } from '../lib/manifest/file-meta'
import { ownedOut, toView, type EncodingName, type Format } from './bytes'
import { restore, type RestoreOptions, type RestoreResult } from '../lib/backup/restore'
import type { ObjectStore } from '../lib/backup/object-store'
import type { ReplicateOptions } from '../lib/backup/shipper'
import { platform } from '../lib/platform'
import { LsmIterator, LsmKeyIterator, LsmValueIterator, rangeFrom, type IteratorOptions, type RangeReadOptions } from './lsm-cursor'
import type { MultiProcessClient, MultiProcessClientOptions } from './multi-process/client'
import { RUN_HERE, notOnClient } from './multi-process/run-here'

export type { EngineOptions, LevelInfo, RecoveryReport, FileMeta, LsmStats }

/** Options of the constructor and of open(): the Level options plus the engine's (lib/options.ts). */
export interface LsmLevelOptions<K = string, V = string> extends Partial<EngineOptions> {
  keyEncoding?: AbstractDatabaseOptions<K, V>['keyEncoding']
  valueEncoding?: AbstractDatabaseOptions<K, V>['valueEncoding']
  passive?: boolean
  /**
   * Let other processes open the database too (Node): the first open owns it
   * and serves the others over a socket; if it goes away, one of them takes
   * over (README, "Many processes"). Default false.
   */
  multiProcess?: boolean
  /** multiProcess: how long a client waits for an owner that does not answer before LEVEL_OWNER_UNREACHABLE (ms, default 5000). */
  ownerTimeoutMs?: number
  [other: string]: unknown
}

const ENGINE = Symbol('engine')
const CLIENT = Symbol('client')

/** Makes the link of a multiProcess open; installed by the Node entry (adapters/multi-process/index.ts). */
let multiProcessClient: ((options: MultiProcessClientOptions) => MultiProcessClient) | undefined

/** Installs multiProcess support (the Node entry does). */
export function installMultiProcess (make: (options: MultiProcessClientOptions) => MultiProcessClient): void {
  multiProcessClient = make
}

const DEFAULT_OWNER_TIMEOUT_MS = 5000

/** The multiProcess options, checked; undefined when the open is the process's alone. */
function multiProcessOptions (options: Record<string, unknown>): { ownerTimeoutMs: number } | undefined {
  const { multiProcess, ownerTimeoutMs } = options
  if (multiProcess !== undefined && typeof multiProcess !== 'boolean') throw invalidOption('multiProcess', 'must be a boolean')
  if (ownerTimeoutMs !== undefined && (typeof ownerTimeoutMs !== 'number' || !Number.isInteger(ownerTimeoutMs) || ownerTimeoutMs < 1)) {
    throw invalidOption('ownerTimeoutMs', 'must be a positive integer (milliseconds)')
  }
  if (multiProcess !== true) return undefined
  if (options.readOnly === true) throw invalidOption('multiProcess', 'a read-only open takes no lock and owns nothing: use readOnly or multiProcess, not both')
  if (multiProcessClient === undefined) throw levelError('LEVEL_NOT_SUPPORTED', 'multiProcess is for Node (processes sharing a directory); in browsers, tabs share a database through BrowserLevel')
  return { ownerTimeoutMs: (ownerTimeoutMs as number | undefined) ?? DEFAULT_OWNER_TIMEOUT_MS }
}

/** The Level options alone, without ours. */
function levelOptions (options: Record<string, unknown>): Record<string, unknown> {
  const { multiProcess, ownerTimeoutMs, ...rest } = withoutEngineOptions(options)
  return rest
}

// abstract-level's typings lag its manifest (getSync, snapshots, signals, ...).
type LevelManifest = ConstructorParameters<typeof AbstractLevel>[0]

/** An operation of abstract-level's _batch(): key and value already encoded. */
interface LevelBatchOp {
  type: 'put' | 'del'
  key: Format
  value?: Format
}

/** Options of abstract-level's point reads (encodings normalised by abstract-level). */
interface ReadOptions {
  snapshot?: LsmSnapshot
  valueEncoding: EncodingName
}

/** Options of abstract-level's _put, _del and _batch, with ours. */
interface WriteOptions {
  sync?: boolean
}

/** The one operation of put() and del(), reused: encodeBatch copies it out at once. */
const single: BatchOp[] = [{ kind: KIND_VALUE, key: '', value: undefined }]

/** encodeBatch() of a single put (value given) or del. */
function encodeOne (kind: number, key: Format, value: Format | undefined): Buffer {
  const op = single[0]
  op.kind = kind
  op.key = key
  op.value = value
  const batch = encodeBatch(single)
  op.key = ''
  op.value = undefined
  return batch
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

class LsmSnapshot extends SnapshotBase {
  readonly [ENGINE]: Engine
  readonly inner: Snapshot

  constructor (options: object, engine: Engine) {
    super(options)
    this[ENGINE] = engine
    this.inner = engine.snapshot()
  }

  async _close (): Promise<void> {
    this[ENGINE].releaseSnapshot(this.inner)
  }
}

/**
 * An abstract-level database stored in a log-structured merge-tree in `location`.
 * A drop-in for `level` / `classic-level` (`new LsmLevel('./db')`).
 */
// Merged with the interface LsmLevel below, which declares the write methods' `sync` option.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class LsmLevel<K = string, V = string> extends AbstractLevel<Format, K, V> {
  readonly location: string
  private [ENGINE]: Engine | undefined
  /** multiProcess: the link to the owner (set while open); the engine is set when this process is the owner. */
  private [CLIENT]: MultiProcessClient | undefined
  private readonly engineOptions: Partial<EngineOptions>
  private readonly multiProcess: { ownerTimeoutMs: number } | undefined

  constructor (location: string, options?: LsmLevelOptions<K, V>) {
    if (typeof location !== 'string' || location === '') {
      throw invalidOption('location', 'must be a non-empty string')
    }
    const engineOptions = pickEngineOptions(options ?? {})
    // Validate now, so bad options fail at construction with a clear message.
    resolveOptions(engineOptions)
    const multiProcess = multiProcessOptions({ ...options, ...engineOptions })
    super({
      encodings: { buffer: true, view: true, utf8: true },
      has: true,
      // A multiProcess open has getSync() only while it owns the database: not a promise the manifest can make.
      getSync: multiProcess === undefined,
      seek: true,
      implicitSnapshots: true,
      explicitSnapshots: true,
      createIfMissing: true,
      errorIfExists: true,
      permanence: true,
      deferredOpen: true,
      snapshots: true,
      signals: { iterators: true },
      additionalMethods: { approximateSize: true, compactRange: true, getProperty: true, stats: true, levels: true, flush: true, checkpoint: true, changes: true, refresh: true, currentSequence: true, fetchStats: true, fetchProperty: true, replicate: true },
      // Not a field of abstract-level's manifest (it has none for this): ours.
      readOnly: engineOptions.readOnly === true
    } as LevelManifest, levelOptions(options ?? {}) as AbstractDatabaseOptions<K, V>)
    this.location = location
    this.engineOptions = engineOptions
    this.multiProcess = multiProcess
  }

  /**
   * multiProcess: 'owner' when this process runs the engine (and serves the
   * database's other processes), 'client' when another process does;
   * undefined while no owner is known (opening, failing over) or without multiProcess.
   */
  get processRole (): 'owner' | 'client' | undefined {
    return this[CLIENT]?.role
  }

  /** The link to the owner, when this open is a client now. */
  private clientNow (): MultiProcessClient | undefined {
    return this[ENGINE] === undefined ? this[CLIENT] : undefined
  }

  /** The engine, for extensions and tests. Throws if the database is not open. */
  get engine (): Engine {
    const e = this[ENGINE]
    if (!e) {
      if (this[CLIENT] !== undefined) throw notOnClient('The engine', 'the Level API (its operations go to the owner)')
      throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    }
    return e
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const merged = { ...this.engineOptions, ...pickEngineOptions(options) }
    merged.createIfMissing = options.createIfMissing
    merged.errorIfExists = options.errorIfExists
    if (this.multiProcess !== undefined) {
      await this.openShared(merged)
      return
    }
    this[ENGINE] = await Engine.open(this.location, merged)
  }

  /** multiProcess: owns the database (engine set), or becomes a client of the process that does. */
  private async openShared (options: Partial<EngineOptions>): Promise<void> {
    const { createIfMissing, errorIfExists, ...engineOptions } = options
    const client = multiProcessClient!({
      location: this.location,
      engineOptions,
      ownerTimeoutMs: this.multiProcess!.ownerTimeoutMs,
      onOwner: (engine) => { this[ENGINE] = engine }
    })
    try {
      await client.open({ createIfMissing: createIfMissing !== false, errorIfExists: errorIfExists === true })
    } catch (err) {
      this[ENGINE] = undefined
      throw err
    }
    this[CLIENT] = client
  }

  async _close (): Promise<void> {
    const e = this[ENGINE]
    const client = this[CLIENT]
    this[ENGINE] = undefined
    this[CLIENT] = undefined
    // A multiProcess owner's engine is its link's to close (after it stops serving).
    if (client !== undefined) await client.close()
    else if (e) await e.close()
  }

  // Not async: the engine's promise is returned as is (one promise less per write).
  _put (key: Format, value: Format, options: WriteOptions): Promise<void> {
    const engine = this[ENGINE]
    if (engine === undefined) return this.onOwner((c) => c.put(key, value, options.sync === true), () => this._put(key, value, options))
    return engine.write(encodeOne(KIND_VALUE, key, value), options.sync === true)
  }

  _del (key: Format, options: WriteOptions): Promise<void> {
    const engine = this[ENGINE]
    if (engine === undefined) return this.onOwner((c) => c.del(key, options.sync === true), () => this._del(key, options))
    return engine.write(encodeOne(KIND_DELETE, key, undefined), options.sync === true)
  }

  /**
   * multiProcess, as a client: `remote` sends the operation to the owner; if
   * this process has become the owner meanwhile, `here` runs it on the engine.
   */
  private async onOwner<T> (remote: (client: MultiProcessClient) => Promise<T | typeof RUN_HERE>, here: () => T | Promise<T>): Promise<T> {
    const client = this[CLIENT]
    if (client === undefined) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    const result = await remote(client)
    return result === RUN_HERE ? await here() : result
  }

  /**
   * The operations (keys and values already encoded and prefixed by
   * abstract-level) are copied once, straight into the batch's log record
   * payload, which the memtable then reads them from (lib/wal/batch.ts).
   */
  _batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> {
    if (this[ENGINE] === undefined) return this.onOwner((c) => c.batch(operations, options.sync === true), () => this._batch(operations, options))
    const ops = new Array<BatchOp>(operations.length)
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i]
      if (op.type === 'put') ops[i] = { kind: KIND_VALUE, key: op.key, value: op.value }
      else if (op.type === 'del') ops[i] = { kind: KIND_DELETE, key: op.key }
      else throw levelError('LEVEL_INVALID_OPTION', `A batch operation's type must be 'put' or 'del', not '${String(op.type)}'`)
    }
    return this[ENGINE]!.write(encodeBatch(ops), options.sync === true)
  }

  _getSync (key: Format, options: ReadOptions): Format | undefined {
    if (this[ENGINE] === undefined) throw notOnClient('getSync()', 'await db.get()')
    const value = this[ENGINE]!.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  /**
   * Returns the value itself, not a promise, when the read completes now (the
   * common case: abstract-level awaits it either way, and a plain value saves
   * the async function's promise); a promise when the read waits for the next turn.
   */
  _get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> {
    const engine = this[ENGINE]
    if (engine === undefined) return this.onOwner((c) => c.get(key, options), () => this._get(key, options))
    if (engine.turn.exhausted()) return this.getLater(engine, key, options)
    const value = engine.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  private async getLater (engine: Engine, key: Format, options: ReadOptions): Promise<Format | undefined> {
    return await engine.readAtPoint(options.snapshot?.inner, (at) => {
      const value = engine.get(toView(key), at)
      return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
    })
  }

  async _getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> {
    const engine = this[ENGINE]
    if (engine === undefined) return await this.onOwner((c) => c.getMany(keys, options), async () => await this._getMany(keys, options))
    return await engine.readAtPoint(options.snapshot?.inner, (at) => {
      const out = new Array(keys.length)
      for (let i = 0; i < keys.length; i++) {
        const value = engine.get(toView(keys[i]), at)
        out[i] = value === undefined ? undefined : ownedOut(value, options.valueEncoding)
      }
      return out
    })
  }

  async _has (key: Format, options: ReadOptions): Promise<boolean> {
    const engine = this[ENGINE]
    if (engine === undefined) return await this.onOwner((c) => c.has(key, options), async () => await this._has(key, options))
    return await engine.readAtPoint(options.snapshot?.inner, (at) => engine.get(toView(key), at) !== undefined)
  }

  async _hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> {
    const engine = this[ENGINE]
    if (engine === undefined) return await this.onOwner((c) => c.hasMany(keys, options), async () => await this._hasMany(keys, options))
    return await engine.readAtPoint(options.snapshot?.inner, (at) => keys.map((k) => engine.get(toView(k), at) !== undefined))
  }

  _iterator (options: IteratorOptions): LsmIterator<this, K, V> {
    const client = this.clientNow()
    if (client !== undefined) return client.iterator(this, options as never) as unknown as LsmIterator<this, K, V>
    return new LsmIterator<this, K, V>(this, options, this[ENGINE]!)
  }

  _keys (options: IteratorOptions): LsmKeyIterator<this, K, V> {
    // A client's keys() and values() are abstract-level's, over its _iterator().
    if (this.clientNow() !== undefined) return (AbstractLevel.prototype as unknown as { _keys (o: unknown): never })._keys.call(this, options)
    return new LsmKeyIterator<this, K, V>(this, options, this[ENGINE]!)
  }

  _values (options: IteratorOptions): LsmValueIterator<this, K, V> {
    if (this.clientNow() !== undefined) return (AbstractLevel.prototype as unknown as { _values (o: unknown): never })._values.call(this, options)
    return new LsmValueIterator<this, K, V>(this, options, this[ENGINE]!)
  }

  _snapshot (options: object): LsmSnapshot {
    const client = this.clientNow()
    if (client !== undefined) return client.snapshot(options) as unknown as LsmSnapshot
    return new LsmSnapshot(options, this[ENGINE]!)
  }

  /** See Engine.clear: one range tombstone, or point deletes when limited or at a snapshot. */
  async _clear (options: RangeReadOptions & { limit: number }): Promise<void> {
    if (this[ENGINE] === undefined) return await this.onOwner((c) => c.clear(options as never), async () => await this._clear(options))
    const limit = options.limit >= 0 ? options.limit : Infinity
    await this[ENGINE]!.clear(rangeFrom(options), limit, options.snapshot?.inner)
  }

  // ------------------------------------------------------------ extensions

  /** Files and bytes per LSM level. */
  levels (): LevelInfo[] {
    if (this.clientNow() !== undefined) throw notOnClient('levels()', '(await db.fetchStats()).levels')
    return this.engine.levels()
  }

  /** Flushes the memtable and compacts every table overlapping [start, end] down the tree. */
  async compactRange (start?: K | Format, end?: K | Format): Promise<void> {
    const enc = (k: K | Format | undefined): Buffer | undefined => k === undefined || k === null ? undefined : toView(this.keyEncoding().encode(k as K))
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) {
      const args = [enc(start), enc(end)]
      return await this.onOwner((c) => c.call('compactRange', args) as Promise<void>, async () => await this.compactRange(start, end))
    }
    await this.engine.compactRange(enc(start), enc(end))
  }

  /** Writes the memtable to a level-0 table and waits for it. */
  async flush (): Promise<void> {
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) return await this.onOwner((c) => c.call('flush', []) as Promise<void>, async () => await this.flush())
    await this.engine.flushMemTable()
  }

  /**
   * Writes an openable copy of the database as of one sequence number into
   * `dir` (which must not exist, or be empty): tables hard-linked (copied
   * across file systems), the unflushed writes included. Safe under concurrent
   * writes and compactions. Resolves with the checkpoint's sequence number and
   * what was linked or copied.
   */
  async checkpoint (dir: string): Promise<CheckpointResult> {
    if (typeof dir !== 'string' || dir === '') throw invalidOption('dir', 'checkpoint directory must be a non-empty string')
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) {
      // The owner writes it: the path is this process's, made absolute; a checkpoint is not retried on the next owner.
      const absolute = platform().resolvePath(dir)
      return await this.onOwner((c) => c.call('checkpoint', [absolute], true) as Promise<CheckpointResult>, async () => await this.checkpoint(dir))
    }
    return await this.engine.checkpoint(dir)
  }

  /**
   * Ships the database to an object store from now until close (README,
   * "Backups and replicas"; lib/backup/shipper.ts): tables once, the logs'
   * new records at most every intervalMs, a point per version. Resolves with
   * the generation's id once its first object is in the store.
   */
  async replicate (store: ObjectStore, options: ReplicateOptions = {}): Promise<{ generation: string }> {
    if (this.status === 'opening') await this.open({ passive: true })
    return { generation: (await this.engine.replicate(store, options)).generation }
  }

  /** Restores a backup from `store` into `dir` (lib/backup/restore.ts): the newest state, or as of options.sequence or options.time. */
  static async restore (store: ObjectStore, dir: string, options: RestoreOptions = {}): Promise<RestoreResult> {
    if (typeof dir !== 'string' || dir === '') throw invalidOption('dir', 'restore directory must be a non-empty string')
    return await restore(store, platform().fileSystem, platform().resolvePath(dir), options)
  }

  /** The sequence number of the last committed write (each operation of a batch takes one). */
  get sequence (): number {
    if (this.clientNow() !== undefined) throw notOnClient('sequence', 'await db.currentSequence()')
    return this.engine.lastSequence
  }

  /** The sequence number of the last committed write; asks the owner when another process owns the database (multiProcess). */
  async currentSequence (): Promise<number> {
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) return await this.onOwner((c) => c.currentSequence(), async () => await this.currentSequence())
    return this.engine.lastSequence
  }

  /**
   * The committed batches after sequence number `since` (default: the current
   * one, i.e. only writes to come), in commit order, then new ones as they
   * commit, until the database closes or the loop stops: `{ seq, ops }`, `seq`
   * being the batch's last sequence number; ops are
   * `{ type: 'put', key, value }`, `{ type: 'del', key }` or
   * `{ type: 'clear', key, end }` (an unlimited clear(): [key, end)), with keys
   * and values as Buffers in their stored form (sublevels' keys with their
   * prefix). History before the current logs needs the retainLogBytes /
   * retainLogAgeMs options; a `since` older than what is kept fails with
   * LEVEL_CHANGES_NOT_RETAINED.
   */
  async* changes (options: { since?: number } = {}): AsyncGenerator<ChangeBatch, void, undefined> {
    if (this.status === 'opening') await this.open({ passive: true })
    const client = this.clientNow()
    if (client !== undefined) {
      for await (const batch of client.changes(options.since)) {
        if (batch === RUN_HERE) break
        yield batch
      }
      // Ended, or this process became the owner before the feed started: it starts here.
      if (this.clientNow() !== undefined) return
    }
    const engine = this.engine
    yield* engine.changes(options.since ?? engine.lastSequence)
  }

  /**
   * Read-only opens (option readOnly): moves to the writer's latest committed
   * state; resolves true if reads now see newer writes. Iterators and
   * snapshots opened before keep their view. Rejects with LEVEL_NOT_SUPPORTED
   * on a database opened for writing.
   */
  async refresh (): Promise<boolean> {
    if (this.status === 'opening') await this.open()
    if (this[CLIENT] !== undefined) throw levelError('LEVEL_NOT_SUPPORTED', 'refresh() is for read-only opens (option readOnly); a multiProcess open reads the owner\'s latest state')
    return await this.engine.refresh()
  }

  /** Structured statistics: levels, amplification, byte counters, Bloom and cache counters (see lib/stats.ts). */
  stats (): LsmStats {
    if (this.clientNow() !== undefined) throw notOnClient('stats()', 'await db.fetchStats()')
    return this.engine.stats()
  }

  /** stats(), from the owner when another process owns the database (multiProcess). */
  async fetchStats (): Promise<LsmStats> {
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) return await this.onOwner((c) => c.call('stats', []) as Promise<LsmStats>, async () => await this.fetchStats())
    return this.engine.stats()
  }

  /** getProperty(), from the owner when another process owns the database (multiProcess). */
  async fetchProperty (name: string): Promise<string> {
    if (this.status === 'opening') await this.open({ passive: true })
    if (this.clientNow() !== undefined) return await this.onOwner((c) => c.call('getProperty', [name]) as Promise<string>, async () => await this.fetchProperty(name))
    return this.getProperty(name)
  }

  /**
   * A property as text, synchronously, as in classic-level: 'lsm.stats',
   * 'lsm.num-files-at-level<N>', 'lsm.sstables', 'lsm.approximate-memory-usage'
   * (each also under the 'leveldb.' prefix).
   */
  getProperty (name: string): string {
    if (this.clientNow() !== undefined) throw notOnClient('getProperty()', 'await db.fetchProperty(name)')
    return engineProperty(this.engine, name)
  }

  /** Approximate bytes on disk used by keys in [start, end). */
  async approximateSize (start: K | Format, end: K | Format, options?: { keyEncoding?: string }): Promise<number> {
    if (this.status === 'opening') await this.open({ passive: true })
    // abstract-level resolves any encoding name it knows; its typings list the names as literals.
    const enc = (options?.keyEncoding === undefined ? this.keyEncoding() : this.keyEncoding(options.keyEncoding as 'utf8')) as { encode (key: unknown): Format }
    if (this.clientNow() !== undefined) {
      const args = [toView(enc.encode(start)), toView(enc.encode(end))]
      return await this.onOwner((c) => c.call('approximateSize', args) as Promise<number>, async () => await this.approximateSize(start, end, options))
    }
    return this.engine.approximateSize(toView(enc.encode(start)), toView(enc.encode(end)))
  }

  /**
   * Rebuilds a usable database in `location` from the tables and logs that
   * survive damage (see hosts/node/tools/repair.ts); the database must not be open. Returns
   * what was kept, salvaged, dropped and replayed.
   */
  static async repair (location: string, options?: import('../hosts/node/tools/repair.js').RepairOptions): Promise<import('../hosts/node/tools/repair.js').RepairReport> {
    return await (await import('../hosts/node/tools/repair.js')).repair(location, options)
  }

  /**
   * Imports the LevelDB database in `source` (a classic-level directory, which
   * must be closed) into a new lsm-level database at `location` (which must not
   * exist, or be empty), with the same contents (see hosts/node/tools/import-leveldb.ts).
   * The source is only read. A damaged source file fails with LEVEL_CORRUPTION
   * naming it, and nothing is left at `location`. Returns what was read and how
   * long it took.
   */
  static async importLevelDB (source: string, location: string, options?: import('../hosts/node/tools/import-leveldb.js').ImportOptions): Promise<import('../hosts/node/tools/import-leveldb.js').ImportReport> {
    return await (await import('../hosts/node/tools/import-leveldb.js')).importLevelDB(source, location, options)
  }

  /**
   * Deletes the database in `location` (its own files, then the directory if
   * empty). Fails with LEVEL_LOCKED if it is open.
   */
  static async destroy (location: string): Promise<void> {
    await (await import('../hosts/node/tools/repair.js')).destroy(location)
  }
}

/** Options of put(): abstract-level's plus `sync` (resolve only after an fdatasync covering the write). */
export interface LsmPutOptions<K, V> extends AbstractPutOptions<K, V> {
  sync?: boolean | undefined
}

/** Options of del(): abstract-level's plus `sync`. */
export interface LsmDelOptions<K> extends AbstractDelOptions<K> {
  sync?: boolean | undefined
}

/** Options of batch(): abstract-level's plus `sync`. */
export interface LsmBatchOptions<K, V> extends AbstractBatchOptions<K, V> {
  sync?: boolean | undefined
}

/**
 * Options of iterator(): abstract-level's plus `fillCache`: whether the table
 * blocks the iterator reads go into the block cache (default: not those of a
 * long run of consecutive blocks; README).
 */
export interface LsmIteratorOptions<K, V> extends AbstractIteratorOptions<K, V> {
  fillCache?: boolean | undefined
}

// Declaration merging: the write methods' signatures with the `sync` option,
// iterator()'s with `fillCache` (abstract-level's typings have neither). Types
// only; the methods are inherited.
export interface LsmLevel<K = string, V = string> {
  put (key: K, value: V): Promise<void>
  put<PK = K, PV = V> (key: PK, value: PV, options: LsmPutOptions<PK, PV>): Promise<void>
  del (key: K): Promise<void>
  del<DK = K> (key: DK, options: LsmDelOptions<DK>): Promise<void>
  batch (operations: Array<AbstractBatchOperation<this, K, V>>): Promise<void>
  batch<BK = K, BV = V> (operations: Array<AbstractBatchOperation<this, BK, BV>>, options: LsmBatchOptions<BK, BV>): Promise<void>
  batch (): LsmChainedBatch<this, K, V>
  iterator (): AbstractIterator<this, K, V>
  iterator<IK = K, IV = V> (options: LsmIteratorOptions<IK, IV>): AbstractIterator<this, IK, IV>
  sublevel (name: string | string[]): LsmSublevel<this, string, string>
  sublevel<SK = string, SV = string> (name: string | string[], options: AbstractSublevelOptions<SK, SV>): LsmSublevel<this, SK, SV>
}

/**
 * The write methods of an LsmSublevel with the `sync` option (abstract-level
 * forwards a sublevel's options to the root database), and its own sublevels.
 * Types only.
 */
export interface LsmSublevelMethods<K, V> {
  put (key: K, value: V): Promise<void>
  put<PK = K, PV = V> (key: PK, value: PV, options: LsmPutOptions<PK, PV>): Promise<void>
  del (key: K): Promise<void>
  del<DK = K> (key: DK, options: LsmDelOptions<DK>): Promise<void>
  batch (operations: Array<AbstractBatchOperation<this, K, V>>): Promise<void>
  batch<BK = K, BV = V> (operations: Array<AbstractBatchOperation<this, BK, BV>>, options: LsmBatchOptions<BK, BV>): Promise<void>
  batch (): LsmChainedBatch<this, K, V>
  iterator (): AbstractIterator<this, K, V>
  iterator<IK = K, IV = V> (options: LsmIteratorOptions<IK, IV>): AbstractIterator<this, IK, IV>
  sublevel (name: string | string[]): LsmSublevel<this, string, string>
  sublevel<SK = string, SV = string> (name: string | string[], options: AbstractSublevelOptions<SK, SV>): LsmSublevel<this, SK, SV>
}

/**
 * A sublevel of an LsmLevel (or of another such sublevel): abstract-level's
 * AbstractSublevel whose put/del/batch/write take `sync`. An intersection
 * rather than an interface extending AbstractSublevel: the latter makes the
 * compiler compare the two structurally, nesting the parent type one level
 * deeper at each sublevel() until it gives up (TS2589).
 */
export type LsmSublevel<TDatabase, K = string, V = string> = LsmSublevelMethods<K, V> & AbstractSublevel<TDatabase, Format, K, V>

/** Options of a chained batch's write(): abstract-level's plus `sync`. */
export interface LsmChainedBatchWriteOptions extends AbstractChainedBatchWriteOptions {
  sync?: boolean | undefined
}

/** A chained batch whose write() takes `sync`. */
export interface LsmChainedBatch<TDatabase, K, V> extends AbstractChainedBatch<TDatabase, K, V> {
  write (): Promise<void>
  write (options: LsmChainedBatchWriteOptions): Promise<void>
}

export type { ChangeBatch, ChangeOp, CheckpointResult } from '../lib/engine'
export type { ObjectStore, ObjectInfo } from '../lib/backup/object-store'
export type { ReplicateOptions, ReplicationStats } from '../lib/backup/shipper'
export type { RestoreOptions, RestoreResult, RestoreProgress } from '../lib/backup/restore'
export { LsmLevel as Level }
export default LsmLevel
