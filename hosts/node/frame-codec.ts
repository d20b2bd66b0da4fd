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
  writer.value(message)
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
      case BYTES: {
        // A copy: a view would keep the whole frame alive as long as the caller keeps the value.
        const n = this.u32()
        const out = Buffer.allocUnsafe(n)
        buf.copy(out, 0, this.pos, this.pos + n)
        this.pos += n
        return out
      }
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
