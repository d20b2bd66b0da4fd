// Who runs the engine of a multiProcess database, seen from one open of it:
// this process (the owner: it holds the LOCK, runs the engine and serves the
// others, owner-server.ts) or another (this open is a client: its operations
// go to the owner over an OwnerLine). The link elects: it tries to take the
// LOCK (Engine.open, which takes over a dead holder's), and when another
// process holds it, connects to that process's socket; when neither works
// yet (the owner holds the LOCK but does not listen yet: it is replaying its
// log) it retries with a short backoff, up to ownerTimeoutMs.
//
// Failover. When a client's line ends (the owner closed, exited, crashed or
// was killed: the kernel closes its sockets), the link elects again at once,
// in the background: one client wins the LOCK and opens the engine (log
// replay), the others connect to it. What was in flight on the old line:
// - writes fail with LEVEL_OUTCOME_UNKNOWN (they may have committed; never
//   retried, so never applied twice);
// - reads are retried on the new owner (idempotent), unless at a snapshot;
// - iterators, snapshots and change feeds are bound to their line: used after
//   it ended they fail with LEVEL_OWNER_CHANGED.
// Reads never see a state older than one this client saw: every write an
// owner made visible had reached the OS (write(2) before the memtable), and
// the OS keeps a dead process's writes, so the next owner's log replay holds
// them all.
import { Engine } from '../../lib/engine'
import { levelError, type LevelError } from '../../lib/errors'
import { connectToOwner, ownerSocketPath } from '../../hosts/node/owner-socket'
import { RemoteDatabase } from '../remote/remote-database'
import { OwnerLine } from './owner-line'
import { OwnerServer } from './owner-server'

/** What an operation gets back when this process owns the database (now): run it on the engine. */
export const OWNER = Symbol('owner')

/** The default of the option ownerTimeoutMs. */
export const OWNER_TIMEOUT_MS = 5000

/** The longest wait between two election attempts. */
const BACKOFF_MAX_MS = 20

interface Owned {
  engine: Engine
  server: OwnerServer
}

type State = Owned | OwnerLine

function isOwned (s: State): s is Owned {
  return !(s instanceof OwnerLine)
}

function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export interface OwnerLinkOptions {
  location: string
  engineOptions: Record<string, unknown>
  ownerTimeoutMs: number
  /** This process became the owner: the engine is the open's own now. */
  onOwner: (engine: Engine) => void
}

export class OwnerLink {
  private state: State | undefined
  private electing: Promise<State> | undefined
  /** The line being attached by an election, closed if the database closes meanwhile. */
  private candidate: OwnerLine | undefined
  private closing = false
  private createIfMissing = true
  /** The socket address (hosts/node/owner-socket.ts), known once the directory exists. */
  private address: string | undefined

  constructor (private readonly options: OwnerLinkOptions) {}

  /** 'owner' or 'client' now; undefined while electing. */
  get role (): 'owner' | 'client' | undefined {
    const s = this.state
    return s === undefined ? undefined : isOwned(s) ? 'owner' : 'client'
  }

  /** The owner's server, when this process is the owner. */
  get server (): OwnerServer | undefined {
    const s = this.state
    return s !== undefined && isOwned(s) ? s.server : undefined
  }

  /** The first election. errorIfExists fails if another process has the database open (it exists). */
  async open (flags: { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    this.createIfMissing = flags.createIfMissing
    this.install(await this.campaign(flags.errorIfExists))
  }

  /** The line to the owner, or OWNER when this process is the owner; elects first if there is neither. */
  async current (): Promise<OwnerLine | typeof OWNER> {
    let s = this.state
    if (s === undefined) s = await this.elect()
    return isOwned(s) ? OWNER : s
  }

  /** The line now, if this open is a client with a live line (handles bind to it). */
  get line (): OwnerLine | undefined {
    const s = this.state
    return s instanceof OwnerLine && !s.ended ? s : undefined
  }

  /** A write: sent once; in flight when the line ends, it fails with LEVEL_OUTCOME_UNKNOWN. */
  async write<T> (run: (remote: RemoteDatabase) => Promise<T>): Promise<T | typeof OWNER> {
    const line = await this.current()
    if (line === OWNER) return OWNER
    try {
      return await line.track(async () => await run(line.remote!))
    } catch (err) {
      if (line.ended) throw this.outcomeUnknown(line, err)
      throw err
    }
  }

  /** A read: retried on the next owner when the line ends under it (not when it became unreachable). */
  async read<T> (run: (remote: RemoteDatabase) => Promise<T>): Promise<T | typeof OWNER> {
    for (;;) {
      const line = await this.current()
      if (line === OWNER) return OWNER
      try {
        return await line.track(async () => await run(line.remote!))
      } catch (err) {
        if (!line.ended) throw err
        if (line.unreachable) throw line.unreachableError(err)
      }
    }
  }

  /** An operation of a handle (iterator, snapshot, change feed) made on `line`. */
  async onLine<T> (line: OwnerLine, run: (remote: RemoteDatabase) => Promise<T>): Promise<T> {
    if (line.ended) throw line.unreachable ? line.unreachableError() : this.ownerChanged()
    try {
      return await line.track(async () => await run(line.remote!))
    } catch (err) {
      if (!line.ended) throw err
      throw line.unreachable ? line.unreachableError(err) : this.ownerChanged(err)
    }
  }

  ownerChanged (cause?: unknown): LevelError {
    return levelError('LEVEL_OWNER_CHANGED', `The owner of the database at ${this.options.location} changed: iterators, snapshots and change feeds opened before are gone`, cause)
  }

  private outcomeUnknown (line: OwnerLine, cause: unknown): LevelError {
    const why = line.unreachable ? `its owner stopped answering (ownerTimeoutMs ${this.options.ownerTimeoutMs})` : 'its owner went away'
    return levelError('LEVEL_OUTCOME_UNKNOWN', `A write to the database at ${this.options.location} was in flight when ${why}: it may or may not have committed`, cause)
  }

  /** Closes this open: the owner stops serving and closes its engine (the clients elect another); a client detaches. */
  async close (): Promise<void> {
    this.closing = true
    this.candidate?.close()
    await this.electing?.catch(() => {})
    const s = this.state
    this.state = undefined
    if (s === undefined) return
    if (isOwned(s)) {
      try {
        await s.server.close()
      } finally {
        await s.engine.close()
      }
      return
    }
    s.onEnd = () => {}
    try {
      if (!s.ended) await s.track(async () => await s.remote!.detach())
    } catch {}
    s.close()
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
    if (this.closing) {
      this.state = s
      return
    }
    this.state = s
    if (isOwned(s)) {
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
   * ownerTimeoutMs has passed (LEVEL_OWNER_UNREACHABLE).
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
        failure = err
      }
      if (Date.now() + delay >= deadline) {
        throw levelError('LEVEL_OWNER_UNREACHABLE', `Another process holds the database at ${this.options.location} and did not answer within ${timeoutMs} ms (option ownerTimeoutMs)`, failure)
      }
      await sleep(delay)
      delay = Math.min(delay * 2, BACKOFF_MAX_MS)
    }
  }

  /** Opens the engine and listens, or undefined when another process holds the LOCK. */
  private async own (errorIfExists: boolean): Promise<Owned | undefined> {
    let engine: Engine
    try {
      engine = await Engine.open(this.options.location, { ...this.options.engineOptions, createIfMissing: this.createIfMissing, errorIfExists })
    } catch (err) {
      if ((err as { code?: unknown }).code === 'LEVEL_LOCKED') return undefined
      throw err
    }
    try {
      this.address ??= ownerSocketPath(engine.location)
      return { engine, server: await OwnerServer.start(engine, this.address) }
    } catch (err) {
      await engine.close().catch(() => {})
      throw levelError('LEVEL_IO_ERROR', `Cannot listen for the database's other processes: ${(err as Error).message}`, err)
    }
  }

  /** Connects to the owner's socket and attaches, by `deadline`. */
  private async reach (deadline: number): Promise<OwnerLine> {
    this.address ??= ownerSocketPath(this.options.location)
    const socket = await connectToOwner(this.address, Math.max(1, deadline - Date.now()))
    const line = new OwnerLine(socket, this.options.ownerTimeoutMs, this.options.location)
    this.candidate = line
    const timer = setTimeout(() => line.close(line.unreachableError()), Math.max(1, deadline - Date.now()))
    try {
      line.remote = await RemoteDatabase.attach(line.connection, this.options.location, {})
      if (line.ended) throw this.ownerChanged()
      return line
    } catch (err) {
      line.close()
      throw err
    } finally {
      clearTimeout(timer)
      this.candidate = undefined
    }
  }
}
