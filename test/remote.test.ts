// The remote layer in Node: LsmLevel served by one SharedDatabaseHost to two
// RemoteLevel clients, each on a MessageChannel of its own (test/util/
// remote-server.ts). Both read and write one database; handles made under the
// same client-local numbers stay apart; one client's close leaves the other's
// database open; a client whose port closes leaves nothing held on the server;
// a server's 'closed' push closes the client; a protocol version the server
// does not speak, and options that differ from the open database's, are
// refused clearly; BrowserLevel's open fails when its worker never starts
// (a fake worker); a session answers a lone request without waiting for a
// turn of the event loop. test/compliance-remote.test.ts runs the abstract-level
// suite through RemoteLevel; test/browser.test.ts, through BrowserLevel.
import test from 'tape'
import * as path from 'node:path'
import { once } from 'node:events'
import { RemoteLevel } from '../adapters/remote-level'
import { BrowserLevel } from '../adapters/browser-level'
import { PROTOCOL_VERSION, type Request, type ServerMessage } from '../adapters/remote/protocol'
import type { DatabaseHost, ServedDatabase } from '../adapters/remote/host'
import { serve } from '../adapters/remote/server'
import type { MessagePortLike } from '../adapters/remote/channel'
import { WorkerLines } from '../adapters/remote/worker-lines'
import { TestServer } from './util/remote-server'
import { tempDir } from './util/temp'

function client (server: TestServer, location: string, options: Record<string, unknown> = {}): RemoteLevel<string, string> {
  return new RemoteLevel<string, string>(location, { ...options, connect: () => server.connect() })
}

function codes (err: unknown): string {
  const e = err as { code?: string, cause?: { code?: string } }
  return e.cause?.code === undefined ? String(e.code) : `${String(e.code)} / ${e.cause.code}`
}

/** Waits for the server's sessions to see what the clients did (a channel's close arrives as an event). */
async function settled (): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

test('remote: two clients read and write one database', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const a = client(server, location)
  const b = client(server, location)
  await a.open()
  await b.open()
  t.is(server.opens, 1, 'the database opened once, for the first attach')
  t.is(server.host.sessionCount, 2, 'two sessions attached')
  await a.put('from-a', '1')
  await b.batch([{ type: 'put', key: 'from-b', value: '2' }, { type: 'put', key: 'gone', value: 'x' }, { type: 'del', key: 'gone' }])
  t.is(await b.get('from-a'), '1', "b reads a's write")
  t.same(await a.getMany(['from-b', 'gone']), ['2', undefined], "a reads b's batch")
  t.same(await a.iterator().all(), [['from-a', '1'], ['from-b', '2']], 'a iterates both writes')
  await b.del('from-a')
  t.is(await a.has('from-a'), false, "a sees b's delete")
  await a.close()
  await b.close()
  t.is(server.db?.status, 'closed', 'the database closed when the last client detached')
})

test('remote: handles made under the same client-local numbers do not collide', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const a = client(server, location)
  const b = client(server, location)
  await a.open()
  await b.open()
  // Same history on both connections: attach, then the snapshot (request 2 on each).
  await a.put('k', 'old')
  const sa = a.snapshot()
  await b.put('k', 'new')
  const sb = b.snapshot()
  const handles = [(sa as unknown as { handle: number }).handle, (sb as unknown as { handle: number }).handle]
  t.is(handles[0], handles[1], `both snapshots have handle ${handles[0]} in their own session`)
  await a.put('k', 'newest')
  t.is(await a.get('k', { snapshot: sa }), 'old', "a's snapshot reads a's view")
  t.is(await b.get('k', { snapshot: sb }), 'new', "b's snapshot reads b's view")
  t.is(server.openSnapshots, 2, 'two snapshots open on the database')

  await a.batch([{ type: 'put', key: 'a1', value: '1' }, { type: 'put', key: 'a2', value: '2' }, { type: 'put', key: 'b1', value: '3' }])
  const ia = a.iterator({ gte: 'a', lt: 'b' })
  const ib = b.iterator({ gte: 'b', lt: 'c' })
  t.same(await ia.next(), ['a1', '1'], "a's iterator reads its range")
  t.same(await ib.next(), ['b1', '3'], "b's iterator reads its range")
  t.same(await ia.next(), ['a2', '2'], "a's iterator goes on in its range")
  t.is(await ib.next(), undefined, "b's iterator ends in its range")
  await ia.close()
  await ib.close()
  await sa.close()
  t.is(server.openSnapshots, 1, "closing a's snapshot leaves b's")
  t.is(await b.get('k', { snapshot: sb }), 'new', "b's snapshot still reads")
  await sb.close()
  await a.close()
  await b.close()
})

test("remote: one client's close does not close the other's database", async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const a = client(server, location)
  const b = client(server, location)
  await a.open()
  await b.open()
  const kept = b.snapshot()
  await a.close()
  t.is(server.host.sessionCount, 1, 'one session left')
  t.is(server.db?.status, 'open', 'the database is still open')
  await b.put('after', 'a closed')
  t.is(await b.get('after'), 'a closed', 'b writes and reads')
  t.is(server.openSnapshots, 1, "b's snapshot is held")
  await a.open()
  t.is(server.opens, 1, 'a attaches again to the same open database')
  t.is(await a.get('after'), 'a closed', "a reads b's write")
  await kept.close()
  await b.close()
  t.is(server.db?.status, 'open', "a keeps it open after b's close")
  await a.close()
  t.is(server.db?.status, 'closed', 'closed with the last client')
})

test('remote: a client whose port closes releases its snapshots and iterators', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const stays = client(server, location)
  await stays.open()
  const ports: { client?: MessagePortLike, server?: MessagePortLike } = {}
  const goes = new RemoteLevel<string, string>(location, { connect: () => server.connect(ports) })
  await goes.open()
  await goes.batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'b', value: '2' }])
  goes.snapshot()
  goes.snapshot()
  const it = goes.iterator()
  t.same(await it.next(), ['a', '1'], 'the vanishing client reads through its iterator')
  const feed = goes.changes()
  const waiting = feed.next().catch((err: { code?: string }) => err)
  await goes.currentSequence()
  const session = server.sessions[1]
  t.same(session.handles, { iterators: 1, snapshots: 2, feeds: 1 }, 'its session holds 2 snapshots, an iterator and a change feed')
  t.is(server.openSnapshots, 2, 'the database has 2 snapshots open')
  t.is(server.openIterators, 1, 'and 1 iterator')

  // The client vanishes: its end of the channel closes, with no detach.
  const closed = once(ports.server as unknown as NodeJS.EventEmitter, 'close')
  ports.client!.close()
  await closed
  await settled()
  t.is(session.attached, false, 'the session detached')
  t.same(session.handles, { iterators: 0, snapshots: 0, feeds: 0 }, 'its handles are gone')
  t.is(((await waiting) as { code?: string }).code, 'LEVEL_DATABASE_NOT_OPEN', 'its waiting change feed failed')
  t.is(server.openSnapshots, 0, 'the database has no snapshot open')
  t.is(server.openIterators, 0, 'nor an iterator')
  t.is(server.host.sessionCount, 1, 'one session left')
  t.is(server.db?.status, 'open', 'the other client keeps the database open')
  t.is(await stays.get('b'), '2', 'and reads')
  await stays.close()
  t.is(server.db?.status, 'closed', 'closed with the last client')
  await goes.close().catch(() => {})
})

test('remote: a client follows the writes of other clients through a change feed', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const writer = client(server, location)
  const reader = client(server, location, { valueEncoding: 'utf8' })
  await writer.open()
  await reader.open()
  await writer.put('before', '0')
  const since = await reader.currentSequence()
  t.is(since, 1, 'the current sequence number comes from the server')
  const seen: string[] = []
  const following = (async () => {
    for await (const { seq, ops } of reader.changes()) {
      for (const op of ops) seen.push(`${seq} ${op.type} ${new TextDecoder().decode(op.key)}${op.value === undefined ? '' : '=' + new TextDecoder().decode(op.value)}`)
      if (seq >= 4) break
    }
  })()
  await writer.put('a', '1')
  await writer.batch([{ type: 'put', key: 'b', value: '2' }, { type: 'del', key: 'a' }])
  await following
  t.same(seen, ['2 put a=1', '4 put b=2', '4 del a'], "the live batches, in commit order, each with its last operation's sequence number")
  await reader.currentSequence()
  t.same(server.sessions[1].handles.feeds, 0, 'the feed closed when the loop stopped')
  const history: number[] = []
  for await (const { seq } of reader.changes({ since: 0 })) {
    history.push(seq)
    if (seq >= 4) break
  }
  t.same(history, [1, 2, 4], 'a feed since 0 replays the log first')
  try {
    for await (const batch of reader.changes({ since: 99 })) t.fail(`yielded ${batch.seq}`)
  } catch (err) {
    t.is(codes(err), 'LEVEL_INVALID_OPTION', `a since ahead of the database: ${(err as Error).message}`)
  }
  await writer.close()
  await reader.close()
})

test('remote: a protocol version the server does not speak is refused clearly', async (t) => {
  const server = new TestServer()
  const connection = server.connect()
  try {
    await connection.request({ op: 'attach', version: PROTOCOL_VERSION + 1, location: path.join(tempDir('lsm-remote-'), 'db'), options: {} })
    t.fail('attached')
  } catch (err) {
    t.is(codes(err), 'LEVEL_NOT_SUPPORTED', 'LEVEL_NOT_SUPPORTED')
    t.match((err as Error).message, new RegExp(`version ${PROTOCOL_VERSION + 1} .*version ${PROTOCOL_VERSION}`), (err as Error).message)
  }
  t.is(server.opens, 0, 'no database opened')
  t.is(server.host.sessionCount, 0, 'no session attached')
  connection.close()
})

test('remote: options or a location other than the open database\'s are refused; errorIfExists once it is open', async (t) => {
  const server = new TestServer()
  const dir = tempDir('lsm-remote-')
  const location = path.join(dir, 'db')
  const a = client(server, location, { writeBufferSize: 64 * 1024 })
  await a.open()
  for (const [what, db, expected] of [
    ['other engine options', client(server, location, { writeBufferSize: 128 * 1024 }), /other options/],
    ['another location', client(server, path.join(dir, 'other'), { writeBufferSize: 64 * 1024 }), /not '/],
    ['errorIfExists', client(server, location, { writeBufferSize: 64 * 1024, errorIfExists: true }), /exists/]
  ] as const) {
    try {
      await db.open()
      t.fail(`${what}: opened`)
    } catch (err) {
      t.is(codes(err), 'LEVEL_DATABASE_NOT_OPEN / LEVEL_INVALID_OPTION', `${what}: ${codes(err)}`)
      t.match((err as { cause: Error }).cause.message, expected, (err as { cause: Error }).cause.message)
    }
  }
  t.is(server.host.sessionCount, 1, 'only the first client attached')
  await a.close()
})

test("remote: the server's 'closed' push closes the client; operations then fail", async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const a = client(server, location)
  const b = client(server, location)
  await a.open()
  await b.open()
  const closedA = once(a, 'closed')
  const closedB = once(b, 'closed')
  await server.host.close(new Error('the host shuts down'))
  await Promise.all([closedA, closedB])
  t.is(a.status, 'closed', 'a closed')
  t.is(b.status, 'closed', 'b closed')
  t.is(server.db?.status, 'closed', 'the database closed')
  try {
    await a.get('k')
    t.fail('read after close')
  } catch (err) {
    t.is(codes(err), 'LEVEL_DATABASE_NOT_OPEN', `a read fails: ${codes(err)}`)
  }
  await a.open()
  t.is(server.opens, 2, 'a reopens: the host opens the database again')
  await a.put('k', 'v')
  t.is(await a.get('k'), 'v', 'and it reads and writes')
  await a.close()
})

test('remote: errors come back with their code, message and cause', async (t) => {
  const server = new TestServer()
  const connection = server.connect()
  await connection.request({ op: 'attach', version: PROTOCOL_VERSION, location: path.join(tempDir('lsm-remote-'), 'db'), options: {} })
  try {
    await connection.request({ op: 'get', key: new Uint8Array([1]), snapshot: 99 })
    t.fail('read at an unknown snapshot')
  } catch (err) {
    t.is(codes(err), 'LEVEL_INVALID_OPTION', codes(err))
    t.match((err as Error).message, /Unknown snapshot 99/, (err as Error).message)
  }
  try {
    await connection.request({ op: 'call', method: 'close', args: [] })
    t.fail('called close()')
  } catch (err) {
    t.is(codes(err), 'LEVEL_NOT_SUPPORTED', `close() is not callable: ${codes(err)}`)
  }
  await connection.request({ op: 'detach' })
  t.is(server.db?.status, 'closed', 'detach closed the database')
  connection.close()
})

test('remote: compactRange, approximateSize and stats take and give what LsmLevel does', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const a = client(server, location)
  await a.open()
  const ops = []
  for (let i = 0; i < 2000; i++) ops.push({ type: 'put' as const, key: 'k' + String(i).padStart(5, '0'), value: 'v'.repeat(100) })
  await a.batch(ops)
  await a.flush()
  // The keys are utf8 strings, encoded by the client as the database's own encoding would.
  const served = server.db as unknown as { approximateSize (s: string, e: string): Promise<number> }
  const local = await served.approximateSize('k00000', 'k01000')
  const remote = await a.approximateSize('k00000', 'k01000')
  t.ok(local > 0, `the served database counts ${local} bytes for half the keys`)
  t.is(remote, local, 'approximateSize through the client encodes its keys as the database does')
  const hex = (k: string): string => Buffer.from(k).toString('hex')
  const h = client(server, location, { keyEncoding: 'hex' })
  await h.open()
  t.is(await h.approximateSize(hex('k00000'), hex('k01000')), local, "a client whose keyEncoding is 'hex' gives the same size for the same keys in hex")
  await h.close()
  await a.compactRange('k00000', 'k99999')
  const stats = await a.stats()
  t.ok(stats.levels.some((l) => l.level > 0 && l.files > 0), 'compactRange with string keys moved the table below level 0 (stats().levels)')
  t.is(typeof stats.memtableBytes, 'number', 'stats() is typed and whole')
  await a.close()
})

test('BrowserLevel: an open whose worker never starts fails after workerStartTimeoutMs, the worker ended; a bad value is LEVEL_INVALID_OPTION', async (t) => {
  // A worker the browser queued and never started: it takes messages and never answers.
  let terminated = 0
  const queued = (): { postMessage: () => void, terminate: () => void, onmessage: null, onerror: null } => ({ postMessage: () => {}, terminate: () => { terminated++ }, onmessage: null, onerror: null })
  const db = new BrowserLevel('never-started', { worker: queued, relay: false, workerStartTimeoutMs: 200 })
  const t0 = Date.now()
  const err = await db.open().then(() => undefined, (e: unknown) => e as { code?: string, cause?: { cause?: { message?: string } } })
  const ms = Date.now() - t0
  t.is(err?.code, 'LEVEL_DATABASE_NOT_OPEN', 'the open fails with LEVEL_DATABASE_NOT_OPEN')
  t.ok(/did not start within 200 ms \(workerStartTimeoutMs\)/.test(err?.cause?.cause?.message ?? ''), `its cause says why: ${err?.cause?.cause?.message ?? 'none'}`)
  t.ok(ms >= 190 && ms < 5000, `after the timeout (${ms} ms)`)
  t.is(terminated, 1, 'the worker is ended')
  for (const bad of [0, -1, 'soon']) {
    t.throws(() => new BrowserLevel('x', { worker: queued, workerStartTimeoutMs: bad as number }), /Invalid option 'workerStartTimeoutMs'/, `workerStartTimeoutMs: ${JSON.stringify(bad)}`)
  }
})

test('remote session: the reply that leaves no request running goes without waiting for a turn; replies of requests running together leave in one message', async (t) => {
  const value = Uint8Array.of(7)
  // A served database whose reads settle in microtasks only (the depth of their promise chains varies).
  const db = {
    get: async (key: Uint8Array) => key[0] === 2 ? await Promise.resolve().then(async () => await Promise.resolve(value)) : value
  } as unknown as ServedDatabase
  const host: DatabaseHost = { attach: async () => db, detach: async () => {}, callable: new Set() }
  const sent: ServerMessage[][] = []
  let deliver: (requests: Request[]) => void = () => {}
  serve({ send: (batch) => { sent.push(batch) }, receive: (onMessage) => { deliver = onMessage }, close: () => {} }, host)
  const turn = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))
  deliver([{ id: 1, op: 'attach', version: PROTOCOL_VERSION, location: 'x', options: {} }])
  for (let i = 0; i < 10 && sent.length === 0; i++) await turn()
  t.is(sent.length, 1, 'attached')

  let turned = false
  setImmediate(() => { turned = true })
  deliver([{ id: 2, op: 'get', key: Uint8Array.of(1) }])
  await new Promise<void>((resolve) => queueMicrotask(resolve))
  for (let i = 0; i < 20 && sent.length === 1; i++) await Promise.resolve()
  t.is(sent.length, 2, 'a lone get is answered')
  t.is(turned, false, 'before a turn of the event loop')

  deliver([{ id: 3, op: 'get', key: Uint8Array.of(2) }, { id: 4, op: 'get', key: Uint8Array.of(1) }])
  for (let i = 0; i < 10 && sent.length === 2; i++) await turn()
  t.same(sent.slice(2).map((batch) => batch.map((m) => (m as { id: number }).id)), [[4, 3]], 'two gets of one message: both replies in one message')
})

test('remote iterators read ahead: from the second batch in a row the next one is asked for at once; a seek or a close while it is on its way waits for it', async (t) => {
  const server = new TestServer()
  const location = path.join(tempDir('lsm-remote-'), 'db')
  const ports: { server?: MessagePortLike } = {}
  const db = new RemoteLevel<string, string>(location, { connect: () => server.connect(ports) })
  await db.open()
  // Counts the nextv requests that reach the server.
  let nextvs = 0
  const port = ports.server!
  const onmessage = port.onmessage!
  port.onmessage = (event) => {
    for (const req of event.data as Request[]) if (req.op === 'nextv') nextvs++
    onmessage(event)
  }
  const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, '0')}`)
  await db.batch(keys.map((key) => ({ type: 'put', key, value: key.toUpperCase() })))
  const keysOf = (entries: Array<[string, string]>): string[] => entries.map(([k]) => k)

  const it = db.iterator()
  t.same(keysOf(await it.nextv(10)), keys.slice(0, 10), 'the first batch')
  await settled()
  t.is(nextvs, 1, 'a first batch reads nothing ahead (a seek and one batch costs one read)')
  t.same(keysOf(await it.nextv(10)), keys.slice(10, 20), 'the second batch')
  await settled()
  t.is(nextvs, 3, 'the second batch in a row asked for the third at once')
  t.same(keysOf(await it.nextv(3)), keys.slice(20, 23), 'a smaller batch is served from the one read ahead')
  t.same(keysOf(await it.nextv(3)), keys.slice(23, 26), 'and the next from what is left of it')
  t.is(nextvs, 3, 'with no request')
  t.same(keysOf(await it.nextv(10)), keys.slice(26, 30), 'what is left of it, then')
  t.same(keysOf(await it.nextv(10)), keys.slice(30, 33), 'the batch read ahead, sized by the last request (nextv may return fewer)')
  t.same(keysOf(await it.nextv(10)), keys.slice(33, 43), 'then batches of the size asked')
  // A batch is on its way now: the seek waits for it (the server's iterator is busy until then).
  it.seek('k05')
  t.same(keysOf(await it.nextv(4)), keys.slice(5, 9), 'a seek while a batch was on its way: the entries from its target')
  t.same(keysOf(await it.nextv(100)), keys.slice(9), 'then the rest')
  t.same(await it.nextv(10), [], 'then the end')
  await it.close()

  const it2 = db.iterator({ gte: 'k10' })
  await it2.nextv(5)
  await it2.nextv(5)
  await it2.close()
  await settled()
  t.is(server.openIterators, 0, 'a close while a batch was on its way closes the iterator on the server')

  const nexted: string[] = []
  for await (const [key] of db.iterator()) nexted.push(key)
  t.same(nexted, keys, 'next() reads every entry once, in order')
  t.same(keysOf(await db.iterator({ lt: 'k20', reverse: true }).all()), keys.slice(0, 20).reverse(), 'a reverse range reads whole')
  await db.close()
})

test('worker lines: the common requests and replies travel as flat arrays (no property names to clone); every message arrives as it was sent', async (t) => {
  const wire: unknown[] = []
  const ends: { worker?: WorkerLines } = {}
  const page = new WorkerLines((message) => { wire.push(message); ends.worker?.deliver(structuredClone(message)) })
  const worker = new WorkerLines((message) => { wire.push(message); page.deliver(structuredClone(message)) })
  ends.worker = worker
  const got: unknown[] = []
  const client = page.open<unknown[], unknown[]>(3)
  const server = worker.open<unknown[], unknown[]>(3)
  server.receive((m) => got.push(m))
  client.receive((m) => got.push(m))
  const key = Uint8Array.of(1, 2)
  const value = Uint8Array.of(3)
  const requests = [
    { id: 1, op: 'get', key },
    { id: 2, op: 'put', key, value, sync: true },
    { id: 3, op: 'del', key, sync: false },
    { id: 4, op: 'get', key, snapshot: 9 },
    { id: 5, op: 'nextv', iterator: 4, size: 10 },
    { id: 13, op: 'batch', ops: [{ type: 'put', key, value }, { type: 'del', key: value }], sync: true },
    { id: 14, op: 'batch', ops: [{ type: 'put', key, value: new Uint8Array(9000) }], sync: false }
  ]
  client.send(requests)
  const entries = [[key, value], [Uint8Array.of(4), undefined], [new Uint8Array(0), new Uint8Array(9000).fill(5)]]
  const replies = [
    { id: 1, result: value },
    { id: 2, result: undefined },
    { id: 3, error: { code: 'LEVEL_X', message: 'x' } },
    { push: 'closed' },
    { id: 5, result: entries.slice(0, 2) },
    { id: 8, result: [value, undefined, key] },
    { id: 9, result: entries },
    { id: 10, result: [] },
    { id: 11, result: [true, false] }
  ]
  server.send(replies)
  t.same(got, [requests, replies], 'the batches arrive as sent, in order')
  const flat = (message: unknown): boolean => Array.isArray(message) && message.every((x) => x === undefined || typeof x !== 'object' || ArrayBuffer.isView(x))
  client.send([{ id: 6, op: 'get', key }])
  client.send([{ id: 7, op: 'put', key, value, sync: false }])
  server.send([{ id: 6, result: value }])
  server.send([{ id: 7, result: undefined }])
  server.send([{ id: 12, result: entries.slice(0, 2) }])
  client.send([{ id: 15, op: 'batch', ops: [{ type: 'put', key, value }, { type: 'del', key: value }], sync: false }])
  const sent = wire.slice(-6)
  t.same(sent.map(flat), [true, true, true, true, true, true], `a get, a put, their replies, a reply of entries and a batch are flat arrays of primitives and typed arrays: ${JSON.stringify(sent)}`)
  t.ok((sent[4] as unknown[]).filter((x) => x instanceof Uint8Array).length === 1, "the entries' bytes travel in one buffer")
  client.close()
  t.is(worker.size, 0, "a line's close ends it on the other side")
})
