// Node torture of multiProcess opens: 4 processes (test/fixtures/mp-peer.ts)
// write to one database at once, each its own stream of keys; round after
// round the owner among them is SIGKILLed at a random moment and a new
// process joins. At the end every acknowledged write must be there, every
// write that failed must have failed with LEVEL_OUTCOME_UNKNOWN (in flight at
// a kill: present or not), no key the writers did not send may appear, and
// the database passes verify. Seeded: SEED=<n> replays the kill moments;
// LSM_TORTURE_ROUNDS=<n> runs more rounds (the short mode of npm test runs 6).
import test from 'tape'
import { LsmLevel } from '../index'
import { verifyDatabase } from '../hosts/node/tools/verify'
import { seedFromEnv, Random } from './util/random'
import { tempDir } from './util/temp'
import { Peer } from './util/mp-peer'

const seed = seedFromEnv()
const ROUNDS = Number(process.env.LSM_TORTURE_ROUNDS ?? 6)
const WRITERS = 4
/** Small memtables: flushes and compactions run between the kills. */
const OPTIONS = { writeBufferSize: 64 * 1024, ownerTimeoutMs: 10_000 }

function delay (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

async function waitFor (what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await delay(5)
  }
}

/** `promise`, or a failure naming `what` after `ms` (a peer that never answers fails the test instead of hanging it). */
async function within<T> (what: string, promise: Promise<T>, ms = 30_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms) })])
  } finally {
    clearTimeout(timer)
  }
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

test(`multiProcess torture: ${WRITERS} writers, the owner SIGKILLed ${ROUNDS} times`, async (t) => {
  const dir = tempDir()
  const rnd = new Random(seed)
  const peers: Peer[] = []
  const all: Peer[] = []
  let generation = 0
  const join = async (): Promise<void> => {
    const peer = await Peer.start(dir, OPTIONS)
    all.push(peer)
    peer.role = await within(`the open of peer ${peer.pid} (as ${all.length === 1 ? 'the first' : 'a later'} one)`, peer.request('open')) as string
    await within(`peer ${peer.pid}'s write stream to start`, peer.request('stream', { prefix: `g${String(generation++).padStart(4, '0')}-`, inFlight: 1 + rnd.int(8) }))
    peers.push(peer)
  }
  const failoverMs: number[] = []
  try {
    for (let i = 0; i < WRITERS; i++) await join()

    for (let round = 0; round < ROUNDS; round++) {
      await delay(20 + rnd.int(300))
      await waitFor('an owner', () => peers.some((p) => p.role === 'owner'))
      const owner = peers.find((p) => p.role === 'owner')!
      peers.splice(peers.indexOf(owner), 1)
      const ackedBefore = peers.map((p) => p.acked.length)
      await owner.kill('SIGKILL')
      const killedAt = Date.now()
      // Service again: a surviving writer has a write acknowledged after the kill.
      await waitFor('a write after the kill', () => peers.some((p, i) => p.acked.length > ackedBefore[i] + 8))
      failoverMs.push(Date.now() - killedAt)
      await join()
    }

    // Each writer's puts in flight settle (acknowledged or failed) and are reported.
    await within('the writers to stop', Promise.all(peers.map(async (p) => await p.request('stop'))))
    for (const p of peers) await within(`peer ${p.pid}'s close`, p.request('close'))
  } finally {
    // A failure part-way leaves writers running: they would keep this process alive.
    for (const p of all) await p.kill()
  }

  const sorted = [...failoverMs].sort((a, b) => a - b)
  t.comment(`failover, kill to a writer's next acknowledged write (acks reported every 10 ms): p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms, max ${sorted[sorted.length - 1]} ms over ${sorted.length} rounds`)

  const acked = all.flatMap((p) => p.acked)
  const failed = all.flatMap((p) => p.failed)
  const badFailures = failed.filter(([, code]) => code !== 'LEVEL_OUTCOME_UNKNOWN')
  t.same(badFailures.slice(0, 5), [], 'every failed write failed with LEVEL_OUTCOME_UNKNOWN')

  const db = new LsmLevel<string, string>(dir)
  await db.open()
  const stored = new Map(await db.iterator().all())
  await db.close()
  const lost = acked.filter((k) => stored.get(k) !== 'v' + k)
  t.same(lost.slice(0, 5), [], `all ${acked.length} acknowledged writes are there`)
  const foreign = [...stored].filter(([k, v]) => !/^g\d{4}-\d{8}$/.test(k) || v !== 'v' + k)
  t.same(foreign.slice(0, 5), [], 'nothing the writers did not write')
  const unknownPresent = failed.filter(([k]) => stored.has(k)).length
  t.comment(`${stored.size} keys stored; ${failed.length} writes LEVEL_OUTCOME_UNKNOWN (${unknownPresent} of them committed)`)
  t.ok(acked.length > ROUNDS * 10, 'the writers made progress')

  const report = verifyDatabase(dir)
  t.same(report.problems, [], `verify: no problem (${report.tables} tables, ${report.logs} logs and manifests)`)
})
