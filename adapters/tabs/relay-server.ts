// The relay: what the SharedWorker of browser-relay.ts runs. It only hands
// MessagePorts on: an owner registers its id for its database directory
// ('own'), and a client's 'connect' (one end of a MessageChannel, for an owner
// id it learned from the owner's announcement) goes to that owner's port. The
// database's traffic then flows between the two workers over that port, never
// through here. A connect for an owner that has not registered yet (its 'own'
// and the client's 'connect' come over different ports, in no set order)
// waits here, a bounded number of them for a bounded time.
import type { MessagePortLike } from '../remote/channel'
import { randomId, type RelayMessage } from './transports'

/** Connects waiting for their owner, at most this many per directory, for at most this long. */
const WAITING_MAX = 256
const WAITING_MS = 10_000

interface Waiting { ownerId: string, clientId: string, port: MessagePortLike, since: number }

export class RelayServer {
  readonly id = randomId()
  private readonly owners = new Map<string, { ownerId: string, port: MessagePortLike }>()
  private readonly waiting = new Map<string, Waiting[]>()

  /** Serves one worker's port to this relay. */
  accept (port: MessagePortLike): void {
    port.onmessage = (event) => this.received(port, event.data as RelayMessage)
  }

  private received (port: MessagePortLike, m: RelayMessage): void {
    if (m.op === 'hello') {
      port.postMessage({ op: 'hello', relayId: this.id } satisfies RelayMessage)
    } else if (m.op === 'own') {
      this.owners.set(m.dir, { ownerId: m.ownerId, port })
      const due = (this.waiting.get(m.dir) ?? []).filter((w) => w.ownerId === m.ownerId)
      this.waiting.set(m.dir, (this.waiting.get(m.dir) ?? []).filter((w) => w.ownerId !== m.ownerId))
      for (const w of due) this.handOn(port, m.dir, w)
    } else if (m.op === 'disown') {
      if (this.owners.get(m.dir)?.ownerId === m.ownerId) this.owners.delete(m.dir)
    } else if (m.op === 'connect') {
      const owner = this.owners.get(m.dir)
      const w = { ownerId: m.ownerId, clientId: m.clientId, port: m.port, since: Date.now() }
      if (owner?.ownerId === m.ownerId) this.handOn(owner.port, m.dir, w)
      else this.wait(m.dir, w)
    }
  }

  private handOn (ownerPort: MessagePortLike, dir: string, w: Waiting): void {
    const transfer = [w.port] as unknown as ArrayBuffer[]
    ownerPort.postMessage({ op: 'connect', dir, ownerId: w.ownerId, clientId: w.clientId, port: w.port } satisfies RelayMessage, transfer)
  }

  private wait (dir: string, w: Waiting): void {
    const now = Date.now()
    const list = (this.waiting.get(dir) ?? []).filter((x) => {
      const keep = now - x.since < WAITING_MS
      if (!keep) x.port.close()
      return keep
    })
    list.push(w)
    while (list.length > WAITING_MAX) list.shift()?.port.close()
    this.waiting.set(dir, list)
  }
}
