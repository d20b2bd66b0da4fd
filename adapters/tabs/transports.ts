// How the tabs (and workers) that open one database find its owner and reach
// it. Three pieces, all named after the database directory `dir`:
//
//   the control channel   a BroadcastChannel 'lsm-level:<dir>': the owner
//                         announces itself ({ op: 'owner', id }) when it wins
//                         the Web Lock and whenever a client asks ({ op: 'who' })
//   the relay             a SharedWorker (browser-relay.ts) that hands a client's
//                         MessagePort to the owner: the owner registers its id
//                         there, a client sends one end of a new MessageChannel
//                         for that id; after that, the two workers talk over
//                         the port directly (no hop through the relay)
//   the fallback          where a context has no relay (no SharedWorker in the
//                         browser, or BrowserLevel running in a worker, which
//                         cannot start one): the remote protocol's messages over
//                         BroadcastChannels, one that only the owner listens to
//                         ('lsm-level:<dir>:owner:<id>', each message naming its
//                         connection) and one per connection that only the client
//                         listens to ('lsm-level:<dir>:conn:<id>')
//
// MessagePorts cannot travel over a BroadcastChannel, hence the relay. An owner
// serves both ways at once; each client uses its relay if it has one that
// answered, else the fallback.
import { portChannel, transportChannel, type Channel, type MessagePortLike, type TransportChannel } from '../remote/channel'

export interface BroadcastChannelLike {
  postMessage (message: unknown): void
  onmessage: ((event: { data: unknown }) => void) | null
  close (): void
}

type BroadcastChannelConstructor = new (name: string) => BroadcastChannelLike
type MessageChannelConstructor = new () => { port1: MessagePortLike, port2: MessagePortLike }

export function broadcastChannel (name: string): BroadcastChannelLike {
  const BC = (globalThis as unknown as { BroadcastChannel: BroadcastChannelConstructor }).BroadcastChannel
  return new BC(name)
}

/** A random id for an owner, a client or a connection. */
export function randomId (): string {
  const bytes = new Uint8Array(8)
  crypto.getRandomValues(bytes)
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/**
 * Control messages on 'lsm-level:<dir>'. The owner names the relay it
 * registered with (relays are replaced when one dies with its tab's process):
 * a client whose relay is another uses the fallback.
 */
export type ControlMessage = { op: 'owner', id: string, relayId?: string } | { op: 'who' }

/** Messages between a worker and the relay (browser-relay.ts). */
export type RelayMessage =
  | { op: 'hello', relayId?: string }
  | { op: 'own', dir: string, ownerId: string }
  | { op: 'disown', dir: string, ownerId: string }
  | { op: 'connect', dir: string, ownerId: string, clientId: string, port: MessagePortLike }

/** A worker's port to the relay, once it answered its hello. */
export interface Relay {
  /** The relay's instance, random. */
  readonly id: string
  post (message: RelayMessage, transfer?: unknown[]): void
  /**
   * Adds a handler of what the relay sends here (connections for the owners
   * in this worker, one handler each); returns its removal.
   */
  listen (onMessage: (message: RelayMessage) => void): () => void
  /**
   * Whether the relay answers a hello within `ms`. A SharedWorker runs in
   * the process of one of the tabs, and dies with it if that one crashes;
   * its ports say nothing then.
   */
  alive (ms: number): Promise<boolean>
}

/** Wraps the port to the relay that the page handed this worker; resolves to undefined if the relay does not say hello within `ms`. */
export async function relayOverPort (port: MessagePortLike, ms: number): Promise<Relay | undefined> {
  const listeners = new Set<(message: RelayMessage) => void>()
  let hellos: Array<() => void> = []
  let id = ''
  port.onmessage = (event) => {
    const m = event.data as RelayMessage
    if (m.op === 'hello') {
      id = m.relayId ?? ''
      const due = hellos
      hellos = []
      for (const h of due) h()
    } else {
      for (const l of listeners) l(m)
    }
  }
  const alive = async (within: number): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const answered = new Promise<boolean>((resolve) => { hellos.push(() => resolve(true)) })
    port.postMessage({ op: 'hello' })
    const ok = await Promise.race([answered, new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), within) })])
    clearTimeout(timer)
    return ok
  }
  if (!await alive(ms)) return undefined
  return {
    id,
    post: (message, transfer = []) => (port as unknown as { postMessage (m: unknown, t: unknown[]): void }).postMessage(message, transfer),
    listen: (onMessage) => {
      const listener = (message: RelayMessage): void => onMessage(message)
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
    alive
  }
}

/** Frames of the fallback transport. */
type Frame =
  | { conn: string, clientId: string, kind: 'open' }
  | { conn: string, kind: 'data', data: unknown }
  | { conn: string, kind: 'close' }

/** A client's channel to the owner `ownerId`: over a port the relay hands on, else over BroadcastChannels. */
export function connectToOwner<Out, In> (dir: string, ownerId: string, clientId: string, relay: Relay | undefined): Channel<Out, In> {
  if (relay !== undefined) {
    const MC = (globalThis as unknown as { MessageChannel: MessageChannelConstructor }).MessageChannel
    const { port1, port2 } = new MC()
    relay.post({ op: 'connect', dir, ownerId, clientId, port: port2 }, [port2])
    return portChannel<Out, In>(port1)
  }
  const conn = randomId()
  const toOwner = broadcastChannel(`lsm-level:${dir}:owner:${ownerId}`)
  const fromOwner = broadcastChannel(`lsm-level:${dir}:conn:${conn}`)
  const line = transportChannel<Out, In>((data) => toOwner.postMessage({ conn, kind: 'data', data } satisfies Frame), () => {
    toOwner.postMessage({ conn, kind: 'close' } satisfies Frame)
    toOwner.close()
    fromOwner.onmessage = null
    fromOwner.close()
  })
  fromOwner.onmessage = (event) => {
    const frame = event.data as Frame
    if (frame.kind === 'data') line.delivered(frame.data as In)
    else if (frame.kind === 'close') line.ended()
  }
  toOwner.postMessage({ conn, clientId, kind: 'open' } satisfies Frame)
  return line
}

/** The owner's side: each client that connects (by the relay or the fallback) as a channel, with its client id. */
export type OnClient = (channel: Channel, clientId: string) => void

/**
 * Listens for clients of the owner `ownerId` of `dir`, on the relay (if any)
 * and on the fallback's BroadcastChannel; returns the function that stops
 * listening (the channels already made stay open).
 */
export function listenForClients (dir: string, ownerId: string, relay: Relay | undefined, onClient: OnClient): () => void {
  const stopRelay = relay?.listen((m) => {
    if (m.op === 'connect' && m.dir === dir && m.ownerId === ownerId) onClient(portChannel(m.port), m.clientId)
  })
  relay?.post({ op: 'own', dir, ownerId })
  const inbox = broadcastChannel(`lsm-level:${dir}:owner:${ownerId}`)
  const lines = new Map<string, TransportChannel<unknown, unknown>>()
  inbox.onmessage = (event) => {
    const frame = event.data as Frame
    if (frame.kind === 'open') {
      const toClient = broadcastChannel(`lsm-level:${dir}:conn:${frame.conn}`)
      const line = transportChannel((data) => toClient.postMessage({ conn: frame.conn, kind: 'data', data } satisfies Frame), () => {
        lines.delete(frame.conn)
        toClient.postMessage({ conn: frame.conn, kind: 'close' } satisfies Frame)
        toClient.close()
      })
      lines.set(frame.conn, line)
      onClient(line, frame.clientId)
    } else if (frame.kind === 'data') {
      lines.get(frame.conn)?.delivered(frame.data)
    } else {
      lines.get(frame.conn)?.ended()
    }
  }
  return () => {
    stopRelay?.()
    relay?.post({ op: 'disown', dir, ownerId })
    inbox.onmessage = null
    inbox.close()
  }
}
