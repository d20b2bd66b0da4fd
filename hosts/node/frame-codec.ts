// The body of a socket channel's frame (socket-channel.ts): one message of
// the remote protocol as bytes. The messages are plain data (arrays, plain
// objects, strings, numbers, booleans, undefined, null, Uint8Arrays), so a
// small tagged encoding covers them; anything else (a Date, a Map, a BigInt in
// some result) is carried by v8.serialize inside the frame. The tagged
// encoding measured about 10x faster than v8.serialize for the protocol's
// small messages (a Serializer is made per call, and typed arrays are host
// objects there), which is most of a round trip's cost
// (benchmarks/multi-process.ts, "codec").
//
//   value := tag (1 byte) payload
//   tag 0 undefined, 1 null, 2 false, 3 true       no payload
//   tag 4 int32                                    4 bytes LE
//   tag 5 float64                                  8 bytes LE
//   tag 6 string                                   uint32 LE byte length, UTF-8
//   tag 7 bytes (any Uint8Array; decoded a Buffer) uint32 LE length, the bytes
//   tag 8 array                                    uint32 LE count, values
//   tag 9 plain object                             uint32 LE count, (string key, value) pairs
//   tag 10 other                                   uint32 LE length, v8.serialize bytes
//   tag 11 compact messages (below)                uint32 LE count, items
//
// Compact messages. Most of a socket's traffic is the write path's: a put or a
// del and its reply, and a get and its reply. A message that is an array of
// only those (the requests or the replies of one turn) is written without
// property names, each item its kind and fields, and read back as the same
// objects (the protocol's fields only):
//
//   item := kind (1 byte), id (uint32 LE), then by kind
//   1 { id, op: 'put', key, value, sync }   sync (1 byte), key and value (each uint32 LE length, bytes)
//   2 { id, op: 'del', key, sync }          sync (1 byte), key
//   3 { id, op: 'get', key }                key (a get at a snapshot is not compact)
//   4 { id, result: undefined }             nothing (a write's reply)
//   5 { id, result: bytes }                 the bytes (a get's reply)
//
// Reading a tagged message makes a string of each property name and sets
// properties by those names: the compact form took about 6.5 µs of CPU off an
// awaited put in each of the two processes (BENCHMARKS.md, "Many processes").
//
// Version: the remote protocol's (adapters/remote/protocol.ts, PROTOCOL_VERSION)
// is checked at attach; this encoding is part of the Node socket transport and
// changes with it.
import * as v8 from 'node:v8'

const UNDEFINED = 0
const NULL = 1
const FALSE = 2
const TRUE = 3
const INT32 = 4
const FLOAT64 = 5
const STRING = 6
const BYTES = 7
const ARRAY = 8
const OBJECT = 9
const OTHER = 10
const COMPACT = 11

const PUT = 1
const DEL = 2
const GET = 3
const DONE = 4
const RESULT_BYTES = 5

/** An item's kind as a compact message (above), or 0 when it is not one. */
function compactKind (m: unknown): number {
  if (m === null || typeof m !== 'object') return 0
  const r = m as { id?: unknown, op?: unknown, key?: unknown, value?: unknown, sync?: unknown, snapshot?: unknown, result?: unknown, error?: unknown, push?: unknown }
  const id = r.id
  if (typeof id !== 'number' || id >>> 0 !== id) return 0
  const op = r.op
  if (op === undefined) {
    if (r.error !== undefined || r.push !== undefined || !('result' in r)) return 0
    const result = r.result
    return result === undefined ? DONE : result instanceof Uint8Array ? RESULT_BYTES : 0
  }
  if (!(r.key instanceof Uint8Array)) return 0
  if (op === 'put') return r.value instanceof Uint8Array && typeof r.sync === 'boolean' ? PUT : 0
  if (op === 'del') return typeof r.sync === 'boolean' ? DEL : 0
  if (op === 'get') return r.snapshot === undefined ? GET : 0
  return 0
}

/** Whether `message` is an array of compact messages only. */
function compactable (message: unknown): message is unknown[] {
  if (!Array.isArray(message) || message.length === 0) return false
  for (let i = 0; i < message.length; i++) if (compactKind(message[i]) === 0) return false
  return true
}

/** Grows a buffer as a value is written into it; reused between messages. */
class Writer {
  buf = Buffer.allocUnsafe(64 * 1024)
  pos = 0

  reserve (n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const grown = Buffer.allocUnsafe(size)
    this.buf.copy(grown, 0, 0, this.pos)
    this.buf = grown
  }

  byte (b: number): void {
    this.reserve(1)
    this.buf[this.pos++] = b
  }

  u32 (n: number): void {
    this.reserve(4)
    this.buf.writeUInt32LE(n, this.pos)
    this.pos += 4
  }

  string (s: string): void {
    // At most 3 bytes per UTF-16 unit; the length is written once known.
    this.reserve(5 + s.length * 3)
    this.buf[this.pos] = STRING
    const at = this.pos + 1
    const n = this.buf.write(s, at + 4, 'utf8')
    this.buf.writeUInt32LE(n, at)
    this.pos = at + 4 + n
  }

  bytes (v: Uint8Array): void {
    this.reserve(4 + v.byteLength)
    this.buf.writeUInt32LE(v.byteLength, this.pos)
    this.buf.set(v, this.pos + 4)
    this.pos += 4 + v.byteLength
  }

  /** `items`, each a compact message (compactable). */
  compact (items: unknown[]): void {
    this.byte(COMPACT)
    this.u32(items.length)
    for (const item of items) {
      const m = item as { id: number, key: Uint8Array, value: Uint8Array, sync: boolean, result: unknown }
      const kind = compactKind(m)
      this.reserve(6)
      this.buf[this.pos] = kind
      this.buf.writeUInt32LE(m.id, this.pos + 1)
      this.pos += 5
      switch (kind) {
        case PUT: this.buf[this.pos++] = m.sync ? 1 : 0; this.bytes(m.key); this.bytes(m.value); break
        case DEL: this.buf[this.pos++] = m.sync ? 1 : 0; this.bytes(m.key); break
        case GET: this.bytes(m.key); break
        case RESULT_BYTES: this.bytes(m.result as Uint8Array); break
      }
    }
  }

  value (v: unknown): void {
    switch (typeof v) {
      case 'undefined': this.byte(UNDEFINED); return
      case 'boolean': this.byte(v ? TRUE : FALSE); return
      case 'string': this.string(v); return
      case 'number':
        if ((v | 0) === v && !Object.is(v, -0)) {
          this.reserve(5)
          this.buf[this.pos] = INT32
          this.buf.writeInt32LE(v, this.pos + 1)
          this.pos += 5
        } else {
          this.reserve(9)
          this.buf[this.pos] = FLOAT64
          this.buf.writeDoubleLE(v, this.pos + 1)
          this.pos += 9
        }
        return
    }
    if (v === null) { this.byte(NULL); return }
    if (v instanceof Uint8Array) {
      this.reserve(5 + v.byteLength)
      this.buf[this.pos] = BYTES
      this.buf.writeUInt32LE(v.byteLength, this.pos + 1)
      this.buf.set(v, this.pos + 5)
      this.pos += 5 + v.byteLength
      return
    }
    if (Array.isArray(v)) {
      this.byte(ARRAY)
      this.u32(v.length)
      for (const item of v) this.value(item)
      return
    }
    const proto = typeof v === 'object' ? Object.getPrototypeOf(v) : undefined
    if (proto === Object.prototype || proto === null) {
      const keys = Object.keys(v as object)
      this.byte(OBJECT)
      this.u32(keys.length)
      for (const k of keys) {
        this.string(k)
        this.value((v as Record<string, unknown>)[k])
      }
      return
    }
    const blob = v8.serialize(v)
    this.byte(OTHER)
    this.u32(blob.length)
    this.reserve(blob.length)
    blob.copy(this.buf, this.pos)
    this.pos += blob.length
  }
}

const writer = new Writer()

/** `message` encoded behind a `headerBytes` gap the caller fills (the frame's length). */
export function encodeMessage (message: unknown, headerBytes: number): Buffer {
  writer.pos = headerBytes
  writer.reserve(0)
  if (compactable(message)) writer.compact(message)
  else writer.value(message)
  const out = Buffer.allocUnsafe(writer.pos)
  writer.buf.copy(out, 0, 0, writer.pos)
  // A rare huge message does not keep its scratch space.
  if (writer.buf.length > 1024 * 1024) writer.buf = Buffer.allocUnsafe(64 * 1024)
  return out
}

/** Reads values from one message's bytes. */
class Reader {
  pos = 0
  constructor (private readonly buf: Buffer) {}

  u32 (): number {
    const n = this.buf.readUInt32LE(this.pos)
    this.pos += 4
    return n
  }

  /** Length-prefixed bytes, copied: a view would keep the whole frame alive as long as the caller keeps the value. */
  bytes (): Buffer {
    const n = this.u32()
    const out = Buffer.allocUnsafe(n)
    this.buf.copy(out, 0, this.pos, this.pos + n)
    this.pos += n
    return out
  }

  compact (): unknown[] {
    const buf = this.buf
    const n = this.u32()
    const out = new Array<unknown>(n)
    for (let i = 0; i < n; i++) {
      const kind = buf[this.pos]
      const id = buf.readUInt32LE(this.pos + 1)
      this.pos += 5
      switch (kind) {
        case PUT: { const sync = buf[this.pos++] === 1; const key = this.bytes(); out[i] = { id, op: 'put', key, value: this.bytes(), sync }; break }
        case DEL: { const sync = buf[this.pos++] === 1; out[i] = { id, op: 'del', key: this.bytes(), sync }; break }
        case GET: out[i] = { id, op: 'get', key: this.bytes(), snapshot: undefined }; break
        case DONE: out[i] = { id, result: undefined }; break
        case RESULT_BYTES: out[i] = { id, result: this.bytes() }; break
        default: throw new RangeError(`Not a frame of the socket channel: unknown compact message kind ${String(kind)} at byte ${this.pos - 5}`)
      }
    }
    return out
  }

  value (): unknown {
    const buf = this.buf
    const tag = buf[this.pos++]
    switch (tag) {
      case UNDEFINED: return undefined
      case NULL: return null
      case FALSE: return false
      case TRUE: return true
      case INT32: { const v = buf.readInt32LE(this.pos); this.pos += 4; return v }
      case FLOAT64: { const v = buf.readDoubleLE(this.pos); this.pos += 8; return v }
      case STRING: { const n = this.u32(); const s = buf.toString('utf8', this.pos, this.pos + n); this.pos += n; return s }
      case BYTES: return this.bytes()
      case ARRAY: {
        const n = this.u32()
        const out = new Array<unknown>(n)
        for (let i = 0; i < n; i++) out[i] = this.value()
        return out
      }
      case OBJECT: {
        const n = this.u32()
        const out: Record<string, unknown> = {}
        for (let i = 0; i < n; i++) {
          const k = this.value() as string
          out[k] = this.value()
        }
        return out
      }
      case COMPACT: return this.compact()
      case OTHER: { const n = this.u32(); const v = v8.deserialize(buf.subarray(this.pos, this.pos + n)); this.pos += n; return v }
      default: throw new RangeError(`Not a frame of the socket channel: unknown tag ${String(tag)} at byte ${this.pos - 1}`)
    }
  }
}

/** The message in `body` (a whole frame's body). Throws RangeError on bytes that are not one. */
export function decodeMessage (body: Buffer): unknown {
  const reader = new Reader(body)
  const value = reader.value()
  if (reader.pos !== body.length) throw new RangeError(`Not a frame of the socket channel: ${body.length - reader.pos} bytes after the message`)
  return value
}
