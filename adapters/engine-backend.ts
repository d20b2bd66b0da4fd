// LsmLevel's operations on the engine in this process (lsm-backend.ts): the
// open's own engine, or a multiProcess owner's.
import { AbstractSnapshot } from 'abstract-level'
import { encodeBatch, type Engine, type BatchOp, type ChangeBatch } from '../lib/engine'
import type { Snapshot } from '../lib/snapshots'
import { KIND_DELETE, KIND_VALUE } from '../lib/keys'
import { levelError } from '../lib/errors'
import { ownedOut, toView, type Format } from './bytes'
import { EngineDatabase } from './remote/engine-database'
import { LsmIterator, LsmKeyIterator, LsmValueIterator, rangeFrom, type IteratorOptions, type RangeReadOptions } from './lsm-cursor'
import type { Backend, LevelBatchOp, ReadOptions, WriteOptions } from './lsm-backend'

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

export class LsmSnapshot extends SnapshotBase {
  readonly inner: Snapshot

  constructor (options: object, private readonly owner: Engine) {
    super(options)
    this.inner = owner.snapshot()
  }

  async _close (): Promise<void> {
    this.owner.releaseSnapshot(this.inner)
  }
}

export class EngineBackend implements Backend {
  readonly role = undefined
  /** The additional methods, plain data in and out (the same object a multiProcess owner serves). */
  private readonly methods: EngineDatabase

  constructor (private readonly db: Engine, private readonly closeEngine = true) {
    this.methods = new EngineDatabase(db)
  }

  // Not async: the engine's promise is returned as is (one promise less per write).
  put (key: Format, value: Format, options: WriteOptions): Promise<void> {
    return this.db.write(encodeOne(KIND_VALUE, key, value), options.sync === true)
  }

  del (key: Format, options: WriteOptions): Promise<void> {
    return this.db.write(encodeOne(KIND_DELETE, key, undefined), options.sync === true)
  }

  /**
   * The operations (keys and values already encoded and prefixed by
   * abstract-level) are copied once, straight into the batch's log record
   * payload, which the memtable then reads them from (lib/wal/batch.ts).
   */
  batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> {
    const ops = new Array<BatchOp>(operations.length)
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i]
      if (op.type === 'put') ops[i] = { kind: KIND_VALUE, key: op.key, value: op.value }
      else if (op.type === 'del') ops[i] = { kind: KIND_DELETE, key: op.key }
      else throw levelError('LEVEL_INVALID_OPTION', `A batch operation's type must be 'put' or 'del', not '${String(op.type)}'`)
    }
    return this.db.write(encodeBatch(ops), options.sync === true)
  }

  getSync (key: Format, options: ReadOptions): Format | undefined {
    const value = this.db.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  /**
   * Returns the value itself, not a promise, when the read completes now (the
   * common case: abstract-level awaits it either way, and a plain value saves
   * the async function's promise); a promise when the read waits for the next turn.
   */
  get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> {
    const engine = this.db
    if (engine.turn.exhausted()) return this.getLater(key, options)
    const value = engine.get(toView(key), options.snapshot?.inner)
    return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
  }

  private async getLater (key: Format, options: ReadOptions): Promise<Format | undefined> {
    const engine = this.db
    return await engine.readAtPoint(options.snapshot?.inner, (at) => {
      const value = engine.get(toView(key), at)
      return value === undefined ? undefined : ownedOut(value, options.valueEncoding)
    })
  }

  async getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> {
    const engine = this.db
    return await engine.readAtPoint(options.snapshot?.inner, (at) => {
      const out = new Array(keys.length)
      for (let i = 0; i < keys.length; i++) {
        const value = engine.get(toView(keys[i]), at)
        out[i] = value === undefined ? undefined : ownedOut(value, options.valueEncoding)
      }
      return out
    })
  }

  async has (key: Format, options: ReadOptions): Promise<boolean> {
    const engine = this.db
    return await engine.readAtPoint(options.snapshot?.inner, (at) => engine.get(toView(key), at) !== undefined)
  }

  async hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> {
    const engine = this.db
    return await engine.readAtPoint(options.snapshot?.inner, (at) => keys.map((k) => engine.get(toView(k), at) !== undefined))
  }

  /** See Engine.clear: one range tombstone, or point deletes when limited or at a snapshot. */
  async clear (options: RangeReadOptions & { limit: number }): Promise<void> {
    const limit = options.limit >= 0 ? options.limit : Infinity
    await this.db.clear(rangeFrom(options), limit, options.snapshot?.inner)
  }

  iterator (db: unknown, options: IteratorOptions): LsmIterator<unknown, unknown, unknown> {
    return new LsmIterator(db, options, this.db)
  }

  keys (db: unknown, options: IteratorOptions): LsmKeyIterator<unknown, unknown, unknown> {
    return new LsmKeyIterator(db, options, this.db)
  }

  values (db: unknown, options: IteratorOptions): LsmValueIterator<unknown, unknown, unknown> {
    return new LsmValueIterator(db, options, this.db)
  }

  snapshot (options: object): LsmSnapshot {
    return new LsmSnapshot(options, this.db)
  }

  engine (): Engine {
    return this.db
  }

  async call (method: string, args: unknown[]): Promise<unknown> {
    return await (this.methods as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args)
  }

  async currentSequence (): Promise<number> {
    return this.db.lastSequence
  }

  changes (since: number | undefined): AsyncGenerator<ChangeBatch, void, undefined> {
    return this.db.changes(since ?? this.db.lastSequence)
  }

  /** Closes the engine, unless it is a multiProcess owner's (its election closes it, after it stops serving). */
  async close (): Promise<void> {
    if (this.closeEngine) await this.db.close()
  }
}
