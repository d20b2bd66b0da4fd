// A database served elsewhere, seen through one connection: the operations of
// a ServedDatabase (keys and values as Uint8Arrays) sent as requests of the
// remote protocol. RemoteLevel puts abstract-level on top of it; a server that
// relays its clients to another server (a tab that does not own the database,
// a process that is not the owner) serves one of these as its database.
import type { RemoteConnection } from './connection'
import type { ServedDatabase, ServedIterator, ServedSnapshot } from './host'
import { PROTOCOL_VERSION, type AttachResult, type BatchOpMessage, type ChangeBatchMessage, type RangeMessage } from './protocol'
import { levelError } from '../../lib/errors'

/** A snapshot held by the server's session, named by the request that made it. */
export class RemoteSnapshotHandle implements ServedSnapshot {
  readonly handle: number

  constructor (private readonly connection: RemoteConnection) {
    this.handle = connection.post({ op: 'snapshot' })
  }

  async close (): Promise<void> {
    // A connection that ended took its session's handles with it.
    if (this.connection.healthy) await this.connection.request({ op: 'snapshotClose', snapshot: this.handle })
  }
}

/** An iterator held by the server's session, named by the request that made it. */
export class RemoteCursor implements ServedIterator {
  readonly handle: number

  constructor (private readonly connection: RemoteConnection, range: RangeMessage, keys: boolean, values: boolean, snapshot: RemoteSnapshotHandle | undefined) {
    this.handle = connection.post({ op: 'iterator', range, keys, values, snapshot: snapshot?.handle })
  }

  async nextv (size: number): Promise<Array<[Uint8Array | undefined, Uint8Array | undefined]>> {
    return await this.connection.request({ op: 'nextv', iterator: this.handle, size }) as Array<[Uint8Array | undefined, Uint8Array | undefined]>
  }

  seek (target: Uint8Array): void {
    this.connection.post({ op: 'seek', iterator: this.handle, target })
  }

  async close (): Promise<void> {
    if (this.connection.healthy) await this.connection.request({ op: 'iteratorClose', iterator: this.handle })
  }
}

/** The bounds and flags of a range, from abstract-level's normalised options. */
export function rangeMessage (options: RangeMessage): RangeMessage {
  return { gt: options.gt, gte: options.gte, lt: options.lt, lte: options.lte, reverse: options.reverse === true, limit: options.limit }
}

interface ReadOptions { snapshot?: ServedSnapshot }

function handleOf (snapshot: ServedSnapshot | undefined): number | undefined {
  if (snapshot === undefined) return undefined
  if (!(snapshot instanceof RemoteSnapshotHandle)) throw levelError('LEVEL_INVALID_OPTION', 'The snapshot belongs to another database')
  return snapshot.handle
}

export class RemoteDatabase implements ServedDatabase {
  private lastSequence = 0

  private constructor (readonly connection: RemoteConnection) {}

  /**
   * Attaches a session for the database at `location` on `connection` (opened
   * with `options` if the server opens it). Fails with LEVEL_NOT_SUPPORTED if
   * the server speaks another version of the protocol.
   */
  static async attach (connection: RemoteConnection, location: string, options: Record<string, unknown>): Promise<RemoteDatabase> {
    // A server older than the remote protocol (a stale worker file) replies with no version.
    const attached = await connection.request({ op: 'attach', version: PROTOCOL_VERSION, location, options }) as AttachResult | undefined
    if (attached?.version !== PROTOCOL_VERSION) {
      throw levelError('LEVEL_NOT_SUPPORTED', `The server speaks version ${String(attached?.version ?? 'none')} of the remote protocol, not ${PROTOCOL_VERSION}`)
    }
    return new RemoteDatabase(connection)
  }

  /** Lets go of the database (the server closes this session's handles). */
  async detach (): Promise<void> {
    await this.connection.request({ op: 'detach' })
  }

  put (key: Uint8Array, value: Uint8Array, options: { sync: boolean }): Promise<void> {
    return this.connection.request({ op: 'put', key, value, sync: options.sync }) as Promise<void>
  }

  async del (key: Uint8Array, options: { sync: boolean }): Promise<void> {
    await this.connection.request({ op: 'del', key, sync: options.sync })
  }

  async batch (ops: BatchOpMessage[], options: { sync: boolean }): Promise<void> {
    await this.connection.request({ op: 'batch', ops, sync: options.sync })
  }

  async get (key: Uint8Array, options: ReadOptions): Promise<Uint8Array | undefined> {
    return await this.connection.request({ op: 'get', key, snapshot: handleOf(options.snapshot) }) as Uint8Array | undefined
  }

  async getMany (keys: Uint8Array[], options: ReadOptions): Promise<Array<Uint8Array | undefined>> {
    return await this.connection.request({ op: 'getMany', keys, snapshot: handleOf(options.snapshot) }) as Array<Uint8Array | undefined>
  }

  async has (key: Uint8Array, options: ReadOptions): Promise<boolean> {
    return await this.connection.request({ op: 'has', key, snapshot: handleOf(options.snapshot) }) as boolean
  }

  async hasMany (keys: Uint8Array[], options: ReadOptions): Promise<boolean[]> {
    return await this.connection.request({ op: 'hasMany', keys, snapshot: handleOf(options.snapshot) }) as boolean[]
  }

  async clear (options: RangeMessage & ReadOptions): Promise<void> {
    await this.connection.request({ op: 'clear', range: rangeMessage(options), snapshot: handleOf(options.snapshot) })
  }

  iterator (options: RangeMessage & ReadOptions & { keys?: boolean, values?: boolean }): RemoteCursor {
    const snapshot = options.snapshot === undefined ? undefined : options.snapshot as RemoteSnapshotHandle
    handleOf(snapshot)
    return new RemoteCursor(this.connection, rangeMessage(options), options.keys !== false, options.values !== false, snapshot)
  }

  snapshot (): RemoteSnapshotHandle {
    return new RemoteSnapshotHandle(this.connection)
  }

  /** The server's sequence number, as of the last currentSequence() or change this client saw (see currentSequence). */
  get sequence (): number {
    return this.lastSequence
  }

  /** Asks the server for the sequence number of its last committed write. */
  async currentSequence (): Promise<number> {
    const seq = await this.connection.request({ op: 'sequence' }) as number
    if (seq > this.lastSequence) this.lastSequence = seq
    return seq
  }

  /** Calls one of the server's additional methods by name (plain data in and out). */
  async call (method: string, args: unknown[]): Promise<unknown> {
    return await this.connection.request({ op: 'call', method, args })
  }

  /**
   * The committed batches after `since` (default: the server's current
   * sequence number), then live ones, pulled one request at a time; ends when
   * the database closes or the loop stops.
   */
  async* changes (options: { since?: number } = {}): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    const connection = this.connection
    const { id: feed, reply } = connection.named({ op: 'changes', since: options.since })
    // A since the server refuses fails here, before the feed is used.
    await reply
    try {
      for (;;) {
        const batch = await connection.request({ op: 'changesNext', feed }) as ChangeBatchMessage | undefined
        if (batch === undefined) return
        if (batch.seq > this.lastSequence) this.lastSequence = batch.seq
        yield batch
      }
    } finally {
      if (connection.healthy) connection.post({ op: 'changesClose', feed })
    }
  }
}
