// LsmLevel's operations with multiProcess (lsm-backend.ts): on the engine when
// this process owns the database now, else on the owner through the failover
// layer (adapters/failover/), with keys and values as abstract-level encoded
// them and results decoded to the encodings it asked for. Iterators and
// snapshots made as a client are bound to that owner (LEVEL_OWNER_CHANGED after
// a failover); an engine snapshot made as the owner is this process's.
import { AbstractSnapshot } from 'abstract-level'
import type { Engine, ChangeBatch } from '../../lib/engine'
import type { Snapshot } from '../../lib/snapshots'
import type { EncodingName, Format } from '../bytes'
import type { RangeMessage } from '../remote/protocol'
import { ReadAheadIterator } from '../remote/read-ahead'
import { EngineBackend } from '../engine-backend'
import { notOnClient, type Backend, type LevelBatchOp, type ReadOptions, type WriteOptions } from '../lsm-backend'
import { abortError, type IteratorOptions, type RangeReadOptions } from '../lsm-cursor'
import { FailoverDatabase } from '../failover/failover-database'
import type { FailoverSnapshot } from '../failover/handles'
import { ProcessElection, type ProcessElectionOptions } from './process-election'

/** Bytes from the owner in the encoding asked for. */
function decode (data: unknown, encoding: EncodingName): Format | undefined {
  if (data === undefined) return undefined
  const view = data as Uint8Array
  if (encoding === 'view') return view
  const buf = Buffer.isBuffer(view) ? view : Buffer.from(view.buffer, view.byteOffset, view.byteLength)
  return encoding === 'utf8' ? buf.toString('utf8') : buf
}

function bytes (data: Format): Uint8Array {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}

function bytesOf (data: Format | undefined): Uint8Array | undefined {
  return data === undefined ? undefined : bytes(data)
}

function rangeOf (options: RangeReadOptions & { limit?: number }): RangeMessage {
  return { gt: bytesOf(options.gt), gte: bytesOf(options.gte), lt: bytesOf(options.lt), lte: bytesOf(options.lte), reverse: options.reverse, limit: options.limit }
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

/** An explicit snapshot held by the owner's session for this client. */
class ClientSnapshot extends SnapshotBase {
  constructor (options: object, readonly remote: FailoverSnapshot, private readonly failover: FailoverDatabase) {
    super(options)
  }

  /** The engine's snapshot (the engine read path): this one belongs to an owner this process replaced. */
  get inner (): Snapshot {
    throw this.failover.ownerChanged()
  }

  async _close (): Promise<void> {
    await this.remote.close()
  }
}

/** A multiProcess open's location, engine options and ownerTimeoutMs. */
export type MultiProcessOptions = Omit<ProcessElectionOptions, 'onOwner'>

export class MultiProcessBackend implements Backend {
  readonly keys = undefined
  readonly values = undefined
  private readonly election: ProcessElection
  private readonly failover: FailoverDatabase
  /** The engine, while this process owns the database. */
  private local: EngineBackend | undefined

  constructor (options: MultiProcessOptions) {
    this.election = new ProcessElection({
      ...options,
      // This process became the owner: the engine serves this open's operations from now on.
      onOwner: (engine) => { this.local = new EngineBackend(engine, false) }
    })
    this.failover = new FailoverDatabase(this.election)
  }

  async open (flags: { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    await this.election.open(flags)
  }

  async close (): Promise<void> {
    this.local = undefined
    await this.election.close()
  }

  get role (): 'owner' | 'client' | undefined {
    return this.election.role
  }

  /** The owner's server, when this process is the owner (tests count its sessions). */
  get server (): unknown {
    return this.election.server
  }

  // Owner now: the engine, as without multiProcess. Client: the owner, through the failover layer.

  put (key: Format, value: Format, options: WriteOptions): Promise<void> {
    return this.local?.put(key, value, options) ?? this.failover.put(bytes(key), bytes(value), { sync: options.sync === true })
  }

  del (key: Format, options: WriteOptions): Promise<void> {
    return this.local?.del(key, options) ?? this.failover.del(bytes(key), { sync: options.sync === true })
  }

  batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> {
    if (this.local !== undefined) return this.local.batch(operations, options)
    const ops = operations.map((op) => op.type === 'put'
      ? { type: op.type, key: bytes(op.key), value: bytes(op.value!) }
      : { type: op.type, key: bytes(op.key) })
    return this.failover.batch(ops, { sync: options.sync === true })
  }

  getSync (key: Format, options: ReadOptions): Format | undefined {
    if (this.local === undefined) throw notOnClient('getSync()', 'await db.get()')
    return this.local.getSync(key, options)
  }

  get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> {
    if (this.local !== undefined) return this.local.get(key, options)
    return this.failover.get(bytes(key), this.at(options)).then((v) => decode(v, options.valueEncoding))
  }

  async getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> {
    if (this.local !== undefined) return await this.local.getMany(keys, options)
    const values = await this.failover.getMany(keys.map(bytes), this.at(options))
    return values.map((v) => decode(v, options.valueEncoding))
  }

  async has (key: Format, options: ReadOptions): Promise<boolean> {
    return await (this.local?.has(key, options) ?? this.failover.has(bytes(key), this.at(options)))
  }

  async hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> {
    return await (this.local?.hasMany(keys, options) ?? this.failover.hasMany(keys.map(bytes), this.at(options)))
  }

  /** clear() is a write: never retried. */
  async clear (options: RangeReadOptions & { limit: number }): Promise<void> {
    await (this.local?.clear(options) ?? this.failover.clear({ ...rangeOf(options), ...this.at(options) }))
  }

  iterator (db: unknown, options: IteratorOptions): ReadAheadIterator {
    if (this.local !== undefined) return this.local.iterator(db, options) as unknown as ReadAheadIterator
    const source = this.failover.iterator({ ...rangeOf(options), keys: options.keys, values: options.values, ...this.at(options) })
    return new ReadAheadIterator(db, options, source, {
      decode: ([k, v]) => [decode(k, options.keyEncoding), decode(v, options.valueEncoding)],
      check: () => source.check(),
      fetched: () => { if (options.signal?.aborted === true) throw abortError(options.signal.reason) }
    })
  }

  snapshot (options: object): object {
    return this.local?.snapshot(options) ?? new ClientSnapshot(options, this.failover.snapshot(), this.failover)
  }

  engine (what: string, instead: string): Engine {
    if (this.local === undefined) throw notOnClient(what, instead)
    return this.local.engine()
  }

  async call (method: string, args: unknown[], once = false): Promise<unknown> {
    return await (this.local?.call(method, args) ?? this.failover.call(method, args, once))
  }

  async currentSequence (): Promise<number> {
    return await (this.local?.currentSequence() ?? this.failover.currentSequence())
  }

  /** The owner's change feed, keys and values as Buffers; fails with LEVEL_OWNER_CHANGED when the owner changes. */
  async* changes (since: number | undefined): AsyncGenerator<ChangeBatch, void, undefined> {
    if (this.local !== undefined) return yield* this.local.changes(since)
    for await (const batch of this.failover.changes({ since })) {
      yield {
        seq: batch.seq,
        ops: batch.ops.map((op) => ({
          type: op.type,
          key: decode(op.key, 'buffer'),
          ...(op.value === undefined ? {} : { value: decode(op.value, 'buffer') }),
          ...(op.end === undefined ? {} : { end: decode(op.end, 'buffer') })
        })) as ChangeBatch['ops']
      }
    }
  }

  /** A read's snapshot: a client snapshot's handle; an engine snapshot is from before this process became a client. */
  private at (options: { snapshot?: unknown }): { snapshot?: FailoverSnapshot } {
    const s = options.snapshot
    if (s === undefined) return {}
    if (s instanceof ClientSnapshot) return { snapshot: s.remote }
    throw this.failover.ownerChanged()
  }
}
