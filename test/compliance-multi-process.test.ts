// The abstract-level compliance suite through a multiProcess client: every
// database of the suite is an LsmLevel whose open finds another open (its
// owner, in this process: the LOCK refuses a second open of a directory in
// one process as it does another process's, so the second open connects to
// the first's socket) and sends every operation over the socket. The owner is
// opened first, with the suite's createIfMissing and errorIfExists, so that
// those tests see what an owner would do; the client opens after it. Tiny
// buffers, so that flushes and compactions run on the owner inside the tests.
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { TINY_OPTIONS } from './util/compliance'

// The suite ships no typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const suite = require('abstract-level/test')

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-compliance-mp-'))
const clients: ThroughOwner[] = []
let n = 0

/** A multiProcess open that is always a client: its owner opens just before it. */
class ThroughOwner extends LsmLevel<any, any> {
  owner: LsmLevel | undefined
  roles: Array<string | undefined> = []

  override async _open (options: Record<string, unknown> & { createIfMissing: boolean, errorIfExists: boolean }): Promise<void> {
    const owner = new LsmLevel(this.location, { ...TINY_OPTIONS, multiProcess: true })
    try {
      await owner.open({ createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists })
    } catch (err) {
      throw (err as { cause?: unknown }).cause ?? err
    }
    this.owner = owner
    try {
      await super._open({ ...options, errorIfExists: false })
    } catch (err) {
      await owner.close()
      throw err
    }
    this.roles.push(this.processRole)
  }

  override async _close (): Promise<void> {
    try {
      await super._close()
    } finally {
      await this.owner?.close()
      this.owner = undefined
    }
  }
}

suite({
  test,
  factory (options?: Record<string, unknown>) {
    const db = new ThroughOwner(path.join(root, String(n++)), { ...TINY_OPTIONS, ...options, multiProcess: true })
    clients.push(db)
    return db
  }
})

test('compliance (multiProcess): every open of the suite was a client of its owner', (t) => {
  const roles = clients.flatMap((c) => c.roles)
  t.ok(roles.length > 100, `${roles.length} opens`)
  t.same(roles.filter((r) => r !== 'client'), [], 'all clients')
  t.end()
})

test('compliance (multiProcess): the owners close', async (t) => {
  for (const c of clients) await c.owner?.close().catch(() => {})
  t.pass('closed')
})

test.onFinish(() => {
  fs.rmSync(root, { recursive: true, force: true })
})
