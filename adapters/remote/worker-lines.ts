// Many channels over one dedicated worker's own postMessage: the page's engine
// worker serves each of the page's databases over a line of its own. Every
// message of a line is a flat array that starts with the line's number:
//
//   [n, ...items]   a batch of the protocol (protocol.ts), item by item:
//                   GET id key | PUT id key value sync | DEL id key sync |
//                   RESULT id result (a reply with no error) | OTHER message
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
// requests and replies then carry none (BENCHMARKS.md, the message shapes).
import { transportChannel, type TransportChannel } from './channel'

/** The item codes of a line's message. */
const END = -1
const OTHER = 0
const GET = 1
const PUT = 2
const DEL = 3
const RESULT = 4

interface Message { id?: number, op?: string, key?: Uint8Array, value?: Uint8Array, sync?: boolean, snapshot?: number, result?: unknown, error?: unknown, push?: unknown }

/** `batch` as a line's message. */
function encode (n: number, batch: Message[]): unknown[] {
  const out: unknown[] = [n]
  for (const m of batch) {
    if (m.op === 'get' && m.snapshot === undefined) out.push(GET, m.id, m.key)
    else if (m.op === 'put') out.push(PUT, m.id, m.key, m.value, m.sync)
    else if (m.op === 'del') out.push(DEL, m.id, m.key, m.sync)
    else if (m.op === undefined && m.push === undefined && m.error === undefined && typeof m.id === 'number') out.push(RESULT, m.id, m.result)
    else out.push(OTHER, m)
  }
  return out
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
    const line: TransportChannel<Out, In> = transportChannel<Out, In>((m, transfer) => this.post(encode(n, m as Message[]), transfer), () => {
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
