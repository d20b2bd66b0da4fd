// A remote database server in this process, for tests: LsmLevel served by a
// SharedDatabaseHost, and RemoteLevel clients each on a MessageChannel of its
// own (the server's end served by a session). The host's database counts the
// snapshots and iterators open on it, so tests can see what a session holds.
import { MessageChannel } from 'node:worker_threads'
import { LsmLevel } from '../../index'
import { portChannel, type MessagePortLike } from '../../adapters/remote/channel'
import { RemoteConnection, type ClientChannel } from '../../adapters/remote/connection'
import { serve, type ServerChannel, type Session } from '../../adapters/remote/server'
import { SharedDatabaseHost, type OwnedDatabase } from '../../adapters/remote/shared-host'
import type { ServedIterator, ServedSnapshot } from '../../adapters/remote/host'

export class TestServer {
  readonly host = new SharedDatabaseHost(async (location, options) => await this.openDatabase(location, options))
  readonly sessions: Session[] = []
  /** The database opened last (open or closed now). */
  db: LsmLevel<Uint8Array, Uint8Array> | undefined
  /** Databases opened so far. */
  opens = 0
  openSnapshots = 0
  openIterators = 0
  private readonly serverPorts: MessagePortLike[] = []

  /** A connection to this server over a new MessageChannel; `ports` gets its two ends. */
  connect (ports?: { client?: MessagePortLike, server?: MessagePortLike }): RemoteConnection {
    const { port1, port2 } = new MessageChannel()
    const client = port1 as unknown as MessagePortLike
    const server = port2 as unknown as MessagePortLike
    if (ports !== undefined) Object.assign(ports, { client, server })
    this.serverPorts.push(server)
    this.sessions.push(serve(portChannel(server) as ServerChannel, this.host))
    return new RemoteConnection(portChannel(client) as ClientChannel)
  }

  /** Closes the server's end of every channel: the clients see their connections end. */
  disconnect (): void {
    for (const port of this.serverPorts) port.close()
  }

  private async openDatabase (location: string, options: Record<string, unknown>): Promise<OwnedDatabase> {
    const db = new LsmLevel<Uint8Array, Uint8Array>(location, { ...options, keyEncoding: 'view', valueEncoding: 'view' })
    try {
      await db.open({ passive: false, createIfMissing: options.createIfMissing !== false, errorIfExists: options.errorIfExists === true } as object)
    } catch (err) {
      throw (err as { cause?: unknown }).cause ?? err
    }
    this.db = db
    this.opens++
    return this.counting(db as unknown as OwnedDatabase)
  }

  /** `db`, its snapshots and iterators counted while open (their close() counts once). */
  private counting (db: OwnedDatabase): OwnedDatabase {
    const snapshot = db.snapshot.bind(db)
    const iterator = db.iterator.bind(db)
    db.snapshot = (): ServedSnapshot => {
      this.openSnapshots++
      return this.countClose(snapshot(), () => this.openSnapshots--)
    }
    db.iterator = (options): ServedIterator => {
      this.openIterators++
      return this.countClose(iterator(options), () => this.openIterators--)
    }
    return db
  }

  private countClose<T extends { close: () => Promise<void> }> (handle: T, closed: () => void): T {
    const close = handle.close.bind(handle)
    let open = true
    handle.close = async () => {
      if (open) closed()
      open = false
      await close()
    }
    return handle
  }
}
