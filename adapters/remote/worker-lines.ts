// Many channels over one dedicated worker's own postMessage: the page's engine
// worker serves each of the page's databases over a line of its own. Every
// message of a line is a flat array that starts with the line's number:
//
//   [n, ...items]   a batch of the protocol (protocol.ts), item by item:
//                   GET id key | PUT id key value sync | DEL id key sync |
//                   RESULT id result (a reply with no error) |
//                   PACKED id width count bytes lengths (a reply with no error
//                   whose result is a list of entries, width 2, or of values,
//                   width 1, each a small Uint8Array or undefined: all their
//                   bytes in one transferred buffer, each one's length or -1) |
//                   BATCH id sync kinds bytes lengths (a batch of small keys
//                   and values: each operation's kind, 1 put or 0 del, and
//                   its key and value packed as above) |
//                   OTHER message
//   [n, END]        that side closed the line
//
// The page opens line n by posting { [WORKER_CONNECT]: { line: n, ... } }
// before the line's first message.
//
// Not a MessageChannel per database: a round trip between a page and its
// worker over a MessagePort took 530-940 µs in Firefox 153 against 55-71 µs
// on the worker's own postMessage (BENCHMARKS.md, the floor), and an awaited
// operation of BrowserLevel is little else. Flat arrays, not the protocol's
// objects: structured clone writes each property's name, and the common
// requests and replies then carry none; a batch of an iterator's entries in
// one buffer: Chromium's structured clone of a nextv(1000) reply cost the
// worker about 20 µs an entry as 2,000 Uint8Arrays, 1 µs packed
// (BENCHMARKS.md, the message shapes).
import { transportChannel, type TransportChannel } from './channel'

/**
 * The format of the lines' messages, which the worker states in its hello
 * ({ [WORKER_STARTED]: true, lines: LINES_FORMAT }): a page whose worker file
 * states another (a stale lsm-level-worker.js, cached or left beside a newer
 * bundle) fails its opens with LEVEL_NOT_SUPPORTED instead of waiting for
 * answers it cannot read. 2: flat arrays (1, before: { lsmLevelLine: n, m }).
 */
export const LINES_FORMAT = 2

/** The item codes of a line's message. */
const END = -1
const OTHER = 0
const GET = 1
const PUT = 2
const DEL = 3
const RESULT = 4
const PACKED = 5
const BATCH = 6

/** Parts at least this long are not packed (the session transfers them: protocol.ts). */
const PACK_MAX_BYTES = 8 * 1024

/** The total length of `list`'s parts (entries of `width` parts, or the parts themselves), or -1 if it cannot be packed. */
function packedLength (list: unknown[], width: 1 | 2): number {
  let total = 0
  for (const item of list) {
    if (width === 2 && (!Array.isArray(item) || item.length !== 2)) return -1
    const parts = width === 2 ? item as unknown[] : [item]
    for (const part of parts) {
      if (part === undefined) continue
      if (!(part instanceof Uint8Array) || part.byteLength >= PACK_MAX_BYTES) return -1
      total += part.byteLength
    }
  }
  return total
}

/** The parts of `list` in one buffer, and each one's length (-1: undefined). */
function pack (list: unknown[], width: 1 | 2, total: number): [Uint8Array, Int32Array] {
  const bytes = new Uint8Array(total)
  const lengths = new Int32Array(list.length * width)
  let offset = 0
  let i = 0
  for (const item of list) {
    for (let j = 0; j < width; j++) {
      const part = (width === 2 ? (item as unknown[])[j] : item) as Uint8Array | undefined
      if (part === undefined) {
        lengths[i++] = -1
      } else {
        bytes.set(part, offset)
        offset += part.byteLength
        lengths[i++] = part.byteLength
      }
    }
  }
  return [bytes, lengths]
}

/** The list that pack() packed, each part a copy of its own. */
function unpack (width: 1 | 2, count: number, bytes: Uint8Array, lengths: Int32Array): unknown[] {
  const out = new Array<unknown>(count)
  let offset = 0
  const part = (i: number): Uint8Array | undefined => {
    const n = lengths[i]
    if (n < 0) return undefined
    offset += n
    return bytes.slice(offset - n, offset)
  }
  for (let i = 0; i < count; i++) out[i] = width === 2 ? [part(2 * i), part(2 * i + 1)] : part(i)
  return out
}

/** Whether `result` is a list worth packing: entries (width 2) or values (width 1) of small byte arrays. */
function packable (result: unknown): { width: 1 | 2, total: number } | undefined {
  if (!Array.isArray(result) || result.length === 0) return undefined
  const width = Array.isArray(result[0]) ? 2 : 1
  const total = packedLength(result, width)
  return total < 0 ? undefined : { width, total }
}

interface BatchOp { type: 'put' | 'del', key: Uint8Array, value?: Uint8Array }
interface Message { id?: number, op?: string, key?: Uint8Array, value?: Uint8Array, sync?: boolean, snapshot?: number, ops?: BatchOp[], result?: unknown, error?: unknown, push?: unknown }

/** A batch's operations as pairs of key and value (undefined for a del), if every one is a put or a del. */
function batchPairs (ops: BatchOp[]): unknown[] | undefined {
  const pairs = new Array<unknown>(ops.length)
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]
    if (op.type === 'put' && op.value !== undefined) pairs[i] = [op.key, op.value]
    else if (op.type === 'del') pairs[i] = [op.key, undefined]
    else return undefined
  }
  return pairs
}

/** A batch's operations from its kinds and its packed pairs. */
function batchOps (kinds: Uint8Array, pairs: unknown[]): BatchOp[] {
  const ops = new Array<BatchOp>(kinds.length)
  for (let i = 0; i < kinds.length; i++) {
    const [key, value] = pairs[i] as [Uint8Array, Uint8Array | undefined]
    ops[i] = kinds[i] === 1 ? { type: 'put', key, value } : { type: 'del', key }
  }
  return ops
}

/** `batch` as a line's message; the buffers it packed go on `transfer`. */
function encode (n: number, batch: Message[], transfer: ArrayBuffer[]): unknown[] {
  const out: unknown[] = [n]
  for (const m of batch) {
    if (m.op === 'get' && m.snapshot === undefined) out.push(GET, m.id, m.key)
    else if (m.op === 'put') out.push(PUT, m.id, m.key, m.value, m.sync)
    else if (m.op === 'del') out.push(DEL, m.id, m.key, m.sync)
    else if (m.op === 'batch' && encodeBatch(m, out, transfer)) continue
    else if (m.op === undefined && m.push === undefined && m.error === undefined && typeof m.id === 'number') {
      const list = packable(m.result)
      if (list === undefined) {
        out.push(RESULT, m.id, m.result)
      } else {
        const [bytes, lengths] = pack(m.result as unknown[], list.width, list.total)
        out.push(PACKED, m.id, list.width, (m.result as unknown[]).length, bytes, lengths)
        transfer.push(bytes.buffer as ArrayBuffer, lengths.buffer as ArrayBuffer)
      }
    } else out.push(OTHER, m)
  }
  return out
}

/** Pushes batch request `m` packed (BATCH) and returns true, if its keys and values are small. */
function encodeBatch (m: Message, out: unknown[], transfer: ArrayBuffer[]): boolean {
  const pairs = Array.isArray(m.ops) ? batchPairs(m.ops) : undefined
  if (pairs === undefined || pairs.length === 0) return false
  const total = packedLength(pairs, 2)
  if (total < 0) return false
  const [bytes, lengths] = pack(pairs, 2, total)
  const kinds = Uint8Array.from(m.ops!, (op) => op.type === 'put' ? 1 : 0)
  out.push(BATCH, m.id, m.sync, kinds, bytes, lengths)
  transfer.push(bytes.buffer as ArrayBuffer, lengths.buffer as ArrayBuffer, kinds.buffer as ArrayBuffer)
  return true
}

/** The batch a line's message carries. */
function decode (wire: unknown[]): Message[] {
  const out: Message[] = []
  for (let i = 1; i < wire.length;) {
    switch (wire[i]) {
      case GET: out.push({ id: wire[i + 1] as number, op: 'get', key: wire[i + 2] as Uint8Array }); i += 3; break
      case PUT: out.push({ id: wire[i + 1] as number, op: 'put', key: wire[i + 2] as Uint8Array, value: wire[i + 3] as Uint8Array, sync: wire[i + 4] as boolean }); i += 5; break
      case DEL: out.push({ id: wire[i + 1] as number, op: 'del', key: wire[i + 2] as Uint8Array, sync: wire[i + 3] as boolean }); i += 4; break
      case RESULT: out.push({ id: wire[i + 1] as number, result: wire[i + 2] }); i += 3; break
      case PACKED: out.push({ id: wire[i + 1] as number, result: unpack(wire[i + 2] as 1 | 2, wire[i + 3] as number, wire[i + 4] as Uint8Array, wire[i + 5] as Int32Array) }); i += 6; break
      case BATCH: {
        const kinds = wire[i + 3] as Uint8Array
        out.push({ id: wire[i + 1] as number, op: 'batch', sync: wire[i + 2] as boolean, ops: batchOps(kinds, unpack(2, kinds.length, wire[i + 4] as Uint8Array, wire[i + 5] as Int32Array)) })
        i += 6
        break
      }
      case OTHER: out.push(wire[i + 1] as Message); i += 2; break
      default: throw new Error(`lsm-level worker line: unknown item ${String(wire[i])}`)
    }
  }
  return out
}

/** The lines over one postMessage, on one side (the page's Worker, or the worker's global scope). */
export class WorkerLines {
  private readonly lines = new Map<number, TransportChannel<unknown, unknown>>()

  /** `post` sends on the shared transport (worker.postMessage, or the worker scope's). */
  constructor (private readonly post: (message: unknown, transfer?: ArrayBuffer[]) => void) {}

  /** How many lines are open here. */
  get size (): number {
    return this.lines.size
  }

  /** Line `n`'s end here; its close() tells the other side. */
  open<Out, In> (n: number): TransportChannel<Out, In> {
    const line: TransportChannel<Out, In> = transportChannel<Out, In>((m, transfer) => {
      const packed: ArrayBuffer[] = []
      const wire = encode(n, m as Message[], packed)
      this.post(wire, packed.length === 0 ? transfer : [...transfer, ...packed])
    }, () => {
      // Only a line still open here tells the other side (not one the other side ended).
      if (this.lines.get(n) !== line) return
      this.lines.delete(n)
      this.post([n, END])
    })
    this.lines.set(n, line as TransportChannel<unknown, unknown>)
    return line
  }

  /** Hands `data` to its line, if it is a line's message (true), else false. */
  deliver (data: unknown): boolean {
    if (!Array.isArray(data) || typeof data[0] !== 'number') return false
    const n = data[0]
    const line = this.lines.get(n)
    if (line === undefined) return true
    if (data[1] === END) {
      this.lines.delete(n)
      line.ended()
    } else {
      line.delivered(decode(data))
    }
    return true
  }

  /** Ends every line here with `reason`, telling nobody (the transport is gone). */
  endAll (reason: Error): void {
    const lines = [...this.lines.values()]
    this.lines.clear()
    for (const line of lines) line.ended(reason)
  }
}
