// The messages between the main thread's database (browser.ts) and the worker
// that runs the engine (lib/browser/worker-main.ts). Each postMessage carries
// an array: the requests (or replies) of one turn, in order. The worker starts
// handling each request in arrival order, so a snapshot or an iterator created
// by a request sees every write whose reply came before it was sent.
//
// Keys and values travel as Uint8Arrays (the main thread's abstract-level
// encodes and decodes them). Requests are structured-cloned (their buffers may
// be the caller's own); replies transfer the large buffers the worker made for
// them and clone the small ones (see TRANSFER_MIN_BYTES).

/** A range as abstract-level normalises it, keys encoded. */
export interface RangeMessage {
  gt?: Uint8Array
  gte?: Uint8Array
  lt?: Uint8Array
  lte?: Uint8Array
  reverse?: boolean
  limit?: number
}

export type Request =
  | { id: number, op: 'open', location: string, options: Record<string, unknown> }
  | { id: number, op: 'close' }
  | { id: number, op: 'put', key: Uint8Array, value: Uint8Array, sync: boolean }
  | { id: number, op: 'del', key: Uint8Array, sync: boolean }
  | { id: number, op: 'batch', ops: Array<{ type: 'put' | 'del', key: Uint8Array, value?: Uint8Array }>, sync: boolean }
  | { id: number, op: 'get', key: Uint8Array, snapshot?: number }
  | { id: number, op: 'getMany', keys: Uint8Array[], snapshot?: number }
  | { id: number, op: 'has', key: Uint8Array, snapshot?: number }
  | { id: number, op: 'hasMany', keys: Uint8Array[], snapshot?: number }
  | { id: number, op: 'clear', range: RangeMessage, snapshot?: number }
  | { id: number, op: 'iterator', iterator: number, range: RangeMessage, keys: boolean, values: boolean, snapshot?: number }
  | { id: number, op: 'nextv', iterator: number, size: number }
  | { id: number, op: 'seek', iterator: number, target: Uint8Array }
  | { id: number, op: 'iteratorClose', iterator: number }
  | { id: number, op: 'snapshot', snapshot: number }
  | { id: number, op: 'snapshotClose', snapshot: number }
  | { id: number, op: 'call', method: string, args: unknown[] }

export interface Reply {
  id: number
  result?: unknown
  error?: ErrorMessage
}

export interface ErrorMessage {
  message: string
  code?: string
  name?: string
  cause?: ErrorMessage
}

/** An error as plain data: message, LEVEL_* code, name, and its causes (a few). */
export function errorMessage (err: unknown, depth = 0): ErrorMessage {
  const e = err as { message?: unknown, code?: unknown, name?: unknown, cause?: unknown } | undefined
  return {
    message: String(e?.message ?? err),
    code: typeof e?.code === 'string' ? e.code : undefined,
    name: typeof e?.name === 'string' ? e.name : undefined,
    cause: e?.cause !== undefined && depth < 4 ? errorMessage(e.cause, depth + 1) : undefined
  }
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
    if (value.byteOffset === 0 && value.byteLength === value.buffer.byteLength && value.byteLength >= TRANSFER_MIN_BYTES && value.buffer instanceof ArrayBuffer) out.add(value.buffer)
  } else if (Array.isArray(value)) {
    for (const v of value) transferables(v, out)
  }
  return out
}
