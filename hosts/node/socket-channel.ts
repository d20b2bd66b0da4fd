// A Channel (lib/channel.ts: the two-way line every transport implements) over
// a stream socket: a Unix domain socket or a Windows named pipe between two
// processes. Each message is one frame:
//
//   +----------------------+-------------------------------------------+
//   | length: uint32 LE    | the message (frame-codec.ts): length bytes |
//   +----------------------+-------------------------------------------+
//
// The remote protocol's messages (arrays of plain objects holding
// Uint8Arrays) cross as they do over a MessagePort, buffers copied. Both
// sides batch: the requests (or the replies and pushes) of one turn are one
// message, so one frame and one write(2).
//
// `transfer` means nothing across processes: bytes are copied.
import type { Socket } from 'node:net'
import type { Channel } from '../../lib/channel'
import { decodeMessage, encodeMessage } from './frame-codec'

/** Bytes of a frame's length prefix. */
const HEADER_BYTES = 4

/**
 * The largest frame either side accepts (a reply to a nextv of many large
 * values is the biggest message): a longer length prefix is a broken or
 * foreign peer, and the channel closes rather than buffer without bound.
 */
export const MAX_FRAME_BYTES = 1 << 30

/** One frame: `message` encoded behind its length. */
export function encodeFrame (message: unknown): Buffer {
  const frame = encodeMessage(message, HEADER_BYTES)
  const length = frame.length - HEADER_BYTES
  if (length > MAX_FRAME_BYTES) throw new RangeError(`A message of ${length} bytes is larger than a frame may be (${MAX_FRAME_BYTES})`)
  frame.writeUInt32LE(length, 0)
  return frame
}

/** Cuts a byte stream into frames and decodes them; holds a partial frame until its end arrives. */
export class FrameReader {
  private chunks: Buffer[] = []
  private buffered = 0

  /** The messages completed by `chunk`, in order. Throws on a frame longer than MAX_FRAME_BYTES. */
  push (chunk: Buffer): unknown[] {
    this.chunks.push(chunk)
    this.buffered += chunk.length
    const out: unknown[] = []
    while (this.buffered >= HEADER_BYTES) {
      const head = this.peekHeader()
      if (head > MAX_FRAME_BYTES) throw new RangeError(`A frame of ${head} bytes is larger than a frame may be (${MAX_FRAME_BYTES})`)
      if (this.buffered < HEADER_BYTES + head) break
      const frame = this.take(HEADER_BYTES + head)
      out.push(decodeMessage(frame.subarray(HEADER_BYTES)))
    }
    return out
  }

  private peekHeader (): number {
    const first = this.chunks[0]
    if (first.length >= HEADER_BYTES) return first.readUInt32LE(0)
    return Buffer.concat(this.chunks).readUInt32LE(0)
  }

  /** The first `n` bytes buffered (n <= buffered), removed. */
  private take (n: number): Buffer {
    const first = this.chunks[0]
    let out: Buffer
    if (first.length >= n) {
      out = first.subarray(0, n)
      if (first.length === n) this.chunks.shift()
      else this.chunks[0] = first.subarray(n)
    } else {
      const all = Buffer.concat(this.chunks)
      out = all.subarray(0, n)
      this.chunks = all.length > n ? [all.subarray(n)] : []
    }
    this.buffered -= n
    return out
  }
}

/**
 * A channel over `socket` (connected). It ends when the socket closes or
 * fails, or when the other side sends bytes that are not frames; close()
 * destroys the socket.
 */
export function socketChannel<Out = unknown, In = unknown> (socket: Socket): Channel<Out, In> {
  let onMessage: (message: In) => void = () => {}
  let onClose: (reason?: Error) => void = () => {}
  let closed = false
  let failure: Error | undefined
  const reader = new FrameReader()

  const ended = (reason?: Error): void => {
    if (closed) return
    closed = true
    socket.destroy()
    onClose(reason)
  }
  socket.setNoDelay?.(true)
  socket.on('data', (chunk: Buffer) => {
    if (closed) return
    let messages: unknown[]
    try {
      messages = reader.push(chunk)
    } catch (err) {
      ended(err as Error)
      return
    }
    for (const m of messages) {
      if (closed) return
      onMessage(m as In)
    }
  })
  socket.on('error', (err) => { failure = err })
  socket.on('close', () => ended(failure))
  return {
    send (message: Out): void {
      if (closed) return
      socket.write(encodeFrame(message))
    },
    receive (handler: (message: In) => void, closeHandler?: (reason?: Error) => void): void {
      onMessage = handler
      onClose = closeHandler ?? (() => {})
    },
    close (): void {
      ended()
    }
  }
}
