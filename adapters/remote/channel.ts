// The message-passing adapters of the Channel interface (lib/channel.ts: one
// two-way line between two peers, whatever carries the messages; the remote
// layer, the server's sessions and the client's connection, speaks only to
// it): over a MessagePort (node:worker_threads' or the browser's), or over
// another transport that feeds a TransportChannel (a numbered line of a
// worker's postMessage, worker-lines.ts; BroadcastChannels between tabs).
// Messages are structured-cloned; the buffers named in `transfer` move to the
// other side instead.
//
// The types here are structural (no DOM or node typings): the same module runs
// in Node and in browsers.
import type { Channel } from '../../lib/channel'

export type { Channel }

/** What a channel adapter uses of a MessagePort (node:worker_threads' and the browser's both have it). */
export interface MessagePortLike {
  postMessage (message: unknown, transfer?: ArrayBuffer[]): void
  onmessage: ((event: { data: unknown }) => void) | null
  addEventListener?: (type: 'close', listener: () => void) => void
  close (): void
}

/** What a channel adapter uses of a Web Worker, from the side that started it. */
export interface WorkerLike {
  postMessage (message: unknown, transfer?: ArrayBuffer[]): void
  onmessage: ((event: { data: unknown }) => void) | null
  onerror: ((event: { message: string, preventDefault (): void }) => void) | null
  terminate (): void
}

/**
 * The key of the hello a dedicated worker posts to its starter as soon as its
 * script runs ({ [WORKER_STARTED]: true }), before any protocol message: the
 * starter learns that the worker started (browsers queue workers past their
 * limit per site).
 */
export const WORKER_STARTED = 'lsmLevelWorkerStarted'

/**
 * The key of the message that opens one more database's channel to a worker
 * serving many: { [WORKER_CONNECT]: { line, ... } }, the number of the
 * database's line on the worker's postMessage (worker-lines.ts) and its options.
 */
export const WORKER_CONNECT = 'lsmLevelConnect'

/** What a channel adapter uses of a dedicated worker's global scope. */
export interface WorkerScopeLike {
  postMessage (message: unknown, transfer?: ArrayBuffer[]): void
  onmessage: ((event: { data: unknown }) => void) | null
}

/**
 * The state every adapter shares: the handlers, and a close that runs once
 * (whether this side closed or the other side went away).
 */
class FedChannel<Out, In> implements Channel<Out, In> {
  private onMessage: (message: In) => void = () => {}
  private onClose: (reason?: Error) => void = () => {}
  private closed = false

  constructor (
    private readonly post: (message: Out, transfer: ArrayBuffer[]) => void,
    private readonly end: () => void
  ) {}

  send (message: Out, transfer: ArrayBuffer[] = []): void {
    if (!this.closed) this.post(message, transfer)
  }

  receive (onMessage: (message: In) => void, onClose?: (reason?: Error) => void): void {
    this.onMessage = onMessage
    this.onClose = onClose ?? (() => {})
  }

  close (): void {
    this.ended()
  }

  /** A message arrived. */
  delivered (message: In): void {
    if (!this.closed) this.onMessage(message)
  }

  /** The channel ended, here or on the other side. */
  ended (reason?: Error): void {
    if (this.closed) return
    this.closed = true
    this.end()
    this.onClose(reason)
  }
}

/**
 * A channel over one end of a MessageChannel. Node tells a port that the
 * other end closed (its 'close' event); browsers do not all do so, and a
 * server there learns of a vanished client only if its transport says so.
 */
export function portChannel<Out = unknown, In = unknown> (port: MessagePortLike): Channel<Out, In> {
  const line = new FedChannel<Out, In>((m, t) => port.postMessage(m, t), () => {
    port.onmessage = null
    port.close()
  })
  port.onmessage = (event) => line.delivered(event.data as In)
  port.addEventListener?.('close', () => line.ended())
  return line
}

/** A channel over another transport: `post` sends, `end` lets go of it; the transport calls delivered() for each message that comes and ended() when it ends. */
export interface TransportChannel<Out, In> extends Channel<Out, In> {
  delivered (message: In): void
  ended (reason?: Error): void
}

export function transportChannel<Out = unknown, In = unknown> (post: (message: Out, transfer: ArrayBuffer[]) => void, end: () => void): TransportChannel<Out, In> {
  return new FedChannel<Out, In>(post, end)
}
