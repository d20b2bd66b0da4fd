// Many channels over one dedicated worker's own postMessage: the page's engine
// worker serves each of the page's databases over a line of its own, and
// every message of a line carries the line's number: { [WORKER_LINE]: n, m }
// (a batch of the protocol), or { [WORKER_LINE]: n, end: true } when that
// side closed it. The page opens line n by posting
// { [WORKER_CONNECT]: { line: n, ... } } before the line's first message.
//
// Not a MessageChannel per database: a round trip between a page and its
// worker over a MessagePort took 530-940 µs in Firefox 153 against 55-71 µs
// on the worker's own postMessage (BENCHMARKS.md, the floor), and an awaited
// operation of BrowserLevel is little else.
import { transportChannel, type TransportChannel } from './channel'

/** The key of a line's messages: its number. */
export const WORKER_LINE = 'lsmLevelLine'

interface LineMessage { [WORKER_LINE]: number, m?: unknown, end?: true }

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
    const line: TransportChannel<Out, In> = transportChannel<Out, In>((m, transfer) => this.post({ [WORKER_LINE]: n, m }, transfer), () => {
      // Only a line still open here tells the other side (not one the other side ended).
      if (this.lines.get(n) !== line) return
      this.lines.delete(n)
      this.post({ [WORKER_LINE]: n, end: true })
    })
    this.lines.set(n, line as TransportChannel<unknown, unknown>)
    return line
  }

  /** Hands `data` to its line, if it is a line's message (true), else false. */
  deliver (data: unknown): boolean {
    const n = (data as LineMessage | null)?.[WORKER_LINE]
    if (typeof n !== 'number') return false
    const line = this.lines.get(n)
    if (line === undefined) return true
    if ((data as LineMessage).end === true) {
      this.lines.delete(n)
      line.ended()
    } else {
      line.delivered((data as LineMessage).m)
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
