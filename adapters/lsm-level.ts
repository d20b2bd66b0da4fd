// lsm-level: an abstract-level database over the LSM engine in lib/. This file
// only translates between the Level API (encodings, options, iterators,
// snapshots) and a backend chosen at open (lsm-backend.ts): the engine in this
// process, or with multiProcess the engine or its owner in another process;
// it holds no storage logic. Its typings are in lsm-level-types.ts.
import { AbstractLevel } from 'abstract-level'
import type { AbstractIterator, AbstractDatabaseOptions, AbstractBatchOperation, AbstractSublevelOptions } from 'abstract-level'
import ModuleError = require('module-error')
import { Engine, type LevelInfo, type RecoveryReport, type ChangeBatch, type CheckpointResult } from '../lib/engine'
import { resolveOptions, type EngineOptions } from '../lib/options'
import { pickEngineOptions, withoutEngineOptions } from './engine-options'
import { invalidOption, levelError } from '../lib/errors'
import type { LsmStats } from '../lib/stats'
import { engineProperty } from './engine-property'
import type { FileMeta } from '../lib/manifest/file-meta'
import { toView, type Format } from './bytes'
import { restore, type RestoreOptions, type RestoreResult } from '../lib/backup/restore'
import type { ObjectStore } from '../lib/backup/object-store'
import type { ReplicateOptions } from '../lib/backup/shipper'
import { platform } from '../lib/platform'
import type { IteratorOptions, RangeReadOptions } from './lsm-cursor'
import type { Backend, LevelBatchOp, ReadOptions, WriteOptions } from './lsm-backend'
import { EngineBackend } from './engine-backend'
import { OWNER_TIMEOUT_MS } from './failover/messages'
import type { MultiProcessBackend, MultiProcessOptions } from './multi-process/backend'
import type { LsmBatchOptions, LsmChainedBatch, LsmDelOptions, LsmIteratorOptions, LsmLevelOptions, LsmPutOptions, LsmSublevel } from './lsm-level-types'

export type { EngineOptions, LevelInfo, RecoveryReport, FileMeta, LsmStats }
export type * from './lsm-level-types'

const BACKEND = Symbol('backend')

/** Makes the backend of a multiProcess open; installed by the Node entry (adapters/multi-process/index.ts). */
let multiProcessBackend: ((options: MultiProcessOptions) => MultiProcessBackend) | undefined

/** Installs multiProcess support (the Node entry does). */
export function installMultiProcess (make: (options: MultiProcessOptions) => MultiProcessBackend): void {
  multiProcessBackend = make
}

/** The multiProcess options, checked; undefined when the open is the process's alone. */
function multiProcessOptions (options: Record<string, unknown>): { ownerTimeoutMs: number } | undefined {
  const { multiProcess, ownerTimeoutMs } = options
  if (multiProcess !== undefined && typeof multiProcess !== 'boolean') throw invalidOption('multiProcess', 'must be a boolean')
  if (ownerTimeoutMs !== undefined && (typeof ownerTimeoutMs !== 'number' || !Number.isInteger(ownerTimeoutMs) || ownerTimeoutMs < 1)) {
    throw invalidOption('ownerTimeoutMs', 'must be a positive integer (milliseconds)')
  }
  if (multiProcess !== true) return undefined
  if (options.readOnly === true) throw invalidOption('multiProcess', 'a read-only open takes no lock and owns nothing: use readOnly or multiProcess, not both')
  if (multiProcessBackend === undefined) throw levelError('LEVEL_NOT_SUPPORTED', 'multiProcess is for Node (processes sharing a directory); in browsers, tabs share a database through BrowserLevel')
  return { ownerTimeoutMs: (ownerTimeoutMs as number | undefined) ?? OWNER_TIMEOUT_MS }
}

/** The Level options alone, without ours. */
function levelOptions (options: Record<string, unknown>): Record<string, unknown> {
  const { multiProcess, ownerTimeoutMs, ...rest } = withoutEngineOptions(options)
  return rest
}

// abstract-level's typings lag its manifest (getSync, snapshots, signals, ...).
type LevelManifest = ConstructorParameters<typeof AbstractLevel>[0]

// abstract-level's own keys() and values(), over _iterator(), for a backend without its own.
const levelKeys = (AbstractLevel.prototype as unknown as { _keys: (o: unknown) => unknown })._keys
const levelValues = (AbstractLevel.prototype as unknown as { _values: (o: unknown) => unknown })._values

const EMPTY_OPTIONS = Object.freeze({})
const noop = (): void => {}

/** A stored value decoded as abstract-level's get() decodes it (LEVEL_DECODE_ERROR when it cannot be). */
function decodeValue<V> (encoding: { decode: (data: Format) => V }, value: Format | undefined): V | undefined {
  if (value === undefined) return undefined
  try {
    return encoding.decode(value)
  } catch (err) {
    throw new ModuleError('Could not decode value', { code: 'LEVEL_DECODE_ERROR', cause: err as Error })
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
  /** What the operations run on while open (lsm-backend.ts): the engine, or with multiProcess the engine or the owner. */
  private [BACKEND]: Backend | undefined
  private readonly engineOptions: Partial<EngineOptions>
  private readonly multiProcess: { ownerTimeoutMs: number } | undefined
  /** The options get() passes the backend: the default encodings' formats. */
  private plainReadOptions: ReadOptions | undefined

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
      // A multiProcess client reads on its own (adapters/multi-process/local-reads.ts): getSync() too.
      getSync: true,
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
    return this[BACKEND]?.role
  }

  /** The backend; LEVEL_DATABASE_NOT_OPEN while there is none. */
  private get backend (): Backend {
    const b = this[BACKEND]
    if (b === undefined) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    return b
  }

  /** The engine, for extensions and tests. Throws if the database is not open. */
  get engine (): Engine {
    return this.backend.engine('The engine', 'the Level API (its operations go to the owner)')
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const merged = { ...this.engineOptions, ...pickEngineOptions(options) }
    merged.createIfMissing = options.createIfMissing
    merged.errorIfExists = options.errorIfExists
    if (this.multiProcess === undefined) {
      this[BACKEND] = new EngineBackend(await Engine.open(this.location, merged))
      return
    }
    // multiProcess: owns the database, or becomes a client of the process that does.
    const { createIfMissing, errorIfExists, ...engineOptions } = merged
    const backend = multiProcessBackend!({ location: this.location, engineOptions, ownerTimeoutMs: this.multiProcess.ownerTimeoutMs })
    await backend.open({ createIfMissing: createIfMissing !== false, errorIfExists: errorIfExists === true })
    this[BACKEND] = backend
  }

  async _close (): Promise<void> {
    const backend = this[BACKEND]
    this[BACKEND] = undefined
    await backend?.close()
  }

  /**
   * get() without options on an open database: abstract-level's checks,
   * encodings and errors around _get() (a subclass's too), without its async
   * function and its await when _get() answers now (the common case). With
   * options, during a deferred open or when not open: abstract-level's get().
   */
  override get (key: K): Promise<V | undefined>
  override get<KK = K, VV = V> (key: KK, options: Parameters<AbstractLevel<Format, KK, VV>['get']>[1]): Promise<VV | undefined>
  override get (key: unknown, options?: unknown): Promise<unknown> {
    if (options !== undefined || this.status !== 'open') return super.get(key as K, options as Parameters<AbstractLevel<Format, K, V>['get']>[1])
    try {
      ;(this as unknown as { _assertValidKey: (key: unknown) => void })._assertValidKey(key)
      const keyEncoding = this.keyEncoding()
      const valueEncoding = this.valueEncoding()
      const formats = this.plainReadOptions ??= Object.freeze({ keyEncoding: keyEncoding.format, valueEncoding: valueEncoding.format })
      const value = this._get(keyEncoding.encode(key as K) as Format, formats)
      if (value instanceof Promise) return value.then((v) => decodeValue(valueEncoding, v))
      return Promise.resolve(decodeValue(valueEncoding, value))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * put(key, value) and put(key, value, { sync }) on an open database without
   * a prewrite hook or a 'write' listener: abstract-level's checks, encodings
   * and errors around _put() (a subclass's too), without its async function.
   * Anything else: abstract-level's put().
   */
  override put (key: unknown, value: unknown, options?: unknown): any { // eslint-disable-line @typescript-eslint/no-explicit-any -- the overloads are declared on the interface below
    if (this.status !== 'open' || !this.plainWrite(options)) return (super.put as (...args: unknown[]) => Promise<void>).call(this, key, value, options)
    try {
      const self = this as unknown as { _assertValidKey: (key: unknown) => void, _assertValidValue: (value: unknown) => void }
      self._assertValidKey(key)
      self._assertValidValue(value)
      const keyEncoding = this.keyEncoding()
      const valueEncoding = this.valueEncoding()
      return this._put(keyEncoding.encode(key as K) as Format, valueEncoding.encode(value as V) as Format, (options ?? EMPTY_OPTIONS) as WriteOptions).then(noop)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * batch(operations) and batch(operations, { sync }) on an open database
   * without a prewrite hook or a 'write' listener, each operation a plain put
   * or del in the default encodings: abstract-level's checks, encodings and
   * errors (in its order), with one small object per operation where
   * abstract-level clones each one whole, then _batch() (a subclass's too).
   * Anything else: abstract-level's batch().
   */
  override batch (operations?: unknown, options?: unknown): any { // eslint-disable-line @typescript-eslint/no-explicit-any -- the overloads are declared on the interface below
    const level = super.batch as (...args: unknown[]) => unknown
    if (arguments.length === 0) return level.call(this)
    if (!this.plainBatch(operations, options)) return level.call(this, operations, options)
    const ops = operations as Array<{ type?: unknown, key?: unknown, value?: unknown }>
    if (ops.length === 0) return Promise.resolve()
    try {
      const self = this as unknown as { _assertValidKey: (key: unknown) => void, _assertValidValue: (value: unknown) => void }
      const keyEncoding = this.keyEncoding()
      const valueEncoding = this.valueEncoding()
      const out = new Array<LevelBatchOp>(ops.length)
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i]
        self._assertValidKey(op.key)
        if (op.type === 'put') {
          self._assertValidValue(op.value)
          out[i] = { type: 'put', key: keyEncoding.encode(op.key as K) as Format, value: valueEncoding.encode(op.value as V) as Format }
        } else if (op.type === 'del') {
          out[i] = { type: 'del', key: keyEncoding.encode(op.key as K) as Format }
        } else {
          throw new TypeError("A batch operation must have a type property that is 'put' or 'del'")
        }
      }
      return this._batch(out, (options ?? EMPTY_OPTIONS) as WriteOptions).then(noop)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * Whether batch(operations, options) may take the plain path: open, no hook
   * or listener to run, options at most { sync }, and every operation an object
   * without its own encodings or sublevel.
   */
  private plainBatch (operations: unknown, options: unknown): boolean {
    if (this.status !== 'open' || !Array.isArray(operations) || !this.plainWrite(options)) return false
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i] as Record<string, unknown> | null
      if (op === null || typeof op !== 'object' || op.keyEncoding !== undefined || op.valueEncoding !== undefined || op.sublevel != null) return false
    }
    return true
  }

  /** Whether a write may take a plain path: no hook or listener to run, and options at most { sync }. */
  private plainWrite (options: unknown): boolean {
    if (!(this.hooks.prewrite as unknown as { noop: boolean }).noop || this.listenerCount('write') > 0) return false
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') return false
      for (const name in options) if (name !== 'sync') return false
    }
    return true
  }

  // Not async: the backend's promise is returned as is (one promise less per write).
  _put (key: Format, value: Format, options: WriteOptions): Promise<void> { return this.backend.put(key, value, options) }
  _del (key: Format, options: WriteOptions): Promise<void> { return this.backend.del(key, options) }
  _batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> { return this.backend.batch(operations, options) }
  _getSync (key: Format, options: ReadOptions): Format | undefined { return this.backend.getSync(key, options) }
  _get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> { return this.backend.get(key, options) }
  _getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> { return this.backend.getMany(keys, options) }
  _has (key: Format, options: ReadOptions): Promise<boolean> { return this.backend.has(key, options) }
  _hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> { return this.backend.hasMany(keys, options) }
  _clear (options: RangeReadOptions & { limit: number }): Promise<void> { return this.backend.clear(options) }
  _iterator (options: IteratorOptions): AbstractIterator<this, K, V> { return this.backend.iterator(this, options) as unknown as AbstractIterator<this, K, V> }
  _keys (options: IteratorOptions): unknown { const b = this.backend; return b.keys === undefined ? levelKeys.call(this, options) : b.keys(this, options) }
  _values (options: IteratorOptions): unknown { const b = this.backend; return b.values === undefined ? levelValues.call(this, options) : b.values(this, options) }
  _snapshot (options: object): object { return this.backend.snapshot(options) }

  // ------------------------------------------------------------ extensions

  /** Files and bytes per LSM level. */
  levels (): LevelInfo[] {
    return this.backend.engine('levels()', '(await db.fetchStats()).levels').levels()
  }

  /** Resolves once open (deferred open: waits for an open under way). */
  private async opened (): Promise<Backend> {
    if (this.status === 'opening') await this.open({ passive: true })
    return this.backend
  }

  /** Flushes the memtable and compacts every table overlapping [start, end] down the tree. */
  async compactRange (start?: K | Format, end?: K | Format): Promise<void> {
    const enc = (k: K | Format | undefined): Buffer | undefined => k === undefined || k === null ? undefined : toView(this.keyEncoding().encode(k as K))
    await (await this.opened()).call('compactRange', [enc(start), enc(end)])
  }

  /** Writes the memtable to a level-0 table and waits for it. */
  async flush (): Promise<void> {
    await (await this.opened()).call('flush', [])
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
    // The path is this process's, made absolute (the owner may be another process); a checkpoint is not retried on the next owner.
    return await (await this.opened()).call('checkpoint', [platform().resolvePath(dir)], true) as CheckpointResult
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
    return this.backend.engine('sequence', 'await db.currentSequence()').lastSequence
  }

  /** The sequence number of the last committed write; asks the owner when another process owns the database (multiProcess). */
  async currentSequence (): Promise<number> {
    return await (await this.opened()).currentSequence()
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
    yield* (await this.opened()).changes(options.since)
  }

  /**
   * Read-only opens (option readOnly): moves to the writer's latest committed
   * state; resolves true if reads now see newer writes. Iterators and
   * snapshots opened before keep their view. Rejects with LEVEL_NOT_SUPPORTED
   * on a database opened for writing.
   */
  async refresh (): Promise<boolean> {
    if (this.status === 'opening') await this.open()
    if (this.multiProcess !== undefined) throw levelError('LEVEL_NOT_SUPPORTED', 'refresh() is for read-only opens (option readOnly); a multiProcess open reads the owner\'s latest state')
    return await this.engine.refresh()
  }

  /** Structured statistics: levels, amplification, byte counters, Bloom and cache counters (see lib/stats.ts). */
  stats (): LsmStats {
    return this.backend.engine('stats()', 'await db.fetchStats()').stats()
  }

  /** stats(), from the owner when another process owns the database (multiProcess). */
  async fetchStats (): Promise<LsmStats> {
    return await (await this.opened()).call('stats', []) as LsmStats
  }

  /** getProperty(), from the owner when another process owns the database (multiProcess). */
  async fetchProperty (name: string): Promise<string> {
    return await (await this.opened()).call('getProperty', [name]) as string
  }

  /**
   * A property as text, synchronously, as in classic-level: 'lsm.stats',
   * 'lsm.num-files-at-level<N>', 'lsm.sstables', 'lsm.approximate-memory-usage'
   * (each also under the 'leveldb.' prefix).
   */
  getProperty (name: string): string {
    return engineProperty(this.backend.engine('getProperty()', 'await db.fetchProperty(name)'), name)
  }

  /** Approximate bytes on disk used by keys in [start, end). */
  async approximateSize (start: K | Format, end: K | Format, options?: { keyEncoding?: string }): Promise<number> {
    const backend = await this.opened()
    // abstract-level resolves any encoding name it knows; its typings list the names as literals.
    const enc = (options?.keyEncoding === undefined ? this.keyEncoding() : this.keyEncoding(options.keyEncoding as 'utf8')) as { encode (key: unknown): Format }
    return await backend.call('approximateSize', [toView(enc.encode(start)), toView(enc.encode(end))]) as number
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

// Declaration merging: the write methods' signatures with the `sync` option,
// iterator()'s with `fillCache` (abstract-level's typings have neither). Types
// only; the methods are inherited (get() and batch() have plain paths above).
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

export type { ChangeBatch, ChangeOp, CheckpointResult } from '../lib/engine'
export type { ObjectStore, ObjectInfo } from '../lib/backup/object-store'
export type { ReplicateOptions, ReplicationStats } from '../lib/backup/shipper'
export type { RestoreOptions, RestoreResult, RestoreProgress } from '../lib/backup/restore'
export { LsmLevel as Level }
export default LsmLevel
