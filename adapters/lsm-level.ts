// lsm-level: an abstract-level database over the LSM engine in lib/. This file
// only translates between the Level API (encodings, options, iterators,
// snapshots) and the engine; it holds no storage logic.
import { AbstractLevel, AbstractIterator, AbstractKeyIterator, AbstractValueIterator, AbstractSnapshot } from 'abstract-level'
import type { AbstractDatabaseOptions, AbstractIteratorOptions, AbstractPutOptions, AbstractDelOptions, AbstractBatchOptions, AbstractBatchOperation, AbstractChainedBatch, AbstractChainedBatchWriteOptions, AbstractSublevel, AbstractSublevelOptions } from 'abstract-level'
import ModuleError = require('module-error')
import { Engine, encodeBatch, type BatchOp, type RangeOptions, type LevelInfo, type RecoveryReport, type ChangeBatch, type CheckpointResult } from '../lib/engine'
import type { Snapshot } from '../lib/snapshots'
import { nextTurn, type TurnBudget } from '../lib/util/turn'
import { DbIterator, FOUND, PAUSED } from '../lib/iterators/db-iterator'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { resolveOptions, ENGINE_OPTION_NAMES, type EngineOptions } from '../lib/options'
import { invalidOption, levelError } from '../lib/errors'
import { formatStats, type LsmStats } from '../lib/stats'
import type { FileMeta } from '../lib/manifest/file-meta'

export type { EngineOptions, LevelInfo, RecoveryReport, FileMeta, LsmStats }

type Format = string | Buffer | Uint8Array
type EncodingName = 'utf8' | 'buffer' | 'view'

/** Options of the constructor and of open(): the Level options plus the engine's (lib/options.ts). */
export interface LsmLevelOptions<K = string, V = string> extends Partial<EngineOptions> {
  keyEncoding?: AbstractDatabaseOptions<K, V>['keyEncoding']
  valueEncoding?: AbstractDatabaseOptions<K, V>['valueEncoding']
  passive?: boolean
  [other: string]: unknown
}

const ENGINE = Symbol('engine')

// abstract-level's typings lag its manifest (getSync, snapshots, signals, ...).
type LevelManifest = ConstructorParameters<typeof AbstractLevel>[0]

/** A borrowed view for lookups (no copy needed: the engine does not keep it). */
function toView (data: Format): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (Buffer.isBuffer(data)) return data
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
}

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

/** Options of abstract-level's iterators and clear(): a range, normalised. */
interface RangeReadOptions {
  gt?: Format
  gte?: Format
  lt?: Format
  lte?: Format
  reverse?: boolean
  snapshot?: LsmSnapshot
}

/** Options of abstract-level's iterators, normalised. */
interface IteratorOptions extends RangeReadOptions {
  keys?: boolean
  values?: boolean
  limit: number
  keyEncoding: EncodingName
  valueEncoding: EncodingName
  signal?: AbortSignal
}

/** What a Cursor yields: an entry, a key or a value, decoded per the iterator's encodings. */
type Item = Format | undefined | [Format | undefined, Format | undefined]

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

/** Engine bytes src[start, end) to the requested encoding; buffers are copied. */
function decodeOut (src: Buffer, start: number, end: number, encoding: EncodingName): Format {
  if (encoding === 'utf8') return src.toString('utf8', start, end)
  const n = end - start
  const copy = Buffer.allocUnsafe(n)
  // A short copy by hand: Buffer#copy of a range makes a view first (~95 ns
  // here against ~50 ns for a 16-byte loop; even at ~24 bytes).
  if (n <= 24) for (let i = 0; i < n; i++) copy[i] = src[start + i]
  else src.copy(copy, 0, start, end)
  return copy
}

/** A value the engine's get() returned (a fresh copy the caller owns) to the requested encoding. */
function ownedOut (data: Buffer, encoding: EncodingName): Format {
  return encoding === 'utf8' ? data.toString('utf8') : data
}

function rangeFrom (options: RangeReadOptions): RangeOptions {
  const range: RangeOptions = { reverse: options.reverse === true }
  if (options.gt !== undefined) range.gt = toView(options.gt)
  if (options.gte !== undefined) range.gte = toView(options.gte)
  if (options.lt !== undefined) range.lt = toView(options.lt)
  if (options.lte !== undefined) range.lte = toView(options.lte)
  return range
}

/** Internal entries an iterator step may visit before it lets the event loop turn (about a millisecond). */
const SKIP_BUDGET = 4096

function abortError (cause?: unknown): Error {
  const err = new ModuleError('Operation has been aborted', { code: 'LEVEL_ABORTED', cause: cause as Error })
  Object.defineProperty(err, 'name', { value: 'AbortError' })
  return err
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

/** nextv() and all() yield to the event loop after every 4,096 items (see Cursor.breathe). */
const LONG_READ_YIELD_MASK = 4095

/** What a Cursor yields: [key, value] entries, keys or values. */
const ENTRIES = 0
const KEYS = 1
const VALUES = 2

/**
 * The reading behind the three abstract-level iterators (entries, keys(),
 * values()): a DbIterator, the iterator's limit, signal and encodings, and the
 * event loop's turn budget.
 */
class Cursor {
  private readonly it: DbIterator
  private readonly keys: boolean
  private readonly values: boolean
  private readonly keyEncoding: EncodingName
  private readonly valueEncoding: EncodingName
  private readonly signal: AbortSignal | undefined
  private remaining: number
  private readonly turn: TurnBudget

  constructor (options: IteratorOptions, engine: Engine, private readonly mode: number) {
    this.turn = engine.turn
    this.it = engine.iterator(rangeFrom(options), options.snapshot?.inner)
    this.keys = mode === KEYS || (mode === ENTRIES && options.keys !== false)
    this.values = mode === VALUES || (mode === ENTRIES && options.values !== false)
    this.keyEncoding = options.keyEncoding
    this.valueEncoding = options.valueEncoding
    this.signal = options.signal
    this.remaining = options.limit >= 0 ? options.limit : Infinity
  }

  private async checkSignal (): Promise<void> {
    if (this.turn.exhausted()) await nextTurn()
    if (this.signal) {
      // Give an abort issued right after the call a chance to land.
      await undefined
      if (this.signal.aborted) throw abortError(this.signal.reason)
    }
  }

  /** The current entry, key or value (copies the caller owns). */
  private item (): Item {
    const it = this.it
    const key = this.keys ? decodeOut(it.keySource, it.keyStart, it.keyEnd, this.keyEncoding) : undefined
    if (this.mode === KEYS) return key
    const value = this.values ? decodeOut(it.valueSource, it.valueStart, it.valueEnd, this.valueEncoding) : undefined
    return this.mode === VALUES ? value : [key, value]
  }

  /**
   * A long run of deleted entries (tombstones, versions hidden by a range
   * tombstone) is skipped a few thousand at a time (DbIterator.step), one event
   * loop turn each, so that it never blocks the loop for long.
   */
  private async pause (): Promise<void> {
    await nextTurn()
    if (this.signal?.aborted) throw abortError(this.signal.reason)
  }

  /**
   * Returns the item itself, not a promise, when it is found now (the common
   * case: abstract-level awaits it either way, and `for await` reads one item
   * per call, so a promise per item is a good part of its cost); a promise
   * when the turn is used up, a signal may abort, or a step pauses.
   */
  next (): Item | Promise<Item> {
    if (this.turn.exhausted() || this.signal !== undefined) return this.nextLater(false)
    if (this.remaining <= 0) return undefined
    const r = this.it.step(SKIP_BUDGET)
    if (r === PAUSED) return this.nextLater(true)
    if (r !== FOUND) return undefined
    this.remaining--
    return this.item()
  }

  /** next() that waits: for the next turn or the signal's check, or (`paused`) after a paused step. */
  private async nextLater (paused: boolean): Promise<Item> {
    if (paused) await this.pause()
    else await this.checkSignal()
    if (this.remaining <= 0) return undefined
    let r
    while ((r = this.it.step(SKIP_BUDGET)) === PAUSED) await this.pause()
    if (r !== FOUND) return undefined
    this.remaining--
    return this.item()
  }

  async nextv (size: number): Promise<Item[]> {
    await this.checkSignal()
    const out: Item[] = []
    while (out.length < size && this.remaining > 0) {
      const r = this.it.step(SKIP_BUDGET)
      if (r === PAUSED) { await this.pause(); continue }
      if (r !== FOUND) break
      this.remaining--
      out.push(this.item())
      if ((out.length & LONG_READ_YIELD_MASK) === 0) await this.breathe()
    }
    return out
  }

  async all (): Promise<Item[]> {
    await this.checkSignal()
    const out: Item[] = []
    while (this.remaining > 0) {
      const r = this.it.step(SKIP_BUDGET)
      if (r === PAUSED) { await this.pause(); continue }
      if (r !== FOUND) break
      this.remaining--
      out.push(this.item())
      if ((out.length & LONG_READ_YIELD_MASK) === 0) await this.breathe()
    }
    return out
  }

  /**
   * Yields to the event loop (setImmediate, so I/O callbacks and timers run) and
   * then checks the signal: a long nextv() or all() neither starves the loop nor
   * ignores an abort that comes from a later turn.
   */
  private async breathe (): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve))
    if (this.signal?.aborted) throw abortError(this.signal.reason)
  }

  seek (target: Format): void {
    this.it.seek(toView(target))
  }

  close (): void {
    this.it.close()
  }
}

// The three iterators only hand their calls to a Cursor. `cursor` is undefined
// in _close() if the engine refused to create the iterator (the constructor
// threw after abstract-level had registered it for closing).

class LsmIterator<K, V> extends AbstractIterator<LsmLevel<K, V>, K, V> {
  private readonly cursor: Cursor

  constructor (db: LsmLevel<K, V>, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, ENTRIES)
  }

  _next (): unknown { return this.cursor.next() }
  async _nextv (size: number): Promise<unknown[]> { return await this.cursor.nextv(size) }
  async _all (): Promise<unknown[]> { return await this.cursor.all() }
  _seek (target: Format): void { this.cursor.seek(target) }
  async _close (): Promise<void> { this.cursor?.close() }
}

class LsmKeyIterator<K, V> extends AbstractKeyIterator<LsmLevel<K, V>, K> {
  private readonly cursor: Cursor

  constructor (db: LsmLevel<K, V>, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, KEYS)
  }

  _next (): unknown { return this.cursor.next() }
  async _nextv (size: number): Promise<unknown[]> { return await this.cursor.nextv(size) }
  async _all (): Promise<unknown[]> { return await this.cursor.all() }
  _seek (target: Format): void { this.cursor.seek(target) }
  async _close (): Promise<void> { this.cursor?.close() }
}

class LsmValueIterator<K, V> extends AbstractValueIterator<LsmLevel<K, V>, K, V> {
  private readonly cursor: Cursor

  constructor (db: LsmLevel<K, V>, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, VALUES)
  }

  _next (): unknown { return this.cursor.next() }
  async _nextv (size: number): Promise<unknown[]> { return await this.cursor.nextv(size) }
  async _all (): Promise<unknown[]> { return await this.cursor.all() }
  _seek (target: Format): void { this.cursor.seek(target) }
  async _close (): Promise<void> { this.cursor?.close() }
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
  private readonly engineOptions: Partial<EngineOptions>

  constructor (location: string, options?: LsmLevelOptions<K, V>) {
    if (typeof location !== 'string' || location === '') {
      throw invalidOption('location', 'must be a non-empty string')
    }
    const engineOptions = pickEngineOptions(options ?? {})
    // Validate now, so bad options fail at construction with a clear message.
    resolveOptions(engineOptions)
    super({
      encodings: { buffer: true, view: true, utf8: true },
      has: true,
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
      additionalMethods: { approximateSize: true, compactRange: true, getProperty: true, stats: true, levels: true, flush: true, checkpoint: true, changes: true, refresh: true },
      // Not a field of abstract-level's manifest (it has none for this): ours.
      readOnly: engineOptions.readOnly === true
    } as LevelManifest, withoutEngineOptions(options) as AbstractDatabaseOptions<K, V>)
    this.location = location
    this.engineOptions = engineOptions
  }

  /** The engine, for extensions and tests. Throws if the database is not open. */
  get engine (): Engine {
    const e = this[ENGINE]
    if (!e) throw new ModuleError('Database is not open', { code: 'LEVEL_DATABASE_NOT_OPEN' })
    return e
  }

  async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const merged = { ...this.engineOptions, ...pickEngineOptions(options) }
    merged.createIfMissing = options.createIfMissing
    merged.errorIfExists = options.errorIfExists
    this[ENGINE] = await Engine.open(this.location, merged)
  }

  async _close (): Promise<void> {
    const e = this[ENGINE]
    this[ENGINE] = undefined
    if (e) await e.close()
  }

  // Not async: the engine's promise is returned as is (one promise less per write).
  _put (key: Format, value: Format, options: WriteOptions): Promise<void> {
    return this[ENGINE]!.write(encodeOne(KIND_VALUE, key, value), options.sync === true)
  }

  _del (key: Format, options: WriteOptions): Promise<void> {
    return this[ENGINE]!.write(encodeOne(KIND_DELETE, key, undefined), options.sync === true)
  }

  /**
   * The operations (keys and values already encoded and prefixed by
   * abstract-level) are copied once, straight into the batch's log record
   * payload, which the memtable then reads them from (lib/wal/batch.ts).
   */
  _batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> {
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
    const value = this[ENGINE]!.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  /**
   * Runs `read` at the read's snapshot: the caller's, or the current sequence
   * number. When the event loop's turn is used up the read runs on the next
   * turn, still at the point taken now (abstract-level's snapshot contract),
   * which is given back after.
   */
  private async atReadPoint<T> (engine: Engine, options: ReadOptions, read: (at: Snapshot | undefined) => T): Promise<T> {
    const snapshot = options.snapshot?.inner
    if (!engine.turn.exhausted()) return read(snapshot)
    const point = snapshot ?? engine.pointInTime()
    try {
      await nextTurn()
      return read(point)
    } finally {
      if (point !== snapshot) engine.releasePointInTime(point)
    }
  }

  /**
   * Returns the value itself, not a promise, when the read completes now (the
   * common case: abstract-level awaits it either way, and a plain value saves
   * the async function's promise); a promise when the read waits for the next turn.
   */
  _get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> {
    const engine = this[ENGINE]!
    if (engine.turn.exhausted()) return this.getLater(engine, key, options)
    const value = engine.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  private async getLater (engine: Engine, key: Format, options: ReadOptions): Promise<Format | undefined> {
    const at = options.snapshot?.inner ?? engine.pointInTime()
    try {
      await nextTurn()
      const value = engine.get(toView(key), at)
      return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
    } finally {
      if (at !== options.snapshot?.inner) engine.releasePointInTime(at)
    }
  }

  async _getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> {
    const engine = this[ENGINE]!
    return await this.atReadPoint(engine, options, (at) => {
      const out = new Array(keys.length)
      for (let i = 0; i < keys.length; i++) {
        const value = engine.get(toView(keys[i]), at)
        out[i] = value === undefined ? undefined : ownedOut(value, options.valueEncoding)
      }
      return out
    })
  }

  async _has (key: Format, options: ReadOptions): Promise<boolean> {
    const engine = this[ENGINE]!
    return await this.atReadPoint(engine, options, (at) => engine.get(toView(key), at) !== undefined)
  }

  async _hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> {
    const engine = this[ENGINE]!
    return await this.atReadPoint(engine, options, (at) => keys.map((k) => engine.get(toView(k), at) !== undefined))
  }

  _iterator (options: IteratorOptions): LsmIterator<K, V> {
    return new LsmIterator<K, V>(this, options, this[ENGINE]!)
  }

  _keys (options: IteratorOptions): LsmKeyIterator<K, V> {
    return new LsmKeyIterator<K, V>(this, options, this[ENGINE]!)
  }

  _values (options: IteratorOptions): LsmValueIterator<K, V> {
    return new LsmValueIterator<K, V>(this, options, this[ENGINE]!)
  }

  _snapshot (options: object): LsmSnapshot {
    return new LsmSnapshot(options, this[ENGINE]!)
  }

  /** See Engine.clear: one range tombstone, or point deletes when limited or at a snapshot. */
  async _clear (options: RangeReadOptions & { limit: number }): Promise<void> {
    const limit = options.limit >= 0 ? options.limit : Infinity
    await this[ENGINE]!.clear(rangeFrom(options), limit, options.snapshot?.inner)
  }

  // ------------------------------------------------------------ extensions

  /** Files and bytes per LSM level. */
  levels (): LevelInfo[] {
    return this.engine.levels()
  }

  /** Flushes the memtable and compacts every table overlapping [start, end] down the tree. */
  async compactRange (start?: K | Format, end?: K | Format): Promise<void> {
    const enc = (k: K | Format | undefined): Buffer | undefined => k === undefined || k === null ? undefined : toView(this.keyEncoding().encode(k as K))
    await this.engine.compactRange(enc(start), enc(end))
  }

  /** Writes the memtable to a level-0 table and waits for it. */
  async flush (): Promise<void> {
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
    return await this.engine.checkpoint(dir)
  }

  /** The sequence number of the last committed write (each operation of a batch takes one). */
  get sequence (): number {
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
    return await this.engine.refresh()
  }

  /** Structured statistics: levels, amplification, byte counters, Bloom and cache counters (see lib/stats.ts). */
  stats (): LsmStats {
    return this.engine.stats()
  }

  /**
   * A property as text, synchronously, as in classic-level: 'lsm.stats',
   * 'lsm.num-files-at-level<N>', 'lsm.sstables', 'lsm.approximate-memory-usage'
   * (each also under the 'leveldb.' prefix).
   */
  getProperty (name: string): string {
    if (typeof name !== 'string') throw invalidOption('name', 'property name must be a string')
    const engine = this.engine
    const m = /^(?:lsm|leveldb)\.(.+)$/.exec(name)
    const prop = m ? m[1] : ''
    const files = /^num-files-at-level(\d+)$/.exec(prop)
    if (files) {
      const level = Number(files[1])
      const levels = engine.levels()
      if (level >= levels.length) throw levelError('LEVEL_NOT_SUPPORTED', `No level ${level}: levels are 0-${levels.length - 1}`)
      return String(levels[level].files)
    }
    if (prop === 'stats') return formatStats(engine.stats())
    if (prop === 'approximate-memory-usage') {
      const st = engine.stats()
      return String(st.memtableBytes + st.blockCache.bytes)
    }
    if (prop === 'sstables') {
      return engine.tables().map((files, level) => `--- level ${level} ---\n` + files.map((f) =>
        ` ${f.number}:${f.size}[${f.smallest.userKey.toString('hex')} .. ${f.largest.userKey.toString('hex')}]\n`).join('')).join('')
    }
    throw levelError('LEVEL_NOT_SUPPORTED', `Unknown property: ${name}`)
  }

  /** Approximate bytes on disk used by keys in [start, end). */
  async approximateSize (start: K | Format, end: K | Format, options?: { keyEncoding?: string }): Promise<number> {
    if (this.status === 'opening') await this.open({ passive: true })
    // abstract-level resolves any encoding name it knows; its typings list the names as literals.
    const enc = (options?.keyEncoding === undefined ? this.keyEncoding() : this.keyEncoding(options.keyEncoding as 'utf8')) as { encode (key: unknown): Format }
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

/** The Level options alone: engine options stay with the engine (and out of hooks' view). */
function withoutEngineOptions (options: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!options) return options
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(options)) if (!(ENGINE_OPTION_KEYS as string[]).includes(k)) out[k] = options[k]
  return out
}

function pickEngineOptions (options: Record<string, unknown>): Partial<EngineOptions> {
  const out: Record<string, unknown> = {}
  for (const name of ENGINE_OPTION_KEYS) {
    if (options[name] !== undefined) out[name] = options[name]
  }
  return out as Partial<EngineOptions>
}

// createIfMissing / errorIfExists come through open()'s options, normalized by abstract-level.
const ENGINE_OPTION_KEYS = ENGINE_OPTION_NAMES.filter((n) => n !== 'createIfMissing' && n !== 'errorIfExists')

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

// Declaration merging: the write methods' signatures with the `sync` option
// (abstract-level's typings have none). Types only; the methods are inherited.
export interface LsmLevel<K = string, V = string> {
  put (key: K, value: V): Promise<void>
  put<PK = K, PV = V> (key: PK, value: PV, options: LsmPutOptions<PK, PV>): Promise<void>
  del (key: K): Promise<void>
  del<DK = K> (key: DK, options: LsmDelOptions<DK>): Promise<void>
  batch (operations: Array<AbstractBatchOperation<this, K, V>>): Promise<void>
  batch<BK = K, BV = V> (operations: Array<AbstractBatchOperation<this, BK, BV>>, options: LsmBatchOptions<BK, BV>): Promise<void>
  batch (): LsmChainedBatch<this, K, V>
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
export { LsmLevel as Level }
export default LsmLevel
