// The failover layer's contract (adapters/failover/failover-database.ts) over a
// fake election, in one process and in well under a second: owners are fake
// ServedDatabases over one store (what survives an owner: its files), each
// reached by a term that the test ends (the owner killed) with writes, reads,
// iterators, snapshots and change feeds in flight. A write in flight fails with
// LEVEL_OUTCOME_UNKNOWN and is applied once; a read is retried on the next
// owner, at most READ_RETRIES times, and not when the owner stopped answering
// (LEVEL_OWNER_UNREACHABLE); an iterator that delivered entries, a snapshot and
// a change feed fail with LEVEL_OWNER_CHANGED on the next owner; an iterator
// that delivered nothing is made again there. The elections themselves (Web
// Locks, the LOCK file) are tested across tabs (browser-tabs) and processes
// (multi-process, multi-process-torture).
import test from 'tape'
import { FailoverDatabase } from '../adapters/failover/failover-database'
import type { Election, Term } from '../adapters/failover/election'
import { LocalTerm } from '../adapters/failover/local-term'
import { READ_RETRIES, ownerUnreachable } from '../adapters/failover/messages'
import type { ServedDatabase, ServedIterator, ServedSnapshot } from '../adapters/remote/host'
import type { BatchOpMessage, ChangeBatchMessage } from '../adapters/remote/protocol'

const text = new TextEncoder()
const untext = new TextDecoder()
const b = (s: string): Uint8Array => text.encode(s)
const s = (u: unknown): string | undefined => u === undefined ? undefined : untext.decode(u as Uint8Array)

/** What survives an owner: the committed state and how often each key was put. */
class Store {
  readonly data = new Map<string, string>()
  readonly applied = new Map<string, number>()
  seq = 0
  readonly feeds = new Set<(batch: ChangeBatchMessage) => void>()

  write (ops: BatchOpMessage[]): void {
    for (const op of ops) {
      const key = s(op.key)!
      if (op.type === 'put') this.data.set(key, s(op.value)!)
      else this.data.delete(key)
      if (op.type === 'put') this.applied.set(key, (this.applied.get(key) ?? 0) + 1)
    }
    this.seq += ops.length
    for (const f of this.feeds) f({ seq: this.seq, ops })
  }

  sorted (): Array<[string, string]> {
    return [...this.data.entries()].sort(([a], [c]) => a < c ? -1 : a > c ? 1 : 0)
  }
}

/** One owner over the store. held: its replies wait (a write is committed first, as an owner's is); killed: they fail. */
class FakeOwner implements ServedDatabase {
  held = false
  private killedBy: Error | undefined
  private readonly waiting = new Set<{ resolve: () => void, reject: (err: Error) => void }>()

  constructor (readonly name: string, private readonly store: Store) {}

  hold (): void { this.held = true }

  release (): void {
    this.held = false
    for (const w of this.waiting) w.resolve()
    this.waiting.clear()
  }

  kill (reason: Error): void {
    this.killedBy = reason
    for (const w of this.waiting) w.reject(reason)
    this.waiting.clear()
  }

  /** The reply, once the owner answers. */
  private async reply<T> (value: () => T): Promise<T> {
    if (this.killedBy !== undefined) throw this.killedBy
    if (this.held) await new Promise<void>((resolve, reject) => this.waiting.add({ resolve, reject }))
    return value()
  }

  private async write (ops: BatchOpMessage[]): Promise<void> {
    if (this.killedBy !== undefined) throw this.killedBy
    this.store.write(ops)
    await this.reply(() => undefined)
  }

  async put (key: Uint8Array, value: Uint8Array): Promise<void> { await this.write([{ type: 'put', key, value }]) }
  async del (key: Uint8Array): Promise<void> { await this.write([{ type: 'del', key }]) }
  async batch (ops: BatchOpMessage[]): Promise<void> { await this.write(ops) }

  private view (snapshot: ServedSnapshot | undefined): Map<string, string> {
    if (snapshot === undefined) return this.store.data
    if (!(snapshot instanceof FakeSnapshot) || snapshot.owner !== this) throw new Error(`a snapshot of another owner reached ${this.name}`)
    return snapshot.data
  }

  async get (key: Uint8Array, o: { snapshot?: ServedSnapshot }): Promise<Uint8Array | undefined> {
    const v = this.view(o.snapshot).get(s(key)!)
    return await this.reply(() => v === undefined ? undefined : b(`${v}@${this.name}`))
  }

  async getMany (keys: Uint8Array[], o: { snapshot?: ServedSnapshot }): Promise<Array<Uint8Array | undefined>> {
    return await Promise.all(keys.map(async (k) => await this.get(k, o)))
  }

  async has (key: Uint8Array, o: { snapshot?: ServedSnapshot }): Promise<boolean> {
    return (await this.get(key, o)) !== undefined
  }

  async hasMany (keys: Uint8Array[], o: { snapshot?: ServedSnapshot }): Promise<boolean[]> {
    return await Promise.all(keys.map(async (k) => await this.has(k, o)))
  }

  async clear (o: { snapshot?: ServedSnapshot }): Promise<void> {
    const keys = [...this.view(o.snapshot).keys()]
    await this.write(keys.map((k) => ({ type: 'del', key: b(k) })))
  }

  iterator (o: { snapshot?: ServedSnapshot }): ServedIterator {
    const entries = o.snapshot === undefined ? this.store.sorted() : [...this.view(o.snapshot).entries()].sort()
    let at = 0
    return {
      nextv: async (size: number) => await this.reply(() => entries.slice(at, at += size).map(([k, v]) => [b(k), b(`${v}@${this.name}`)])),
      seek: () => {},
      close: async () => {}
    }
  }

  snapshot (): ServedSnapshot {
    return new FakeSnapshot(this, new Map(this.store.data))
  }

  get sequence (): number { return this.store.seq }

  /** An additional method (called by name, as ENGINE_METHODS are). */
  async stats (): Promise<string> { return await this.reply(() => `stats@${this.name}`) }

  async currentSequence (): Promise<number> { return await this.reply(() => this.store.seq) }

  async* changes (): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    const queue: ChangeBatchMessage[] = []
    let wake: () => void = () => {}
    const listener = (batch: ChangeBatchMessage): void => { queue.push(batch); wake() }
    this.store.feeds.add(listener)
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift()!
        await new Promise<void>((resolve, reject) => {
          wake = resolve
          if (this.killedBy !== undefined) reject(this.killedBy)
          else this.waiting.add({ resolve: () => {}, reject })
        })
      }
    } finally {
      this.store.feeds.delete(listener)
    }
  }
}

class FakeSnapshot implements ServedSnapshot {
  constructor (readonly owner: FakeOwner, readonly data: Map<string, string>) {}
  async close (): Promise<void> {}
}

/** A client's term on one fake owner: ended by the test (the owner killed, or declared hung). */
class FakeLine implements Term {
  readonly local = false
  ended = false
  unreachable = false

  constructor (readonly db: FakeOwner, private readonly election: FakeElection) {}

  async track<T> (request: () => Promise<T>): Promise<T> {
    return await request()
  }

  end (reason: Error): void {
    if (this.ended) return
    this.ended = true
    this.db.kill(reason)
    this.election.ended(this)
  }
}

/** Owners come when the test says (elect()); a term that ends leaves none until then. */
class FakeElection implements Election {
  readonly location = 'fake-db'
  readonly ownerTimeoutMs = 200
  term: Term | undefined
  private owners = 0
  private waiters: Array<(t: Term) => void> = []

  constructor (readonly store: Store) {}

  /** A new owner (a client term on it; local: this open owns it). */
  elect (local = false): FakeOwner {
    const owner = new FakeOwner(`owner${++this.owners}`, this.store)
    this.term = local ? new LocalTerm(owner) : new FakeLine(owner, this)
    for (const w of this.waiters.splice(0)) w(this.term)
    return owner
  }

  /** The owner is killed (its line ends); `hung`: the watchdog declared it unreachable. */
  kill (hung = false): void {
    const line = this.term as FakeLine
    line.unreachable = hung
    line.end(hung ? ownerUnreachable(this.location, this.ownerTimeoutMs) : new Error('the owner went away'))
  }

  ended (term: Term): void {
    if (this.term === term) this.term = undefined
  }

  async settled (): Promise<Term> {
    if (this.term !== undefined) return this.term
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(ownerUnreachable(this.location, this.ownerTimeoutMs)), this.ownerTimeoutMs)
      this.waiters.push((t) => { clearTimeout(timer); resolve(t) })
    })
  }
}

function setup (): { election: FakeElection, db: FailoverDatabase, store: Store } {
  const store = new Store()
  const election = new FakeElection(store)
  return { election, db: new FailoverDatabase(election), store }
}

async function codeOf (p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'resolved'
  } catch (err) {
    return String((err as { code?: string }).code)
  }
}

const tick = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

test('failover: writes in flight when the owner is killed fail with LEVEL_OUTCOME_UNKNOWN, applied once, never retried', async (t) => {
  const { election, db, store } = setup()
  const owner = election.elect()
  await db.put(b('before'), b('1'), { sync: false })
  owner.hold()
  const inFlight = [
    db.put(b('a'), b('1'), { sync: false }),
    db.del(b('before'), { sync: false }),
    db.batch([{ type: 'put', key: b('c'), value: b('3') }], { sync: false }),
    db.clear({})
  ]
  await tick()
  election.kill()
  election.elect()
  const codes = await Promise.all(inFlight.map(codeOf))
  t.same(codes, Array(4).fill('LEVEL_OUTCOME_UNKNOWN'), 'put, del, batch and clear in flight: LEVEL_OUTCOME_UNKNOWN')
  t.is(store.applied.get('a'), 1, 'the put in flight was applied once (it committed; nothing sent it again)')
  t.is(store.applied.get('c'), 1, 'the batch too')
  await db.put(b('after'), b('2'), { sync: false })
  t.is(s(await db.get(b('after'), {})), '2@owner2', 'a write after the failover goes to the next owner')
})

test('failover: a write in flight when the owner stopped answering fails with LEVEL_OUTCOME_UNKNOWN', async (t) => {
  const { election, db } = setup()
  election.elect().hold()
  const put = db.put(b('k'), b('v'), { sync: false })
  await tick()
  election.kill(true)
  const err = await put.catch((e: Error & { code?: string }) => e)
  t.is((err as { code?: string }).code, 'LEVEL_OUTCOME_UNKNOWN', 'LEVEL_OUTCOME_UNKNOWN')
  t.ok(/stopped answering/.test((err as Error).message), `it says why: ${(err as Error).message}`)
})

test('failover: reads in flight are retried on the next owner', async (t) => {
  const { election, db } = setup()
  election.elect()
  await db.put(b('k'), b('v'), { sync: false })
  ;(election.term!.db as FakeOwner).hold()
  const reads = [db.get(b('k'), {}), db.getMany([b('k'), b('x')], {}), db.has(b('k'), {}), db.hasMany([b('x')], {}), db.currentSequence(), db.call('stats', [])]
  await tick()
  election.kill()
  election.elect()
  const [get, getMany, has, hasMany, seq, stats] = await Promise.all(reads)
  t.is(s(get), 'v@owner2', 'get: answered by the next owner')
  t.same((getMany as unknown[]).map(s), ['v@owner2', undefined], 'getMany')
  t.is(has, true, 'has')
  t.same(hasMany, [false], 'hasMany')
  t.is(seq, 1, 'currentSequence')
  t.is(stats, 'stats@owner2', 'an additional method (call) is retried like a read')
})

test(`failover: a read is retried at most READ_RETRIES (${READ_RETRIES}) times`, async (t) => {
  for (const kills of [READ_RETRIES, READ_RETRIES + 1]) {
    const { election, db } = setup()
    election.elect()
    await db.put(b('k'), b('v'), { sync: false })
    ;(election.term!.db as FakeOwner).hold()
    const read = codeOf(db.get(b('k'), {}))
    for (let i = 0; i < kills; i++) {
      await tick()
      election.kill()
      election.elect().hold()
    }
    await tick()
    ;(election.term!.db as FakeOwner).release()
    const code = await read
    if (kills <= READ_RETRIES) t.is(code, 'resolved', `${kills} owners lost under it: answered by the next`)
    else t.is(code, 'LEVEL_OWNER_UNREACHABLE', `${kills} owners lost under it: it fails with LEVEL_OWNER_UNREACHABLE`)
  }
})

test('failover: a read whose owner stopped answering fails with LEVEL_OWNER_UNREACHABLE, not retried', async (t) => {
  const { election, db } = setup()
  election.elect().hold()
  const read = db.get(b('k'), {})
  await tick()
  election.kill(true)
  election.elect()
  t.is(await codeOf(read), 'LEVEL_OWNER_UNREACHABLE', 'LEVEL_OWNER_UNREACHABLE')
  t.is(await codeOf(db.get(b('k'), {})), 'resolved', 'a later read goes to the next owner')
})

test('failover: no owner within ownerTimeoutMs: LEVEL_OWNER_UNREACHABLE', async (t) => {
  const { election, db } = setup()
  election.elect()
  election.kill()
  const t0 = Date.now()
  t.is(await codeOf(db.get(b('k'), {})), 'LEVEL_OWNER_UNREACHABLE', 'a read')
  t.is(await codeOf(db.put(b('k'), b('v'), { sync: false })), 'LEVEL_OWNER_UNREACHABLE', 'a write (never sent)')
  t.ok(Date.now() - t0 < 2000, 'within the bound')
})

test('failover: an iterator that delivered entries fails with LEVEL_OWNER_CHANGED on the next owner; one that delivered nothing is made there again', async (t) => {
  const { election, db } = setup()
  election.elect()
  for (const k of ['a', 'b', 'c']) await db.put(b(k), b(k), { sync: false })
  const started = db.iterator({})
  const first = await started.nextv(1)
  t.same(first.map((e) => s((e as unknown[])[0])), ['a'], 'the first entry, from the first owner')
  const fresh = db.iterator({})
  ;(election.term!.db as FakeOwner).hold()
  const inFlight = started.nextv(1)
  const freshNext = fresh.nextv(10)
  await tick()
  election.kill()
  election.elect()
  t.is(await codeOf(inFlight), 'LEVEL_OWNER_CHANGED', 'a nextv in flight on a started iterator: LEVEL_OWNER_CHANGED')
  t.is(await codeOf(started.nextv(1)), 'LEVEL_OWNER_CHANGED', 'and any later nextv: it never goes on silently on the next owner')
  t.throws(() => started.check(), /LEVEL_OWNER_CHANGED|changed/, 'check() (what read-ahead iterators ask before serving a buffered entry) throws too')
  const entries = await freshNext
  t.same(entries.map((e) => (e as unknown[]).map(s)), [['a', 'a@owner2'], ['b', 'b@owner2'], ['c', 'c@owner2']], 'an iterator that had delivered nothing is made again on the next owner')
  await started.close()
  await fresh.close()
})

test('failover: snapshots and the reads, iterators and clears at them fail with LEVEL_OWNER_CHANGED after the owner changed', async (t) => {
  const { election, db } = setup()
  election.elect()
  await db.put(b('k'), b('old'), { sync: false })
  const snapshot = db.snapshot()
  await db.put(b('k'), b('new'), { sync: false })
  t.is(s(await db.get(b('k'), { snapshot })), 'old@owner1', 'a read at the snapshot, before the failover')
  ;(election.term!.db as FakeOwner).hold()
  const inFlight = db.get(b('k'), { snapshot })
  await tick()
  election.kill()
  election.elect()
  t.is(await codeOf(inFlight), 'LEVEL_OWNER_CHANGED', 'a read at it in flight: LEVEL_OWNER_CHANGED, not retried on the next owner')
  t.is(await codeOf(db.get(b('k'), { snapshot })), 'LEVEL_OWNER_CHANGED', 'a later get at it')
  t.is(await codeOf(db.hasMany([b('k')], { snapshot })), 'LEVEL_OWNER_CHANGED', 'hasMany at it')
  t.is(await codeOf(db.iterator({ snapshot }).nextv(1)), 'LEVEL_OWNER_CHANGED', 'an iterator at it (not made again: the snapshot is the old owner\'s)')
  t.is(await codeOf(db.clear({ snapshot })), 'LEVEL_OWNER_CHANGED', 'a clear at it')
  t.is(s(await db.get(b('k'), {})), 'new@owner2', 'a plain read sees the newest state on the next owner')
  await snapshot.close()
  const later = db.snapshot()
  t.is(s(await db.get(b('k'), { snapshot: later })), 'new@owner2', 'a snapshot made after the failover is the next owner\'s')
})

test('failover: a change feed fails with LEVEL_OWNER_CHANGED when its owner is killed', async (t) => {
  const { election, db } = setup()
  election.elect()
  const feed = db.changes({})
  const first = feed.next()
  await tick()
  await db.put(b('k'), b('v'), { sync: false })
  t.is((await first).value?.seq, 1, 'the feed follows the owner\'s writes')
  const waiting = feed.next()
  await tick()
  election.kill()
  election.elect()
  t.is(await codeOf(waiting), 'LEVEL_OWNER_CHANGED', 'LEVEL_OWNER_CHANGED')
})

test('failover: an open that owns the database runs everything here, with nothing to lose', async (t) => {
  const { election, db } = setup()
  election.elect(true)
  await db.put(b('k'), b('v'), { sync: false })
  const it = db.iterator({})
  t.same((await it.nextv(5)).map((e) => (e as unknown[]).map(s)), [['k', 'v@owner1']], 'an iterator on the local term')
  t.is(s(await db.get(b('k'), {})), 'v@owner1', 'a read')
  t.is(db.sequence, 1, 'the sequence number is the engine\'s')
})
