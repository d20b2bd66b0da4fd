// Who runs the engine of a database that every tab (and worker) of the origin
// may open at once, seen from one tab's open of it (the tabs' election,
// adapters/failover/election.ts). The first to take the owner lock (the Web
// Lock 'lsm-level:<dir>:owner') runs the engine here (owner.ts) and serves the
// others; the others are its clients, over a line to the owner's worker
// (transports.ts: a port from the relay, or BroadcastChannels), and wait in
// the lock's queue. When the owner's context ends (tab closed, reloaded,
// crashed, discarded) or it closes the database, the browser grants the lock
// to the next waiter, which opens the engine (log replay), announces itself,
// and the remaining clients connect to it; nothing is asked of the app. What
// operations in flight get is the failover layer's contract
// (adapters/failover/failover-database.ts).
import type { OpfsLevel } from '../opfs-level'
import type { ClientChannel } from '../remote/connection'
import { RemoteDatabase } from '../remote/remote-database'
import type { ServedDatabase } from '../remote/host'
import { levelError } from '../../lib/errors'
import { resolveLocation } from '../../hosts/browser/platform'
import { requestWebLock } from '../../hosts/browser/tab-lock'
import type { Election, Term } from '../failover/election'
import { LocalTerm } from '../failover/local-term'
import { OwnerLine } from '../failover/owner-line'
import { ownerGone, ownerUnreachable } from '../failover/messages'
import { Owner, clientLockName, openEngine } from './owner'
import { broadcastChannel, connectToOwner, randomId, type BroadcastChannelLike, type ControlMessage, type Relay } from './transports'

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

/** How often a client with no owner asks who owns the database. */
const WHO_MS = 100
/** How long the relay has to answer before a connection goes over the fallback instead (see Relay.alive). */
const RELAY_ALIVE_MS = 250

/** This tab's term as the owner: its engine, serving the other tabs. */
export class OwnerTerm extends LocalTerm {
  constructor (readonly owner: Owner) {
    super(owner.engine as unknown as ServedDatabase)
  }
}

/** A client's term: the line to the owner `ownerId`. */
export class ClientTerm extends OwnerLine {
  ownerId = ''
}

function ownerLockName (dir: string): string {
  return `lsm-level:${dir}:owner`
}

export class TabElection implements Election {
  readonly dir: string
  readonly clientId = randomId()
  private current: OwnerTerm | ClientTerm | undefined
  /** Resolves the waiters of settled() when a term comes. */
  private termCame: () => void = () => {}
  private nextTerm: Promise<void>
  /** Owner changes this open has seen. */
  ownerChanges = 0
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

  constructor (readonly location: string, private readonly options: Record<string, unknown>, private readonly tab: TabOptions) {
    this.dir = resolveLocation(location)
    this.nextTerm = new Promise((resolve) => { this.termCame = resolve })
    this.control = broadcastChannel(`lsm-level:${this.dir}`)
    this.control.onmessage = (event) => this.heard(event.data as ControlMessage)
  }

  get ownerTimeoutMs (): number {
    return this.tab.ownerTimeoutMs
  }

  get term (): OwnerTerm | ClientTerm | undefined {
    return this.current
  }

  /** Takes the owner lock if it is free, else becomes a client of the tab that owns the database. */
  async start (): Promise<void> {
    this.releaseClientLock = await requestWebLock(clientLockName(this.dir, this.clientId)) ?? (() => {})
    const release = await requestWebLock(ownerLockName(this.dir), { ifAvailable: true })
    if (release !== undefined) {
      await this.becomeOwner(release)
      return
    }
    if (this.options.errorIfExists === true) throw levelError('LEVEL_INVALID_OPTION', `The database at '${this.location}' exists: another tab has it open (errorIfExists)`)
    this.waitForOwnership()
    this.lookForOwner()
    await this.settled()
  }

  /** Waits (up to ownerTimeoutMs) for an owner, this tab or another. */
  async settled (): Promise<Term> {
    const deadline = Date.now() + this.tab.ownerTimeoutMs
    while (this.current === undefined) {
      if (this.closed) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')
      const left = deadline - Date.now()
      if (left <= 0) throw this.unreachable(this.lastOpenError)
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([this.nextTerm, new Promise((resolve) => { timer = setTimeout(resolve, left) })])
      clearTimeout(timer)
    }
    return this.current
  }

  private setTerm (term: OwnerTerm | ClientTerm | undefined): void {
    if (this.current !== undefined && this.current !== term) this.ownerChanges++
    this.current = term
    if (term !== undefined) {
      this.stopAsking()
      this.termCame()
      this.nextTerm = new Promise((resolve) => { this.termCame = resolve })
    } else if (!this.closed) {
      this.lookForOwner()
    }
  }

  /** Queues for the owner lock: granted when the owner lets go of it (closed, or its context ended). */
  private waitForOwnership (): void {
    requestWebLock(ownerLockName(this.dir), { signal: this.queued.signal }).then((release) => {
      if (release === undefined) return
      if (this.closed) return release()
      this.loseClient()
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
    this.setTerm(new OwnerTerm(owner))
    this.announce()
  }

  private announce (): void {
    const term = this.current
    if (term instanceof OwnerTerm) this.control.postMessage({ op: 'owner', id: term.owner.id, relayId: this.ownerRelayId } satisfies ControlMessage)
  }

  private heard (m: ControlMessage): void {
    if (this.closed) return
    if (m.op === 'who') this.announce()
    else if (m.op === 'owner' && !(this.current instanceof OwnerTerm)) this.connect(m.id, m.relayId)
  }

  /** The relay, if there is one and it answers now (see Relay.alive). */
  private async liveRelay (): Promise<Relay | undefined> {
    const relay = this.relayDead ? undefined : this.tab.relay()
    if (relay === undefined) return undefined
    if (await relay.alive(RELAY_ALIVE_MS)) return relay
    this.relayDead = true
    return undefined
  }

  /** Asks who owns the database until a term comes. */
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
    const term = this.current
    if (term instanceof ClientTerm && term.ownerId === ownerId && !term.ended) return
    if (this.connectingTo === ownerId) return
    this.loseClient()
    this.connectingTo = ownerId
    this.attachTo(ownerId, relayId).catch(() => {})
  }

  private async attachTo (ownerId: string, relayId: string | undefined): Promise<void> {
    const relay = relayId === undefined || this.tab.relay()?.id !== relayId ? undefined : await this.liveRelay()
    if (this.connectingTo !== ownerId) return
    const line = new ClientTerm(connectToOwner(this.dir, ownerId, this.clientId, relay) as ClientChannel, { location: this.location, timeoutMs: this.tab.ownerTimeoutMs })
    line.ownerId = ownerId
    const timer = setTimeout(() => line.end(this.unreachable()), this.tab.ownerTimeoutMs)
    await RemoteDatabase.attach(line.connection, this.location, { ...this.options, errorIfExists: false }).then((db) => {
      clearTimeout(timer)
      if (this.closed || this.connectingTo !== ownerId || this.current instanceof OwnerTerm) {
        line.end()
        return
      }
      this.connectingTo = undefined
      line.remote = db
      line.connection.onPush = (push) => {
        if (push.push === 'closed') line.end(ownerGone(this.location))
      }
      line.onEnd = () => {
        if (this.current === line) this.setTerm(undefined)
      }
      this.setTerm(line)
    }, (err: Error & { code?: string }) => {
      clearTimeout(timer)
      if (this.connectingTo === ownerId) this.connectingTo = undefined
      if (err.code !== 'LEVEL_DATABASE_NOT_OPEN' && err.code !== 'LEVEL_OWNER_UNREACHABLE') this.lastOpenError = err
      line.end()
    })
  }

  /** The client line is gone: its requests in flight fail; a new owner is looked for. */
  private loseClient (): void {
    if (this.current instanceof ClientTerm) this.current.end(ownerGone(this.location))
  }

  private unreachable (cause?: Error): Error {
    return ownerUnreachable(this.location, this.tab.ownerTimeoutMs, cause)
  }

  /** Lets go: an owner closes the engine (its clients move to the next owner), a client detaches. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.queued.abort()
    this.stopAsking()
    this.control.onmessage = null
    this.control.close()
    const term = this.current
    this.current = undefined
    this.termCame()
    try {
      if (term instanceof OwnerTerm) await term.owner.close()
      if (term instanceof ClientTerm) await this.detach(term)
    } finally {
      this.releaseClientLock()
    }
  }

  private async detach (line: ClientTerm): Promise<void> {
    line.onEnd = () => {}
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([line.db.detach().catch(() => {}), new Promise((resolve) => { timer = setTimeout(resolve, this.tab.ownerTimeoutMs) })])
    clearTimeout(timer)
    line.end()
  }
}
