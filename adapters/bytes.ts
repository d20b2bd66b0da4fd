// The forms keys and values take between abstract-level and the engine: what
// abstract-level hands the adapters (already encoded), and the engine's bytes
// turned back into the encoding asked for.

/** A key or value as abstract-level hands it over, encoded. */
export type Format = string | Buffer | Uint8Array
/** The encodings the adapters take natively (abstract-level transcodes the others). */
export type EncodingName = 'utf8' | 'buffer' | 'view'

/** A borrowed view for lookups (no copy needed: the engine does not keep it). */
export function toView (data: Format): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (Buffer.isBuffer(data)) return data
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
}

/**
 * Whether Buffer is the browser's polyfill (the `buffer` package), not Node's:
 * each of its Buffers is a Uint8Array given Buffer's prototype, which cost
 * Chromium about 2.4 µs an allocation in a scan's copies (BENCHMARKS.md).
 */
const POLYFILLED_BUFFER = typeof process === 'undefined' || typeof process.versions?.node !== 'string'

/** Engine bytes src[start, end) to the requested encoding; buffers are copied ('view': a plain Uint8Array where Buffer is the polyfill). */
export function decodeOut (src: Buffer, start: number, end: number, encoding: EncodingName): Format {
  if (encoding === 'utf8') return src.toString('utf8', start, end)
  const n = end - start
  if (encoding === 'view' && POLYFILLED_BUFFER) {
    // Not the polyfill's copy(), which takes only its own Buffers, nor subarray(), which makes one.
    const view = new Uint8Array(n)
    view.set(new Uint8Array(src.buffer, src.byteOffset + start, n))
    return view
  }
  const copy = Buffer.allocUnsafe(n)
  // A short copy by hand: Buffer#copy of a range makes a view first (~95 ns
  // here against ~50 ns for a 16-byte loop; even at ~24 bytes).
  if (n <= 24) for (let i = 0; i < n; i++) copy[i] = src[start + i]
  else src.copy(copy, 0, start, end)
  return copy
}

/** A value the engine's get() returned (a fresh copy the caller owns) to the requested encoding. */
export function ownedOut (data: Buffer, encoding: EncodingName): Format {
  return encoding === 'utf8' ? data.toString('utf8') : data
}
