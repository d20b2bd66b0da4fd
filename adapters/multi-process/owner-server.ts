// The owner's side of a multiProcess database: the process that holds the
// LOCK listens on the database's socket (hosts/node/owner-socket.ts) and
// serves each process that connects with a session of the remote protocol
// (adapters/remote/session.ts) over the owner's engine (EngineDatabase).
// A client that goes away takes its session with it: its iterators,
// snapshots and change feeds are closed when its socket closes.
import type { Socket, Server } from 'node:net'
import type { Engine } from '../../lib/engine'
import { listenAsOwner, stopListening } from '../../hosts/node/owner-socket'
import { socketChannel } from '../../hosts/node/socket-channel'
import { serve, type ServerChannel } from '../remote/server'
import type { DatabaseHost, ServedDatabase, SessionEvents } from '../remote/host'
import { EngineDatabase } from '../remote/engine-database'
import { OWNER_METHODS } from '../failover/messages'

/** Gives every session the owner's engine; the engine is the owner's to open and close. */
class EngineHost implements DatabaseHost {
  readonly callable = OWNER_METHODS
  readonly sessions = new Set<SessionEvents>()

  constructor (private readonly db: ServedDatabase) {}

  // The location and options a client sends are its own: the database is the
  // one whose socket it reached, open with the owner's options.
  async attach (session: SessionEvents): Promise<ServedDatabase> {
    this.sessions.add(session)
    return this.db
  }

  async detach (session: SessionEvents): Promise<void> {
    this.sessions.delete(session)
  }
}

export class OwnerServer {
  private readonly sockets = new Set<Socket>()

  private server: Server | undefined

  private constructor (readonly address: string, private readonly host: EngineHost) {}

  /** Listens on `address` for the database's other openers. REQUIRES: `engine` holds the LOCK. */
  static async start (engine: Engine, address: string): Promise<OwnerServer> {
    const owner = new OwnerServer(address, new EngineHost(new EngineDatabase(engine)))
    owner.server = await listenAsOwner(address, (socket) => owner.accept(socket))
    return owner
  }

  /** Sessions attached now (one per connected client process or open). */
  get sessionCount (): number {
    return this.host.sessions.size
  }

  private accept (socket: Socket): void {
    // A connected client is no reason for the owner to stay alive: when the
    // owner's program ends, a client takes over.
    socket.unref()
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    serve(socketChannel(socket) as ServerChannel, this.host)
  }

  /**
   * Stops serving: no new connections, the socket file removed, every
   * client's connection closed (they elect the next owner). REQUIRES: still
   * holding the LOCK; the engine closes after.
   */
  async close (): Promise<void> {
    const stopped = this.server === undefined ? Promise.resolve() : stopListening(this.server, this.address)
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
    await stopped
  }
}
