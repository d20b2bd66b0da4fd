// The owner's part of a database shared by tabs: the engine (OpfsLevel, in
// this dedicated worker) and the sessions of the other tabs' workers, its
// clients, served over the channels that transports.ts makes.
//
// A client that vanishes (its tab closed, crashed or reloaded) says nothing:
// a browser MessagePort has no close event. Each client holds a Web Lock of its
// own for as long as it is open ('lsm-level:<dir>:client:<id>'); the owner
// requests it for every client that connects, and is granted it when the
// client lets go or its context ends: it then closes that client's channel,
// and the session releases the client's iterators, snapshots and change feeds.
import { OpfsLevel } from '../opfs-level'
import type { Channel } from '../remote/channel'
import type { DatabaseHost, ServedDatabase, SessionEvents } from '../remote/host'
import { serve, type ServerChannel, type Session } from '../remote/server'
import { ENGINE_METHODS } from '../failover/messages'
import { levelError } from '../../lib/errors'
import { resolveLocation } from '../../hosts/browser/platform'
import { requestWebLock, tabLockName, webLockHeld } from '../../hosts/browser/tab-lock'
import { listenForClients, randomId, type Relay } from './transports'

/** How long an owner retries an open whose OPFS files a dead worker still holds. */
const OPEN_RETRY_MS = 10_000
/** How long the tab lock may stay held after the owner lock came (the dead owner's locks go together; see openEngine). */
const TAB_LOCK_WAIT_MS = 300

export function clientLockName (dir: string, clientId: string): string {
  return `lsm-level:${dir}:client:${clientId}`
}

/** What the owner's clients (and its own tab) can see of it: the sessions it serves and their handles. */
export interface OwnerInfo {
  ownerId: string
  clients: number
  iterators: number
  snapshots: number
  feeds: number
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Opens the engine; an error goes out as its cause (the client's open wraps it again).
 *
 * The Web Lock of a standalone OpfsLevel ('lsm-level:<dir>', tab-lock.ts) held
 * elsewhere is LEVEL_LOCKED at once (a short wait first: a dead owner's locks
 * are released together, but the grant of one may be seen before the release
 * of the other). An OPFS file that a dead worker still holds makes the mount
 * LEVEL_LOCKED too: that one is retried, with backoff, for OPEN_RETRY_MS.
 */
export async function openEngine (location: string, options: Record<string, unknown>): Promise<OpfsLevel<Uint8Array, Uint8Array>> {
  const dir = resolveLocation(location)
  const lockDeadline = Date.now() + TAB_LOCK_WAIT_MS
  while (await webLockHeld(tabLockName(dir))) {
    if (Date.now() > lockDeadline) throw levelError('LEVEL_LOCKED', `Database is open in another tab or worker, not shared (an OpfsLevel): ${dir}`)
    await sleep(20)
  }
  const deadline = Date.now() + OPEN_RETRY_MS
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const db = new OpfsLevel<Uint8Array, Uint8Array>(location, { ...options, keyEncoding: 'view', valueEncoding: 'view' })
    try {
      await db.open({ passive: false, createIfMissing: options.createIfMissing !== false, errorIfExists: options.errorIfExists === true })
      return db
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause ?? err as { code?: string }
      if (cause.code !== 'LEVEL_LOCKED' || Date.now() + delay > deadline) throw cause
      await sleep(delay)
    }
  }
}

/** Gives the owner's clients its engine; the location they ask for must be its own. */
class OwnerHost implements DatabaseHost {
  readonly callable = ENGINE_METHODS
  private readonly attached = new Set<SessionEvents>()

  constructor (private readonly dir: string, private readonly engine: ServedDatabase) {}

  async attach (session: SessionEvents, location: string): Promise<ServedDatabase> {
    if (resolveLocation(location) !== this.dir) throw levelError('LEVEL_INVALID_OPTION', `This owner serves the database at '${this.dir}', not '${location}'`)
    this.attached.add(session)
    return this.engine
  }

  async detach (session: SessionEvents): Promise<void> {
    this.attached.delete(session)
  }

  /** Tells every session that the database closed (their clients look for the next owner). */
  closeAll (): void {
    for (const s of this.attached) s.closed()
    this.attached.clear()
  }
}

export class Owner {
  readonly id = randomId()
  private readonly host: OwnerHost
  private readonly sessions = new Map<Session, Channel>()
  private readonly watching = new AbortController()
  private readonly stopListening: () => void

  /**
   * The owner of the database `dir`, with its engine open and `release` the
   * owner lock's release; listens for clients (announcing itself is the
   * caller's business).
   */
  constructor (readonly dir: string, readonly engine: OpfsLevel<Uint8Array, Uint8Array>, private readonly releaseOwnerLock: () => void, relay: Relay | undefined) {
    this.host = new OwnerHost(dir, engine as unknown as ServedDatabase)
    this.stopListening = listenForClients(dir, this.id, relay, (channel, clientId) => this.accept(channel, clientId))
  }

  /** The sessions served now and their handles. */
  info (): OwnerInfo {
    const info = { ownerId: this.id, clients: 0, iterators: 0, snapshots: 0, feeds: 0 }
    for (const s of this.sessions.keys()) {
      if (!s.attached) continue
      info.clients++
      info.iterators += s.handles.iterators
      info.snapshots += s.handles.snapshots
      info.feeds += s.handles.feeds
    }
    return info
  }

  private accept (channel: Channel, clientId: string): void {
    const session = serve(this.watched(channel, () => this.sessions.delete(session)) as ServerChannel, this.host)
    this.sessions.set(session, channel)
    requestWebLock(clientLockName(this.dir, clientId), { signal: this.watching.signal }).then((release) => {
      if (release === undefined) return
      release()
      channel.close()
    }, () => {})
  }

  /** `channel`, telling `onEnd` when it ends (before the session hears of it). */
  private watched (channel: Channel, onEnd: () => void): Channel {
    return {
      send: (m, t) => channel.send(m, t),
      close: () => channel.close(),
      receive: (onMessage, onClose) => channel.receive(onMessage, (reason) => {
        onEnd()
        onClose?.(reason)
      })
    }
  }

  /**
   * Stops serving: the clients are told the database closed (they look for
   * the next owner), the engine closes, then the owner lock goes to the next
   * tab that waits for it. A close that fails rejects with the reason
   * (LEVEL_STORAGE_FULL, ...), not the engine's LEVEL_DATABASE_NOT_CLOSED
   * around it: the tab's own close wraps it once, as an open's reason is.
   */
  async close (): Promise<void> {
    this.stopListening()
    this.watching.abort()
    this.host.closeAll()
    const channels = [...this.sessions.values()]
    // The 'closed' pushes leave at the sessions' next turn; the channels after them.
    setTimeout(() => { for (const c of channels) c.close() }, 50)
    try {
      await this.engine.close()
    } catch (err) {
      const e = err as { code?: string, cause?: unknown }
      throw e.code === 'LEVEL_DATABASE_NOT_CLOSED' && e.cause !== undefined ? e.cause : err
    } finally {
      this.releaseOwnerLock()
    }
  }
}
