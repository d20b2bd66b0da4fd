// multiProcess opens across real processes (test/fixtures/mp-peer.ts children
// and this process): two processes reading and writing; a client that
// vanishes releases what it held on the owner; failover when the owner is
// SIGKILLed, with the contract of README "Many processes" (acknowledged
// writes kept, writes in flight LEVEL_OUTCOME_UNKNOWN or committed, plain
// reads retried, handles LEVEL_OWNER_CHANGED, reads never older than seen);
// a graceful close hands over; a hung owner (SIGSTOP) fails operations with
// LEVEL_OWNER_UNREACHABLE in bounded time, and they work again once it runs.
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { spawnSync } from 'node:child_process'
import { LsmLevel } from '../index'
import * as net from 'node:net'
import { ownerSocketPath, OWNER_SOCKET } from '../hosts/node/owner-socket'
import { encodeFrame, FrameReader, socketChannel } from '../hosts/node/socket-channel'
import { PROTOCOL_VERSION } from '../adapters/remote/protocol'
import { errorToData } from '../lib/error-codec'
import { levelError } from '../lib/errors'
import { tempDir } from './util/temp'
import { Peer } from './util/mp-peer'

function delay (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

async function codeOf (p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
    return undefined
  } catch (err) {
    return (err as { code?: string }).code ?? String(err)
  }
}

test('multiProcess: the second process is a client; both read and write; the socket sits beside the database', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  t.is(owner.role, 'owner', 'the first opener owns the database')
  t.is(ownerSocketPath(dir), path.join(fs.realpathSync(dir), OWNER_SOCKET), 'a short path: the socket is beside the database')
  t.ok(fs.existsSync(path.join(dir, OWNER_SOCKET)), 'the owner listens there')
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'client', 'this process is a client')
  await owner.request('put', { key: 'a', value: 'from owner' })
  await db.put('b', 'from client')
  t.is(await db.get('a'), 'from owner', 'the client reads the owner\'s write')
  t.is(await owner.request('get', { key: 'b' }), 'from client', 'the owner reads the client\'s write')
  t.same(await db.iterator().all(), [['a', 'from owner'], ['b', 'from client']], 'iterators read the files here, caught up with the owner')
  t.ok((db.supports as { getSync?: boolean }).getSync, 'db.supports.getSync')
  t.is(db.getSync('a'), 'from owner', 'getSync() on a client reads locally')
  await owner.request('put', { key: 'a', value: 'again' })
  t.is(db.getSync('a'), 'again', 'and catches up first')
  t.throws(() => db.stats(), /fetchStats/, 'stats() on a client names fetchStats()')
  t.ok((await db.fetchStats()).levels.length > 0, 'fetchStats() asks the owner')
  t.throws(() => db.sequence, /currentSequence/, 'sequence on a client names currentSequence()')
  t.is(await db.currentSequence(), 3, 'currentSequence() asks the owner')
  await db.close()
  await owner.request('close')
  t.notOk(fs.existsSync(path.join(dir, OWNER_SOCKET)), 'the owner removed its socket on close')
  await owner.kill()
})

test('multiProcess: a database path too long for a socket address: the socket goes to the temp directory', (t) => {
  const deep = path.join(tempDir(), 'x'.repeat(120))
  fs.mkdirSync(deep)
  const address = ownerSocketPath(deep)
  t.ok(address.startsWith(os.tmpdir()), address)
  t.ok(Buffer.byteLength(address) <= 107, 'fits sun_path')
  t.is(ownerSocketPath(deep + '/'), address, 'the same for another spelling of the directory')
  t.end()
})

test('multiProcess: a client that vanishes releases its iterators, snapshots and session on the owner', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'owner', 'this process owns the database')
  await db.batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'b', value: '2' }])
  const client = await Peer.open(dir)
  t.is(client.role, 'client')
  await client.request('hold')
  const engine = db.engine as any
  const server = (db as any)[Object.getOwnPropertySymbols(db).find((s) => s.description === 'backend')!].server
  t.is(server.sessionCount, 1, 'one session')
  t.is(engine.points.size, 0, 'the client\'s snapshot is its own (it reads the files itself): none on the owner')
  await client.kill()
  for (let i = 0; i < 100 && (server.sessionCount > 0 || engine.points.size > 0); i++) await delay(10)
  t.is(server.sessionCount, 0, 'the session ended with its socket')
  t.is(engine.points.size, 0, 'its snapshot was released')
  await db.close()
})

test('multiProcess: failover after SIGKILL of the owner, with the contract', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'client')
  await db.batch(Array.from({ length: 100 }, (_, i) => ({ type: 'put' as const, key: 'k' + String(i).padStart(3, '0'), value: 'v' + i })))
  await owner.request('put', { key: 'seen', value: 'by the client' })
  t.is(await db.get('seen'), 'by the client', 'the client saw the owner\'s write')
  const it = db.iterator()
  t.ok(await it.next(), 'an iterator opened before the failover')
  const snapshot = db.snapshot()
  const feed = db.changes()
  // Pending at the kill (it fails then), or resolved by a write before it.
  const feedFirst = codeOf(feed.next())

  // Writes and reads in flight when the owner dies.
  const writes: Array<{ key: string, outcome: Promise<string | undefined> }> = []
  const reads: Array<Promise<string | undefined>> = []
  let writing = true
  let n = 0
  const writer = (async () => {
    while (writing) {
      const batch = Array.from({ length: 16 }, () => {
        const key = 'w' + String(n++).padStart(6, '0')
        const outcome = codeOf(db.put(key, 'v' + key))
        writes.push({ key, outcome })
        reads.push(codeOf(db.get('k050')))
        return outcome
      })
      await Promise.all(batch)
    }
  })()
  await delay(50)
  await owner.kill('SIGKILL')
  const t0 = Date.now()
  await delay(30)
  writing = false
  await writer

  const codes = await Promise.all(writes.map((w) => w.outcome))
  const unknown = codes.filter((c) => c === 'LEVEL_OUTCOME_UNKNOWN').length
  const other = codes.filter((c) => c !== undefined && c !== 'LEVEL_OUTCOME_UNKNOWN')
  t.comment(`${writes.length} writes around the kill: ${codes.filter((c) => c === undefined).length} acknowledged, ${unknown} LEVEL_OUTCOME_UNKNOWN`)
  t.same(other, [], 'a write fails with LEVEL_OUTCOME_UNKNOWN or not at all')
  t.same((await Promise.all(reads)).filter((c) => c !== undefined), [], 'plain reads in flight did not fail (served from the files here, whoever owns the database)')
  t.is(await db.get('k000'), 'v0', 'the first operation after the failover works')
  t.comment(`failover: ${Date.now() - t0} ms from the kill to a served read`)
  t.is(db.processRole, 'owner', 'the only client took over')

  const acked = writes.filter((_, i) => codes[i] === undefined).map((w) => w.key)
  const got = await db.getMany(acked)
  t.ok(got.every((v, i) => v === 'v' + acked[i]), `all ${acked.length} acknowledged writes are there`)
  t.is(await db.get('seen'), 'by the client', 'a read never sees a state older than one seen (the dead owner\'s own write)')
  t.same(await it.next(), ['k001', 'v1'], 'an iterator from before reads on (its own files, not the owner\'s)')
  t.is(await db.get('k000', { snapshot }), 'v0', 'a snapshot from before reads on')
  t.is(await db.get('seen', { snapshot }), 'by the client', 'at its point in time')
  t.is(await db.get('w000000', { snapshot }), undefined, 'which predates the writes after it')
  const feedCode = (await feedFirst) ?? await codeOf(feed.next())
  t.is(feedCode, 'LEVEL_OWNER_CHANGED', 'a change feed from before: LEVEL_OWNER_CHANGED')
  await it.close()
  await snapshot.close()
  await db.close()
})

test('multiProcess: a client that takes over continues the logs its reads tailed, reading no record twice, and keeps every write', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  // 20 log records of 100 puts each, and one more once the client has opened (its reads have not tailed it).
  await owner.request('fill', { count: 2000, valueBytes: 100 })
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'client')
  t.is(await db.get('f00000000'), 'x'.repeat(100), 'the client reads the log it tailed')
  await owner.request('put', { key: 'late', value: 'after the client opened' })
  const snapshot = db.snapshot()
  const it = db.iterator({ gte: 'f00001990', lt: 'g' })
  t.same(await it.next(), ['f00001990', 'x'.repeat(100)], 'an iterator from before the kill')
  await owner.kill('SIGKILL')
  for (;;) {
    // A key within the iterator's range, in the memtable the iterator reads.
    const code = await codeOf(db.put('f00001995a', 'the takeover'))
    if (code === undefined) break
    t.is(code, 'LEVEL_OUTCOME_UNKNOWN', 'a write sent before the client saw the kill: outcome unknown')
  }
  t.is(db.processRole, 'owner', 'the client took over')
  const { recordsReplayed, recordsAdopted } = db.stats().recovery
  t.same({ recordsReplayed, recordsAdopted }, { recordsReplayed: 0, recordsAdopted: 21 }, 'the takeover read no log record: it continued the 21 its reads had replayed, the last one read at the takeover')
  const keys = Array.from({ length: 2000 }, (_, i) => 'f' + String(i).padStart(8, '0'))
  t.ok((await db.getMany(keys)).every((v) => v === 'x'.repeat(100)), 'all 2,000 writes of the dead owner are there')
  t.is(await db.get('late'), 'after the client opened', 'and the one the client had not tailed before the kill')
  t.is(await db.get('f00001995a', { snapshot }), undefined, 'a snapshot from before the takeover does not see the new owner\'s write to the memtable it shares')
  t.is(await db.get('late', { snapshot }), 'after the client opened', 'it was taken after the owner\'s last write')
  const rest = await it.all()
  t.is(rest.length, 9, 'the iterator from before reads on: the other 9 keys of its range')
  t.ok(rest.every(([k, v]) => k.startsWith('f') && v === 'x'.repeat(100)), 'none of them the new owner\'s')
  await snapshot.close()
  await db.close()
  const reopened = new LsmLevel<string, string>(dir)
  await reopened.open()
  t.is(await reopened.get('f00001995a'), 'the takeover', 'reopened: the new owner\'s write is durable')
  t.ok((await reopened.getMany(keys)).every((v) => v === 'x'.repeat(100)), 'and the dead owner\'s 2,000')
  t.is(await reopened.get('late'), 'after the client opened', 'and its last one')
  await reopened.close()
})

test('multiProcess: two clients, the owner SIGKILLed: one takes over, the other reconnects to it', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const other = await Peer.open(dir)
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  try {
    await db.put('x', '1')
    await owner.kill('SIGKILL')
    // A write sent before its process saw the dead owner's connection close
    // went to the dead owner: LEVEL_OUTCOME_UNKNOWN (README "Many processes").
    // An app that gets it writes again; so does this test, once, in each process.
    const firstWrite = async (write: () => Promise<unknown>, who: string): Promise<void> => {
      for (let tries = 0; tries < 2; tries++) {
        const code = await codeOf(write())
        if (code === undefined) return
        t.is(code, 'LEVEL_OUTCOME_UNKNOWN', `${who}: the first write after the kill succeeds or fails with LEVEL_OUTCOME_UNKNOWN`)
        t.is(tries, 0, `${who}: a write issued after that failure goes to the next owner`)
      }
    }
    await firstWrite(async () => await db.put('y', '2'), 'this process')
    t.is(await other.request('get', { key: 'y' }), '2', 'the other client reads the new owner\'s write')
    await firstWrite(async () => await other.request('put', { key: 'z', value: '3' }), 'the other client')
    t.is(await db.get('z'), '3', 'and writes through the new owner')
    const roles = [db.processRole, await other.request('role')].sort()
    t.same(roles, ['client', 'owner'], 'one owner, one client')
    await other.request('close')
  } finally {
    await other.kill()
    await db.close()
  }
})

test('multiProcess: a graceful close of the owner hands over', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  await db.put('a', '1')
  await owner.request('close')
  t.is(await db.get('a'), '1', 'reads go on')
  await db.put('b', '2')
  t.is(db.processRole, 'owner', 'the client took over (a write waits for the next owner)')
  t.is(await db.get('b'), '2', 'and reads on its engine')
  await owner.kill()
  await db.close()
})

test('multiProcess: a hung owner (SIGSTOP): writes fail with LEVEL_OWNER_UNREACHABLE in bounded time, reads go on, then service again', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const db = new LsmLevel<string, string>(dir, { multiProcess: true, ownerTimeoutMs: 400 })
  await db.open()
  await db.put('a', '1')
  owner.signal('SIGSTOP')
  try {
    const t0 = Date.now()
    const read = db.get('a')
    const write = db.put('b', '2')
    const readErr = await codeOf(read)
    const writeErr = await codeOf(write)
    const ms = Date.now() - t0
    t.is(readErr, undefined, 'a read is served from the files here: it needs no owner')
    t.is(await db.get('a'), '1', 'with the acknowledged write')
    t.is(writeErr, 'LEVEL_OUTCOME_UNKNOWN', 'a write in flight fails with LEVEL_OUTCOME_UNKNOWN (it may commit when the owner resumes)')
    t.ok(ms < 5000, `within a bound (${ms} ms, ownerTimeoutMs 400; the margin is for a loaded machine)`)
    const later = await db.put('c', '3').catch((err: Error) => err)
    t.is((later as { code?: string }).code, 'LEVEL_OWNER_UNREACHABLE', 'a later write fails with LEVEL_OWNER_UNREACHABLE, while the owner is hung')
    t.ok(String((later as Error).message).includes(dir), 'the message names the database')
  } finally {
    owner.signal('SIGCONT')
  }
  await db.put('d', '4')
  t.is(await db.get('d'), '4', 'once the owner runs again, writes work')
  t.is(db.processRole, 'client')
  await db.close()
  await owner.kill()
})

test('multiProcess: options', (t) => {
  t.throws(() => new LsmLevel(tempDir(), { multiProcess: true, readOnly: true }), /readOnly or multiProcess/, 'not with readOnly')
  t.throws(() => new LsmLevel(tempDir(), { multiProcess: 'yes' as unknown as boolean }), /multiProcess/, 'a boolean')
  t.throws(() => new LsmLevel(tempDir(), { multiProcess: true, ownerTimeoutMs: 0 }), /ownerTimeoutMs/, 'a positive timeout')
  t.end()
})

test('multiProcess: errorIfExists while another process has the database open', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const db = new LsmLevel(dir, { multiProcess: true })
  const err = await db.open({ errorIfExists: true }).catch((e: Error) => e) as { code?: string, cause?: { message: string } }
  t.is(err?.code, 'LEVEL_DATABASE_NOT_OPEN')
  t.ok(/errorIfExists/.test(err?.cause?.message ?? ''), 'the cause says errorIfExists')
  await owner.kill()
})

test('multiProcess: an opener of another protocol version is refused at once with LEVEL_NOT_SUPPORTED, either way round', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  const address = ownerSocketPath(dir)
  // A client of the previous version meets this owner: its attach is refused in the tagged form every version reads.
  const socket = net.createConnection(address)
  await new Promise((resolve) => socket.once('connect', resolve))
  const reply = new Promise<Buffer>((resolve) => socket.once('data', resolve))
  socket.write(encodeFrame([{ id: 1, op: 'attach', version: PROTOCOL_VERSION - 1, location: dir, options: {} }]))
  const frame = await reply
  t.is(frame[4], 8, 'the refusal is a tagged message (an older client reads it)')
  const [refusal] = new FrameReader().push(frame) as Array<Array<{ id: number, error?: { code: string, message: string } }>>
  t.is(refusal[0].error?.code, 'LEVEL_NOT_SUPPORTED', refusal[0].error?.message)
  socket.destroy()
  // This client meets an owner of the previous version (its socket here, the LOCK held by the peer).
  fs.unlinkSync(address)
  const older = net.createServer((s) => {
    const channel = socketChannel<unknown[], Array<{ id: number }>>(s)
    channel.receive((requests) => channel.send(requests.map((r) => ({ id: r.id, error: errorToData(levelError('LEVEL_NOT_SUPPORTED', `The client speaks version ${PROTOCOL_VERSION} of the remote protocol; this server speaks version ${PROTOCOL_VERSION - 1}`)) }))))
  })
  await new Promise<void>((resolve) => older.listen(address, resolve))
  const db = new LsmLevel(dir, { multiProcess: true, ownerTimeoutMs: 10_000 })
  const t0 = Date.now()
  const err = await db.open().catch((e: Error) => e) as { code?: string, cause?: { code?: string, message: string } }
  t.is(err?.code, 'LEVEL_DATABASE_NOT_OPEN')
  t.is(err?.cause?.code, 'LEVEL_NOT_SUPPORTED', err?.cause?.message)
  t.ok(Date.now() - t0 < 5000, `at once, not after ownerTimeoutMs (${Date.now() - t0} ms)`)
  older.close()
  await owner.kill()
})

test('multiProcess: the CLI works against a database another process holds open, through its owner', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  await owner.request('put', { key: 'a', value: 'from owner' })
  const bin = path.join(__dirname, '..', '..', 'bin', 'lsm-level.js')
  const cli = (...args: string[]): { status: number | null, stdout: string, stderr: string } => {
    const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' })
    return { status: r.status, stdout: r.stdout, stderr: r.stderr }
  }
  const put = cli('put', dir, 'b', 'from the CLI')
  t.is(put.status, 0, `put: exit 0 ${put.stderr}`)
  t.is(await owner.request('get', { key: 'b' }), 'from the CLI', 'the owner has the CLI\'s write')
  const get = cli('get', dir, 'a')
  t.is(get.stdout, 'from owner\n', 'get reads through the owner')
  const scan = cli('scan', dir)
  t.is(scan.stdout, 'a\tfrom owner\nb\tfrom the CLI\n', 'scan')
  const stats = cli('stats', dir, '--json')
  t.is(stats.status, 0, 'stats: exit 0')
  t.ok(Array.isArray(JSON.parse(stats.stdout).levels), 'stats from the owner')
  t.is(await owner.request('role'), 'owner', 'the owner stayed the owner')
  await owner.kill()
})

test('multiProcess: a client\'s extensions go to the owner: changes(), flush, compactRange, approximateSize, checkpoint, fetchProperty', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir, { writeBufferSize: 64 * 1024 })
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  // From a sequence number this client knows: without it, the feed starts at the owner's when its request arrives.
  const feed = db.changes({ since: await db.currentSequence() })
  const first = feed.next()
  await owner.request('put', { key: 'live', value: 'from the owner' })
  const batch = (await first).value as { seq: number, ops: Array<{ type: string, key: Buffer, value?: Buffer }> }
  t.same(batch.ops.map((op) => [op.type, op.key.toString(), op.value?.toString()]), [['put', 'live', 'from the owner']], 'the client\'s change feed follows the owner\'s writes, keys and values as Buffers')
  t.ok(Buffer.isBuffer(batch.ops[0].key), 'Buffers, as on the owner')
  await feed.return(undefined)
  await db.batch(Array.from({ length: 2000 }, (_, i) => ({ type: 'put' as const, key: 'k' + String(i).padStart(5, '0'), value: 'x'.repeat(100) })))
  await db.flush()
  await db.compactRange()
  t.ok(await db.approximateSize('k', 'l') > 0, 'approximateSize() from the owner\'s tables')
  t.match(await db.fetchProperty('lsm.stats'), /level/i, 'fetchProperty()')
  const target = path.join(tempDir(), 'copy')
  const made = await db.checkpoint(target)
  t.ok(made.sequence >= 2001, 'checkpoint() written by the owner')
  const copy = new LsmLevel<string, string>(target)
  await copy.open()
  t.is(await copy.get('k01999'), 'x'.repeat(100), 'the checkpoint opens and holds the data')
  await copy.close()
  t.is(await codeOf(db.refresh()), 'LEVEL_NOT_SUPPORTED', 'refresh() is for readOnly opens')
  await db.close()
  await owner.kill()
})

test('multiProcess: a killed owner\'s socket file is stale: the next owner replaces it, destroy() removes it', async (t) => {
  const dir = tempDir()
  const owner = await Peer.open(dir)
  await owner.request('put', { key: 'a', value: '1' })
  await owner.kill('SIGKILL')
  t.ok(fs.existsSync(path.join(dir, OWNER_SOCKET)), 'the dead owner left its socket file')
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'owner', 'the next opener owns the database (the LOCK taken over)')
  t.is(await db.get('a'), '1', 'with the dead owner\'s write')
  const client = new LsmLevel<string, string>(dir, { multiProcess: true })
  await client.open()
  t.is(await client.get('a'), '1', 'and serves on the same address')
  await client.close()
  await db.close()
  const again = await Peer.open(dir)
  await again.kill('SIGKILL')
  await LsmLevel.destroy(dir)
  t.notOk(fs.existsSync(dir), 'destroy() removed the stale socket file and the directory')
})
