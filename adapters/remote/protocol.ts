// The remote database protocol: the messages between a client (an
// abstract-level database whose operations go elsewhere) and a server that
// runs the engine, over any Channel. Each message on the channel is an array:
// the requests of one turn, in order (client to server), or the replies and
// pushes of one turn (server to client).
//
//   client                                  server
//   { id, op: 'attach', version, location,  a session for this channel uses the
//     options }                             database at `location`; the reply
//                                           is the server's { version }
//   { id, op: 'put' | 'get' | ... }         one operation of the session
//   { id, op: 'detach' }                    the session lets go of the database
//                                           (its iterators, snapshots and change
//                                           feeds closed)
//                                           { id, result } | { id, error }
//                                           { push: 'closed', error? } unasked
//
// One session per channel. A session starts handling each request in arrival
// order, so a snapshot or an iterator made by a request sees every write whose
// reply came before it was sent. Attach and detach are the session's; whether
// the database opens or closes with them is the server's host's business.
//
// Handles. An iterator, a snapshot or a change feed belongs to the session that made it and is
// named by the id of the request that made it: the client can use it in the
// same turn (a seek and a nextv right behind the iterator), and two sessions'
// handles never meet. A session's handles are all closed when it detaches or
// its channel closes.
//
// Pushes are messages the server sends unasked, marked by `push` instead of
// `id`: 'closed' says the database closed under the session (it is detached,
// its handles gone).
//
// Change feeds are pulled, like iterators: 'changes' opens a feed after a
// sequence number (the database's current one when none is given; the reply
// is the one it starts after), each 'changesNext' resolves to the next
// committed batch (waiting for one when there is none yet), 'changesClose'
// ends it. A slow client holds nothing back: nothing is read ahead for it.
//
// Keys and values travel as Uint8Arrays (the client's abstract-level encodes
// and decodes them). Requests are structured-cloned (their buffers may be the
// caller's own); replies transfer the large buffers the server made for them
// and clone the small ones (see TRANSFER_MIN_BYTES).
import type { ErrorData } from '../../lib/error-codec'

/**
 * The protocol's version, sent with attach; a server refuses another.
 * 1: attach/detach, per-session handles named by request ids, pushes (this
 *    protocol's first version; it replaced the browser worker's open/close).
 * 2: change feeds ('changes', 'changesNext', 'changesClose') and 'sequence'.
 * 3: over a Node socket, puts, dels, gets and their replies as compact
 *    messages (hosts/node/frame-codec.ts), which a version 2 peer cannot read.
 */
export const PROTOCOL_VERSION = 3

/** A committed batch of a change feed, keys and values as stored. */
export interface ChangeBatchMessage {
  seq: number
  ops: Array<{ type: 'put' | 'del' | 'clear', key: Uint8Array, value?: Uint8Array, end?: Uint8Array }>
}

/** A range as abstract-level normalises it, keys encoded. */
export interface RangeMessage {
  gt?: Uint8Array
  gte?: Uint8Array
  lt?: Uint8Array
  lte?: Uint8Array
  reverse?: boolean
  limit?: number
}

export interface BatchOpMessage { type: 'put' | 'del', key: Uint8Array, value?: Uint8Array }

export type Request =
  | { id: number, op: 'attach', version: number, location: string, options: Record<string, unknown> }
  | { id: number, op: 'detach' }
  | { id: number, op: 'put', key: Uint8Array, value: Uint8Array, sync: boolean }
  | { id: number, op: 'del', key: Uint8Array, sync: boolean }
  | { id: number, op: 'batch', ops: BatchOpMessage[], sync: boolean }
  | { id: number, op: 'get', key: Uint8Array, snapshot?: number }
  | { id: number, op: 'getMany', keys: Uint8Array[], snapshot?: number }
  | { id: number, op: 'has', key: Uint8Array, snapshot?: number }
  | { id: number, op: 'hasMany', keys: Uint8Array[], snapshot?: number }
  | { id: number, op: 'clear', range: RangeMessage, snapshot?: number }
  | { id: number, op: 'iterator', range: RangeMessage, keys: boolean, values: boolean, snapshot?: number }
  | { id: number, op: 'nextv', iterator: number, size: number }
  | { id: number, op: 'seek', iterator: number, target: Uint8Array }
  | { id: number, op: 'iteratorClose', iterator: number }
  | { id: number, op: 'snapshot' }
  | { id: number, op: 'snapshotClose', snapshot: number }
  | { id: number, op: 'call', method: string, args: unknown[] }
  | { id: number, op: 'sequence' }
  | { id: number, op: 'changes', since?: number }
  | { id: number, op: 'changesNext', feed: number }
  | { id: number, op: 'changesClose', feed: number }

/** What the attach reply carries. */
export interface AttachResult {
  version: number
}

export interface Reply {
  id: number
  result?: unknown
  error?: ErrorData
}

/** Messages the server sends unasked. */
export type Push =
  | { push: 'closed', error?: ErrorData }

export type ServerMessage = Reply | Push

export function isPush (m: ServerMessage): m is Push {
  return (m as Push).push !== undefined
}

/**
 * Buffers smaller than this are cloned, not transferred: Chromium 150 pays per
 * transferred buffer, and a nextv(1000) reply (2,000 buffers of 16 and 100
 * bytes) took 6.4 ms in the worker's postMessage transferred against 2.2 ms
 * cloned; a single buffer costs the same either way at 8 KiB, and 16 KiB and
 * up go faster transferred (benchmarks/browser.ts's machine, BENCHMARKS.md).
 */
const TRANSFER_MIN_BYTES = 8 * 1024

/** The buffers of `value` (a reply's result) worth transferring: views of a whole ArrayBuffer of TRANSFER_MIN_BYTES or more. */
export function transferables (value: unknown, out = new Set<ArrayBuffer>()): Set<ArrayBuffer> {
  if (value instanceof Uint8Array) {
    // byteLength first: reading a small Uint8Array's buffer makes V8 move its bytes off its heap (a scan's 2,000 a reply cost Chromium's worker 183 ms in 150 replies).
    if (value.byteLength >= TRANSFER_MIN_BYTES && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength && value.buffer instanceof ArrayBuffer) out.add(value.buffer)
  } else if (Array.isArray(value)) {
    for (const v of value) transferables(v, out)
  }
  return out
}
