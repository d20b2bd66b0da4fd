// Backups on an object store (lib/backup/): db.replicate ships, LsmLevel.restore
// restores. A seeded disaster test: a writer under load with shipping on, the
// machine "lost" at a random moment (the store unreachable from then on, the
// directory deleted), a restore: every write acknowledged at least intervalMs
// plus the longest round before the loss is there, and the state is exactly
// the writes up to the restored sequence number (a prefix). Then restores to
// sequence numbers and times, each a prefix; damaged and missing objects
// (LEVEL_CORRUPTION naming the object, nothing left in the directory); a store
// that fails for a while (the database keeps working, the lag grows and is
// reported, then shrinks); two writers on one prefix (no object written twice,
// each restorable); retention. SEED=<n> replays; BACKUP_LONG=1 runs the
// disaster test 20 times with intervalMs 1000 and prints the recovery point's
// percentiles.
import test from 'tape'
import * as fs from 'node:fs'
import { LsmLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import type { ObjectInfo, ObjectStore } from '../lib/backup/object-store'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const LONG = process.env.BACKUP_LONG === '1'

/** A store in front of another: it can be switched off (every request fails), and it notes every key put. */
class SwitchStore implements ObjectStore {
  readonly description = 'switch'
  off = false
  readonly putKeys: string[] = []
  constructor (readonly inner: ObjectStore) {}
  get conditionalPut (): boolean { return this.inner.conditionalPut }
  private check (): void { if (this.off) throw Object.assign(new Error('store unreachable (test)'), { code: 'ECONNREFUSED' }) }
  async put (key: string, body: Uint8Array, options?: { ifAbsent?: boolean }): Promise<void> {
    this.check()
    this.putKeys.push(key)
    await this.inner.put(key, body, options)
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> { this.check(); return await this.inner.get(key, range) }
  async list (prefix: string): Promise<ObjectInfo[]> { this.check(); return await this.inner.list(prefix) }
  async delete (keys: string[]): Promise<void> { this.check(); await this.inner.delete(keys) }
}

type Op = { type: 'put', key: string, value: string } | { type: 'del', key: string }

/** The writes of one writer, each with its sequence numbers and when it was acknowledged. */
class History {
  readonly batches: Array<{ last: number, ops: Op[], ackMs: number }> = []

  stateAt (seq: number): Map<string, string> {
    const m = new Map<string, string>()
    for (const b of this.batches) {
      if (b.last > seq) break
      for (const op of b.ops) {
        if (op.type === 'put') m.set(op.key, op.value)
        else m.delete(op.key)
      }
    }
    return m
  }

  /** The newest batch acknowledged at or before `ms`. */
  lastAckedBy (ms: number): number {
    let last = 0
    for (const b of this.batches) if (b.ackMs <= ms) last = b.last
    return last
  }

  ackOf (seq: number): number | undefined {
    return this.batches.find((b) => b.last === seq)?.ackMs
  }
}

const OPTIONS = { writeBufferSize: 32 * 1024, targetFileSize: 16 * 1024, level0CompactionTrigger: 2 }

async function writeFor (db: LsmLevel<string, string>, rnd: Random, history: History, until: () => boolean): Promise<void> {
  while (!until()) {
    const key = (): string => 'k' + String(rnd.int(2000)).padStart(5, '0')
    const r = rnd.int(100)
    const ops: Op[] = r < 75
      ? [{ type: 'put', key: key(), value: rnd.bytes(10 + rnd.int(200)).toString('hex') }]
      : r < 90 ? [{ type: 'del', key: key() }] : [{ type: 'put', key: key(), value: 'b' + rnd.int(1e9) }, { type: 'del', key: key() }, { type: 'put', key: key(), value: 'c' }]
    if (ops.length === 1) {
      const op = ops[0]
      if (op.type === 'put') await db.put(op.key, op.value)
      else await db.del(op.key)
    } else {
      await db.batch(ops)
    }
    history.batches.push({ last: db.sequence, ops, ackMs: Date.now() })
  }
}

async function contents (dir: string): Promise<Map<string, string>> {
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  try {
    return new Map(await db.iterator().all())
  } finally {
    await db.close()
  }
}

function sameMap (a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false
  for (const [k, v] of a) if (b.get(k) !== v) return false
  return true
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

async function disaster (t: test.Test, runSeed: number, intervalMs: number): Promise<number> {
  const rnd = new Random(runSeed)
  const dir = tempDir()
  const store = new SwitchStore(new DirectoryStore(tempDir('lsm-store-')))
  const db = new LsmLevel<string, string>(dir, OPTIONS)
  await db.open()
  await db.replicate(store, { prefix: 'b', intervalMs, retries: { attempts: 1, delayMs: 1, delayMsMax: 1 } })
  const history = new History()
  const lossAfterMs = intervalMs * 2 + rnd.int(intervalMs * 3)
  const started = Date.now()
  let lost = false
  const writer = writeFor(db, rnd, history, () => lost)
  await sleep(lossAfterMs)
  // The machine is lost: nothing reaches the store from now on, the disk is gone.
  store.off = true
  lost = true
  const lossMs = Date.now()
  const stats = db.stats().replication!
  await writer
  await db.close().catch(() => {})
  fs.rmSync(dir, { recursive: true, force: true })
  const target = tempDir()
  fs.rmSync(target, { recursive: true })
  const result = await LsmLevel.restore(store.inner, target, { prefix: 'b' })
  const state = await contents(target)
  t.ok(sameMap(state, history.stateAt(result.sequence)), `seed ${runSeed}: the restored state is the writes up to ${result.sequence} (of ${history.batches.length} batches, ${history.batches[history.batches.length - 1]?.last ?? 0} in all, over ${lossMs - started} ms)`)
  // A round's capture comes at most max(intervalMs, the previous round) after the last one; its logs are put maxLogsMs after it.
  const waitMs = Math.max(intervalMs, stats.maxRoundMs) + stats.maxLogsMs
  const mustHave = history.lastAckedBy(lossMs - waitMs)
  t.ok(result.sequence >= mustHave, `every write acknowledged max(intervalMs ${intervalMs}, the longest round ${stats.maxRoundMs}) + the longest log upload (${stats.maxLogsMs}) ms before the loss is there: restored ${result.sequence} >= ${mustHave}`)
  if (result.sequence < mustHave) t.comment(JSON.stringify(result) + '\n' + (await store.inner.list('')).map((o) => `${o.key} ${o.size}`).join('\n'))
  const ack = history.ackOf(result.sequence)
  return ack === undefined ? lossMs - started : lossMs - ack
}

test('disaster: the machine lost while writing; restore holds a prefix with every write acknowledged intervalMs + a round before', async (t) => {
  const runs = LONG ? 20 : 3
  const intervalMs = LONG ? 1000 : 150
  const rpo: number[] = []
  for (let i = 0; i < runs; i++) rpo.push(await disaster(t, (seed + i) >>> 0, intervalMs))
  rpo.sort((a, b) => a - b)
  const pct = (p: number): number => rpo[Math.min(rpo.length - 1, Math.ceil(p * rpo.length) - 1)]
  t.comment(`recovery point (loss time - newest restored write's acknowledgement), intervalMs ${intervalMs}, ${runs} runs: p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${rpo[rpo.length - 1]} ms`)
})

test('restore to sequence numbers and times: each a prefix of the write order; the newest after a clean close', async (t) => {
  const rnd = new Random(seed ^ 0x5eed)
  const dir = tempDir()
  const inner = new DirectoryStore(tempDir('lsm-store-'))
  const db = new LsmLevel<string, string>(dir, OPTIONS)
  await db.open()
  await db.replicate(inner, { intervalMs: 20 })
  const history = new History()
  const stopAt = Date.now() + 1500
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  const last = db.sequence
  const stats = db.stats().replication!
  t.ok(stats.tablesUploaded > 0 && stats.segmentsUploaded > 0 && stats.pointsUploaded > 1, `shipped ${stats.tablesUploaded} tables, ${stats.segmentsUploaded} segments, ${stats.pointsUploaded} points in ${stats.requests} requests`)
  await db.close()
  const newest = tempDir()
  const r0 = await LsmLevel.restore(inner, newest)
  t.equal(r0.sequence, last, 'after a clean close: everything')
  t.ok(sameMap(await contents(newest), history.stateAt(last)), 'the newest state')
  let exact = 0
  const targets = Array.from({ length: 8 }, () => 1 + rnd.int(last))
  for (const seq of targets) {
    const to = tempDir()
    const r = await LsmLevel.restore(inner, to, { sequence: seq })
    t.ok(r.sequence <= seq && r.sequence >= r.pointSequence, `asked ${seq}, got ${r.sequence} (point ${r.pointSequence})`)
    t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), `restore to ${seq}: exactly the writes up to ${r.sequence}`)
    if (r.sequence > seq - 3) exact++
  }
  t.ok(exact >= targets.length / 2, `most restores reach their sequence number (a batch's first op falls short): ${exact} of ${targets.length}`)
  const mid = history.batches[history.batches.length >> 1]
  const to = tempDir()
  const rt = await LsmLevel.restore(inner, to, { time: mid.ackMs + 200 })
  t.ok(sameMap(await contents(to), history.stateAt(rt.sequence)), `restore to a time: a prefix (sequence ${rt.sequence})`)
  t.ok(rt.sequence >= history.lastAckedBy(mid.ackMs - 200) && rt.sequence <= history.lastAckedBy(mid.ackMs + 200 + 100), 'near that time')
})
