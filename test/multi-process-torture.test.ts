// Node torture of multiProcess opens: 4 processes (test/fixtures/mp-peer.ts)
// write to one database at once, each its own stream of keys and a few
// counter keys it overwrites; round after round the owner among them is
// SIGKILLed at a random moment and a new process joins. Meanwhile each of them
// reads (point reads and ranges) keys of every writer, the killed ones' too,
// and every key it reads must not be older than the newest state of that key
// known before the read was sent: acknowledged to any writer or returned by any
// earlier read (ReadModel). At the end every acknowledged write must be there,
// every write that failed must have failed with LEVEL_OUTCOME_UNKNOWN (in
// flight at a kill: present or not), no key or value the writers did not send
// may appear, and the database passes verify. Seeded: SEED=<n> replays the
// kill moments (and the reads' choices, as far as timing lets it);
// LSM_TORTURE_ROUNDS=<n> runs more rounds (the short mode of npm test runs 6).
import test from 'tape'
import { LsmLevel } from '../index'
import { verifyDatabase } from '../hosts/node/tools/verify'
import { seedFromEnv, Random } from './util/random'
import { tempDir } from './util/temp'
import { Peer, type PeerError } from './util/mp-peer'

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

const STREAM_KEY = /^g\d{4}-\d{8}$/
const COUNTER_KEY = /^g\d{4}-c\d$/
/** Counter keys per writer (see the stream of test/fixtures/mp-peer.ts). */
const COUNTERS = 3

/**
 * A key's state as a number that only grows: a stream key is 0 (absent) or 1
 * (`v<key>`); a counter key is the version it holds (absent: 0). undefined: a
 * value no writer sent for that key.
 */
function versionOf (key: string, value: string | null | undefined): number | undefined {
  if (value === undefined || value === null) return 0
  if (COUNTER_KEY.test(key)) {
    const m = /^n(\d{8})$/.exec(value)
    return m === null ? undefined : Number(m[1])
  }
  return STREAM_KEY.test(key) && value === 'v' + key ? 1 : undefined
}

/**
 * The newest state of each key the test knows of: acknowledged to a writer,
 * or returned by a read. A read sent after that must not return an older one:
 * an owner resolves a write once it reached the OS and shows only what it has
 * logged, and the next owner replays that log.
 */
class ReadModel {
  private readonly newest = new Map<string, number>()
  readonly violations: string[] = []

  known (key: string): number {
    return this.newest.get(key) ?? 0
  }

  raise (key: string, version: number): void {
    if (version > this.known(key)) this.newest.set(key, version)
  }

  /** Checks what a read returned for `key` against `bound` (known when it was sent), then learns it. */
  check (key: string, value: string | null | undefined, bound: number, who: string): void {
    const version = versionOf(key, value)
    if (version === undefined) {
      this.violations.push(`${who} read ${key} = ${String(value)}: never written`)
    } else if (version < bound) {
      this.violations.push(`${who} read ${key} at version ${version} (${String(value ?? 'absent')}), older than version ${bound} known before the read was sent`)
    } else {
      this.raise(key, version)
    }
  }
}

function streamKey (prefix: string, n: number): string {
  return prefix + String(n).padStart(8, '0')
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

test(`multiProcess torture: ${WRITERS} writers, the owner SIGKILLed ${ROUNDS} times, reads never older than known`, async (t) => {
  const dir = tempDir()
  const rnd = new Random(seed)
  // The readers' choices: their own sequence, so that reading does not move the kill moments.
  const readRnd = new Random(seed ^ 0x5eed)
  const model = new ReadModel()
  const peers: Peer[] = []
  const all: Peer[] = []
  const prefixes = new Map<Peer, string>()
  const killed = new Set<Peer>()
  const readErrors: string[] = []
  const readers: Array<Promise<void>> = []
  let reads = 0
  let reading = true
  let round = 0
  let generation = 0

  /** A read by `peer` of the keys `keys` (getMany) or of a range, each key checked against what was known when it was sent. */
  const readOnce = async (peer: Peer): Promise<void> => {
    const who = `peer ${peer.pid} in round ${round} (seed ${seed})`
    const writers = [...prefixes.entries()]
    const [writer, prefix] = readRnd.pick(writers)
    // Around the writer's newest acknowledged keys, or anywhere before them; past them are keys in flight or not yet sent.
    const upTo = writer.acked.length + 8
    const from = readRnd.int(2) === 0 ? Math.max(0, upTo - 40) : readRnd.int(upTo)
    if (readRnd.int(4) === 0) {
      const counters = readRnd.int(2) === 0
      const range = counters ? { gte: prefix + 'c', lt: prefix + 'd' } : { gte: streamKey(prefix, from), lt: streamKey(prefix, from + 64) }
      const expected = counters
        ? Array.from({ length: COUNTERS }, (_, j) => `${prefix}c${j}`)
        : Array.from({ length: 64 }, (_, i) => streamKey(prefix, from + i))
      const bounds = expected.map((k) => model.known(k))
      let entries: Array<[string, string]>
      try {
        entries = await peer.request('all', { range }) as Array<[string, string]>
      } catch (err) {
        // An iterator is bound to its owner: LEVEL_OWNER_CHANGED when the owner changed under it.
        if ((err as PeerError).code === 'LEVEL_OWNER_CHANGED' || killed.has(peer)) return
        throw err
      }
      const got = new Map(entries)
      for (const [k] of entries) if (!expected.includes(k)) model.violations.push(`${who} read ${k} in the range ${JSON.stringify(range)}: never written`)
      expected.forEach((k, i) => model.check(k, got.get(k), bounds[i], `${who} (range)`))
    } else {
      const keys: string[] = []
      for (const p of [...peers, readRnd.pick(writers)[0]]) for (let j = 0; j < COUNTERS; j++) keys.push(`${prefixes.get(p)!}c${j}`)
      for (let i = 0; i < 16; i++) keys.push(streamKey(prefix, from + readRnd.int(upTo - from + 8)))
      const bounds = keys.map((k) => model.known(k))
      let values: Array<string | null>
      try {
        values = await peer.request('getMany', { keys }) as Array<string | null>
      } catch (err) {
        if (killed.has(peer)) return
        throw err
      }
      keys.forEach((k, i) => model.check(k, values[i], bounds[i], `${who} (getMany)`))
    }
    reads++
  }
  const readLoop = async (peer: Peer): Promise<void> => {
    while (reading && !killed.has(peer)) {
      try {
        await readOnce(peer)
      } catch (err) {
        // A plain read is retried on the next owner; a read that fails is a finding, an iterator's too (other than LEVEL_OWNER_CHANGED).
        readErrors.push(`peer ${peer.pid} in round ${round} (seed ${seed}): ${(err as PeerError).code ?? ''} ${(err as Error).message}`)
      }
      await delay(readRnd.int(5))
    }
  }

  const join = async (): Promise<void> => {
    const peer = await Peer.start(dir, OPTIONS)
    all.push(peer)
    peer.onAcked = (keys, counted) => {
      for (const k of keys) model.raise(k, 1)
      for (const [k, v] of counted) model.raise(k, v)
    }
    peer.role = await within(`the open of peer ${peer.pid} (as ${all.length === 1 ? 'the first' : 'a later'} one)`, peer.request('open')) as string
    const prefix = `g${String(generation++).padStart(4, '0')}-`
    await within(`peer ${peer.pid}'s write stream to start`, peer.request('stream', { prefix, inFlight: 1 + rnd.int(8), counters: COUNTERS }))
    prefixes.set(peer, prefix)
    peers.push(peer)
    readers.push(readLoop(peer))
  }
  const failoverMs: number[] = []
  const startedAt = Date.now()
  try {
    for (let i = 0; i < WRITERS; i++) await join()

    for (; round < ROUNDS; round++) {
      await delay(20 + rnd.int(300))
      await waitFor('an owner', () => peers.some((p) => p.role === 'owner'))
      const owner = peers.find((p) => p.role === 'owner')!
      peers.splice(peers.indexOf(owner), 1)
      const ackedBefore = peers.map((p) => p.acked.length)
      killed.add(owner)
      await owner.kill('SIGKILL')
      const killedAt = Date.now()
      // Service again: a surviving writer has a write acknowledged after the kill.
      await waitFor('a write after the kill', () => peers.some((p, i) => p.acked.length > ackedBefore[i] + 8))
      failoverMs.push(Date.now() - killedAt)
      await join()
      if (ROUNDS > 6 && (round + 1) % 10 === 0) t.comment(`round ${round + 1} of ${ROUNDS} after ${Math.round((Date.now() - startedAt) / 1000)} s: ${reads} reads, ${model.violations.length} older than known, ${readErrors.length} failed`)
    }

    reading = false
    await within('the readers to stop', Promise.all(readers))
    // Each writer's puts in flight settle (acknowledged or failed) and are reported.
    await within('the writers to stop', Promise.all(peers.map(async (p) => await p.request('stop'))))
    for (const p of peers) await within(`peer ${p.pid}'s close`, p.request('close'))
  } finally {
    // A failure part-way leaves writers running: they would keep this process alive.
    reading = false
    for (const p of all) await p.kill()
  }

  const sorted = [...failoverMs].sort((a, b) => a - b)
  t.comment(`failover, kill to a writer's next acknowledged write (acks reported every 10 ms): p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms, max ${sorted[sorted.length - 1]} ms over ${sorted.length} rounds`)
  t.same(readErrors.slice(0, 5), [], `no read failed (${reads} reads)`)
  t.same(model.violations.slice(0, 5), [], `reads never older than known: every key of ${reads} reads (seed ${seed})`)
  t.ok(reads > ROUNDS * 4, 'the readers made progress')

  const acked = all.flatMap((p) => p.acked)
  const failed = all.flatMap((p) => p.failed)
  const countFailed = all.flatMap((p) => p.countFailed)
  const badFailures = [...failed, ...countFailed.map(([k, , code]) => [k, code])].filter(([, code]) => code !== 'LEVEL_OUTCOME_UNKNOWN')
  t.same(badFailures.slice(0, 5), [], 'every failed write failed with LEVEL_OUTCOME_UNKNOWN')

  const db = new LsmLevel<string, string>(dir)
  await db.open()
  const stored = new Map(await db.iterator().all())
  await db.close()
  const lost = acked.filter((k) => stored.get(k) !== 'v' + k)
  t.same(lost.slice(0, 5), [], `all ${acked.length} acknowledged writes are there`)
  const counterKeys = [...prefixes.values()].flatMap((prefix) => Array.from({ length: COUNTERS }, (_, j) => `${prefix}c${j}`))
  const olderCounters = counterKeys.filter((k) => (versionOf(k, stored.get(k)) ?? 0) < model.known(k))
  t.same(olderCounters.slice(0, 5), [], `every counter key at least at its newest acknowledged or read version (${all.reduce((n, p) => n + p.counted.length, 0)} acknowledged)`)
  const foreign = [...stored].filter(([k, v]) => versionOf(k, v) === undefined || (!STREAM_KEY.test(k) && !COUNTER_KEY.test(k)))
  t.same(foreign.slice(0, 5), [], 'nothing the writers did not write')
  const unknownPresent = failed.filter(([k]) => stored.has(k)).length
  t.comment(`${stored.size} keys stored; ${failed.length} writes LEVEL_OUTCOME_UNKNOWN (${unknownPresent} of them committed)`)
  t.ok(acked.length > ROUNDS * 10, 'the writers made progress')

  const report = verifyDatabase(dir)
  t.same(report.problems, [], `verify: no problem (${report.tables} tables, ${report.logs} logs and manifests)`)
})
