// A client process's line to the owner of a multiProcess database: one socket
// connection (hosts/node/socket-channel.ts) carrying the remote protocol
// (RemoteConnection, RemoteDatabase), and a watchdog that bounds how long the
// client waits for an owner that stopped answering.
//
// The watchdog. While requests are in flight, the line expects to hear from
// the owner: after a third of `timeoutMs` of silence it pings (a 'sequence'
// request, answered by any live owner at once, even one busy with a long
// compaction or a change feed waiting for a write); after `timeoutMs` of
// silence the owner is declared unreachable (alive but hung: stopped,
// deadlocked, swapped out) and the line ends, failing what is in flight.
// Idle, the line neither pings nor keeps the process alive: its socket is
// unref'ed, and ref'ed only while a request waits for its reply.
import type { Socket } from 'node:net'
import { socketChannel } from '../../hosts/node/socket-channel'
import { RemoteConnection, type ClientChannel } from '../remote/connection'
import type { RemoteDatabase } from '../remote/remote-database'
import { levelError, type LevelError } from '../../lib/errors'

export class OwnerLine {
  readonly connection: RemoteConnection
  /** Set once attached. */
  remote: RemoteDatabase | undefined
  /** The connection ended (the owner went away, closed it, or was declared unreachable). */
  ended = false
  /** The watchdog ended it: the owner stopped answering. */
  unreachable = false
  /** Called once when the line ends. */
  onEnd: () => void = () => {}
  private pending = 0
  private heardAt = Date.now()
  private busySince = 0
  private timer: ReturnType<typeof setInterval> | undefined

  constructor (private readonly socket: Socket, private readonly timeoutMs: number, private readonly location: string) {
    socket.unref()
    const inner = socketChannel(socket)
    const channel: ClientChannel = {
      send: (m) => inner.send(m),
      receive: (onMessage, onClose) => inner.receive((m) => {
        this.heardAt = Date.now()
        onMessage(m as Parameters<typeof onMessage>[0])
      }, (reason) => {
        onClose?.(reason)
        this.end()
      }),
      close: () => inner.close()
    }
    this.connection = new RemoteConnection(channel)
  }

  /** Runs `request` (requests on this line) under the watchdog. */
  async track<T> (request: () => Promise<T>): Promise<T> {
    this.begin()
    try {
      return await request()
    } finally {
      this.finish()
    }
  }

  /** The error that ops failing because the owner stopped answering get. */
  unreachableError (cause?: unknown): LevelError {
    return levelError('LEVEL_OWNER_UNREACHABLE', `The owner of the database at ${this.location} did not answer within ${this.timeoutMs} ms (alive but hung?): option ownerTimeoutMs`, cause)
  }

  /** Ends the line now (what is in flight fails with `reason`). */
  close (reason?: Error): void {
    this.connection.close(reason)
    this.end()
  }

  private begin (): void {
    if (this.pending++ > 0) return
    this.busySince = Date.now()
    this.socket.ref()
    // The timer outlives a quiet moment (watch() stops it): awaited single
    // operations, one after another, do not start and stop one each.
    if (this.timer !== undefined) return
    const every = Math.max(5, Math.floor(this.timeoutMs / 6))
    this.timer = setInterval(() => this.watch(), every)
    this.timer.unref()
  }

  private finish (): void {
    if (--this.pending > 0) return
    if (!this.ended) this.socket.unref()
  }

  private watch (): void {
    if (this.pending === 0) {
      this.stopWatching()
      return
    }
    const quietMs = Date.now() - Math.max(this.heardAt, this.busySince)
    if (quietMs > this.timeoutMs) {
      this.unreachable = true
      this.close(this.unreachableError())
    } else if (quietMs > this.timeoutMs / 3) {
      this.connection.post({ op: 'sequence' })
    }
  }

  private stopWatching (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  private end (): void {
    if (this.ended) return
    this.ended = true
    this.stopWatching()
    this.onEnd()
  }
}
