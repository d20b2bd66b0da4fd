// The socket channel of multiProcess opens (hosts/node/socket-channel.ts) and
// its frame encoding (hosts/node/frame-codec.ts): the protocol's values round
// trip; a frame split anywhere across reads is reassembled; bytes that are not
// frames (a length over the bound, an unknown tag, trailing bytes) are refused;
// a large message and many small ones cross a real Unix socket in order, read
// through 'data' events and through a socket's onread buffer.
import test from 'tape'
import * as net from 'node:net'
import * as path from 'node:path'
import { decodeMessage, encodeMessage } from '../hosts/node/frame-codec'
import { encodeFrame, FrameReader, MAX_FRAME_BYTES, ReadFeed, socketChannel } from '../hosts/node/socket-channel'
import { connectToOwner } from '../hosts/node/owner-socket'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

const samples: unknown[] = [
  undefined, null, true, false, 0, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 1.5, -0, NaN, Infinity,
  '', 'utf8: é ✓ 𝄞', 'x'.repeat(70_000),
  Buffer.from([0, 1, 255]), new Uint8Array(0), new Uint8Array(new ArrayBuffer(16), 4, 8).fill(7),
  [], [1, [2, [3]]], { a: 1, b: undefined, c: { d: [Buffer.from('k'), 'v'] } },
  [{ id: 1, op: 'get', key: Buffer.from('key'), snapshot: undefined }],
  [{ id: 2, error: { code: 'LEVEL_NOT_FOUND', message: 'm', cause: { message: 'c' } } }],
  new Date(0), new Map([[1, 2]])
]

test('frame codec: the protocol\'s values round trip', (t) => {
  for (const v of samples) {
    const back = decodeMessage(encodeMessage(v, 0))
    if (typeof v === 'number' && Number.isNaN(v)) t.ok(Number.isNaN(back), 'NaN')
    else if (v instanceof Uint8Array) t.same(Buffer.from(back as Uint8Array), Buffer.from(v), `bytes ${v.byteLength}`)
    else t.same(back, v, JSON.stringify(v)?.slice(0, 60) ?? String(v))
  }
  t.ok(Object.is(decodeMessage(encodeMessage(-0, 0)), -0), '-0 kept')
  const nested = decodeMessage(encodeMessage({ b: undefined }, 0)) as object
  t.ok('b' in nested, 'an undefined property is kept, as structured clone keeps it')
  t.end()
})

test('frame codec: puts, dels, gets and their replies cross as compact messages, read back as they were sent', (t) => {
  const key = Buffer.from('key')
  const value = Buffer.alloc(100, 5)
  const compact: unknown[][] = [
    [{ id: 1, op: 'put', key, value, sync: false }],
    [{ id: 2 ** 32 - 1, op: 'put', key: new Uint8Array(0), value: new Uint8Array(new ArrayBuffer(16), 4, 8).fill(7), sync: true }],
    [{ id: 3, op: 'del', key, sync: true }, { id: 4, op: 'get', key, snapshot: undefined }, { id: 5, op: 'put', key, value, sync: false }],
    [{ id: 6, result: undefined }, { id: 7, result: value }, { id: 8, result: new Uint8Array(0) }]
  ]
  for (const m of compact) {
    const bytes = encodeMessage(m, 0)
    t.is(bytes[0], 11, `compact: ${m.map((x) => JSON.stringify(x).slice(0, 24)).join(', ')}`)
    const back = decodeMessage(bytes) as Array<Record<string, unknown>>
    t.same(back.map(plain), m.map(plain), 'read back as sent')
  }
  // What the compact form cannot carry keeps the tagged form (the whole message).
  const tagged: unknown[][] = [
    [{ id: 1, op: 'get', key, snapshot: 4 }],
    [{ id: 1, op: 'put', key, value, sync: false }, { id: 2, op: 'batch', ops: [], sync: false }],
    [{ id: 1, result: 5 }],
    [{ id: 1, error: { code: 'LEVEL_NOT_FOUND', message: 'm' } }],
    [{ id: -1, result: undefined }],
    [{ id: 1.5, op: 'del', key, sync: false }],
    [{ push: 'closed' }],
    []
  ]
  for (const m of tagged) {
    const bytes = encodeMessage(m, 0)
    t.is(bytes[0], 8, `tagged: ${JSON.stringify(m).slice(0, 50)}`)
    t.same((decodeMessage(bytes) as unknown[]).map(plain), m.map(plain), 'read back as sent')
  }
  const bad = encodeMessage([{ id: 1, result: undefined }], 0)
  bad[5] = 9
  t.throws(() => decodeMessage(bad), /unknown compact message kind 9/, 'an unknown kind is refused')
  t.end()
})

/** `m` with its byte arrays as plain arrays of numbers (a Buffer and a Uint8Array of the same bytes compare equal). */
function plain (m: unknown): unknown {
  if (m instanceof Uint8Array) return [...m]
  if (Array.isArray(m)) return m.map(plain)
  if (m !== null && typeof m === 'object') return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, plain(v)]))
  return m
}

test('frame codec: bytes that are not a message are refused', (t) => {
  t.throws(() => decodeMessage(Buffer.from([99])), /unknown tag 99/, 'an unknown tag')
  t.throws(() => decodeMessage(Buffer.concat([encodeMessage(1, 0), Buffer.from([0])])), /after the message/, 'trailing bytes')
  t.throws(() => decodeMessage(encodeMessage('a long string', 0).subarray(0, 6)), RangeError, 'a truncated message')
  t.end()
})

test('frame reader: frames split anywhere are reassembled in order; an oversized length is refused', (t) => {
  const rnd = new Random(seed)
  const messages = Array.from({ length: 50 }, (_, i) => [{ id: i, result: Buffer.alloc(rnd.int(3000), i) }])
  const stream = Buffer.concat(messages.map(encodeFrame))
  const reader = new FrameReader()
  const out: unknown[] = []
  for (let at = 0; at < stream.length;) {
    const n = 1 + rnd.int(700)
    out.push(...reader.push(stream.subarray(at, at + n)))
    at += n
  }
  t.is(out.length, messages.length, 'every message')
  t.ok(out.every((m, i) => (m as Array<{ id: number }>)[0].id === i), 'in order')
  t.ok(out.every((m, i) => Buffer.compare((m as Array<{ result: Buffer }>)[0].result, messages[i][0].result) === 0), 'intact')
  // Each chunk in the same memory, overwritten by the next (a socket's onread buffer): a partial frame is kept as a copy.
  const reused = new FrameReader(true)
  const scratch = Buffer.alloc(700)
  const again: unknown[] = []
  for (let at = 0; at < stream.length;) {
    const n = Math.min(1 + rnd.int(700), stream.length - at)
    stream.copy(scratch, 0, at, at + n)
    again.push(...reused.push(scratch.subarray(0, n)))
    scratch.fill(0xee)
    at += n
  }
  t.is(again.length, messages.length, 'reused memory: every message')
  t.ok(again.every((m, i) => Buffer.compare((m as Array<{ result: Buffer }>)[0].result, messages[i][0].result) === 0), 'reused memory: intact')
  const bad = Buffer.alloc(4)
  bad.writeUInt32LE(MAX_FRAME_BYTES + 1)
  t.throws(() => new FrameReader().push(bad), /larger than a frame may be/, 'a length over the bound')
  t.end()
})

test('socket channel: a 5 MB message and 2,000 small ones cross a Unix socket in order; close ends the other side', async (t) => {
  const address = path.join(tempDir(), 's.sock')
  const received: unknown[] = []
  let serverClosed: () => void = () => {}
  const closed = new Promise<void>((resolve) => { serverClosed = resolve })
  const server = net.createServer((socket) => {
    const channel = socketChannel(socket)
    channel.receive((m) => received.push(m), () => serverClosed())
  })
  await new Promise<void>((resolve) => server.listen(address, resolve))
  const socket = net.createConnection(address)
  await new Promise((resolve) => socket.once('connect', resolve))
  const client = socketChannel(socket)
  const big = Buffer.alloc(5 * 1024 * 1024, 3)
  client.send([{ id: 0, result: big }])
  for (let i = 1; i <= 2000; i++) client.send([{ id: i, op: 'get', key: Buffer.from(String(i)) }])
  for (let waited = 0; received.length < 2001 && waited < 20_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10))
  t.is(received.length, 2001, 'every message arrived')
  t.ok(received.every((m, i) => (m as Array<{ id: number }>)[0].id === i), 'in order')
  t.is(Buffer.compare((received[0] as Array<{ result: Buffer }>)[0].result, big), 0, 'the large one intact')
  client.close()
  await closed
  t.pass('the server\'s side saw the channel end')
  server.close()
})

test('socket channel over a socket read through onread (ReadFeed): a 5 MB message and 2,000 small ones arrive in order, intact', async (t) => {
  const address = path.join(tempDir(), 'f.sock')
  const big = Buffer.alloc(5 * 1024 * 1024)
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i)
  const server = net.createServer((socket) => {
    const channel = socketChannel(socket)
    channel.send([{ id: 0, result: big }])
    for (let i = 1; i <= 2000; i++) channel.send([{ id: i, result: Buffer.from(String(i)) }])
  })
  await new Promise<void>((resolve) => server.listen(address, resolve))
  const feed = new ReadFeed()
  const socket = await connectToOwner(address, 5000, feed)
  const received: unknown[] = []
  const client = socketChannel(socket, feed)
  client.receive((m) => received.push(m))
  for (let waited = 0; received.length < 2001 && waited < 20_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10))
  t.is(received.length, 2001, 'every message arrived')
  t.ok(received.every((m, i) => (m as Array<{ id: number }>)[0].id === i), 'in order')
  t.is(Buffer.compare((received[0] as Array<{ result: Buffer }>)[0].result, big), 0, 'the large one intact')
  t.ok(received.slice(1).every((m, i) => String((m as Array<{ result: Buffer }>)[0].result) === String(i + 1)), 'the small ones intact')
  client.close()
  server.close()
})
