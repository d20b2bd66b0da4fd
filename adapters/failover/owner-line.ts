// A client's line to the owner of a shared database, over any channel (a Unix
// socket between processes, a MessagePort or BroadcastChannels between tabs):
// the remote protocol's connection and database, and a watchdog that bounds
// how long the client waits for an owner that stopped answering. It is a
// client's term (election.ts): it lasts until the line ends.
//
// The watchdog. While requests are in flight, the line expects to hear from
// the owner: after a third of `timeoutMs` of silence it pings (a 'sequence'
// request, answered by any live owner at once, even one busy with a long
// compaction or a change feed waiting for a write); when nothing has come
// back `timeoutMs` after the ping, the owner is declared unreachable (alive
// but hung: stopped, deadlocked, swapped out) and the line ends, failing what
// is in flight.
// Idle, the line neither pings nor keeps its timer: `hold` and `release` (a
// socket's ref and unref) bracket the time requests wait for replies.
import { RemoteConnection, type ClientChannel } from '../remote/connection'
import type { RemoteDatabase } from '../remote/remote-database'
import type { LevelError } from '../../lib/errors'
import type { Term } from './election'
import { ownerUnreachable } from './messages'

export interface OwnerLineOptions {
  location: string
  timeoutMs: number
  /** Keeps the process alive while a request waits (a socket's ref); default none. */
  hold?: () => void
  /** Lets the process end while no request waits (a socket's unref); default none. */
  release?: () => void
}

export class OwnerLine implements Term {
  readonly local = false
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
  /** When the last ping left (0: none yet). */
  private pingedAt = 0
  private busySince = 0
  private timer: ReturnType<typeof setInterval> | undefined

  constructor (inner: ClientChannel, private readonly options: OwnerLineOptions) {
    options.release?.()
    const channel: ClientChannel = {
      send: (m) => inner.send(m),
      receive: (onMessage, onClose) => inner.receive((m) => {
        this.heardAt = Date.now()
        onMessage(m)
      }, (reason) => {
        onClose?.(reason)
        this.finishLine()
      }),
      close: () => inner.close()
    }
    this.connection = new RemoteConnection(channel)
  }

  get db (): RemoteDatabase {
    return this.remote!
  }

  /** Runs `request` (requests on this line) under the watchdog. */
  track<T> (request: () => Promise<T>): Promise<T> {
    this.begin()
    let reply: Promise<T>
    try {
      reply = request()
    } catch (err) {
      this.finish()
      return Promise.reject(err)
    }
    // Not an async function: an awaited write's reply settles the caller one promise sooner.
    return reply.then((value) => {
      this.finish()
      return value
    }, (err: unknown) => {
      this.finish()
      throw err
    })
  }

  /** The error of operations failing because the owner stopped answering. */
  unreachableError (cause?: unknown): LevelError {
    return ownerUnreachable(this.options.location, this.options.timeoutMs, cause)
  }

  /** Ends the line now (what is in flight fails with `reason`). */
  end (reason?: Error): void {
    this.connection.close(reason)
    this.finishLine()
  }

  private begin (): void {
    if (this.pending++ > 0) return
    this.busySince = Date.now()
    this.options.hold?.()
    // The timer outlives a quiet moment (watch() stops it): awaited single
    // operations, one after another, do not start and stop one each.
    if (this.timer !== undefined) return
    const every = Math.max(5, Math.floor(this.options.timeoutMs / 6))
    this.timer = setInterval(() => this.watch(), every)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private finish (): void {
    if (--this.pending > 0) return
    if (!this.ended) this.options.release?.()
  }

  private watch (): void {
    if (this.pending === 0) {
      this.stopWatching()
      return
    }
    const now = Date.now()
    if (this.pingedAt > this.heardAt) {
      // A ping waits for its answer: the owner has ownerTimeoutMs to give one.
      if (now - this.pingedAt > this.options.timeoutMs) {
        this.unreachable = true
        this.end(this.unreachableError())
      }
    } else if (now - Math.max(this.heardAt, this.busySince) > this.options.timeoutMs / 3) {
      this.pingedAt = now
      this.connection.post({ op: 'sequence' })
    }
  }

  private stopWatching (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  private finishLine (): void {
    if (this.ended) return
    this.ended = true
    this.stopWatching()
    this.onEnd()
  }
}
