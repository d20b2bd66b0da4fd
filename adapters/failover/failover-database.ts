// One open of a database that many openers share (tabs of an origin, processes
// on a machine), over whatever election picks its owner (election.ts): the
// operations of a ServedDatabase (keys and values as Uint8Arrays) run on the
// engine here when this open owns the database, else on the owner over a line.
//
// The contract across an owner change, the same for every election:
// - a write whose promise resolved is never lost: the owner resolved it once
//   its log record reached the file system, which the next owner replays;
// - a write in flight when the owner was lost fails with LEVEL_OUTCOME_UNKNOWN
//   (it may or may not have committed; it is not retried, so never applied twice);
// - a read in flight (not at a snapshot) is retried on the next owner, up to
//   READ_RETRIES times (messages.ts; then LEVEL_OWNER_UNREACHABLE), unless
//   the owner stopped answering;
// - an iterator, an explicit snapshot or a change feed made before the change
//   fails with LEVEL_OWNER_CHANGED when used after it (an iterator that has
//   delivered nothing is made again on the next owner: handles.ts);
// - an operation that finds no owner within ownerTimeoutMs, or whose owner
//   stops answering for that long (alive but hung), fails with
//   LEVEL_OWNER_UNREACHABLE naming the database.
// test/failover.test.ts holds this contract over a fake election.
import type { ServedDatabase, ServedSnapshot } from '../remote/host'
import type { BatchOpMessage, ChangeBatchMessage } from '../remote/protocol'
import { RemoteDatabase } from '../remote/remote-database'
import type { Election, Term } from './election'
import { FailoverIterator, FailoverSnapshot, type TermSource } from './handles'
import { READ_RETRIES, outcomeUnknown, ownerChanged, ownerGone, ownerUnreachable, ownersLost } from './messages'

interface ReadOptions { snapshot?: ServedSnapshot }

export class FailoverDatabase implements ServedDatabase, TermSource {
  private highestSequence = 0

  constructor (readonly election: Election) {}

  get location (): string {
    return this.election.location
  }

  /** The term now, if it has not ended (handles bind to it). */
  get liveTerm (): Term | undefined {
    const term = this.election.term
    return term === undefined || term.ended ? undefined : term
  }

  async settled (): Promise<Term> {
    return await this.election.settled()
  }

  ownerChanged (cause?: unknown): Error {
    return ownerChanged(this.location, cause)
  }

  private unreachable (cause?: unknown): Error {
    return ownerUnreachable(this.location, this.election.ownerTimeoutMs, cause)
  }

  /**
   * Whether `err`, from an operation on `term`, means its owner was lost (the
   * term ended or was replaced, or the owner closed under it); ends the term if so.
   */
  private lost (term: Term, err: unknown): boolean {
    if (term.local) return false
    if (!term.ended && this.election.term === term && (err as { code?: string }).code !== 'LEVEL_DATABASE_NOT_OPEN') return false
    term.end(ownerGone(this.location))
    return true
  }

  /** Runs `op` on `term`, which made the handle it uses: after an owner change, LEVEL_OWNER_CHANGED. */
  async onTerm<T> (term: Term, op: () => Promise<T>): Promise<T> {
    if (term.ended || this.election.term !== term) throw term.unreachable ? this.unreachable() : this.ownerChanged()
    if (term.local) return await op()
    try {
      return await term.track(op)
    } catch (err) {
      if (!this.lost(term, err)) throw err
      throw term.unreachable ? this.unreachable(err) : this.ownerChanged(err)
    }
  }

  /**
   * A write: sent once; in flight when its owner is lost, it fails with
   * LEVEL_OUTCOME_UNKNOWN. With a live term it goes out in the caller's turn
   * (no wait for settled()): an awaited write is one round trip and little else.
   */
  write<T> (op: (db: ServedDatabase) => Promise<T>): Promise<T> {
    const term = this.liveTerm
    if (term === undefined || this.election.term !== term) return this.settled().then((t) => this.writeOn(t, op))
    return this.writeOn(term, op)
  }

  private writeOn<T> (term: Term, op: (db: ServedDatabase) => Promise<T>): Promise<T> {
    if (term.local) {
      try {
        return op(term.db)
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return term.track(() => op(term.db)).catch((err: unknown) => {
      if (this.lost(term, err)) throw outcomeUnknown(this.location, term.unreachable, this.election.ownerTimeoutMs, err)
      throw err
    })
  }

  /** A read: at a snapshot, on the snapshot's owner only; else retried on the next owner if this one is lost (not if it stopped answering). */
  async read<T> (snapshot: ServedSnapshot | undefined, op: (db: ServedDatabase, snapshot?: ServedSnapshot) => Promise<T>): Promise<T> {
    if (snapshot !== undefined) {
      const { pinned } = this.snapshotOf(snapshot)
      const { term, inner } = pinned.now ?? await pinned.get()
      return await this.onTerm(term, async () => await op(term.db, inner))
    }
    for (let attempt = 0; ; attempt++) {
      const term = await this.settled()
      if (term.local) return await op(term.db)
      try {
        return await term.track(async () => await op(term.db))
      } catch (err) {
        if (!this.lost(term, err)) throw err
        if (term.unreachable) throw this.unreachable(err)
        if (attempt >= READ_RETRIES) throw ownersLost(this.location, err)
      }
    }
  }

  /** A snapshot of this open's; any other (an engine's, from before this process owned the database) is from another owner. */
  private snapshotOf (snapshot: ServedSnapshot): FailoverSnapshot {
    if (snapshot instanceof FailoverSnapshot) return snapshot
    throw this.ownerChanged()
  }

  put (key: Uint8Array, value: Uint8Array, options: { sync: boolean }): Promise<void> {
    return this.write((db) => db.put(key, value, options))
  }

  del (key: Uint8Array, options: { sync: boolean }): Promise<void> {
    return this.write((db) => db.del(key, options))
  }

  batch (ops: BatchOpMessage[], options: { sync: boolean }): Promise<void> {
    return this.write((db) => db.batch(ops, options))
  }

  /** clear() is a write: never retried; at a snapshot, on the snapshot's owner. */
  async clear (options: Record<string, unknown> & ReadOptions): Promise<void> {
    const { snapshot, ...range } = options
    if (snapshot === undefined) return await this.write(async (db) => await db.clear(range))
    const { term, inner } = await this.snapshotOf(snapshot).pinned.get()
    await this.onTerm(term, async () => await term.db.clear({ ...range, snapshot: inner }))
  }

  async get (key: Uint8Array, options: ReadOptions): Promise<Uint8Array | undefined> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.get(key, { snapshot }))
  }

  async getMany (keys: Uint8Array[], options: ReadOptions): Promise<Array<Uint8Array | undefined>> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.getMany(keys, { snapshot }))
  }

  async has (key: Uint8Array, options: ReadOptions): Promise<boolean> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.has(key, { snapshot }))
  }

  async hasMany (keys: Uint8Array[], options: ReadOptions): Promise<boolean[]> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.hasMany(keys, { snapshot }))
  }

  iterator (options: Record<string, unknown> & ReadOptions): FailoverIterator {
    const { snapshot, ...rest } = options
    return new FailoverIterator(this, rest, snapshot === undefined ? undefined : this.snapshotOf(snapshot))
  }

  snapshot (): FailoverSnapshot {
    return new FailoverSnapshot(this)
  }

  /** The last sequence number this open knows of (see currentSequence). */
  get sequence (): number {
    const term = this.election.term
    if (term?.local === true) return term.db.sequence
    return Math.max(this.highestSequence, term?.db.sequence ?? 0)
  }

  /** The owner's current sequence number. */
  async currentSequence (): Promise<number> {
    const seq = await this.read(undefined, async (db) => db.currentSequence === undefined ? db.sequence : await db.currentSequence())
    if (seq > this.highestSequence) this.highestSequence = seq
    return seq
  }

  /** The owner's change feed; after an owner change, LEVEL_OWNER_CHANGED. */
  async* changes (options: { since?: number }): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    const term = await this.settled()
    const feed = term.db.changes(options)
    try {
      for (;;) {
        const next = await this.onTerm(term, async () => await feed.next())
        if (next.done === true) break
        if (next.value.seq > this.highestSequence) this.highestSequence = next.value.seq
        yield next.value
      }
    } finally {
      feed.return(undefined).catch(() => {})
    }
    // A feed on this open's engine ends when it closes; one on another's, when its owner changed.
    if (!term.local && (term.ended || this.election.term !== term)) throw this.ownerChanged()
  }

  /**
   * One of the owner's additional methods (messages.ts, ENGINE_METHODS),
   * retried on the next owner like a read; `once`: sent once, like a write.
   */
  async call (method: string, args: unknown[], once = false): Promise<unknown> {
    const run = async (db: ServedDatabase): Promise<unknown> => {
      if (db instanceof RemoteDatabase) return await db.call(method, args)
      return await (db as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args)
    }
    return once ? await this.write(run) : await this.read(undefined, run)
  }
}
