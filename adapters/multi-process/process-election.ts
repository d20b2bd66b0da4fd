// Who runs the engine of a multiProcess database, seen from one open of it
// (the processes' election, adapters/failover/election.ts): this process (the
// owner: it holds the LOCK, runs the engine and serves the others,
// owner-server.ts) or another (this open is a client: its operations go to
// the owner over an OwnerLine on the owner's Unix socket). The election tries
// to take the LOCK (Engine.open, which takes over a dead holder's), and when
// another process holds it, connects to that process's socket; when neither
// works yet (the owner holds the LOCK but does not listen yet: it is
// replaying its log) it retries with a short backoff, up to ownerTimeoutMs.
//
// When a client's line ends (the owner closed, exited, crashed or was killed:
// the kernel closes its sockets), the election runs again at once, in the
// background: one client wins the LOCK and opens the engine (log replay), the
// others connect to it. What operations in flight get is the failover layer's
// contract (adapters/failover/failover-database.ts). Reads never see a state
// older than one this client saw: every write an owner made visible had
// reached the OS (write(2) before the memtable), and the OS keeps a dead
// process's writes, so the next owner's log replay holds them all.
import { Engine } from '../../lib/engine'
import type { ReplayedPrefix } from '../../lib/recovery'
import { levelError } from '../../lib/errors'
import { connectToOwner, ownerSocketPath } from '../../hosts/node/owner-socket'
import { ReadFeed, socketChannel } from '../../hosts/node/socket-channel'
import type { ClientChannel } from '../remote/connection'
import { RemoteDatabase } from '../remote/remote-database'
import { EngineDatabase } from '../remote/engine-database'
import type { Election, Term } from '../failover/election'
import { LocalTerm } from '../failover/local-term'
import { OwnerLine } from '../failover/owner-line'
import { ownerChanged, ownerUnreachable } from '../failover/messages'
import { OwnerServer } from './owner-server'

/** The longest wait between two election attempts. */
const BACKOFF_MAX_MS = 20

/** This process's term as the owner: the engine, and the server its clients reach it by. */
export class OwnedTerm extends LocalTerm {
  constructor (readonly engine: Engine, readonly server: OwnerServer) {
    super(new EngineDatabase(engine))
  }
}

type State = OwnedTerm | OwnerLine

function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export interface ProcessElectionOptions {
  location: string
  engineOptions: Record<string, unknown>
  ownerTimeoutMs: number
  /** This process became the owner: the engine is the open's own now. */
  onOwner: (engine: Engine) => void
  /**
   * Asked once this process holds the LOCK, while its engine opens: the logs
   * its client reads replayed already (LocalReads.handOver), which the open's
   * replay continues instead of reading them again.
   */
  replayedPrefixes?: () => ReplayedPrefix[]
  /** The open that asked for them failed: the client's reads follow the database again. */
  ownFailed?: () => void
}

export class ProcessElection implements Election {
  private state: State | undefined
  private electing: Promise<State> | undefined
  /** The line being attached by an election, closed if the database closes meanwhile. */
  private candidate: OwnerLine | undefined
  private closing = false
  private createIfMissing = true
  /** The socket address (hosts/node/owner-socket.ts), known once the directory exists. */
  private address: string | undefined

  constructor (private readonly options: ProcessElectionOptions) {}

  get location (): string {
    return this.options.location
  }

  get ownerTimeoutMs (): number {
    return this.options.ownerTimeoutMs
  }

  get term (): Term | undefined {
    return this.state
  }

  /** 'owner' or 'client' now; undefined while electing. */
  get role (): 'owner' | 'client' | undefined {
    const s = this.state
    return s === undefined ? undefined : s.local ? 'owner' : 'client'
  }

  /** The owner's server, when this process is the owner. */
  get server (): OwnerServer | undefined {
    const s = this.state
    return s instanceof OwnedTerm ? s.server : undefined
  }

  /** The first election. errorIfExists fails if another process has the database open (it exists). */
  async open (flags: { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    this.createIfMissing = flags.createIfMissing
    this.install(await this.campaign(flags.errorIfExists))
  }

  /** The term now; elects first if there is none. */
  async settled (): Promise<Term> {
    return this.state ?? await this.elect()
  }

  /** Closes this open: the owner stops serving and closes its engine (the clients elect another); a client detaches. */
  async close (): Promise<void> {
    this.closing = true
    this.candidate?.end()
    await this.electing?.catch(() => {})
    const s = this.state
    this.state = undefined
    if (s === undefined) return
    if (s instanceof OwnedTerm) {
      try {
        await s.server.close()
      } finally {
        await s.engine.close()
      }
      return
    }
    s.onEnd = () => {}
    try {
      if (!s.ended) await s.track(async () => await s.db.detach())
    } catch {}
    s.end()
  }

  /** An election in the background (one at a time); its outcome becomes the state. */
  private elect (): Promise<State> {
    if (this.electing === undefined) {
      const electing = this.campaign(false).then((s) => {
        this.electing = undefined
        this.install(s)
        return s
      }, (err: unknown) => {
        this.electing = undefined
        throw err
      })
      this.electing = electing
    }
    return this.electing
  }

  private install (s: State): void {
    this.state = s
    if (this.closing) return
    if (s instanceof OwnedTerm) {
      this.options.onOwner(s.engine)
    } else {
      s.onEnd = () => this.lineEnded(s)
    }
  }

  /** The owner is gone (or hung): elect the next one now, without waiting for an operation. */
  private lineEnded (line: OwnerLine): void {
    if (this.state !== line) return
    this.state = undefined
    if (!this.closing) this.elect().catch(() => {})
  }

  /**
   * Tries to own the database, else to reach its owner, until one works or
   * ownerTimeoutMs has passed (LEVEL_OWNER_UNREACHABLE); an owner that speaks
   * another version of the protocol fails it at once (LEVEL_NOT_SUPPORTED).
   */
  private async campaign (errorIfExists: boolean): Promise<State> {
    const timeoutMs = this.options.ownerTimeoutMs
    const deadline = Date.now() + timeoutMs
    let delay = 1
    let failure: unknown
    for (;;) {
      if (this.closing) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is closing')
      const owned = await this.own(errorIfExists)
      if (owned !== undefined) return owned
      if (errorIfExists) throw levelError('LEVEL_INVALID_OPTION', `Database already exists and errorIfExists is true (another process has it open): ${this.options.location}`)
      try {
        return await this.reach(deadline)
      } catch (err) {
        // An owner of another version of the protocol will not change its mind: no retries.
        if ((err as { code?: unknown }).code === 'LEVEL_NOT_SUPPORTED') throw err
        failure = err
      }
      if (Date.now() + delay >= deadline) throw ownerUnreachable(this.options.location, timeoutMs, failure)
      await sleep(delay)
      delay = Math.min(delay * 2, BACKOFF_MAX_MS)
    }
  }

  /** Opens the engine and listens, or undefined when another process holds the LOCK. */
  private async own (errorIfExists: boolean): Promise<OwnedTerm | undefined> {
    let engine: Engine
    try {
      engine = await Engine.open(this.options.location, { ...this.options.engineOptions, createIfMissing: this.createIfMissing, errorIfExists }, undefined, undefined, this.options.replayedPrefixes)
    } catch (err) {
      if ((err as { code?: unknown }).code === 'LEVEL_LOCKED') return undefined
      this.options.ownFailed?.()
      throw err
    }
    try {
      this.address ??= ownerSocketPath(engine.location)
      return new OwnedTerm(engine, await OwnerServer.start(engine, this.address))
    } catch (err) {
      await engine.close().catch(() => {})
      this.options.ownFailed?.()
      throw levelError('LEVEL_IO_ERROR', `Cannot listen for the database's other processes: ${(err as Error).message}`, err)
    }
  }

  /** Connects to the owner's socket and attaches, by `deadline`. */
  private async reach (deadline: number): Promise<OwnerLine> {
    this.address ??= ownerSocketPath(this.options.location)
    const feed = new ReadFeed()
    const socket = await connectToOwner(this.address, Math.max(1, deadline - Date.now()), feed)
    // Idle, a client's socket does not keep its process alive; a request waiting for its reply does.
    const line = new OwnerLine(socketChannel(socket, feed) as ClientChannel, {
      location: this.options.location,
      timeoutMs: this.options.ownerTimeoutMs,
      hold: () => socket.ref(),
      release: () => socket.unref()
    })
    this.candidate = line
    const timer = setTimeout(() => line.end(line.unreachableError()), Math.max(1, deadline - Date.now()))
    try {
      line.remote = await RemoteDatabase.attach(line.connection, this.options.location, {})
      if (line.ended) throw ownerChanged(this.options.location)
      return line
    } catch (err) {
      line.end()
      throw err
    } finally {
      clearTimeout(timer)
      this.candidate = undefined
    }
  }
}
