// One tab's open of a database that every tab (and worker) of the origin may
// open at once: what BrowserLevel's dedicated worker serves to its page. The
// first to take the owner lock (the Web Lock 'lsm-level:<dir>:owner') runs the
// engine here (owner.ts) and serves the others; the others are its clients,
// over a channel to the owner's worker (transports.ts), and wait in the lock's
// queue. When the owner's context ends (tab closed, reloaded, crashed,
// discarded) or it closes the database, the browser grants the lock to the
// next waiter, which opens the engine (log replay), announces itself, and the
// remaining clients connect to it; nothing is asked of the app.
//
// The contract across an owner change (README, "Many tabs"):
// - a write whose promise resolved is never lost: the owner resolved it once
//   its log record reached the OPFS file, which the next owner replays;
// - a write in flight when the owner was lost fails with LEVEL_OUTCOME_UNKNOWN
//   (it may or may not have committed; it is not retried);
// - a read in flight (not at a snapshot) is retried on the next owner;
// - an iterator, an explicit snapshot or a change feed made before the change
//   fails with LEVEL_OWNER_CHANGED when used after it;
// - an operation that finds no owner within `ownerTimeoutMs` (the owner alive
//   but hung, or none) fails with LEVEL_OWNER_UNREACHABLE naming the database.
import type { OpfsLevel } from '../opfs-level'
import { RemoteConnection, type ClientChannel } from '../remote/connection'
import { RemoteDatabase } from '../remote/remote-database'
import type { ServedDatabase, ServedIterator, ServedSnapshot } from '../remote/host'
import type { BatchOpMessage, ChangeBatchMessage } from '../remote/protocol'
import type { OwnedDatabase } from '../remote/shared-host'
import { levelError } from '../../lib/errors'
import { resolveLocation } from '../../hosts/browser/platform'
import { requestWebLock } from '../../hosts/browser/tab-lock'
import { Owner, clientLockName, openEngine, type OwnerInfo } from './owner'
import { broadcastChannel, connectToOwner, randomId, type BroadcastChannelLike, type ControlMessage, type Relay } from './transports'
import { Pinned, READ_RETRIES, TabIterator, TabSnapshot } from './role-handles'
import type { Role, RoleSource } from './role'

export interface TabOptions {
  /**
   * This worker's port to the relay (transports.ts), once it answered (the
   * relay may answer after the open began, or never: a relay file that did
   * not load).
   */
  relay: () => Relay | undefined
  /** How long an operation waits for an owner to answer before LEVEL_OWNER_UNREACHABLE. */
  ownerTimeoutMs: number
}

export const OWNER_TIMEOUT_MS = 5000

/** How often a client with no owner asks who owns the database. */
const WHO_MS = 100
/** A client's request older than this makes it ping the owner (is it alive?). */
const STALL_MS = 1000
/** How long the relay has to answer before a connection goes over the fallback instead (see Relay.alive). */
const RELAY_ALIVE_MS = 250

/** What this tab is to the database now, for tabs(). */
export interface TabInfo {
  role: 'owner' | 'client' | 'none'
  clientId: string
  ownerId?: string
  /** The owner's sessions and handles, when this tab is the owner. */
  owner?: OwnerInfo
  /** Owner changes this open has seen. */
  ownerChanges: number
}

function ownerLockName (dir: string): string {
  return `lsm-level:${dir}:owner`
}

export class TabDatabase implements OwnedDatabase, RoleSource {
  readonly dir: string
  readonly clientId = randomId()
  private role: Role | undefined
  /** Resolves the waiters of usable() when a role comes. */
  private roleCame: () => void = () => {}
  private nextRole: Promise<void>
  private ownerChanges = 0
  private closed = false
  private connectingTo: string | undefined
  /** Whether the relay stopped answering: connections then use the fallback. */
  private relayDead = false
  /** The relay the owner here registered with, named in its announcements. */
  private ownerRelayId: string | undefined
  private lastOpenError: Error | undefined
  private readonly control: BroadcastChannelLike
  private readonly queued = new AbortController()
  private releaseClientLock: () => void = () => {}
  private whoTimer: ReturnType<typeof setInterval> | undefined
  private watchdog: ReturnType<typeof setInterval> | undefined
  /** Start times of the client's requests in flight (change feeds' waits aside). */
  private readonly inFlight = new Set<number>()
  private pinging = false
  private highestSequence = 0

  private constructor (readonly location: string, private readonly options: Record<string, unknown>, private readonly tab: TabOptions) {
    this.dir = resolveLocation(location)
    this.nextRole = new Promise((resolve) => { this.roleCame = resolve })
    this.control = broadcastChannel(`lsm-level:${this.dir}`)
    this.control.onmessage = (event) => this.heard(event.data as ControlMessage)
  }

  /**
   * Opens the database at `location` for this tab: as its owner if the owner
   * lock is free, else as a client of the tab that owns it.
   */
  static async open (location: string, options: Record<string, unknown>, tab: TabOptions): Promise<TabDatabase> {
    const db = new TabDatabase(location, options, tab)
    try {
      await db.start()
    } catch (err) {
      await db.close().catch(() => {})
      throw err
    }
    return db
  }

  private async start (): Promise<void> {
    this.releaseClientLock = await requestWebLock(clientLockName(this.dir, this.clientId)) ?? (() => {})
    const release = await requestWebLock(ownerLockName(this.dir), { ifAvailable: true })
    if (release !== undefined) {
      await this.becomeOwner(release)
      return
    }
    if (this.options.errorIfExists === true) throw levelError('LEVEL_INVALID_OPTION', `The database at '${this.location}' exists: another tab has it open (errorIfExists)`)
    this.waitForOwnership()
    this.lookForOwner()
    await this.usable()
  }

  // -- roles ---------------------------------------------------------------

  /** The role now, if there is one. */
  get currentRole (): Role | undefined {
    return this.role
  }

  /** Waits (up to ownerTimeoutMs) for an owner, this tab or another. */
  async usable (): Promise<Role> {
    const deadline = Date.now() + this.tab.ownerTimeoutMs
    while (this.role === undefined) {
      if (this.closed) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')
      const left = deadline - Date.now()
      if (left <= 0) throw this.unreachable(this.lastOpenError)
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([this.nextRole, new Promise((resolve) => { timer = setTimeout(resolve, left) })])
      clearTimeout(timer)
    }
    return this.role
  }

  private setRole (role: Role | undefined): void {
    if (this.role !== undefined && this.role !== role) this.ownerChanges++
    this.role = role
    if (role !== undefined) {
      this.stopAsking()
      this.roleCame()
      this.nextRole = new Promise((resolve) => { this.roleCame = resolve })
    } else if (!this.closed) {
      this.lookForOwner()
    }
  }

  /** Queues for the owner lock: granted when the owner lets go of it (closed, or its context ended). */
  private waitForOwnership (): void {
    requestWebLock(ownerLockName(this.dir), { signal: this.queued.signal }).then((release) => {
      if (release === undefined) return
      if (this.closed) return release()
      this.loseClient(this.ownerGone())
      this.becomeOwner(release).catch((err: Error) => {
        this.lastOpenError = err
        // Someone else may manage (or this tab, a little later).
        if (!this.closed) setTimeout(() => { if (!this.closed) this.waitForOwnership() }, 1000)
      })
    }, () => {})
  }

  private async becomeOwner (release: () => void): Promise<void> {
    let engine: OpfsLevel<Uint8Array, Uint8Array>
    try {
      engine = await openEngine(this.location, this.options)
    } catch (err) {
      release()
      throw err
    }
    const relay = await this.liveRelay()
    const owner = new Owner(this.dir, engine, release, relay)
    this.ownerRelayId = relay?.id
    if (this.closed) {
      await owner.close()
      return
    }
    this.queued.abort()
    this.setRole({ kind: 'owner', owner, db: engine as unknown as ServedDatabase })
    this.announce()
  }

  private announce (): void {
    if (this.role?.kind === 'owner') this.control.postMessage({ op: 'owner', id: this.role.owner.id, relayId: this.ownerRelayId } satisfies ControlMessage)
  }

  private heard (m: ControlMessage): void {
    if (this.closed) return
    if (m.op === 'who') this.announce()
    else if (m.op === 'owner' && this.role?.kind !== 'owner') this.connect(m.id, m.relayId)
  }

  /** The relay, if there is one and it answers now (see Relay.alive). */
  private async liveRelay (): Promise<Relay | undefined> {
    const relay = this.relayDead ? undefined : this.tab.relay()
    if (relay === undefined) return undefined
    if (await relay.alive(RELAY_ALIVE_MS)) return relay
    this.relayDead = true
    return undefined
  }

  /** Asks who owns the database until a role comes. */
  private lookForOwner (): void {
    if (this.whoTimer !== undefined) return
    const ask = (): void => this.control.postMessage({ op: 'who' } satisfies ControlMessage)
    ask()
    this.whoTimer = setInterval(ask, WHO_MS)
  }

  private stopAsking (): void {
    clearInterval(this.whoTimer)
    this.whoTimer = undefined
  }

  /** Becomes a client of the owner `ownerId` (announced, registered with the relay `relayId`), unless it is that already or on the way. */
  private connect (ownerId: string, relayId: string | undefined): void {
    const role = this.role
    if (role?.kind === 'client' && role.ownerId === ownerId && role.connection.healthy) return
    if (this.connectingTo === ownerId) return
    if (role?.kind === 'client') this.loseClient(this.ownerGone())
    this.connectingTo = ownerId
    this.attachTo(ownerId, relayId).catch(() => {})
  }

  private async attachTo (ownerId: string, relayId: string | undefined): Promise<void> {
    const relay = relayId === undefined || this.tab.relay()?.id !== relayId ? undefined : await this.liveRelay()
    if (this.connectingTo !== ownerId) return
    const connection = new RemoteConnection(connectToOwner(this.dir, ownerId, this.clientId, relay) as ClientChannel)
    const timer = setTimeout(() => connection.close(this.unreachable()), this.tab.ownerTimeoutMs)
    await RemoteDatabase.attach(connection, this.location, { ...this.options, errorIfExists: false }).then((db) => {
      clearTimeout(timer)
      if (this.closed || this.connectingTo !== ownerId || this.role?.kind === 'owner') {
        connection.close()
        return
      }
      this.connectingTo = undefined
      connection.onPush = (push) => {
        if (push.push === 'closed') this.loseConnection(connection, this.ownerGone())
      }
      this.setRole({ kind: 'client', ownerId, connection, db })
      this.startWatchdog()
    }, (err: Error & { code?: string }) => {
      clearTimeout(timer)
      if (this.connectingTo === ownerId) this.connectingTo = undefined
      if (err.code !== 'LEVEL_DATABASE_NOT_OPEN' && err.code !== 'LEVEL_OWNER_UNREACHABLE') this.lastOpenError = err
      connection.close()
    })
  }

  /** The client connection is gone: its requests in flight fail with `reason`; a new owner is looked for. */
  private loseClient (reason: Error): void {
    if (this.role?.kind === 'client') this.loseConnection(this.role.connection, reason)
  }

  private loseConnection (connection: RemoteConnection, reason: Error): void {
    const role = this.role
    if (role?.kind !== 'client' || role.connection !== connection) return
    this.stopWatchdog()
    this.setRole(undefined)
    connection.close(reason)
  }

  /**
   * Whether `err`, from an operation on `role`, means the owner was lost
   * (the role ended, or its connection did).
   */
  private lost (role: Role, err: unknown): boolean {
    if (role.kind === 'owner') return false
    if (this.role === role && role.connection.healthy && (err as { code?: string }).code !== 'LEVEL_DATABASE_NOT_OPEN') return false
    this.loseConnection(role.connection, this.ownerGone())
    return true
  }

  // -- hung owners -------------------------------------------------------

  /** Pings the owner while a request waits longer than STALL_MS; no answer within ownerTimeoutMs: the connection is lost. */
  private startWatchdog (): void {
    this.stopWatchdog()
    this.watchdog = setInterval(() => {
      const role = this.role
      if (role?.kind !== 'client' || this.pinging) return
      const now = Date.now()
      if (![...this.inFlight].some((t) => now - t > STALL_MS)) return
      this.pinging = true
      let timer: ReturnType<typeof setTimeout> | undefined
      Promise.race([
        role.db.currentSequence().then(() => true, () => true),
        new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), this.tab.ownerTimeoutMs) })
      ]).then((answered) => {
        clearTimeout(timer)
        this.pinging = false
        if (!answered) this.loseConnection(role.connection, this.unreachable())
      }, () => {})
    }, STALL_MS / 2)
  }

  private stopWatchdog (): void {
    clearInterval(this.watchdog)
    this.watchdog = undefined
    this.pinging = false
  }

  private async tracked<T> (op: Promise<T>): Promise<T> {
    const started = Date.now()
    this.inFlight.add(started)
    try {
      return await op
    } finally {
      this.inFlight.delete(started)
    }
  }

  // -- errors ------------------------------------------------------------

  private unreachable (cause?: Error): Error {
    return levelError('LEVEL_OWNER_UNREACHABLE', `No owner of the database '${this.location}' answered within ${this.tab.ownerTimeoutMs} ms`, cause)
  }

  private ownerGone (): Error {
    return levelError('LEVEL_DATABASE_NOT_OPEN', `The owner of the database '${this.location}' went away`)
  }

  ownerChanged (cause?: unknown): Error {
    return levelError('LEVEL_OWNER_CHANGED', `The owner of the database '${this.location}' changed: iterators, snapshots and change feeds made before are gone`, cause)
  }

  // -- operations --------------------------------------------------------

  /** Runs `op` on `role`, which made the handle it uses: after an owner change, LEVEL_OWNER_CHANGED. */
  async onRole<T> (role: Role, op: () => Promise<T>): Promise<T> {
    if (this.role !== role) throw this.ownerChanged()
    try {
      return role.kind === 'owner' ? await op() : await this.tracked(op())
    } catch (err) {
      if (this.lost(role, err)) throw this.ownerChanged(err)
      throw err
    }
  }

  private async write<T> (op: (db: ServedDatabase) => Promise<T>): Promise<T> {
    const role = await this.usable()
    if (role.kind === 'owner') return await op(role.db)
    try {
      return await this.tracked(op(role.db))
    } catch (err) {
      if (this.lost(role, err)) {
        throw levelError('LEVEL_OUTCOME_UNKNOWN', `The owner of the database '${this.location}' was lost while a write was in flight: it may or may not have been committed`, err)
      }
      throw err
    }
  }

  /** A read: at a snapshot, on the snapshot's owner only; else retried on the next owner if this one is lost. */
  private async read<T> (snapshot: ServedSnapshot | undefined, op: (db: ServedDatabase, snapshot?: ServedSnapshot) => Promise<T>): Promise<T> {
    if (snapshot !== undefined) {
      const pinned = (snapshot as TabSnapshot).pinned
      const { role, inner } = pinned.now ?? await pinned.get()
      return await this.onRole(role, async () => await op(role.db, inner))
    }
    for (let attempt = 0; ; attempt++) {
      const role = await this.usable()
      if (role.kind === 'owner') return await op(role.db)
      try {
        return await this.tracked(op(role.db))
      } catch (err) {
        if (!this.lost(role, err) || attempt >= READ_RETRIES) throw err
      }
    }
  }

  async put (key: Uint8Array, value: Uint8Array, options: { sync: boolean }): Promise<void> {
    await this.write(async (db) => await db.put(key, value, options))
  }

  async del (key: Uint8Array, options: { sync: boolean }): Promise<void> {
    await this.write(async (db) => await db.del(key, options))
  }

  async batch (ops: BatchOpMessage[], options: { sync: boolean }): Promise<void> {
    await this.write(async (db) => await db.batch(ops, options))
  }

  async clear (options: Record<string, unknown> & { snapshot?: ServedSnapshot }): Promise<void> {
    const { snapshot, ...range } = options
    if (snapshot === undefined) return await this.write(async (db) => await db.clear(range))
    const { role, inner } = await (snapshot as TabSnapshot).pinned.get()
    await this.onRole(role, async () => await role.db.clear({ ...range, snapshot: inner }))
  }

  async get (key: Uint8Array, options: { snapshot?: ServedSnapshot }): Promise<Uint8Array | undefined> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.get(key, { snapshot }))
  }

  async getMany (keys: Uint8Array[], options: { snapshot?: ServedSnapshot }): Promise<Array<Uint8Array | undefined>> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.getMany(keys, { snapshot }))
  }

  async has (key: Uint8Array, options: { snapshot?: ServedSnapshot }): Promise<boolean> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.has(key, { snapshot }))
  }

  async hasMany (keys: Uint8Array[], options: { snapshot?: ServedSnapshot }): Promise<boolean[]> {
    return await this.read(options.snapshot, async (db, snapshot) => await db.hasMany(keys, { snapshot }))
  }

  iterator (options: Record<string, unknown> & { snapshot?: ServedSnapshot }): ServedIterator {
    const { snapshot, ...rest } = options
    return new TabIterator(this, rest, snapshot as TabSnapshot | undefined)
  }

  snapshot (): ServedSnapshot {
    return new TabSnapshot(new Pinned(this, (role) => role.db.snapshot()))
  }

  /** The last sequence number this tab knows of (see currentSequence). */
  get sequence (): number {
    const role = this.role
    if (role?.kind === 'owner') return role.db.sequence
    return Math.max(this.highestSequence, role?.db.sequence ?? 0)
  }

  /** The owner's current sequence number. */
  async currentSequence (): Promise<number> {
    const seq = await this.read(undefined, async (db) => db.currentSequence === undefined ? db.sequence : await db.currentSequence())
    if (seq > this.highestSequence) this.highestSequence = seq
    return seq
  }

  /** The owner's change feed; after an owner change, LEVEL_OWNER_CHANGED. */
  async* changes (options: { since?: number }): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    const role = await this.usable()
    try {
      for await (const batch of role.db.changes(options)) {
        if (batch.seq > this.highestSequence) this.highestSequence = batch.seq
        yield batch
      }
    } catch (err) {
      if (this.lost(role, err)) throw this.ownerChanged(err)
      throw err
    }
    if (role !== this.role) throw this.ownerChanged()
  }

  // The engine's additional methods (adapters/remote/shared-host.ts, ENGINE_METHODS), on the owner.
  async compactRange (...args: unknown[]): Promise<unknown> { return await this.invoke('compactRange', args) }
  async flush (...args: unknown[]): Promise<unknown> { return await this.invoke('flush', args) }
  async getProperty (...args: unknown[]): Promise<unknown> { return await this.invoke('getProperty', args) }
  async approximateSize (...args: unknown[]): Promise<unknown> { return await this.invoke('approximateSize', args) }
  async stats (...args: unknown[]): Promise<unknown> { return await this.invoke('stats', args) }
  async levels (...args: unknown[]): Promise<unknown> { return await this.invoke('levels', args) }

  private async invoke (method: string, args: unknown[]): Promise<unknown> {
    return await this.read(undefined, async (db) => {
      if (db instanceof RemoteDatabase) return await db.call(method, args)
      return await (db as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args)
    })
  }

  /** Who owns the database, as this tab sees it. */
  tabs (): TabInfo {
    const role = this.role
    return {
      role: role?.kind ?? 'none',
      clientId: this.clientId,
      ownerId: role?.kind === 'owner' ? role.owner.id : role?.ownerId,
      owner: role?.kind === 'owner' ? role.owner.info() : undefined,
      ownerChanges: this.ownerChanges
    }
  }

  /** Lets go: an owner closes the engine (its clients move to the next owner), a client detaches. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.queued.abort()
    this.stopAsking()
    this.stopWatchdog()
    this.control.onmessage = null
    this.control.close()
    const role = this.role
    this.role = undefined
    this.roleCame()
    try {
      if (role?.kind === 'owner') await role.owner.close()
      if (role?.kind === 'client') await this.detach(role)
    } finally {
      this.releaseClientLock()
    }
  }

  private async detach (role: Extract<Role, { kind: 'client' }>): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([role.db.detach().catch(() => {}), new Promise((resolve) => { timer = setTimeout(resolve, this.tab.ownerTimeoutMs) })])
    clearTimeout(timer)
    role.connection.close()
  }
}
