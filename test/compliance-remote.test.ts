// The abstract-level compliance suite through RemoteLevel in Node: every
// database of the suite is a client whose engine (LsmLevel) is served over a
// MessageChannel by a host of its own (test/util/remote-server.ts), each open
// a new channel and session. Tiny buffers, so that flushes and compactions
// run on the server inside the suite's tests.
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { RemoteLevel } from '../adapters/remote-level'
import { TestServer } from './util/remote-server'
import { TINY_OPTIONS } from './util/compliance'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-compliance-remote-'))
const servers: TestServer[] = []
const clients: ClosingCounted[] = []

/** A RemoteLevel whose _close() calls are counted. */
class ClosingCounted extends RemoteLevel {
  closes = 0

  override async _close (): Promise<void> {
    this.closes++
    await super._close()
  }
}
let n = 0

suite({
  test,
  factory (options?: Record<string, unknown>) {
    const server = new TestServer()
    servers.push(server)
    const db = new ClosingCounted(path.join(root, String(n++)), { ...TINY_OPTIONS, ...options, connect: () => server.connect() })
    clients.push(db)
    return db
  }
})

// Many of the suite's tests leave their database open, and one leaves it
// 'closed' without closing it (a failed postopen hook and a failed resource
// close lock it); those whose close ran must have left nothing on their server.
test('compliance (remote): the clients that closed left no session, snapshot or iterator behind', (t) => {
  const closed = servers.filter((_, i) => clients[i].status === 'closed' && clients[i].closes > 0)
  const held = closed.filter((s) => s.openSnapshots !== 0 || s.openIterators !== 0 || s.host.sessionCount !== 0)
  const states = new Map<string, number>()
  for (const c of clients) states.set(c.status, (states.get(c.status) ?? 0) + 1)
  t.comment(`clients by status at the end: ${[...states].map(([k, v]) => `${k} ${v}`).join(', ')}`)
  t.ok(closed.length > 100, `${closed.length} clients closed`)
  t.same(held.map((s) => [s.host.sessionCount, s.openSnapshots, s.openIterators]), [], 'no [sessions, snapshots, iterators] left on their servers')
  t.ok(servers.every((s) => s.openSnapshots === 0 || clients[servers.indexOf(s)].status === 'open'), 'snapshots are open for open clients only')
  t.end()
})

// The channels of the databases left open keep this process alive.
test('compliance (remote): the servers close their channels', async (t) => {
  for (const s of servers) s.disconnect()
  // A database closes off the event loop (its close syncs the logs and records them): wait for it, up to 10 s.
  const allClosed = (): boolean => servers.every((s) => s.db === undefined || s.db.status === 'closed')
  for (let waited = 0; !allClosed() && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
  t.is(servers.reduce((n, s) => n + s.host.sessionCount, 0), 0, 'no session left attached')
  t.ok(allClosed(), 'every database closed')
})

test.onFinish(() => {
  fs.rmSync(root, { recursive: true, force: true })
})
