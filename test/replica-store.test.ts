// Read replicas that follow an object store (adapters/replica-level.ts,
// lib/backup/follow.ts): a writer in another process ships to a directory
// store (test/util/backup-writer.ts); a ReplicaLevel here follows it. Each
// state the replica shows is exactly the writer's state at the replica's
// sequence number (a prefix), the sequence number never goes back, the
// writer is killed (SIGKILL) and restarted (a new generation, followed), and
// the replica converges to the writer's last write; writes to the replica
// fail with LEVEL_READ_ONLY; its stats report the lag. Then a writer restored to
// an earlier point that ships again: the replica, past that point, rebuilds
// itself from the store, and no state it shows mixes the two histories.
// SEED=<n> replays.
import test from 'tape'
import * as path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { LsmLevel, ReplicaLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { stateAt } from './util/backup-writer'
import { tempDir } from './util/temp'
import { History, OPTIONS, sameMap, writeFor } from './util/backup-history'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()

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
  const until = Date.now() + 1500
  while (Date.now() < until) { await check(); await sleep(25) }
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
  t.equal(prefixes, checks, `every state seen was the writer's at the replica's sequence number (${checks} checks)`)
  t.equal(stats.lagSequences, 0, 'no lag once caught up')
  try {
    await replica.put('x', 'y')
    t.fail('a write went through')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_READ_ONLY', 'writes: LEVEL_READ_ONLY')
  }
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
  const replica = await ReplicaLevel.open<string, string>(store, tempDir() + '/replica', { pollIntervalMs: 20, generationCheckMs: 20 })
  t.equal(replica.sequence, n, `the replica holds the first writer's ${n} writes`)
  const rebuilt = new Promise((resolve) => replica.once('rebuild', resolve))
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
  const last = h2.batches[h2.batches.length - 1].last
  t.ok(last > n, `the restored writer went from ${r.sequence} to ${last}, past the replica's ${n}`)
  // A state seen meanwhile is the first history's or the second's, never a mix.
  let mixed = 0
  let seen = 0
  const deadline = Date.now() + 15000
  // The rebuild swaps the new copy in while the replica is closed: its sequence is read only while open.
  while ((replica.status !== 'open' || replica.sequence !== last) && Date.now() < deadline) {
    await sleep(10)
    if (replica.status !== 'open') continue
    try {
      const snapshot = replica.snapshot()
      const seq = replica.sequence
      const got = new Map(await replica.iterator({ snapshot }).all())
      await snapshot.close()
      seen++
      if (!sameMap(got, h1.stateAt(seq)) && !sameMap(got, h2.stateAt(seq))) mixed++
    } catch (err) {
      // Closed under the read by the rebuild.
      if ((err as { code?: string }).code !== 'LEVEL_DATABASE_NOT_OPEN' && (err as { code?: string }).code !== 'LEVEL_ITERATOR_NOT_OPEN') throw err
    }
  }
  const result = await Promise.race([rebuilt, sleep(5000)]) as { generation?: string } | undefined
  t.equal(result?.generation, generation, 'rebuilt from the new generation (\'rebuild\' emitted)')
  t.equal(replica.sequence, last, `caught up with the restored writer at ${last} (${JSON.stringify(replica.stats().replica)})`)
  t.equal(replica.stats().replica!.rebuilds, 1, 'one rebuild')
  t.ok(sameMap(new Map(await replica.iterator().all()), h2.stateAt(last)), 'its state is the restored writer\'s')
  t.equal(mixed, 0, `no mixed state in ${seen} reads`)
  await replica.close()
})
