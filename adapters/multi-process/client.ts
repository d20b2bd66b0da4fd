// LsmLevel's operations when another process owns the database (option
// multiProcess): keys and values as abstract-level encoded them go to the
// owner over the link's line (owner-link.ts), results come back in the
// encodings abstract-level asked for. Each operation returns RUN_HERE when
// this process has become the owner meanwhile: LsmLevel then runs it on the
// engine. Iterators and snapshots are bound to the line they were made on.
import { AbstractIterator, AbstractSnapshot } from 'abstract-level'
import type { Engine } from '../../lib/engine'
import type { Snapshot } from '../../lib/snapshots'
import type { ChangeBatch } from '../../lib/change-feed'
import type { EncodingName, Format } from '../bytes'
import type { RemoteCursor, RemoteDatabase, RemoteSnapshotHandle } from '../remote/remote-database'
import type { RangeMessage } from '../remote/protocol'
import { OwnerLink, OWNER } from './owner-link'
import type { OwnerLine } from './owner-line'
import { RUN_HERE } from './run-here'
import { abortError } from '../lsm-cursor'

type Result<T> = T | typeof RUN_HERE

interface ReadOptions {
  snapshot?: unknown
  valueEncoding: EncodingName
}

interface IteratorOptions extends RangeMessage {
  snapshot?: unknown
  keys?: boolean
  values?: boolean
  limit: number
  keyEncoding: EncodingName
  valueEncoding: EncodingName
  signal?: AbortSignal
}

/** Bytes from the owner in the encoding asked for. */
function decode (data: Uint8Array | undefined, encoding: EncodingName): Format | undefined {
  if (data === undefined) return undefined
  if (encoding === 'view') return data
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  return encoding === 'utf8' ? buf.toString('utf8') : buf
}

function bytes (data: Format): Uint8Array {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}

function here<T> (r: T | typeof OWNER): Result<T> {
  return r === OWNER ? RUN_HERE : r
}

// abstract-level's typings omit the constructor's options ({ owner }).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot

/** An explicit snapshot held by the owner's session for this client, on one line. */
export class ClientSnapshot extends SnapshotBase {
  readonly line: OwnerLine | undefined
  readonly handle: RemoteSnapshotHandle | undefined

  constructor (options: object, private readonly link: OwnerLink) {
    super(options)
    // Made while no owner is reachable (a failover): it has no state to hold, and fails when used.
    this.line = link.line
    this.handle = this.line?.remote!.snapshot()
  }

  /** The engine's snapshot (LsmLevel's read path): this one belongs to an owner this process replaced. */
  get inner (): Snapshot {
    throw this.link.ownerChanged()
  }

  async _close (): Promise<void> {
    const { line, handle } = this
    if (line === undefined || handle === undefined || line.ended) return
    await this.link.onLine(line, async () => await handle.close()).catch(() => {})
  }
}

type Entry = [Format | undefined, Format | undefined]

/** Entries fetched per request by next() (nextv() asks for what it is asked). */
const NEXT_BATCH = 64

// abstract-level's typings of the iterator constructor lag its runtime (options).
const IteratorBase = AbstractIterator as unknown as new (db: unknown, options: object) => AbstractIterator<unknown, unknown, unknown>

/** An iterator held by the owner's session for this client, on one line; next() reads ahead. */
export class ClientIterator extends IteratorBase {
  private readonly line: OwnerLine | undefined
  private readonly cursor: RemoteCursor | undefined
  private buffered: Entry[] = []
  private done = false
  private readonly keyEncoding: EncodingName
  private readonly valueEncoding: EncodingName
  private readonly signal: AbortSignal | undefined

  constructor (db: unknown, options: IteratorOptions, private readonly link: OwnerLink) {
    super(db, options)
    this.signal = options.signal
    this.keyEncoding = options.keyEncoding
    this.valueEncoding = options.valueEncoding
    const snapshot = snapshotOf(options.snapshot, link)
    this.line = snapshot?.line ?? link.line
    if (this.line === undefined || this.line.ended) return
    this.cursor = this.line.remote!.iterator({
      gt: bytesOf(options.gt),
      gte: bytesOf(options.gte),
      lt: bytesOf(options.lt),
      lte: bytesOf(options.lte),
      reverse: options.reverse,
      limit: options.limit,
      keys: options.keys,
      values: options.values,
      snapshot: snapshot?.handle
    })
  }

  private async fetch (size: number): Promise<Entry[]> {
    const { line, cursor } = this
    if (line === undefined || cursor === undefined) throw this.link.ownerChanged()
    const raw = await this.link.onLine(line, async () => await cursor.nextv(size))
    if (this.signal?.aborted === true) throw abortError(this.signal.reason)
    const out = new Array<Entry>(raw.length)
    for (let i = 0; i < raw.length; i++) out[i] = [decode(raw[i][0], this.keyEncoding), decode(raw[i][1], this.valueEncoding)]
    return out
  }

  /** An iterator is its owner's: after a failover even what it read ahead is not served (one rule, whatever was buffered). */
  private check (): void {
    if (this.line === undefined || this.line.ended) throw this.line?.unreachable === true ? this.line.unreachableError() : this.link.ownerChanged()
  }

  async _next (): Promise<Entry | undefined> {
    this.check()
    if (this.buffered.length === 0 && !this.done) {
      this.buffered = (await this.fetch(NEXT_BATCH)).reverse()
      if (this.buffered.length === 0) this.done = true
    }
    return this.buffered.pop()
  }

  async _nextv (size: number): Promise<Entry[]> {
    this.check()
    if (this.buffered.length > 0) return this.buffered.splice(Math.max(0, this.buffered.length - size)).reverse()
    if (this.done) return []
    const out = await this.fetch(size)
    if (out.length === 0) this.done = true
    return out
  }

  _seek (target: Format): void {
    this.buffered = []
    this.done = false
    this.cursor?.seek(bytes(target))
  }

  async _close (): Promise<void> {
    const { line, cursor } = this
    if (line === undefined || cursor === undefined || line.ended) return
    await this.link.onLine(line, async () => await cursor.close()).catch(() => {})
  }
}

function bytesOf (data: Format | undefined): Uint8Array | undefined {
  return data === undefined ? undefined : bytes(data as Format)
}

/** The client snapshot among a read's options; one made by an engine of this process is from before a failover. */
function snapshotOf (snapshot: unknown, link: OwnerLink): ClientSnapshot | undefined {
  if (snapshot === undefined) return undefined
  if (snapshot instanceof ClientSnapshot) return snapshot
  throw link.ownerChanged()
}

export interface MultiProcessClientOptions {
  location: string
  engineOptions: Record<string, unknown>
  ownerTimeoutMs: number
  onOwner: (engine: Engine) => void
}

/** A multiProcess open's side of the link: the operations LsmLevel sends to another process's engine. */
export class MultiProcessClient {
  readonly link: OwnerLink

  constructor (options: MultiProcessClientOptions) {
    this.link = new OwnerLink(options)
  }

  async open (flags: { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    await this.link.open(flags)
  }

  async close (): Promise<void> {
    await this.link.close()
  }

  get role (): 'owner' | 'client' | undefined {
    return this.link.role
  }

  async put (key: Format, value: Format, sync: boolean): Promise<Result<void>> {
    return here(await this.link.write(async (r) => await r.put(bytes(key), bytes(value), { sync })))
  }

  async del (key: Format, sync: boolean): Promise<Result<void>> {
    return here(await this.link.write(async (r) => await r.del(bytes(key), { sync })))
  }

  async batch (operations: Array<{ type: 'put' | 'del', key: Format, value?: Format }>, sync: boolean): Promise<Result<void>> {
    const ops = operations.map((op) => op.type === 'put'
      ? { type: op.type, key: bytes(op.key), value: bytes(op.value!) }
      : { type: op.type, key: bytes(op.key) })
    return here(await this.link.write(async (r) => await r.batch(ops, { sync })))
  }

  async get (key: Format, options: ReadOptions): Promise<Result<Format | undefined>> {
    const k = bytes(key)
    const value = await this.readAt(options.snapshot, async (r, snapshot) => await r.get(k, { snapshot }))
    return value === RUN_HERE ? value : decode(value, options.valueEncoding)
  }

  async getMany (keys: Format[], options: ReadOptions): Promise<Result<Array<Format | undefined>>> {
    const ks = keys.map(bytes)
    const values = await this.readAt(options.snapshot, async (r, snapshot) => await r.getMany(ks, { snapshot }))
    return values === RUN_HERE ? values : values.map((v) => decode(v, options.valueEncoding))
  }

  async has (key: Format, options: ReadOptions): Promise<Result<boolean>> {
    const k = bytes(key)
    return await this.readAt(options.snapshot, async (r, snapshot) => await r.has(k, { snapshot }))
  }

  async hasMany (keys: Format[], options: ReadOptions): Promise<Result<boolean[]>> {
    const ks = keys.map(bytes)
    return await this.readAt(options.snapshot, async (r, snapshot) => await r.hasMany(ks, { snapshot }))
  }

  /** clear() is a write: never retried. */
  async clear (options: RangeMessage & { snapshot?: unknown, limit: number }): Promise<Result<void>> {
    const range = { gt: bytesOf(options.gt), gte: bytesOf(options.gte), lt: bytesOf(options.lt), lte: bytesOf(options.lte), reverse: options.reverse, limit: options.limit }
    const snapshot = snapshotOf(options.snapshot, this.link)
    if (snapshot !== undefined) {
      return await this.link.onLine(snapshotLine(snapshot, this.link), async (r) => await r.clear({ ...range, snapshot: snapshot.handle }))
    }
    return here(await this.link.write(async (r) => await r.clear(range)))
  }

  iterator (db: unknown, options: IteratorOptions): ClientIterator {
    return new ClientIterator(db, options, this.link)
  }

  snapshot (options: object): ClientSnapshot {
    return new ClientSnapshot(options, this.link)
  }

  /** One of the owner's additional methods (OWNER_METHODS), retried on the next owner like a read unless `once`. */
  async call (method: string, args: unknown[], once = false): Promise<Result<unknown>> {
    const run = async (r: RemoteDatabase): Promise<unknown> => await r.call(method, args)
    return here(once ? await this.link.write(run) : await this.link.read(run))
  }

  async currentSequence (): Promise<Result<number>> {
    return here(await this.link.read(async (r) => await r.currentSequence()))
  }

  /** The owner's change feed, keys and values as Buffers; fails with LEVEL_OWNER_CHANGED when the owner changes. */
  async* changes (since: number | undefined): AsyncGenerator<ChangeBatch | typeof RUN_HERE, void, undefined> {
    const line = await this.link.current()
    if (line === OWNER) {
      yield RUN_HERE
      return
    }
    const feed = line.remote!.changes({ since })
    try {
      for (;;) {
        const next = await this.link.onLine(line, async () => await feed.next())
        if (next.done === true) return
        yield {
          seq: next.value.seq,
          ops: next.value.ops.map((op) => ({
            type: op.type,
            key: bytes(decode(op.key, 'buffer')!) as Buffer,
            ...(op.value === undefined ? {} : { value: decode(op.value, 'buffer') as Buffer }),
            ...(op.end === undefined ? {} : { end: decode(op.end, 'buffer') as Buffer })
          })) as ChangeBatch['ops']
        }
      }
    } finally {
      feed.return(undefined).catch(() => {})
    }
  }

  /** A read at the caller's snapshot (bound to its line, not retried) or now (retried on the next owner). */
  private async readAt<T> (snapshot: unknown, run: (r: RemoteDatabase, snapshot?: RemoteSnapshotHandle) => Promise<T>): Promise<Result<T>> {
    const s = snapshotOf(snapshot, this.link)
    if (s === undefined) return here(await this.link.read(async (r) => await run(r)))
    return await this.link.onLine(snapshotLine(s, this.link), async (r) => await run(r, s.handle))
  }
}

function snapshotLine (snapshot: ClientSnapshot, link: OwnerLink): OwnerLine {
  if (snapshot.line === undefined) throw link.ownerChanged()
  return snapshot.line
}
