// The reading behind LsmLevel's iterators: a Cursor over the engine's
// DbIterator applies the iterator's limit, signal and encodings and shares the
// event loop's turn budget with the other reads; the three abstract-level
// iterator kinds (entries, keys(), values()) hand their calls to one.
import { AbstractIterator, AbstractKeyIterator, AbstractValueIterator } from 'abstract-level'
import type { AbstractIteratorOptions } from 'abstract-level'
import ModuleError = require('module-error')
import type { Engine, RangeOptions } from '../lib/engine'
import type { Snapshot } from '../lib/snapshots'
import { nextTurn, type TurnBudget } from '../lib/util/turn'
import { invalidOption } from '../lib/errors'
import { type DbIterator, FOUND, PAUSED } from '../lib/iterators/db-iterator'
import { decodeOut, toView, type EncodingName, type Format } from './bytes'

/** Options of abstract-level's iterators and clear(): a range, normalised. */
export interface RangeReadOptions {
  gt?: Format
  gte?: Format
  lt?: Format
  lte?: Format
  reverse?: boolean
  /** An explicit snapshot (the adapter's), holding the engine's. */
  snapshot?: { readonly inner: Snapshot }
}

/** Options of abstract-level's iterators, normalised. */
export interface IteratorOptions extends RangeReadOptions {
  keys?: boolean
  values?: boolean
  limit: number
  keyEncoding: EncodingName
  valueEncoding: EncodingName
  signal?: AbortSignal
  /** Ours: whether the blocks the iterator reads go into the block cache (README, iterator options). */
  fillCache?: unknown
}

/** What a Cursor yields: an entry, a key or a value, decoded per the iterator's encodings. */
type Item = Format | undefined | [Format | undefined, Format | undefined]

export function rangeFrom (options: RangeReadOptions): RangeOptions {
  const range: RangeOptions = { reverse: options.reverse === true }
  if (options.gt !== undefined) range.gt = toView(options.gt)
  if (options.gte !== undefined) range.gte = toView(options.gte)
  if (options.lt !== undefined) range.lt = toView(options.lt)
  if (options.lte !== undefined) range.lte = toView(options.lte)
  return range
}

/** Internal entries an iterator step may visit before it lets the event loop turn (about a millisecond). */
const SKIP_BUDGET = 4096

export function abortError (cause?: unknown): Error {
  const err = new ModuleError('Operation has been aborted', { code: 'LEVEL_ABORTED', cause: cause as Error })
  Object.defineProperty(err, 'name', { value: 'AbortError' })
  return err
}

/** nextv() and all() yield to the event loop after every 4,096 items (see Cursor.breathe). */
const LONG_READ_YIELD_MASK = 4095

/** What a Cursor yields: [key, value] entries, keys or values. */
export const ENTRIES = 0
export const KEYS = 1
export const VALUES = 2

/**
 * The reading behind the three abstract-level iterators (entries, keys(),
 * values()): a DbIterator, the iterator's limit, signal and encodings, and the
 * event loop's turn budget.
 */
export class Cursor {
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
    const range = rangeFrom(options)
    if (options.fillCache !== undefined) {
      if (typeof options.fillCache !== 'boolean') throw invalidOption('fillCache', 'must be a boolean')
      range.fillCache = options.fillCache
    }
    this.it = engine.iterator(range, options.snapshot?.inner)
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

  /** Every remaining item: nextv() without a size. */
  async all (): Promise<Item[]> {
    return await this.nextv(Infinity)
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

  /** Seeks made so far: a batch read before one is stale (forAwait). */
  seeks = 0

  seek (target: Format): void {
    this.seeks++
    this.it.seek(toView(target))
  }

  /** Throws LEVEL_ABORTED if the iterator's signal was aborted. */
  throwIfAborted (): void {
    if (this.signal?.aborted === true) throw abortError(this.signal.reason)
  }

  close (): void {
    this.it.close()
  }
}

// The three iterators only hand their calls to a Cursor (forwardToCursor
// gives them the same methods). `cursor` is undefined in _close() if the
// engine refused to create the iterator (the constructor threw after
// abstract-level had registered it for closing).

interface CursorIterator {
  readonly cursor: Cursor
}

/** Items `for await` asks nextv() for at first (a loop that stops early reads little ahead), and at most. */
const FOR_AWAIT_FIRST = 16
const FOR_AWAIT_MAX = 1024

type ForAwaitIterator = CursorIterator & { nextv: (size: number) => Promise<unknown[]>, close: () => Promise<void> }

/**
 * `for await` over an iterator: items from nextv() in batches that grow from
 * FOR_AWAIT_FIRST to FOR_AWAIT_MAX, where abstract-level's own asks next() for
 * each (a promise, a decode call and its checks per item). As there: the
 * limit, encodings and errors of nextv(); the iterator closed when the loop
 * ends, breaks or throws. An abort takes effect at the next item, and a seek
 * made in the loop's body drops the rest of the batch read before it.
 */
async function* forAwait (this: ForAwaitIterator): AsyncGenerator<unknown> {
  try {
    let size = FOR_AWAIT_FIRST
    for (;;) {
      const seeks = this.cursor.seeks
      const items = await this.nextv(size)
      if (items.length === 0) return
      for (let i = 0; i < items.length; i++) {
        this.cursor.throwIfAborted()
        yield items[i]
        if (this.cursor.seeks !== seeks) break
      }
      size = Math.min(size * 4, FOR_AWAIT_MAX)
    }
  } finally {
    await this.close()
  }
}

/** The methods abstract-level calls on an iterator, handed to its Cursor: one definition for the three kinds. */
function forwardToCursor (proto: object): void {
  Object.assign(proto, {
    [Symbol.asyncIterator]: forAwait,
    _next (this: CursorIterator): unknown { return this.cursor.next() },
    async _nextv (this: CursorIterator, size: number): Promise<unknown[]> { return await this.cursor.nextv(size) },
    async _all (this: CursorIterator): Promise<unknown[]> { return await this.cursor.all() },
    _seek (this: CursorIterator, target: Format): void { this.cursor.seek(target) },
    async _close (this: CursorIterator): Promise<void> { this.cursor?.close() }
  })
}

export class LsmIterator<TDatabase, K, V> extends AbstractIterator<TDatabase, K, V> implements CursorIterator {
  readonly cursor: Cursor

  constructor (db: TDatabase, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, ENTRIES)
  }
}

export class LsmKeyIterator<TDatabase, K, V> extends AbstractKeyIterator<TDatabase, K> implements CursorIterator {
  readonly cursor: Cursor

  constructor (db: TDatabase, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, KEYS)
  }
}

export class LsmValueIterator<TDatabase, K, V> extends AbstractValueIterator<TDatabase, K, V> implements CursorIterator {
  readonly cursor: Cursor

  constructor (db: TDatabase, options: IteratorOptions, engine: Engine) {
    super(db, options as unknown as AbstractIteratorOptions<K, V>)
    this.cursor = new Cursor(options, engine, VALUES)
  }
}

forwardToCursor(LsmIterator.prototype)
forwardToCursor(LsmKeyIterator.prototype)
forwardToCursor(LsmValueIterator.prototype)
