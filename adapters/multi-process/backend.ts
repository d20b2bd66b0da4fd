// LsmLevel's operations with multiProcess (lsm-backend.ts): on the engine when
// this process owns the database now. A client reads on its own, from a
// read-only open of the database caught up with the owner before each read
// (local-reads.ts); its writes, and what only the owner runs (compactions,
// checkpoints, the change feed), go to the owner through the failover layer
// (adapters/failover/), with keys and values as abstract-level encoded them
// and results decoded to the encodings it asked for. Snapshots and iterators
// made as a client read this process's files and outlive owner changes.
import type { Engine, ChangeBatch } from '../../lib/engine'
import type { EncodingName, Format } from '../bytes'
import type { RangeMessage } from '../remote/protocol'
import { EngineBackend } from '../engine-backend'
import { notOnClient, type Backend, type LevelBatchOp, type ReadOptions, type WriteOptions } from '../lsm-backend'
import type { IteratorOptions, RangeReadOptions } from '../lsm-cursor'
import { FailoverDatabase } from '../failover/failover-database'
import { levelError } from '../../lib/errors'
import { ProcessElection, type ProcessElectionOptions } from './process-election'
import { LocalReads, LocalSnapshot } from './local-reads'

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

/** A multiProcess open's location, engine options and ownerTimeoutMs. */
export type MultiProcessOptions = Omit<ProcessElectionOptions, 'onOwner'>

type Read<T> = (on: EngineBackend) => T | Promise<T>

export class MultiProcessBackend implements Backend {
  readonly keys = undefined
  readonly values = undefined
  private readonly election: ProcessElection
  private readonly failover: FailoverDatabase
  /** The engine, while this process owns the database. */
  private local: EngineBackend | undefined
  /** A client's reads (local-reads.ts); once this process owns the database, they serve only the handles made on them. */
  private reads: LocalReads | undefined
  private retired: LocalReads | undefined

  constructor (private readonly options: MultiProcessOptions) {
    this.election = new ProcessElection({
      ...options,
      // This process became the owner: the engine serves this open's operations from now on.
      onOwner: (engine) => {
        this.local = new EngineBackend(engine, false)
        this.retire()
      },
      // A client taking over: its engine's replay continues the logs its reads tailed.
      replayedPrefixes: () => this.reads?.engine.handOver() ?? [],
      ownFailed: () => this.reads?.engine.resumeFollowing()
    })
    this.failover = new FailoverDatabase(this.election)
  }

  async open (flags: { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    await this.election.open(flags)
    if (this.election.role !== 'client') return
    const { cacheSize } = this.options.engineOptions
    try {
      this.reads = await LocalReads.open(this.options.location, cacheSize === undefined ? {} : { cacheSize })
    } catch (err) {
      await this.election.close().catch(() => {})
      throw err
    }
    // The owner may have gone, and this process taken over, meanwhile.
    if (this.local !== undefined) this.retire()
  }

  private retire (): void {
    const reads = this.reads
    if (reads === undefined) return
    this.reads = undefined
    this.retired = reads
    reads.retire().catch(() => {})
  }

  async close (): Promise<void> {
    this.local = undefined
    const reads = [this.reads, this.retired]
    this.reads = this.retired = undefined
    try {
      await this.election.close()
    } finally {
      for (const r of reads) await r?.close()
    }
  }

  get role (): 'owner' | 'client' | undefined {
    return this.election.role
  }

  /** The owner's server, when this process is the owner (tests count its sessions). */
  get server (): unknown {
    return this.election.server
  }

  /** A client's local reads (tests read their follower's counters). */
  get localReads (): LocalReads | undefined {
    return this.reads
  }

  // Writes: the engine while this process owns the database, else the owner.
  // A client's write, once resolved (or failed), makes its next read catch up.

  put (key: Format, value: Format, options: WriteOptions): Promise<void> {
    return this.local?.put(key, value, options) ?? this.wrote(this.failover.put(bytes(key), bytes(value), { sync: options.sync === true }))
  }

  del (key: Format, options: WriteOptions): Promise<void> {
    return this.local?.del(key, options) ?? this.wrote(this.failover.del(bytes(key), { sync: options.sync === true }))
  }

  batch (operations: LevelBatchOp[], options: WriteOptions): Promise<void> {
    if (this.local !== undefined) return this.local.batch(operations, options)
    const ops = operations.map((op) => op.type === 'put'
      ? { type: op.type, key: bytes(op.key), value: bytes(op.value!) }
      : { type: op.type, key: bytes(op.key) })
    return this.wrote(this.failover.batch(ops, { sync: options.sync === true }))
  }

  private wrote (write: Promise<void>): Promise<void> {
    return write.finally(() => this.reads?.stale())
  }

  /**
   * Where a read runs: on the open its snapshot belongs to; else on the
   * engine (owner) or the local reads, caught up with the owner first (client).
   */
  private read<T> (options: { snapshot?: unknown }, read: Read<T>): T | Promise<T> {
    const s = options.snapshot
    if (s instanceof LocalSnapshot) return read(s.reads.backend)
    if (this.local !== undefined) return read(this.local)
    // An engine snapshot is from before this process was a client: it cannot be (an owner stays one until it closes).
    if (s !== undefined) throw this.failover.ownerChanged()
    const reads = this.client()
    const wait = reads.caughtUp()
    return wait === undefined ? read(reads.backend) : wait.then(() => read(reads.backend))
  }

  private client (): LocalReads {
    if (this.reads === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')
    return this.reads
  }

  getSync (key: Format, options: ReadOptions): Format | undefined {
    const s = options.snapshot
    if (s instanceof LocalSnapshot) return s.reads.backend.getSync(key, options)
    if (this.local !== undefined) return this.local.getSync(key, options)
    const reads = this.client()
    reads.caughtUpNow()
    return reads.backend.getSync(key, options)
  }

  get (key: Format, options: ReadOptions): Format | undefined | Promise<Format | undefined> {
    return this.read(options, (on) => on.get(key, options))
  }

  async getMany (keys: Format[], options: ReadOptions): Promise<Array<Format | undefined>> {
    return await this.read(options, async (on) => await on.getMany(keys, options))
  }

  async has (key: Format, options: ReadOptions): Promise<boolean> {
    return await this.read(options, async (on) => await on.has(key, options))
  }

  async hasMany (keys: Format[], options: ReadOptions): Promise<boolean[]> {
    return await this.read(options, async (on) => await on.hasMany(keys, options))
  }

  /**
   * clear() is a write: never retried. At a client's snapshot, the keys are
   * read from it here and their point deletes written as batches.
   */
  async clear (options: RangeReadOptions & { limit: number }): Promise<void> {
    const s = options.snapshot
    if (s instanceof LocalSnapshot) {
      await s.reads.clearAt(options, s.inner, options.limit, async (keys) => await this.batch(keys.map((key) => ({ type: 'del', key })), {}))
      return
    }
    if (this.local !== undefined) return await this.local.clear(options)
    if (s !== undefined) throw this.failover.ownerChanged()
    await this.wrote(this.failover.clear({ ...rangeOf(options) }))
  }

  iterator (db: unknown, options: IteratorOptions): ReturnType<Backend['iterator']> {
    const s = options.snapshot
    if (s instanceof LocalSnapshot) return s.reads.iterator(db, options)
    if (this.local !== undefined) return this.local.iterator(db, options)
    if (s !== undefined) throw this.failover.ownerChanged()
    return this.client().iterator(db, options)
  }

  snapshot (options: object): object {
    return this.local?.snapshot(options) ?? this.client().snapshot(options)
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
}
