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
import type { OnReadOpts, Socket } from 'node:net'
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

/**
 * Cuts a byte stream into frames and decodes them; holds a partial frame until
 * its end arrives. With `reused`, each chunk's memory is read into again after
 * push() returns (a socket's `onread` buffer): a partial frame is copied.
 */
export class FrameReader {
  private chunks: Buffer[] = []
  private buffered = 0

  constructor (private readonly reused = false) {}

  /** The messages completed by `chunk`, in order. Throws on a frame longer than MAX_FRAME_BYTES. */
  push (chunk: Buffer): unknown[] {
    const out = this.frames(chunk)
    if (this.reused && this.buffered > 0) this.chunks = [Buffer.concat(this.chunks)]
    return out
  }

  private frames (chunk: Buffer): unknown[] {
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
 * What a socket made with an `onread` option (net.connect's: the bytes read
 * go to a callback, into one buffer read into again and again, without the
 * stream's 'data' events) reads: the callback calls deliver(); a channel over
 * the socket sets it.
 */
export class ReadFeed {
  deliver: (chunk: Buffer) => void = () => {}

  /** net.connect's `onread` option, feeding this. */
  onread (bufferBytes = 64 * 1024): OnReadOpts {
    const buffer = Buffer.allocUnsafe(bufferBytes)
    return {
      buffer,
      callback: (bytes) => {
        this.deliver(buffer.subarray(0, bytes))
        return true
      }
    }
  }
}

/**
 * A channel over `socket` (connected). It ends when the socket closes or
 * fails, or when the other side sends bytes that are not frames; close()
 * destroys the socket. `feed`: the socket reads through its `onread` option
 * into that feed (ReadFeed), not through 'data' events: an awaited client put
 * cost the client 33.9 -> 30.0 µs of CPU that way (medians of 10 rounds; BENCHMARKS.md, "Many processes").
 */
export function socketChannel<Out = unknown, In = unknown> (socket: Socket, feed?: ReadFeed): Channel<Out, In> {
  let onMessage: (message: In) => void = () => {}
  let onClose: (reason?: Error) => void = () => {}
  let closed = false
  let failure: Error | undefined
  const reader = new FrameReader(feed !== undefined)

  const ended = (reason?: Error): void => {
    if (closed) return
    closed = true
    socket.destroy()
    onClose(reason)
  }
  socket.setNoDelay?.(true)
  const received = (chunk: Buffer): void => {
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
  }
  if (feed !== undefined) feed.deliver = received
  else socket.on('data', received)
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
