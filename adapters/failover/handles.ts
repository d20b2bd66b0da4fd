// Snapshots and iterators of a shared database's open (failover-database.ts),
// each made under one term (owner or client of one owner) and usable while
// that term lasts: after an owner change they fail with LEVEL_OWNER_CHANGED,
// but for an iterator that has delivered nothing yet (at no explicit
// snapshot), which is made again on the next owner, as if made a moment later.
import type { ServedIterator, ServedSnapshot } from '../remote/host'
import type { Term } from './election'
import { READ_RETRIES } from './messages'

/** What a handle made under one term asks of the open (FailoverDatabase). */
export interface TermSource {
  /** The live term now, or undefined while none is settled (an election, a takeover). */
  readonly liveTerm: Term | undefined
  /** The term once one is settled. */
  settled: () => Promise<Term>
  /** The error of an operation whose owner changed under it (LEVEL_OWNER_CHANGED). */
  ownerChanged: (cause?: unknown) => Error
  /** Runs `op` under `term`, failing it when that term ends first. */
  onTerm: <T>(term: Term, op: () => Promise<T>) => Promise<T>
}

/** A handle (snapshot or iterator) made under one term: the term now, or the next one if there is none now. */
export class Pinned<T> {
  private made: { term: Term, inner: T } | undefined
  private readonly waiting: Promise<{ term: Term, inner: T }> | undefined

  constructor (source: TermSource, make: (term: Term) => T) {
    const term = source.liveTerm
    if (term !== undefined) {
      // A handle that cannot be made (an iterator at a snapshot of a gone owner) fails when used, not when made.
      try {
        this.made = { term, inner: make(term) }
      } catch (err) {
        this.waiting = Promise.reject(err)
        this.waiting.catch(() => {})
      }
    } else {
      this.waiting = source.settled().then((t) => {
        this.made = { term: t, inner: make(t) }
        return this.made
      })
      this.waiting.catch(() => {})
    }
  }

  get now (): { term: Term, inner: T } | undefined {
    return this.made
  }

  async get (): Promise<{ term: Term, inner: T }> {
    return this.made ?? await this.waiting!
  }
}

/** Closes a handle on the owner that holds it, watched like any request; a handle whose owner is gone went with it. */
async function closeOn<T extends { close: () => Promise<void> }> (source: TermSource, pinned: Pinned<T>): Promise<void> {
  const made = await pinned.get().catch(() => undefined)
  if (made === undefined) return
  await source.onTerm(made.term, async () => await made.inner.close()).catch(() => {})
}

export class FailoverSnapshot implements ServedSnapshot {
  readonly pinned: Pinned<ServedSnapshot>

  constructor (private readonly source: TermSource) {
    this.pinned = new Pinned(source, (term) => term.db.snapshot())
  }

  async close (): Promise<void> {
    await closeOn(this.source, this.pinned)
  }
}

/**
 * An iterator on the term that made it. One that has delivered nothing yet
 * (and reads at no explicit snapshot) is made again on the next owner, up to
 * READ_RETRIES times, if its owner is lost. After its first entries, a lost
 * owner is LEVEL_OWNER_CHANGED.
 */
export class FailoverIterator implements ServedIterator {
  private pinned: Pinned<ServedIterator>
  private delivered = false
  private lastSeek: Uint8Array | undefined

  constructor (private readonly source: TermSource, private readonly options: Record<string, unknown>, private readonly snapshot: FailoverSnapshot | undefined) {
    this.pinned = this.make()
  }

  private make (): Pinned<ServedIterator> {
    return new Pinned(this.source, (term) => {
      if (this.snapshot !== undefined && this.snapshot.pinned.now?.term !== term) throw this.source.ownerChanged()
      const it = term.db.iterator({ ...this.options, snapshot: this.snapshot?.pinned.now?.inner })
      if (this.lastSeek !== undefined) it.seek(this.lastSeek)
      return it
    })
  }

  /**
   * Throws LEVEL_OWNER_CHANGED if the owner this iterator delivered from is
   * gone: entries read ahead from it are not served after a failover either.
   */
  check (): void {
    const term = this.pinned.now?.term
    if (this.delivered && term !== undefined && (term.ended || this.source.liveTerm !== term)) throw this.source.ownerChanged()
  }

  async nextv (size: number): Promise<unknown[]> {
    for (let attempt = 0; ; attempt++) {
      // Started in this turn when the iterator is made (no await first): the
      // session starts a client's requests in order, and a seek sent after
      // this nextv must not reach the iterator before it.
      const { term, inner } = this.pinned.now ?? await this.pinned.get()
      try {
        const out = await this.source.onTerm(term, async () => await inner.nextv(size))
        this.delivered = true
        return out
      } catch (err) {
        const code = (err as { code?: string }).code
        if (code !== 'LEVEL_OWNER_CHANGED' || this.delivered || this.snapshot !== undefined || attempt >= READ_RETRIES) throw err
        this.pinned = this.make()
      }
    }
  }

  seek (target: Uint8Array): void {
    // A seek starts the iterator afresh: what it delivered before does not pin it.
    this.delivered = false
    this.lastSeek = target
    const made = this.pinned.now
    if (made !== undefined) made.inner.seek(target)
    else this.pinned.get().then(({ inner }) => inner.seek(target), () => {})
  }

  async close (): Promise<void> {
    await closeOn(this.source, this.pinned)
  }
}
