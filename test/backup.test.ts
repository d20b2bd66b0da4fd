// Backups on an object store (lib/backup/): db.replicate ships, LsmLevel.restore
// restores. A seeded disaster test: a writer under load with shipping on to a
// store with a network's latency, the machine "lost" at a random moment (the
// requests on their way cut, never landing; the store unreachable from then
// on; the directory deleted), a restore, checked against the test's own model
// of the writes and their acknowledgement times: the state is the model's at
// a prefix of the write order, holding every write acknowledged more than
// intervalMs plus the longest round before the loss. Then restores to
// sequence numbers and times, each a prefix; damaged and missing objects
// (LEVEL_CORRUPTION naming the object, nothing left in the directory); a store
// that fails for a while (the database keeps working, the lag grows and is
// reported, then shrinks); two writers on one prefix (the second fails with
// LEVEL_LOCKED until the first lets the lease go or stops renewing it; no
// object written twice, each generation restorable); retention. SEED=<n> replays; BACKUP_LONG=1 runs the
// disaster test 20 times with intervalMs 1000 and the default buffers, prints
// the recovery point's percentiles and checks its p99 (at most 2 s).
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import type { ObjectInfo, ObjectStore } from '../lib/backup/object-store'
import { parsePointKey, parseSegmentKey } from '../lib/backup/layout'
import { Random, seedFromEnv } from './util/random'
import { contents, History, loopLag, matchingPrefixes, OPTIONS, type PutSeen, sameMap, sleep, SwitchStore, writeFor } from './util/backup-history'
import { MemoryStore } from './util/memory-store'
import { s3Missing, startS3 } from './util/s3-server'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const LONG = process.env.BACKUP_LONG === '1'

const ROUNDS_BEFORE_LOSS = 4

/**
 * The longest time a round took to put its segments (and its point), as the store saw it: grouped by the
 * round's time in their keys, from the first put's call to the last one's landing, or to the cut for the
 * round on its way at the loss.
 */
function longestRoundMs (puts: PutSeen[]): number {
  const rounds = new Map<number, { start: number, end: number }>()
  for (const p of puts) {
    const ms = parseSegmentKey(p.key)?.ms ?? parsePointKey(p.key)?.ms
    if (ms === undefined) continue
    const r = rounds.get(ms)
    if (r === undefined) rounds.set(ms, { start: p.startMs, end: p.endMs })
    else rounds.set(ms, { start: Math.min(r.start, p.startMs), end: Math.max(r.end, p.endMs) })
  }
  let longest = 0
  for (const r of rounds.values()) longest = Math.max(longest, r.end - r.start)
  return longest
}

/**
 * One loss. The test keeps its own model: each write in order with the time the test saw it acknowledged.
 * The store has a network's latency (2-21 ms a request, seeded); at the loss it is cut: the requests on
 * their way never land. Checked against the model alone: the restored state is the model's at some prefix
 * of the write order, and that prefix holds every write acknowledged more than the bound before the loss. A
 * write waits for the next capture (at most intervalMs, or the running round if longer) and then for that
 * round's puts; the bound is that plus the event loop's longest delay the test measured (a timer late under
 * load starts a round late). Returns the recovery point: the loss time minus the acknowledgement time of
 * the newest write restored.
 */
async function disaster (t: test.Test, runSeed: number, intervalMs: number): Promise<number> {
  const rnd = new Random(runSeed)
  const net = new Random(runSeed ^ 0x1a7e)
  const dir = tempDir()
  // In memory: a put takes the modelled latency, not the machine's fsyncs (minutes of them under load).
  const store = new SwitchStore(new MemoryStore(), () => 2 + net.int(20))
  const lag = loopLag()
  // The long mode with the default buffers (a log of 4 MiB: one segment a round); the short one with logs of
  // 256 KiB, made, sealed and flushed during the run, a round putting a few segments (the bound grows with
  // a round's puts: the fewer, the tighter).
  const db = new LsmLevel<string, string>(dir, LONG ? {} : { ...OPTIONS, writeBufferSize: 256 * 1024 })
  await db.open()
  await db.replicate(store, { prefix: 'b', intervalMs, retries: { attempts: 1, delayMs: 1, delayMsMax: 1 } })
  const history = new History()
  const started = Date.now()
  let lost = false
  const writer = writeFor(db, rnd, history, () => lost)
  // The loss at a random moment once the store saw ROUNDS_BEFORE_LOSS rounds' segments land and twice the
  // bound so far passed (under load a round takes longer: the bound grows with it, and the writes acknowledged
  // before it are what the check is about).
  const roundsSeen = (): number => new Set(store.putsSeen.flatMap((p) => p.landed ? parseSegmentKey(p.key)?.ms ?? [] : [])).size
  const bound = (): number => { const r = longestRoundMs(store.putsSeen); return Math.max(intervalMs, r) + r + lag.max() }
  while ((roundsSeen() < ROUNDS_BEFORE_LOSS || Date.now() - started < 2 * bound()) && Date.now() - started < 30000) await sleep(10)
  await sleep(rnd.int(intervalMs * 4))
  // The machine is lost: the requests on their way are cut, nothing reaches the store from now on, the disk is gone.
  const lossMs = Date.now()
  lost = true
  const cutting = store.cut()
  const stats = db.stats().replication!
  await cutting
  const lagMs = lag.stop()
  await writer
  await db.close().catch(() => {})
  fs.rmSync(dir, { recursive: true, force: true })
  const target = tempDir()
  fs.rmSync(target, { recursive: true })
  const result = await LsmLevel.restore(store.inner, target, { prefix: 'b' })
  const state = await contents(target)
  const prefixes = matchingPrefixes(history, state)
  const restored = prefixes[prefixes.length - 1] ?? -1
  const ackedBefore = history.batches.filter((b) => b.ackMs < lossMs).length
  t.ok(prefixes.length > 0, `seed ${runSeed}: the restored state is the model's after ${restored} of the ${ackedBefore} writes acknowledged before the loss, ${lossMs - started} ms in (the restore says sequence ${result.sequence})`)
  t.ok(sameMap(state, history.stateAt(result.sequence)), 'and the state at the sequence number the restore reports')
  const roundMs = longestRoundMs(store.putsSeen)
  const boundMs = Math.max(intervalMs, roundMs) + roundMs + lagMs
  const required = history.batches.filter((b) => b.ackMs < lossMs - boundMs).length
  t.ok(required > 0, `writes acknowledged more than ${boundMs} ms before the loss: ${required} (intervalMs ${intervalMs}, the longest round's puts ${roundMs} ms, the event loop's longest delay ${lagMs} ms)`)
  t.ok(restored >= required, `every one of them restored: ${restored} >= ${required}`)
  if (restored < required) t.comment(`at the loss: ${JSON.stringify(stats)}\n` + (await store.inner.list('')).map((o) => `${o.key} ${o.size}`).join('\n'))
  return restored <= 0 ? lossMs - started : lossMs - history.batches[restored - 1].ackMs
}

test('disaster: the machine lost while writing, requests on their way cut; the restore is a prefix of the acknowledged writes with every write acknowledged more than intervalMs and a round before the loss', async (t) => {
  const runs = LONG ? 20 : 3
  const intervalMs = LONG ? 1000 : 150
  const rpo: number[] = []
  for (let i = 0; i < runs; i++) rpo.push(await disaster(t, (seed + i) >>> 0, intervalMs))
  rpo.sort((a, b) => a - b)
  const pct = (p: number): number => rpo[Math.min(rpo.length - 1, Math.ceil(p * rpo.length) - 1)]
  t.comment(`recovery point (loss time - newest restored write's acknowledgement), intervalMs ${intervalMs}, ${runs} runs: p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${rpo[rpo.length - 1]} ms`)
  if (LONG) t.ok(pct(0.99) <= 2 * intervalMs, `the recovery point's p99 is at most 2 x intervalMs (${pct(0.99)} ms)`)
})

test('restore to sequence numbers and times: each a prefix of the write order; the newest after a clean close', async (t) => {
  const rnd = new Random(seed ^ 0x5eed)
  const dir = tempDir()
  const inner = new DirectoryStore(tempDir('lsm-store-'))
  const db = new LsmLevel<string, string>(dir, OPTIONS)
  await db.open()
  // A point every 300 ms at most (the version permitting): restores start from points taken between the
  // writes, and replay the segments after them.
  await db.replicate(inner, { intervalMs: 20, pointIntervalMs: 300 })
  const history = new History()
  // Writes, a pause until everything written was shipped (however long a loaded machine takes), writes: a
  // restore to a time after it was shipped, before the writes went on, must hold exactly the writes before
  // the pause.
  let stopAt = Date.now() + 700
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  const beforePause = db.sequence
  const shippedBy = Date.now() + 60000
  while (db.stats().replication!.shippedSequence < beforePause && Date.now() < shippedBy) await sleep(20)
  const pausedMs = Date.now()
  // The next round's capture (its objects' time) is after pausedMs.
  await sleep(20)
  stopAt = Date.now() + 700
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  const last = db.sequence
  const stats = db.stats().replication!
  t.ok(stats.tablesUploaded > 0 && stats.segmentsUploaded > 0 && stats.pointsUploaded >= 1, `shipped ${stats.tablesUploaded} tables, ${stats.segmentsUploaded} segments, ${stats.pointsUploaded} points in ${stats.requests} requests (${stats.failedRounds} failed rounds${stats.lastError !== undefined ? ': ' + stats.lastError : ''})`)
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
  const to = tempDir()
  const rt = await LsmLevel.restore(inner, to, { time: pausedMs })
  t.ok(sameMap(await contents(to), history.stateAt(rt.sequence)), `restore to a time: a prefix (sequence ${rt.sequence})`)
  t.is(rt.sequence, beforePause, 'a time in a pause of the writes: every write before the pause, none after')
})

/** A database shipped to `store` under `prefix` with some writes, closed; its history. */
async function shipped (store: ObjectStore, rnd: Random, ms: number, prefix = ''): Promise<History> {
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  await db.replicate(store, { prefix, intervalMs: 20 })
  const history = new History()
  const stopAt = Date.now() + ms
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  await db.close()
  return history
}

async function restoreError (store: ObjectStore, options: { sequence?: number } = {}): Promise<{ code?: string, file?: string, message: string, dirEmpty: boolean }> {
  const to = tempDir()
  try {
    await LsmLevel.restore(store, to, options)
    return { message: 'restored', dirEmpty: false }
  } catch (err) {
    const e = err as { code?: string, file?: string, message: string }
    return { code: e.code, file: e.file, message: e.message, dirEmpty: fs.readdirSync(to).length === 0 }
  }
}

test('damaged and missing objects: LEVEL_CORRUPTION naming the object, nothing left behind; a hole after the point ends the restore there', async (t) => {
  const root = tempDir('lsm-store-')
  const store = new DirectoryStore(root)
  const history = await shipped(store, new Random(seed ^ 0xbad), 600)
  const keys = (await store.list('')).map((o) => o.key)
  const newestPoint = keys.filter((k) => k.includes('/points/')).pop()!
  const flip = (key: string, at: (size: number) => number): () => void => {
    const file = path.join(root, key)
    const saved = fs.readFileSync(file)
    const bad = Buffer.from(saved)
    bad[at(bad.length)] ^= 0x20
    fs.writeFileSync(file, bad)
    return () => fs.writeFileSync(file, saved)
  }
  // The newest point's tables, and a segment after it.
  const table = keys.filter((k) => k.includes('/tables/')).pop()!
  const segment = keys.filter((k) => k.includes('/logs/')).pop()!
  for (const [key, what] of [[table, 'a table'], [segment, 'a log segment'], [newestPoint, 'a point']]) {
    const restoreFile = flip(key, (n) => n >> 1)
    const e = await restoreError(store)
    t.equal(e.code, 'LEVEL_CORRUPTION', `${what} with a flipped byte: LEVEL_CORRUPTION`)
    t.equal(e.file, key, `naming it (${e.message})`)
    t.ok(e.dirEmpty, 'nothing left in the directory')
    restoreFile()
  }
  // A table the point names, deleted.
  const needed = table
  const saved = fs.readFileSync(path.join(root, needed))
  fs.rmSync(path.join(root, needed))
  const missing = await restoreError(store)
  t.equal(missing.code, 'LEVEL_CORRUPTION', 'a missing table: LEVEL_CORRUPTION')
  t.ok(missing.message.includes('missing'), missing.message)
  fs.writeFileSync(path.join(root, needed), saved)
  // From an older point, a segment after what that point needs, deleted: a restore past it ends before it, a prefix.
  const points = keys.filter((k) => k.includes('/points/')).map((k) => Number(/points\/(\d{16})/.exec(k)![1]))
  const segs = keys.filter((k) => k.includes('/logs/')).map((k) => {
    const m = /-(\d{16})-(\d{16})-[0-9a-f]{8}-\d{13}\.seg$/.exec(k)!
    return { key: k, first: Number(m[1]), last: Number(m[2]) }
  })
  let hole: typeof segs[number] | undefined
  let newestSeq = 0
  for (let i = points.length - 2; i >= 0 && hole === undefined; i--) {
    hole = segs.find((x) => x.first > points[i] + 1 && x.last < points[i + 1] - 1)
    newestSeq = points[i + 1]
  }
  // The first point (the empty database) and the last (the close) have the 600 ms of writes between them.
  t.ok(hole !== undefined, `a segment between two points to delete (points ${points.join(', ')}, ${segs.length} segments)`)
  if (hole !== undefined) {
    fs.rmSync(path.join(root, hole.key))
    const to = tempDir()
    const r = await LsmLevel.restore(store, to, { sequence: newestSeq - 1 })
    t.equal(r.sequence, hole.first - 1, `a segment deleted (${hole.first}..${hole.last}): a restore to ${newestSeq - 1} from point ${r.pointSequence} ends before it`)
    t.ok(r.stoppedAtHole, 'and says so')
    t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), 'a prefix')
  }
})

test('a store that fails for a while: the database keeps working, the lag grows and is reported, then everything is shipped', async (t) => {
  const rnd = new Random(seed ^ 0xfa11)
  const store = new SwitchStore(new DirectoryStore(tempDir('lsm-store-')))
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  await db.replicate(store, { intervalMs: 20, retries: { attempts: 2, delayMs: 5, delayMsMax: 10 }, retryDelayMsMax: 100 })
  const history = new History()
  let stopAt = Date.now() + 200
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  store.off = true
  // At least 600 ms, and until a round failed (a loaded machine runs fewer), at most 60 s.
  stopAt = Date.now() + 600
  const failedBy = Date.now() + 60000
  await writeFor(db, rnd, history, () => Date.now() > stopAt && (db.stats().replication!.failedRounds > 0 || Date.now() > failedBy))
  const during = db.stats().replication!
  t.ok(during.lagMs >= 400, `lag reported while the store is down: ${during.lagMs} ms, ${during.lagSequences} sequence numbers`)
  t.ok(during.failedRounds > 0 && during.lastError !== undefined, `failed rounds ${during.failedRounds}, last error: ${during.lastError}`)
  t.ok(history.batches.length > 0 && db.sequence > during.shippedSequence, 'writes went on')
  store.off = false
  const until = Date.now() + 60000
  const caughtUp = (): boolean => { const r = db.stats().replication!; return r.shippedSequence === db.sequence && r.lastError === undefined }
  while (!caughtUp() && Date.now() < until) await sleep(20)
  const after = db.stats().replication!
  t.equal(after.shippedSequence, db.sequence, 'caught up once the store is back')
  t.equal(after.lagMs, 0, 'no lag')
  t.equal(after.lastError, undefined, 'no error')
  const last = db.sequence
  store.off = true
  const to = tempDir()
  const r = await LsmLevel.restore(store.inner, to)
  t.equal(r.sequence, last, 'restored to the end (shipped before the store went away again)')
  t.ok(sameMap(await contents(to), history.stateAt(last)), 'every write')
  await db.close()
})

test('two writers on one prefix: the second fails with LEVEL_LOCKED before it puts anything; after the first closes it takes over; a writer restarted: a generation each, no object written twice', async (t) => {
  const rnd = new Random(seed ^ 0x2222)
  const store = new SwitchStore(new DirectoryStore(tempDir('lsm-store-')))
  const a = new LsmLevel<string, string>(tempDir(), OPTIONS)
  const bDir = tempDir()
  const b = new LsmLevel<string, string>(bDir, OPTIONS)
  await a.open()
  await b.open()
  // Renewed every 667 ms: the second writer, watching the lease for 2 s, sees a renewal even on a loaded machine.
  const leaseMs = 2000
  const ga = (await a.replicate(store, { prefix: 'same', intervalMs: 20, leaseMs })).generation
  const ha = new History()
  const hb = new History()
  let stopAt = Date.now() + 300
  const writingA = writeFor(a, rnd, ha, () => Date.now() > stopAt)
  const putsBefore = store.putKeys.length
  const started = Date.now()
  try {
    await b.replicate(store, { prefix: 'same', intervalMs: 20, leaseMs })
    t.fail('a second live writer started shipping')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_LOCKED', `the second live writer: LEVEL_LOCKED after ${Date.now() - started} ms (${(err as Error).message})`)
  }
  t.ok(store.putKeys.slice(putsBefore).every((k) => k.startsWith(`same/${ga}/`) || k.startsWith('same/lease/')), 'it put nothing')
  t.notOk(b.stats().replication, 'and ships nothing')
  await writingA
  t.ok(a.stats().replication!.leaseHeld, 'the first still holds the lease')
  await a.close()
  // The first closed (its lease released): the second takes over at once, reading the lease once instead of watching it.
  const takeover = Date.now()
  const readsBefore = store.getKeys.length
  const gb = (await b.replicate(store, { prefix: 'same', intervalMs: 20, leaseMs })).generation
  const leaseReads = store.getKeys.slice(readsBefore).filter((k) => k.startsWith('same/lease/')).length
  t.equal(leaseReads, 1, `after a clean close, taken over at once: the released lease read once, not watched (${Date.now() - takeover} ms)`)
  t.notEqual(ga, gb, 'two generations')
  stopAt = Date.now() + 300
  await writeFor(b, new Random(seed ^ 0x3333), hb, () => Date.now() > stopAt)
  await b.close()
  // b restarted, writing on: a third generation, restored by default (the newest).
  await b.open()
  const gb2 = (await b.replicate(store, { prefix: 'same', intervalMs: 20, leaseMs })).generation
  const more = Date.now() + 200
  const hb2 = new History()
  hb2.batches.push(...hb.batches)
  await writeFor(b, rnd, hb2, () => Date.now() > more)
  await b.close()
  const dataKeys = store.putKeys.filter((k) => !k.startsWith('same/lease/'))
  t.equal(new Set(dataKeys).size, dataKeys.length, `no key put twice but the lease's (${store.putKeys.length} puts)`)
  const newest = tempDir()
  const r = await LsmLevel.restore(store.inner, newest, { prefix: 'same' })
  t.equal(r.generation, gb2, 'the newest generation is restored')
  t.ok(sameMap(await contents(newest), hb2.stateAt(r.sequence)) && r.sequence === hb2.batches[hb2.batches.length - 1].last, 'the restarted writer, everything')
  const other = tempDir()
  const ra = await LsmLevel.restore(store.inner, other, { prefix: 'same', generation: ga })
  t.ok(sameMap(await contents(other), ha.stateAt(ra.sequence)) && ra.sequence === ha.batches[ha.batches.length - 1].last, 'the other writer, by its generation')
})

test('the lease expires when its holder stops renewing: a writer elsewhere takes over after leaseMs; the old holder finds out and stops shipping', async (t) => {
  const rnd = new Random(seed ^ 0x1ea5e)
  const inner = new DirectoryStore(tempDir('lsm-store-'))
  const cut = new SwitchStore(inner)
  const a = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await a.open()
  const leaseMs = 600
  await a.replicate(cut, { intervalMs: 20, leaseMs, retries: { attempts: 1, delayMs: 1, delayMsMax: 1 } })
  await writeFor(a, rnd, new History(), (() => { const end = Date.now() + 200; return () => Date.now() > end })())
  // The first writer's machine is cut off from the store: it can neither renew nor release (a request already
  // on its way lands first: a renewal landing after b began to wait is a holder alive, and b fails, rightly).
  await cut.cutOff()
  const b = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await b.open()
  const started = Date.now()
  const gb = (await b.replicate(inner, { intervalMs: 20, leaseMs })).generation
  const waited = Date.now() - started
  t.ok(waited >= leaseMs - 50, `taken over after the holder's leaseMs without a renewal (${waited} ms)`)
  const hb = new History()
  await writeFor(b, rnd, hb, (() => { const end = Date.now() + 200; return () => Date.now() > end })())
  // The old holder reaches the store again: at its next renewal it finds the newer lease and stops.
  cut.off = false
  const until = Date.now() + 30000
  while (a.stats().replication!.leaseHeld && Date.now() < until) await sleep(20)
  const sa = a.stats().replication!
  t.notOk(sa.leaseHeld, 'the old holder knows it lost the lease')
  t.ok(sa.lastError !== undefined && /lost its lease/.test(sa.lastError), `and says so: ${sa.lastError ?? ''}`)
  const rounds = sa.rounds
  await sleep(100)
  t.equal(a.stats().replication!.rounds, rounds, 'its rounds stopped')
  await a.put('after', 'x')
  t.equal(await a.get('after'), 'x', 'its database goes on')
  await a.close()
  await b.close()
  const to = tempDir()
  const r = await LsmLevel.restore(inner, to)
  t.equal(r.generation, gb, 'the new holder is the newest generation')
  t.ok(sameMap(await contents(to), hb.stateAt(r.sequence)) && r.sequence === hb.batches[hb.batches.length - 1].last, 'and restores whole')
})

test('retention: old points, the logs and tables only they need, and old generations are deleted; the newest state is still restored', async (t) => {
  const rnd = new Random(seed ^ 0x7e7)
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const old = await shipped(store, rnd, 200)
  t.ok(old.batches.length > 0, 'an older generation')
  const oldGens = new Set((await store.list('')).map((o) => o.key.split('/')[0]).filter((g) => g !== 'lease'))
  await sleep(50)
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  // A point each round the version changed (pointLogBytes 0): many points for the retention.
  await db.replicate(store, { intervalMs: 20, retainMs: 30, retentionIntervalMs: 20, pointLogBytes: 0 })
  const history = new History()
  // Until a few points were put and the retention ran after them (bounded: a slow machine gets fewer).
  const stopAt = Date.now() + 60000
  await writeFor(db, rnd, history, () => Date.now() > stopAt || (db.stats().replication!.pointsUploaded >= 4 && db.stats().replication!.objectsDeleted > 0))
  await sleep(100)
  const s = db.stats().replication!
  await db.close()
  const keys = (await store.list('')).map((o) => o.key)
  t.ok(s.objectsDeleted > 0, `${s.objectsDeleted} objects deleted`)
  t.ok(keys.every((k) => !oldGens.has(k.split('/')[0])), 'the old generation is gone')
  t.ok(s.pointsUploaded > 2 && !keys.some((k) => k.includes('/points/0000000000000000-')), `the first point is gone (${keys.filter((k) => k.includes('/points/')).length} kept of ${s.pointsUploaded} and more)`)
  const to = tempDir()
  const r = await LsmLevel.restore(store, to)
  t.equal(r.sequence, history.batches[history.batches.length - 1].last, 'the newest state')
  t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), 'every write')
})

test('replicate and restore refuse bad options and states', async (t) => {
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const db = new LsmLevel<string, string>(tempDir())
  await db.open()
  for (const options of [{ intervalMs: 0 }, { intervalMs: NaN }, { maxSegmentBytes: 1 }, { retainMs: -1 }, { pointLogBytes: -1 }, { pointIntervalMs: NaN }]) {
    try {
      await db.replicate(store, options)
      t.fail('accepted ' + JSON.stringify(options))
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'refused ' + JSON.stringify(options))
    }
  }
  await db.replicate(store)
  try {
    await db.replicate(store)
    t.fail('two shippers')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'one shipper per database')
  }
  await db.put('a', '1')
  await db.close()
  const full = tempDir()
  fs.writeFileSync(path.join(full, 'x'), 'x')
  for (const [dir, options, what] of [[full, {}, 'a non-empty directory'], [tempDir(), { sequence: -1 }, 'a negative sequence'], [tempDir(), { time: 'noon' }, 'a time that is no time'], [tempDir(), { generation: 'nope' }, 'an unknown generation']] as const) {
    try {
      await LsmLevel.restore(store, dir, options as object)
      t.fail('accepted ' + what)
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'refused: ' + what)
    }
  }
  const empty = new DirectoryStore(tempDir('lsm-store-'))
  try {
    await LsmLevel.restore(empty, tempDir())
    t.fail('restored nothing')
  } catch (err) {
    t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'an empty store: no backup')
  }
})

test('through the S3 store (s3rver on 127.0.0.1): shipped while writing, restored to the newest state and to a sequence number', { skip: s3Missing() ?? false }, async (t) => {
  const s3 = await startS3()
  try {
    const store = await s3.store()
    const history = await shipped(store, new Random(seed ^ 0x53), 700, 'db/one')
    const last = history.batches[history.batches.length - 1].last
    const to = tempDir()
    const r = await LsmLevel.restore(store, to, { prefix: 'db/one' })
    t.equal(r.sequence, last, `the newest state (${r.tables} tables, ${r.segments} segments)`)
    t.ok(sameMap(await contents(to), history.stateAt(last)), 'every write')
    const mid = tempDir()
    const rm = await LsmLevel.restore(store, mid, { prefix: 'db/one', sequence: last >> 1 })
    t.ok(rm.sequence <= last >> 1 && sameMap(await contents(mid), history.stateAt(rm.sequence)), `to ${last >> 1}: a prefix (${rm.sequence})`)
  } finally {
    await s3.close()
  }
})

/** A database shipped to a memory store in segments of one record (maxSegmentBytes 64), `writes` writes, closed. */
async function shippedInSegments (writes: number, rnd: Random): Promise<{ store: MemoryStore, history: History, segments: number }> {
  const store = new MemoryStore()
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  await db.replicate(store, { prefix: 'paged', intervalMs: 20, maxSegmentBytes: 64 })
  const history = new History()
  await writeFor(db, rnd, history, () => history.batches.length >= writes)
  await db.close()
  const segments = (await store.list('paged/')).filter((o) => parseSegmentKey(o.key) !== undefined).length
  return { store, history, segments }
}

test('close() ships every write, even with the log many segments behind (a round puts one segment of each log)', async (t) => {
  const { store, history, segments } = await shippedInSegments(1500, new Random(seed ^ 0xc105e))
  const last = history.batches[history.batches.length - 1].last
  t.ok(segments >= 1000, `${segments} segments`)
  const to = tempDir()
  const r = await LsmLevel.restore(store, to, { prefix: 'paged' })
  t.equal(r.sequence, last, `restored to the last write before close() (from point ${r.pointSequence})`)
  t.ok(sameMap(await contents(to), history.stateAt(last)), 'every write')
})

test('through the S3 store: a backup of more than 1,000 log segments (more than one page of a list) is restored whole', { skip: s3Missing() ?? false }, async (t) => {
  // Shipped to memory (a round puts one segment of a log: back to back, thousands of rounds), then copied to
  // the emulator as it is, 50 puts at a time.
  const { store: shipped, history, segments } = await shippedInSegments(1500, new Random(seed ^ 0x9a9e))
  const s3 = await startS3()
  try {
    const store = await s3.store()
    const objects = await shipped.list('')
    for (let i = 0; i < objects.length; i += 50) await Promise.all(objects.slice(i, i + 50).map(async (o) => await store.put(o.key, await shipped.get(o.key))))
    t.ok(segments > 1000, `${segments} segments, ${objects.length} objects in the store`)
    // To the write before the last: from the first point (the close put the only other one), every segment but the last replayed.
    const target = history.batches[history.batches.length - 2].last
    const to = tempDir()
    const r = await LsmLevel.restore(store, to, { prefix: 'paged', sequence: target })
    t.equal(r.sequence, target, `restored to the write before the last (${r.segments} segments replayed after point ${r.pointSequence})`)
    t.ok(r.segments > 1000 && !r.stoppedAtHole, 'through every segment, no hole')
    t.ok(sameMap(await contents(to), history.stateAt(target)), 'exactly the writes up to it')
    const newest = tempDir()
    const rn = await LsmLevel.restore(store, newest, { prefix: 'paged' })
    t.equal(rn.sequence, history.batches[history.batches.length - 1].last, 'the newest state: the point close() put (listed after the segments)')
  } finally {
    await s3.close()
  }
})

test('points: the first and the last round put one; in between, one once pointLogBytes of log were put since the last', async (t) => {
  const logBytes = 64 * 1024
  // Writes for 1 s, and on until `pointsWhileWriting` points were put (a loaded machine writes less in 1 s), at most 60 s.
  const ship = async (options: { pointLogBytes?: number }, pointsWhileWriting = 0): Promise<{ points: Array<{ seq: number, logBytesBefore: number }>, stats: ReturnType<typeof statsOf>, history: History, store: DirectoryStore, last: number }> => {
    const store = new DirectoryStore(tempDir('lsm-store-'))
    const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
    await db.open()
    await db.replicate(store, { intervalMs: 20, ...options })
    const history = new History()
    const stopAt = Date.now() + 1000
    const pointsBy = Date.now() + 60000
    await writeFor(db, new Random(seed ^ 0x9017), history, () => Date.now() > stopAt && (db.stats().replication!.pointsUploaded >= pointsWhileWriting || Date.now() > pointsBy))
    const stats = statsOf(db)
    const last = db.sequence
    await db.close()
    // Each point with the bytes of the segments that end at or before its sequence number.
    const objects = await store.list('')
    const segs = objects.flatMap((o) => { const g = parseSegmentKey(o.key); return g === undefined ? [] : [{ last: g.last, size: o.size }] })
    const points = objects.flatMap((o) => { const p = parsePointKey(o.key); return p === undefined ? [] : [p.sequence] }).sort((a, b) => a - b)
      .map((seq) => ({ seq, logBytesBefore: segs.filter((g) => g.last <= seq).reduce((n, g) => n + g.size, 0) }))
    return { points, stats, history, store, last }
  }
  const statsOf = (db: LsmLevel<string, string>): { pointsUploaded: number, segmentsUploaded: number, tablesUploaded: number, bytesUploaded: number } => {
    const r = db.stats().replication!
    return { pointsUploaded: r.pointsUploaded, segmentsUploaded: r.segmentsUploaded, tablesUploaded: r.tablesUploaded, bytesUploaded: r.bytesUploaded }
  }

  const sparse = await ship({})
  t.equal(sparse.stats.pointsUploaded, 1, `the defaults (a point every 64 MiB of log or 60 s): only the first round's point while writing (${sparse.stats.segmentsUploaded} segments)`)
  t.equal(sparse.stats.tablesUploaded, 0, 'and no table: the database was empty then')
  t.equal(sparse.points.length, 2, 'close() put the last point')
  t.equal(sparse.points[1].seq, sparse.last, 'at the last write')
  const newest = tempDir()
  const r = await LsmLevel.restore(sparse.store, newest)
  t.equal(r.sequence, sparse.last, 'restored to the last write')
  t.ok(sameMap(await contents(newest), sparse.history.stateAt(r.sequence)), 'every write')

  // Two while writing (the first round's, one by pointLogBytes), close()'s: three.
  const every = await ship({ pointLogBytes: logBytes }, 2)
  t.ok(every.points.length >= 3, `pointLogBytes ${logBytes}: ${every.points.length} points`)
  for (let i = 1; i < every.points.length - 1; i++) {
    const since = every.points[i].logBytesBefore - every.points[i - 1].logBytesBefore
    t.ok(since >= logBytes, `point ${i} (sequence ${every.points[i].seq}) after ${since} bytes of segments since the one before`)
  }
  const mid = every.points[every.points.length >> 1].seq
  const to = tempDir()
  const rm = await LsmLevel.restore(every.store, to, { sequence: mid })
  t.equal(rm.pointSequence, mid, 'a restore to a point\'s sequence starts from that point')
  t.ok(sameMap(await contents(to), every.history.stateAt(rm.sequence)), 'exactly the writes up to it')
})

test('a log let go before it was shipped (maxHeldLogBytes): the next round puts a point, and everything it reports shipped is restored', async (t) => {
  const store = new SwitchStore(new DirectoryStore(tempDir('lsm-store-')))
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  // No retired log kept for the shipper: each one retired before its last round is let go.
  await db.replicate(store, { intervalMs: 20, maxHeldLogBytes: 0, retries: { attempts: 1, delayMs: 1, delayMsMax: 1 }, retryDelayMsMax: 50 })
  const rnd = new Random(seed ^ 0x401e)
  const history = new History()
  const stopAt = Date.now() + 200
  await writeFor(db, rnd, history, () => Date.now() > stopAt)
  store.off = true
  // At least 400 ms, and until a log was let go (a loaded machine writes less in 400 ms), at most 60 s.
  const offAt = Date.now()
  await writeFor(db, rnd, history, () => Date.now() > offAt + 400 && (db.stats().replication!.logsDropped > 0 || Date.now() > offAt + 60000))
  store.off = false
  const until = Date.now() + 60000
  while (db.stats().replication!.shippedSequence < db.sequence && Date.now() < until) await sleep(20)
  const r = db.stats().replication!
  t.ok(r.logsDropped > 0, `${r.logsDropped} logs let go while the store was away`)
  t.equal(r.shippedSequence, db.sequence, `then caught up (${r.pointsUploaded} points)`)
  const to = tempDir()
  const restored = await LsmLevel.restore(store.inner, to)
  t.equal(restored.sequence, r.shippedSequence, `restored to the shipped sequence number ${r.shippedSequence} (from point ${restored.pointSequence})`)
  t.notOk(restored.stoppedAtHole, 'not stopped at a hole')
  t.ok(sameMap(await contents(to), history.stateAt(restored.sequence)), 'exactly the writes up to it')
  await db.close()
})

/** A store whose first point put waits at a gate until the test opens it: a point's upload held in flight. */
class HeldPointStore implements ObjectStore {
  readonly description = 'held-point'
  /** Resolves when the first point's put reaches the gate. */
  readonly reached: Promise<void>
  private arrive!: () => void
  private gate!: () => void
  private readonly opened = new Promise<void>((resolve) => { this.gate = resolve })
  private held = false
  constructor (readonly inner: ObjectStore) {
    this.reached = new Promise((resolve) => { this.arrive = resolve })
  }

  get conditionalPut (): boolean { return this.inner.conditionalPut }
  open (): void { this.gate() }
  async put (key: string, body: Uint8Array, options?: { ifAbsent?: boolean }): Promise<void> {
    if (!this.held && parsePointKey(key) !== undefined) {
      this.held = true
      this.arrive()
      await this.opened
    }
    await this.inner.put(key, body, options)
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> { return await this.inner.get(key, range) }
  async list (prefix: string, options?: { startAfter?: string }): Promise<ObjectInfo[]> { return await this.inner.list(prefix, options) }
  async delete (keys: string[]): Promise<void> { await this.inner.delete(keys) }
}

test('a log let go while a point is on its way: the writes after it are not reported shipped until a point past it is put; a restore holds everything reported shipped', async (t) => {
  const store = new HeldPointStore(new DirectoryStore(tempDir('lsm-store-')))
  const db = new LsmLevel<string, string>(tempDir(), OPTIONS)
  await db.open()
  const history = new History()
  const rnd = new Random(seed ^ 0x7e1d)
  const write = async (n: number): Promise<void> => {
    const stop = history.batches.length + n
    await writeFor(db, rnd, history, () => history.batches.length >= stop)
  }
  await write(50)
  // No retired log kept for the shipper (each one retired with bytes unshipped is let go), and no point but the first one's and a hole's.
  await db.replicate(store, { intervalMs: 20, maxHeldLogBytes: 0, pointIntervalMs: 0, pointLogBytes: 1024 * 1024 * 1024, retries: { attempts: 1, delayMs: 1, delayMsMax: 1 } })
  await store.reached
  // The first point's upload is on its way: its capture is before these writes. Two flushes retire the
  // capture's log and a log no round opened, with their writes unshipped: both are let go.
  await write(50)
  await db.flush()
  await write(50)
  await db.flush()
  await write(50)
  const dropped = db.stats().replication!.logsDropped
  t.ok(dropped > 0, `${dropped} logs let go while the first point was on its way`)
  store.open()
  // Until every write is reported shipped (at most 60 s: a loaded machine), then a restore of the store as it is.
  const until = Date.now() + 60000
  while (db.stats().replication!.shippedSequence < db.sequence && Date.now() < until) await sleep(20)
  const r = db.stats().replication!
  t.equal(r.shippedSequence, db.sequence, `every write reported shipped (${r.pointsUploaded} points)`)
  const to = tempDir()
  const restored = await LsmLevel.restore(store.inner, to)
  t.ok(restored.sequence >= r.shippedSequence, `restored to ${restored.sequence} (from point ${restored.pointSequence}), at least the shipped sequence number ${r.shippedSequence}`)
  t.notOk(restored.stoppedAtHole, 'not stopped at a hole')
  t.ok(sameMap(await contents(to), history.stateAt(restored.sequence)), 'exactly the writes up to it')
  await db.close()
})

test('the segments of a generation are one contiguous history, even with logs made and flushed between two rounds', async (t) => {
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const db = new LsmLevel<string, string>(tempDir(), { ...OPTIONS, writeBufferSize: 8 * 1024 })
  await db.open()
  await db.replicate(store, { intervalMs: 400 })
  const history = new History()
  // About 3 rounds, and until more than 5 flushes (a loaded machine writes less in 1.2 s), at most 60 s.
  const stopAt = Date.now() + 1200
  const flushedBy = Date.now() + 60000
  await writeFor(db, new Random(seed ^ 0xc0), history, () => Date.now() > stopAt && (db.stats().flushes > 5 || Date.now() > flushedBy))
  const flushes = db.stats().flushes
  const dropped = db.stats().replication!.logsDropped
  await db.close()
  const segs = (await store.list('')).map((o) => o.key).filter((k) => k.endsWith('.seg')).map((k) => {
    const m = /logs\/(\d{10})\/(\d{14})-(\d{14})-(\d{16})-(\d{16})/.exec(k)!
    return { log: Number(m[1]), start: Number(m[2]), end: Number(m[3]), first: Number(m[4]), last: Number(m[5]) }
  }).sort((a, b) => a.log - b.log || a.start - b.start || b.end - a.end)
  let next = 1
  let holes = 0
  const where: string[] = []
  let at = { log: -1, end: 0 }
  for (const s of segs) {
    // A segment put again from the same start after a failed put (the longer one first): no hole.
    if (s.log === at.log && s.end <= at.end) continue
    at = { log: s.log, end: s.end }
    if (s.first !== next) { holes++; where.push(`log ${s.log} at ${s.start}: ${s.first} after ${next - 1}`) }
    next = s.last + 1
  }
  if (holes > 0) t.comment(`holes: ${where.join('; ')}; logs dropped ${dropped}`)
  t.ok(flushes > 5, `${flushes} flushes (logs made and retired) with rounds 400 ms apart`)
  t.equal(holes, 0, `no hole in ${segs.length} segments of ${new Set(segs.map((s) => s.log)).size} logs`)
  t.equal(next - 1, history.batches[history.batches.length - 1].last, 'up to the last write')
})

test('a process that leaves a shipping database and a replica open ends on its own: their timers between rounds hold nothing', async (t) => {
  const store = tempDir('lsm-store-')
  // The child: a database shipping every 50 ms, a replica polling every 50 ms, some writes, no close.
  const script = `
    const { LsmLevel, ReplicaLevel, DirectoryStore } = require(${JSON.stringify(path.join(__dirname, '..', 'index.js'))})
    ;(async () => {
      const store = new DirectoryStore(${JSON.stringify(store)})
      const db = new LsmLevel(${JSON.stringify(tempDir())})
      await db.open()
      await db.replicate(store, { intervalMs: 50, leaseMs: 3000 })
      for (let i = 0; i < 100; i++) await db.put('k' + i, 'v' + i)
      await new Promise((resolve) => setTimeout(resolve, 200))
      const replica = await ReplicaLevel.open(store, ${JSON.stringify(tempDir() + '/replica')}, { pollIntervalMs: 50 })
      console.log('replica has ' + (await replica.get('k99')))
    })().catch((err) => { console.error(err); process.exit(2) })
  `
  const { spawn } = await import('node:child_process')
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (b: Buffer) => { output += String(b) })
  child.stderr.on('data', (b: Buffer) => { output += String(b) })
  const killer = setTimeout(() => child.kill('SIGKILL'), 20000)
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  t.ok(output.includes('replica has v99'), `the child shipped and followed: ${output.trim()}`)
  t.is(signal, null, 'the child ended on its own within 20 s, not killed')
  t.is(code, 0, 'with exit code 0')
})
