// One client's session with a remote database server: the channel it came on,
// the database it attached to, and the iterators and snapshots it made (its
// handles, adapters/remote/protocol.ts). Requests start in arrival order (their
// synchronous part runs as they are read). Replies are gathered into one
// message while other requests of the session are still running (sent when
// the last of them settles, or at the next turn of the event loop, whichever
// comes first); the reply that leaves none running goes at once (after the
// microtasks of its moment), so that a lone awaited operation never waits for
// a turn (in a browser's worker, a turn made a 62-72 µs round trip with the
// page 25-36 µs longer: BENCHMARKS.md, the floor). Reply buffers of 8 KiB and
// more are transferred.
//
// A session ends with its channel: if still attached it detaches, which closes
// its handles first, so a client that vanished holds back no compaction.
import type { Channel } from './channel'
import { errorToData } from '../../lib/error-codec'
import type { DatabaseHost, ServedDatabase, ServedIterator, ServedSnapshot, SessionEvents } from './host'
import { PROTOCOL_VERSION, transferables, type AttachResult, type ChangeBatchMessage, type Push, type RangeMessage, type Request, type ServerMessage } from './protocol'
import { levelError } from '../../lib/errors'

export type ServerChannel = Channel<ServerMessage[], Request[]>

export class Session implements SessionEvents {
  private db: ServedDatabase | undefined
  /** Attached, or attaching: the host has this session until detach(). */
  private withHost = false
  /** The host's attach in progress: a detach waits for it. */
  private attaching: Promise<void> | undefined
  private readonly iterators = new Map<number, ServedIterator>()
  private readonly snapshots = new Map<number, ServedSnapshot>()
  private readonly feeds = new Map<number, AsyncGenerator<ChangeBatchMessage, void, undefined>>()
  private outbox: ServerMessage[] = []
  /** Requests started and not yet answered (a change feed's wait for a commit aside). */
  private running = 0
  private flushSoon = false
  private flushAtTurn = false
  private ended = false

  constructor (private readonly channel: ServerChannel, private readonly host: DatabaseHost) {
    channel.receive((requests) => this.receive(requests), () => this.channelClosed())
  }

  /** Whether a database is attached now. */
  get attached (): boolean {
    return this.db !== undefined
  }

  /** Open iterators and snapshots of this session. */
  get handles (): { iterators: number, snapshots: number, feeds: number } {
    return { iterators: this.iterators.size, snapshots: this.snapshots.size, feeds: this.feeds.size }
  }

  /** The host closed the database under this session. */
  closed (reason?: Error): void {
    if (!this.withHost) return
    this.withHost = false
    this.db = undefined
    this.iterators.clear()
    this.snapshots.clear()
    this.endFeeds()
    this.push({ push: 'closed', error: reason === undefined ? undefined : errorToData(reason) })
  }

  private receive (requests: Request[]): void {
    for (const req of requests) {
      let result: unknown
      try {
        result = this.start(req)
      } catch (err) {
        this.send({ id: req.id, error: errorToData(err) })
        continue
      }
      const counted = req.op !== 'changesNext'
      if (counted) this.running++
      Promise.resolve(result).then(
        (value) => this.answer(counted, { id: req.id, result: value }),
        (err: unknown) => this.answer(counted, { id: req.id, error: errorToData(err) })
      )
    }
  }

  private answer (counted: boolean, reply: ServerMessage): void {
    if (counted) this.running--
    this.send(reply)
  }

  /** Starts `req` (its synchronous part runs now); returns its result. */
  private start (req: Request): unknown {
    switch (req.op) {
      case 'attach': return this.attach(req.version, req.location, req.options)
      case 'detach': return this.detach()
      case 'put': return this.database().put(req.key, req.value, { sync: req.sync })
      case 'del': return this.database().del(req.key, { sync: req.sync })
      case 'batch': return this.database().batch(req.ops, { sync: req.sync })
      case 'get': return this.database().get(req.key, this.at(req.snapshot))
      case 'getMany': return this.database().getMany(req.keys, this.at(req.snapshot))
      case 'has': return this.database().has(req.key, this.at(req.snapshot))
      case 'hasMany': return this.database().hasMany(req.keys, this.at(req.snapshot))
      case 'clear': return this.database().clear({ ...rangeOptions(req.range), ...this.at(req.snapshot) })
      case 'iterator':
        this.name(this.iterators, req.id, this.database().iterator({ ...rangeOptions(req.range), keys: req.keys, values: req.values, ...this.at(req.snapshot) }))
        return undefined
      case 'nextv': return this.iterator(req.iterator).nextv(req.size)
      case 'seek': return this.iterator(req.iterator).seek(req.target)
      case 'iteratorClose': return this.release(this.iterators, req.iterator)
      case 'snapshot':
        this.name(this.snapshots, req.id, this.database().snapshot())
        return undefined
      case 'snapshotClose': return this.release(this.snapshots, req.snapshot)
      case 'call': return this.call(req.method, req.args)
      case 'sequence': return this.sequence()
      case 'changes': return this.openFeed(req.id, req.since)
      case 'changesNext': return this.nextChange(req.feed)
      case 'changesClose': return this.closeFeed(req.feed)
      default: throw levelError('LEVEL_NOT_SUPPORTED', `Unknown request '${String((req as { op?: unknown }).op)}'`)
    }
  }

  private async attach (version: number, location: string, options: Record<string, unknown>): Promise<AttachResult> {
    if (version !== PROTOCOL_VERSION) {
      throw levelError('LEVEL_NOT_SUPPORTED', `The client speaks version ${String(version)} of the remote protocol; this server speaks version ${PROTOCOL_VERSION}`)
    }
    if (this.withHost) throw levelError('LEVEL_NOT_SUPPORTED', 'This session is already attached: detach first')
    this.withHost = true
    this.attaching = this.host.attach(this, location, options).then((db) => {
      this.db = db
    }, (err: unknown) => {
      this.withHost = false
      throw err
    })
    try {
      await this.attaching
    } finally {
      this.attaching = undefined
    }
    return { version: PROTOCOL_VERSION }
  }

  /** Closes this session's handles, then lets the host have the database back. */
  private async detach (): Promise<void> {
    await this.attaching?.catch(() => {})
    if (!this.withHost) return
    this.db = undefined
    const handles = [...this.iterators.values(), ...this.snapshots.values()]
    this.iterators.clear()
    this.snapshots.clear()
    this.endFeeds()
    try {
      await Promise.allSettled(handles.map(async (h) => await h.close()))
    } finally {
      this.withHost = false
      await this.host.detach(this)
    }
  }

  private channelClosed (): void {
    this.ended = true
    this.outbox = []
    // Nobody is left to hear of a failure here.
    this.detach().catch(() => {})
  }

  private database (): ServedDatabase {
    if (this.db === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')
    return this.db
  }

  private at (snapshot: number | undefined): { snapshot?: ServedSnapshot } {
    if (snapshot === undefined) return {}
    const s = this.snapshots.get(snapshot)
    if (s === undefined) throw levelError('LEVEL_INVALID_OPTION', `Unknown snapshot ${snapshot}`)
    return { snapshot: s }
  }

  private iterator (id: number): ServedIterator {
    const it = this.iterators.get(id)
    if (it === undefined) throw new Error(`lsm-level remote session: iterator ${id} is not open`)
    return it
  }

  private name<T> (handles: Map<number, T>, id: number, handle: T): void {
    if (handles.has(id)) throw levelError('LEVEL_INVALID_OPTION', `Handle ${id} is in use: request ids must not repeat`)
    handles.set(id, handle)
  }

  private async release (handles: Map<number, ServedIterator | ServedSnapshot>, id: number): Promise<void> {
    const handle = handles.get(id)
    handles.delete(id)
    await handle?.close()
  }

  /** The database's current sequence number (asked for, where the database must ask). */
  private sequence (): number | Promise<number> {
    const db = this.database()
    return db.currentSequence === undefined ? db.sequence : db.currentSequence()
  }

  /** Opens a change feed named `id`; resolves to the sequence number it starts after. */
  private openFeed (id: number, since: number | undefined): number | Promise<number> {
    const db = this.database()
    if (since === undefined && db.currentSequence !== undefined) {
      // The feed is named now, so that a changesNext in the same turn finds it.
      let start = 0
      const asked = db.currentSequence().then((seq) => { start = seq })
      this.name(this.feeds, id, (async function* () { await asked; yield* db.changes({ since: start }) })())
      return asked.then(() => start)
    }
    const start = since ?? db.sequence
    this.name(this.feeds, id, db.changes({ since: start }))
    return start
  }

  /** The feed's next batch, keys and values copied out of the log's buffer (a view would carry all of it). */
  private async nextChange (id: number): Promise<ChangeBatchMessage | undefined> {
    const feed = this.feeds.get(id)
    if (feed === undefined) throw levelError('LEVEL_INVALID_OPTION', `Change feed ${id} is not open`)
    const next = await feed.next()
    if (next.done === true) {
      this.feeds.delete(id)
      return undefined
    }
    return {
      seq: next.value.seq,
      ops: next.value.ops.map((op) => {
        const out: ChangeBatchMessage['ops'][number] = { type: op.type, key: new Uint8Array(op.key) }
        if (op.value !== undefined) out.value = new Uint8Array(op.value)
        if (op.end !== undefined) out.end = new Uint8Array(op.end)
        return out
      })
    }
  }

  private closeFeed (id: number): void {
    const feed = this.feeds.get(id)
    this.feeds.delete(id)
    // A feed waiting for a commit ends at the next one, or when the database closes.
    feed?.return(undefined).catch(() => {})
  }

  private endFeeds (): void {
    for (const id of [...this.feeds.keys()]) this.closeFeed(id)
  }

  private call (method: string, args: unknown[]): unknown {
    const db = this.database()
    if (!this.host.callable.has(method)) throw levelError('LEVEL_NOT_SUPPORTED', `${method}() is not available through a remote database`)
    return (db as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args)
  }

  private push (message: Push): void {
    this.send(message)
  }

  private send (message: ServerMessage): void {
    if (this.ended) return
    this.outbox.push(message)
    if (this.running === 0) {
      if (!this.flushSoon) {
        this.flushSoon = true
        queueMicrotask(() => this.flush())
      }
    } else if (!this.flushAtTurn) {
      this.flushAtTurn = true
      setImmediate(() => {
        this.flushAtTurn = false
        this.flush()
      })
    }
  }

  private flush (): void {
    this.flushSoon = false
    const batch = this.outbox
    this.outbox = []
    if (batch.length === 0 || this.ended) return
    const transfer = new Set<ArrayBuffer>()
    for (const m of batch) if ('result' in m) transferables(m.result, transfer)
    this.channel.send(batch, [...transfer])
  }
}

/** A range with only the bounds that are set (abstract-level treats a present undefined bound as a bound). */
function rangeOptions (range: RangeMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(range)) if (v !== undefined) out[k] = v
  return out
}
