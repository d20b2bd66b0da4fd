// The client side of one channel to a remote database server: requests get
// ids and leave together (the requests of one turn in one message), replies
// settle them, pushes go to a listener. When the channel ends, every request
// in flight, and every later one, fails.
import type { Channel } from './channel'
import { errorFromData } from '../../lib/error-codec'
import { isPush, type Push, type Request, type ServerMessage } from './protocol'
import { levelError } from '../../lib/errors'

export type ClientChannel = Channel<Request[], ServerMessage[]>

/** A request without its id, which the connection gives it. */
export type RequestMessage = Request extends infer R ? R extends { id: number } ? Omit<R, 'id'> : never : never

interface Pending { resolve: (value: unknown) => void, reject: (err: Error) => void }

export class RemoteConnection {
  private nextId = 1
  private readonly waiting = new Map<number, Pending>()
  private outbox: Request[] = []
  private failure: Error | undefined
  /** Receives the server's pushes. */
  onPush: (push: Push) => void = () => {}

  constructor (private readonly channel: ClientChannel) {
    channel.receive((messages) => {
      for (const m of messages) {
        if (isPush(m)) this.onPush(m)
        else this.settle(m.id, m.error === undefined ? undefined : errorFromData(m.error), m.result)
      }
    }, (reason) => {
      this.fail(levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open: the connection to its server ended', reason))
    })
  }

  /** Whether the channel is still usable. */
  get healthy (): boolean {
    return this.failure === undefined
  }

  /** Sends `message` (taken over: it becomes the request); resolves to the reply's result. */
  request (message: RequestMessage): Promise<unknown> {
    return this.named(message).reply
  }

  /** A request and its id, which names the handle it makes, if any (protocol.ts, Handles). */
  named (message: RequestMessage): { id: number, reply: Promise<unknown> } {
    const id = this.nextId++
    return { id, reply: this.enqueue(id, message) }
  }

  private enqueue (id: number, message: RequestMessage): Promise<unknown> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    if (this.outbox.length === 0) queueMicrotask(() => this.send())
    // The message is the caller's own literal: it becomes the request (no copy).
    const request = message as Request
    request.id = id
    this.outbox.push(request)
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }))
  }

  /**
   * A request whose reply only matters if it is an error, which the next
   * request on the same handle reports. Returns the request's id, which names
   * the handle it makes, if any (protocol.ts, Handles).
   */
  post (message: RequestMessage): number {
    const { id, reply } = this.named(message)
    reply.catch(() => {})
    return id
  }

  /** Ends the channel; requests in flight fail with `reason`. */
  close (reason: Error = levelError('LEVEL_DATABASE_NOT_OPEN', 'Database is not open')): void {
    this.fail(reason)
    this.channel.close()
  }

  private send (): void {
    const batch = this.outbox
    this.outbox = []
    if (this.failure === undefined) this.channel.send(batch)
  }

  private settle (id: number, error: Error | undefined, result: unknown): void {
    const p = this.waiting.get(id)
    if (p === undefined) return
    this.waiting.delete(id)
    if (error !== undefined) p.reject(error)
    else p.resolve(result)
  }

  private fail (err: Error): void {
    if (this.failure !== undefined) return
    this.failure = err
    const all = [...this.waiting.values()]
    this.waiting.clear()
    for (const p of all) p.reject(err)
  }
}
