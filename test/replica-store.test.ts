// Read replicas that follow an object store (adapters/replica-level.ts,
// lib/backup/follow.ts): a writer in another process ships to a directory
// store (test/util/backup-writer.ts); a ReplicaLevel here follows it. Each
// state the replica shows is exactly the writer's state at the replica's
// sequence number (a prefix), the sequence number never goes back, the
// writer is killed (SIGKILL) and restarted (a new generation, followed), and
// the replica converges to the writer's last write; writes to the replica
// fail with LEVEL_READ_ONLY; its stats report the lag. Then a writer restored to
// an earlier point that ships again: the replica, past that point, rebuilds
// itself from the store (through a store 25 ms away, so that the rebuild
// takes a while), and no state it shows mixes the two histories: at least
// SAMPLES_DURING_REBUILD states read while it runs. A replica following a
// writer through the S3 emulator. SEED=<n> replays.
import test from 'tape'
import * as path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { LsmLevel, ReplicaLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { stateAt } from './util/backup-writer'
import { tempDir } from './util/temp'
import { History, OPTIONS, sameMap, SwitchStore, writeFor } from './util/backup-history'
import { Random, seedFromEnv } from './util/random'
import { s3Missing, startS3 } from './util/s3-server'

const seed = seedFromEnv()

/** The fewest states the prefix check must see while the first writer writes. */
const MIN_CHECKS = 20

/** The fewest states the mix check must see while a rebuild runs (it restores beside the old copy, then swaps). */
const SAMPLES_DURING_REBUILD = 5

const WRITER = path.join(__dirname, 'util', 'backup-writer.js')
const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

function startWriter (dir: string, storeDir: string, until: number | string): { child: ChildProcess, seq: () => number, done: Promise<number | null> } {
  const child = spawn(process.execPath, [WRITER, dir, storeDir, String(until)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let seq = 0
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    for (const m of d.matchAll(/(?:seq|done) (\d+)/g)) seq = Number(m[1])
  })
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, seq: () => seq, done }
}

async function sameAsWriter (db: ReplicaLevel, seq: number): Promise<boolean> {
  const want = stateAt(seq)
  const got = await db.iterator().all()
  return got.length === want.size && got.every(([k, v]) => want.get(k) === v)
}

test('a replica follows a writer in another process through the store, across a kill and a restart of the writer', async (t) => {
  const dir = tempDir()
  const storeDir = tempDir('lsm-store-')
  const store = new DirectoryStore(storeDir)
  const first = startWriter(dir, storeDir, 1_000_000)
  while (first.seq() < 400) await sleep(20)
  const replica = await ReplicaLevel.open(store, tempDir() + '/replica', { pollIntervalMs: 30, generationCheckMs: 150 })
  let last = -1
  let checks = 0
  let prefixes = 0
  const check = async (): Promise<void> => {
    const snapshot = replica.snapshot()
    const seq = replica.sequence
    const want = stateAt(seq)
    const got = await replica.iterator({ snapshot }).all()
    await snapshot.close()
    checks++
    // The iterator's snapshot may be a batch later than `seq` was read: compare at the snapshot's own state.
    if (got.length === want.size && got.every(([k, v]) => want.get(k) === v)) prefixes++
    else if (await sameAsWriter(replica, replica.sequence)) prefixes++
    if (seq < last) t.fail(`went back from ${last} to ${seq}`)
    last = seq
  }
  t.ok(replica.sequence >= 1, `caught up at open: ${replica.sequence}`)
  // For 1.5 s and at least MIN_CHECKS checks (a loaded machine makes fewer in 1.5 s), at most 20 s.
  const started = Date.now()
  while ((Date.now() < started + 1500 || checks < MIN_CHECKS) && Date.now() < started + 20000) { await check(); await sleep(25) }
  // The writer killed while writing, then restarted: a new generation.
  first.child.kill('SIGKILL')
  await first.done
  const killedAt = replica.sequence
  const second = startWriter(dir, storeDir, 0)
  await second.done
  const restarted = startWriter(dir, storeDir, '+3000')
  t.equal(await restarted.done, 0, `the restarted writer wrote 3000 more, to ${restarted.seq()}, and closed`)
  const end = restarted.seq()
  const deadline = Date.now() + 15000
  while (replica.sequence < end && Date.now() < deadline) { await check(); await sleep(25) }
  const stats = replica.stats().replica!
  t.equal(replica.sequence, end, `converged to the writer's last write (from ${killedAt} at the kill; ${stats.segmentsApplied} segments, ${stats.batchesApplied} batches applied, generation ${stats.generation}${stats.lastError !== undefined ? ', ' + stats.lastError : ''})`)
  t.ok(await sameAsWriter(replica, end), 'its state is the writer\'s')
  t.ok(checks >= MIN_CHECKS, `${checks} states checked (at least ${MIN_CHECKS})`)
  t.equal(prefixes, checks, `every state seen was the writer's at the replica's sequence number (${checks} checks)`)
  t.equal(stats.lagSequences, 0, 'no lag once caught up')
  try {
    await replica.put('x', 'y')
    t.fail('a write went through')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_READ_ONLY', 'writes: LEVEL_READ_ONLY')
  }
  const codeOf = async (p: Promise<unknown>): Promise<string | undefined> => await p.then(() => undefined, (err: { code?: string }) => err.code)
  t.equal(await codeOf(replica.put('x', 'y', { sync: true })), 'LEVEL_READ_ONLY', 'put with { sync: true }: LEVEL_READ_ONLY')
  t.equal(await codeOf(replica.batch([{ type: 'put', key: 'x', value: 'y' }])), 'LEVEL_READ_ONLY', 'batch: LEVEL_READ_ONLY')
  t.equal(await codeOf(replica.batch([{ type: 'del', key: 'x' }], { sync: true })), 'LEVEL_READ_ONLY', 'batch with { sync: true }: LEVEL_READ_ONLY')
  t.equal(await codeOf(replica.del('x')), 'LEVEL_READ_ONLY', 'del: LEVEL_READ_ONLY')
  t.equal(await replica.get('x'), undefined, 'and nothing was written')
  await replica.close()
})

test('a replica whose history the store no longer continues (the writer restored to an earlier point, shipping again) rebuilds from the store, never showing a mix', async (t) => {
  const rnd = new Random(seed ^ 0x4eb1)
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const w1 = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await w1.open()
  await w1.replicate(store, { intervalMs: 20, leaseMs: 300 })
  const h1 = new History()
  let end = Date.now() + 400
  await writeFor(w1, rnd, h1, () => Date.now() > end)
  await w1.close()
  const n = h1.batches[h1.batches.length - 1].last
  // The replica reaches the store through 25 ms of latency a request: its rebuild (a restore of every table
  // and segment) takes long enough to be read from while it runs.
  const replica = await ReplicaLevel.open<string, string>(new SwitchStore(store, () => 25), tempDir() + '/replica', { pollIntervalMs: 20, generationCheckMs: 20 })
  t.equal(replica.sequence, n, `the replica holds the first writer's ${n} writes`)
  let rebuildDone = false
  const rebuilt = new Promise((resolve) => replica.once('rebuild', (result) => { rebuildDone = true; resolve(result) }))
  // States read from now on, checked once the writes are done (the history is complete then).
  const samples: Array<{ seq: number, state: Map<string, string>, duringRebuild: boolean }> = []
  let last = Infinity
  let sampling = true
  const sampler = (async () => {
    const deadline = Date.now() + 60000
    // The rebuild swaps the new copy in while the replica is closed: its sequence is read only while open.
    while (sampling && (replica.status !== 'open' || replica.sequence !== last) && Date.now() < deadline) {
      await sleep(5)
      if (replica.status !== 'open') continue
      // The follower says so from the moment it found the divergence until the rebuilt copy follows.
      const duringRebuild = !rebuildDone && /rebuilding/.test(replica.stats().replica?.lastError ?? '')
      try {
        const snapshot = replica.snapshot()
        const seq = replica.sequence
        const state = new Map(await replica.iterator({ snapshot }).all())
        await snapshot.close()
        samples.push({ seq, state, duringRebuild })
      } catch (err) {
        // Closed under the read by the rebuild.
        if ((err as { code?: string }).code !== 'LEVEL_DATABASE_NOT_OPEN' && (err as { code?: string }).code !== 'LEVEL_ITERATOR_NOT_OPEN') throw err
      }
    }
  })()
  // The writer's database restored to about half way, and written on with other writes, past n.
  const restoredDir = tempDir()
  const r = await LsmLevel.restore(store, restoredDir, { sequence: n >> 1 })
  const h2 = new History()
  h2.batches.push(...h1.batches.filter((b) => b.last <= r.sequence))
  const w2 = new LsmLevel<string, string>(restoredDir, OPTIONS)
  await w2.open()
  const { generation } = await w2.replicate(store, { intervalMs: 20, leaseMs: 300 })
  end = Date.now() + 10000
  await writeFor(w2, new Random(seed ^ 0x0de2), h2, () => Date.now() > end || w2.sequence > n + 50)
  await w2.close()
  last = h2.batches[h2.batches.length - 1].last
  t.ok(last > n, `the restored writer went from ${r.sequence} to ${last}, past the replica's ${n}`)
  await sampler
  sampling = false
  const result = await Promise.race([rebuilt, sleep(5000)]) as { generation?: string } | undefined
  t.equal(result?.generation, generation, 'rebuilt from the new generation (\'rebuild\' emitted)')
  t.equal(replica.sequence, last, `caught up with the restored writer at ${last} (${JSON.stringify(replica.stats().replica)})`)
  t.equal(replica.stats().replica!.rebuilds, 1, 'one rebuild')
  t.ok(sameMap(new Map(await replica.iterator().all()), h2.stateAt(last)), 'its state is the restored writer\'s')
  // A state seen is the first history's or the second's at the replica's sequence number, never a mix.
  const mixed = samples.filter((x) => !sameMap(x.state, h1.stateAt(x.seq)) && !sameMap(x.state, h2.stateAt(x.seq))).length
  const during = samples.filter((x) => x.duringRebuild).length
  t.ok(during >= SAMPLES_DURING_REBUILD, `${during} states read while the rebuild ran (at least ${SAMPLES_DURING_REBUILD}), ${samples.length} in all`)
  t.ok(samples.some((x) => !x.duringRebuild && x.seq > n), 'and states of the new history after it')
  t.equal(mixed, 0, `no mixed state in ${samples.length} reads`)
  await replica.close()
})

test('a replica follows a writer through the S3 store (s3rver): every state it shows is a prefix, its sequence never goes back, it converges', { skip: s3Missing() ?? false }, async (t) => {
  const s3 = await startS3()
  try {
    const store = await s3.store()
    const rnd = new Random(seed ^ 0x53f0)
    const writer = new LsmLevel<string, string>(tempDir(), OPTIONS)
    await writer.open()
    await writer.replicate(store, { prefix: 'r', intervalMs: 30 })
    const history = new History()
    // Until a round shipped some of them (at least 300 ms).
    let end = Date.now() + 300
    await writeFor(writer, rnd, history, () => Date.now() > end && (writer.stats().replication!.shippedSequence > 0 || Date.now() > end + 20000))
    const replica = await ReplicaLevel.open<string, string>(store, tempDir() + '/replica', { prefix: 'r', pollIntervalMs: 30 })
    t.ok(replica.sequence > 0, `restored from S3 at open: ${replica.sequence}`)
    // Read while the writer goes on; checked once its history is complete.
    const samples: Array<{ seq: number, state: Map<string, string> }> = []
    let writing = true
    const sampler = (async () => {
      while (writing) {
        await sleep(20)
        const snapshot = replica.snapshot()
        const seq = replica.sequence
        samples.push({ seq, state: new Map(await replica.iterator({ snapshot }).all()) })
        await snapshot.close()
      }
    })()
    end = Date.now() + 1500
    await writeFor(writer, rnd, history, () => Date.now() > end)
    await writer.close()
    writing = false
    await sampler
    const last = history.batches[history.batches.length - 1].last
    const deadline = Date.now() + 15000
    while (replica.sequence < last && Date.now() < deadline) await sleep(20)
    t.equal(replica.sequence, last, `converged to the writer's last write (${JSON.stringify(replica.stats().replica)})`)
    t.ok(sameMap(new Map(await replica.iterator().all()), history.stateAt(last)), 'its state is the writer\'s')
    const seqs = new Set(samples.map((x) => x.seq))
    t.ok(samples.length >= 20 && seqs.size >= 3, `${samples.length} states read while the writer wrote, at ${seqs.size} sequence numbers`)
    t.ok(samples.every((x, i) => i === 0 || x.seq >= samples[i - 1].seq), 'the sequence number never went back')
    t.equal(samples.filter((x) => !sameMap(x.state, history.stateAt(x.seq))).length, 0, 'each state was the writer\'s at the replica\'s sequence number')
    await replica.close()
  } finally {
    await s3.close()
  }
})
