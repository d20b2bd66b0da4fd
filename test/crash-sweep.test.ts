// Crash-point sweep: a seeded workload of puts, deletes, range deletes and batches (some with
// sync: true) runs on the in-memory file system (test/fs/mem-fs.ts) with tiny
// buffers, so that it crosses log rotation, flushes, compactions and manifest
// writes. For every state-changing I/O operation k of the workload, the workload
// is run again and crashed at k (the engine sees CrashError and is abandoned);
// crash images are taken from the frozen state (a killed process, and power
// losses of several kinds), each is reopened with Engine.open and checked:
//   - the recovered state equals the state after some prefix of the write order
//     (batches whole or not at all, no value that was never written),
//   - that prefix holds every acknowledged sync write and everything before it
//     (after a killed process: every acknowledged write),
//   - the recovered database takes a sync write and reads it back.
// Some images are also crashed DURING recovery (at a random operation of the
// reopen), then reopened again: the result must be the same state the
// uninterrupted recovery produced.
//
// Three workload shapes (tiny buffers; tiny buffers with one frozen memtable;
// memtables big enough that a flush spans several event-loop turns, so logs
// rotate and sync writes land while a flush is in progress), each with a clean
// close/reopen now and then. Each shape runs with two seeds: one with flushes
// and compactions on workers, as by default (the worker thread's job host, run
// in process over the in-memory file system: jobs structured-cloned, memtable
// copies transferred, replies and errors revived as from a thread), one on the
// event loop (compactionWorker: false). The engine yields to the event loop on a clock, so
// runs are not exactly repeatable: a crash run that diverges from the reference
// run is still checked on its own terms (its own write log and acknowledgements).
// Two self-checks keep the checker honest: the file-system model behaves as
// documented, and a file system whose directory fsync does nothing is caught.
//
// Replay with SEED=<n>. CRASH_LONG=1 runs longer workloads, four seeds per shape,
// more images per crash point and nested recovery crashes (~10 minutes).
import test from 'tape'
import { createHash } from 'node:crypto'
import { type Engine, encodeBatch, processCounters } from '../hosts/node/index'
import { openEngine, workerJobs } from './util/open-engine'
import { MemFileSystem } from './fs/mem-fs'
import { isCrashError } from './fs/fault-injection'
import { CRASH_MODES, killedProcessImage, powerLossImage } from './fs/crash-images'
import { KIND_VALUE } from '../lib/keys'
import { Random, seedFromEnv } from './util/random'
import { WriteLog, checkPrefix, readAll, abandon, type AckState, type LoggedOp } from './util/crash-model'

const seed = seedFromEnv()
const LONG = process.env.CRASH_LONG === '1'

const LOC = '/db'

interface WorkloadSpec {
  name: string
  options: Record<string, unknown>
  steps: number
  keys: number
  /** Ops per batch write: [min, max]. */
  batch: [number, number]
  /** Value padding: up to this many bytes. */
  pad: number
  /** Power-loss images per crash point (plus one killed-process image). */
  powerImages: number
}

// Tiny buffers: every few writes rotate the log and flush; L0 compactions follow.
const TINY = {
  writeBufferSize: 1536,
  blockSize: 256,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  level0CompactionTrigger: 2,
  level0StopWritesTrigger: 6,
  cacheSize: 4096
}

const WORKLOADS: WorkloadSpec[] = [
  { name: 'tiny buffers', options: TINY, steps: 110, keys: 48, batch: [2, 8], pad: 70, powerImages: 5 },
  {
    name: 'tiny buffers, one frozen memtable, no filters',
    options: { ...TINY, writeBufferSize: 1024, targetFileSize: 1024, maxImmutableMemtables: 1, bloomBitsPerKey: 0, blockRestartInterval: 2 },
    steps: 110,
    keys: 64,
    batch: [2, 8],
    pad: 50,
    powerImages: 5
  },
  {
    // Compactions of at least 4 x targetFileSize split in two subcompactions
    // (lib/compaction/scheduler.ts): here most of them, on the in-process workers.
    name: 'tiny buffers, subcompactions',
    options: { ...TINY, targetFileSize: 256, subcompactions: true },
    steps: 80,
    keys: 48,
    batch: [2, 8],
    pad: 70,
    powerImages: 4
  },
  {
    // Memtables of ~2,700 entries: a flush takes more than one slice of the event
    // loop, so logs rotate and sync writes land while a flush is in progress.
    name: 'multi-slice flushes',
    options: { writeBufferSize: 160 * 1024, blockSize: 1024, targetFileSize: 16 * 1024, maxBytesForLevelBase: 64 * 1024, level0CompactionTrigger: 2 },
    steps: 90,
    keys: 500,
    batch: [40, 120],
    pad: 4,
    powerImages: 3
  }
]

const LONG_CONFIG = { seedsPerWorkload: 4, stepsFactor: 2, extraPowerImages: 3, recoveryCrashEvery: 2, nested: true }
const CONFIG = LONG ? LONG_CONFIG : { seedsPerWorkload: 2, stepsFactor: 1, extraPowerImages: 0, recoveryCrashEvery: 3, nested: false }

interface Stats {
  crashPoints: number
  images: number
  duplicates: number
  byMode: Record<string, number>
  recoveryCrashes: number
  prefixLag: number
  droppedTails: number
}

const stats: Stats = { crashPoints: 0, images: 0, duplicates: 0, byMode: {}, recoveryCrashes: 0, prefixLag: 0, droppedTails: 0 }

// The lock (hosts/node/lock.ts) sleeps with Atomics.wait while a LOCK it finds
// unwritten may still be being written. Every image's LOCK was written by a
// process now gone, and a power loss's image is used after a restart
// (RESTART_MS), so no reopen here has a reason to wait: counted, checked at the end.
let lockWaits = 0
const atomicsWait = Atomics.wait
Atomics.wait = ((...args: [Int32Array, number, number, number?]) => { lockWaits++; return atomicsWait(...args) }) as typeof Atomics.wait

/** The workload: bursts of concurrent writes (group commit), now and then a flush, a compaction or a pause. */
async function workload (fs: MemFileSystem, spec: WorkloadSpec, wseed: number, steps: number, log: WriteLog): Promise<Engine | undefined> {
  const rnd = new Random(wseed)
  let engine: Engine | undefined
  try {
    engine = await openEngine(LOC, spec.options, fs)
    const width = String(spec.keys).length
    const key = (): string => 'k' + String(rnd.int(spec.keys)).padStart(width, '0')
    const value = (w: number, i: number): string => `v${w}.${i}-` + 'x'.repeat(rnd.int(spec.pad + 1))
    const batchShare = spec.batch[0] >= 20 ? 90 : 25
    for (let step = 0; step < steps && !fs.faults.crashed; step++) {
      const r = rnd.int(100)
      if (r < 2) {
        // A clean close and reopen: crash points inside close and a normal open.
        await engine.close()
        engine = undefined
        engine = await openEngine(LOC, spec.options, fs)
      } else if (r < 4) {
        await engine.flushMemTable()
      } else if (r < 6) {
        await engine.compactRange()
      } else if (r < 9) {
        await engine.waitForIdle()
      } else if (r < 15) {
        await new Promise((resolve) => setImmediate(resolve))
      } else {
        const burst = 1 + (rnd.int(3) === 0 ? rnd.int(4) : 0)
        const writes: Array<Promise<boolean>> = []
        for (let b = 0; b < burst; b++) {
          const w = log.writes.length
          const ops: LoggedOp[] = []
          const kind = rnd.int(100)
          if (kind < batchShare) {
            const n = spec.batch[0] + rnd.int(spec.batch[1] - spec.batch[0] + 1)
            for (let i = 0; i < n; i++) ops.push(rnd.int(4) === 0 ? [key(), undefined] : [key(), value(w, i)])
          } else if (kind < batchShare + (100 - batchShare) / 4) {
            ops.push([key(), undefined])
          } else {
            ops.push([key(), value(w, 0)])
          }
          if (w % 12 === 5) {
            // Every 12th write also holds a range delete (what clear() writes), somewhere in its batch.
            const [lo, hi] = [key(), key()].sort()
            ops.splice(rnd.int(ops.length + 1), 0, [lo, undefined, hi + '~'])
          }
          writes.push(log.write(engine, ops, rnd.int(4) === 0))
        }
        const results = await Promise.all(writes)
        if (results.includes(false)) break
      }
    }
  } catch (err) {
    if (!isCrashError(err)) throw err
  }
  return engine
}

function fingerprint (fs: MemFileSystem): string {
  const h = createHash('sha1')
  const names = fs.exists(LOC) ? fs.list(LOC) : []
  for (const n of names) {
    h.update(n + '\0')
    if (n === 'LOCK') continue
    h.update(fs.readSmallFile(`${LOC}/${n}`))
    h.update('\0')
  }
  return h.digest('hex')
}

interface CheckResult {
  ok: boolean
  state?: Map<string, string>
  message: string
  /** State-changing operations the reopen performed (for crash-during-recovery). */
  openOps: number
}

interface Context {
  spec: WorkloadSpec
  log: WriteLog
  required: number
  issued: number
  rnd: Random
}

/** Reopens an image (on a copy), checks the recovered state against the log, then writes to it. */
async function checkImage (image: MemFileSystem, c: Context): Promise<CheckResult> {
  const fs = image.clone()
  let engine: Engine | undefined
  try {
    engine = await openEngine(LOC, c.spec.options, fs)
    const openOps = fs.faults.ops
    if (engine.recovery.dropped.length > 0) stats.droppedTails++
    const got = readAll(engine, c.rnd)
    const verdict = checkPrefix(c.log, got, c.required, c.issued)
    if (!verdict.ok) return { ok: false, message: verdict.message, openOps }
    stats.prefixLag += verdict.prefix - c.required
    // The recovered database must take writes.
    await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('after-recovery'), value: Buffer.from('yes') }]), true)
    if (engine.get(Buffer.from('after-recovery'))?.toString() !== 'yes') return { ok: false, message: 'a write after recovery is not readable', openOps }
    await engine.close()
    engine = undefined
    return { ok: true, state: got, message: '', openOps }
  } catch (err) {
    return { ok: false, message: `reopen failed: ${(err as Error).stack ?? String(err)}`, openOps: fs.faults.ops }
  } finally {
    if (engine) { try { await engine.close() } catch { abandon(engine) } }
  }
}

/**
 * Crashes a reopen of `image` at a random operation, then reopens the resulting
 * images (a killed process, a power loss): each must recover `expected`, the
 * state the uninterrupted reopen recovered. Returns an error message or ''.
 */
async function crashDuringRecovery (image: MemFileSystem, openOps: number, expected: Map<string, string>, c: Context, depth: number): Promise<string> {
  if (openOps <= 0) return ''
  const fs = image.clone()
  const k = c.rnd.int(openOps)
  fs.faults.crashAt = fs.faults.ops + k
  let engine: Engine | undefined
  try {
    engine = await openEngine(LOC, c.spec.options, fs)
  } catch (err) {
    if (!isCrashError(err)) return `reopen crashed at op ${k} failed with a non-crash error: ${(err as Error).stack}`
  }
  if (engine) {
    // The open finished before the crash point (the reopen is not deterministic).
    abandon(engine)
    return ''
  }
  if (!fs.faults.crashed) return `recovery crash at op ${k} did not happen`
  stats.recoveryCrashes++
  const mode = CRASH_MODES[c.rnd.int(CRASH_MODES.length)]
  const images: Array<[string, MemFileSystem]> = [['kill', killedProcessImage(fs)], [mode, powerLossImage(fs, c.rnd, mode)]]
  for (const [m, img] of images) {
    stats.images++
    const label = m === 'kill' ? 'recovery-kill' : 'recovery-power'
    stats.byMode[label] = (stats.byMode[label] ?? 0) + 1
    const r = await checkImage(img, c)
    if (!r.ok) return `after a crash at op ${k} of recovery (${m} image): ${r.message}`
    if (!sameState(r.state!, expected)) {
      return `after a crash at op ${k} of recovery (${m} image): recovered a different state than the uninterrupted recovery (${r.state!.size} vs ${expected.size} keys)`
    }
    if (depth > 0) {
      const nested = await crashDuringRecovery(img, r.openOps, expected, c, depth - 1)
      if (nested) return 'nested: ' + nested
    }
  }
  return ''
}

function sameState (a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false
  for (const [k, v] of a) if (b.get(k) !== v) return false
  return true
}

test('the in-memory file system models power loss as documented', async (t) => {
  const rnd = new Random(seed ^ 0x1234567)
  const bytes = (fs: MemFileSystem, p: string): string => fs.exists(p) ? fs.readSmallFile(p).toString('latin1') : '(missing)'
  const base = new MemFileSystem()
  base.mkdirp('/d')
  const f = base.openWrite('/d/a')
  f.append(Buffer.from('synced|'))
  f.sync()
  base.syncDir('/d')
  f.append(Buffer.from('unsynced-1|'))
  f.append(Buffer.from('unsynced-2|'))
  const g = base.openWrite('/d/new')
  g.append(Buffer.from('new'))
  g.sync()
  base.rename('/d/a', '/d/renamed')

  t.is(bytes(killedProcessImage(base), '/d/renamed'), 'synced|unsynced-1|unsynced-2|', 'killed process: everything written survives')
  t.is(bytes(killedProcessImage(base), '/d/new'), 'new', 'killed process: unsynced creates survive')
  const dropped = powerLossImage(base, rnd, 'drop')
  t.is(bytes(dropped, '/d/a'), 'synced|', 'drop: only synced data, under the durable name')
  t.is(bytes(dropped, '/d/new'), '(missing)', 'drop: an unsynced create is gone even though the file was synced')

  const seen = new Set<string>()
  let hole = false
  for (let i = 0; i < 400; i++) {
    const img = powerLossImage(base, rnd, (['subset', 'torn', 'zeros', 'garbage', 'mixed'] as const)[i % 5])
    const a = img.exists('/d/a')
    const r = img.exists('/d/renamed')
    if (a === r) { t.fail(`image ${i}: the renamed file is under ${a ? 'both names' : 'neither name'}`); break }
    const content = bytes(img, a ? '/d/a' : '/d/renamed')
    if (!content.startsWith('synced|')) { t.fail(`image ${i}: synced data lost: ${JSON.stringify(content)}`); break }
    seen.add(a ? 'old name' : 'new name')
    seen.add(img.exists('/d/new') ? 'create kept' : 'create reverted')
    if (content.length > 7 && content.length < 29) seen.add('partial')
    if (content.includes('\0')) seen.add('zeros')
    if (/\0+unsynced-2\|$/.test(content) || /^synced\|\0+.*unsynced-2/.test(content)) hole = true
  }
  t.deepEqual([...seen].sort(), ['create kept', 'create reverted', 'new name', 'old name', 'partial', 'zeros'], 'power loss: renames and creates kept or reverted, appends partly kept')
  t.ok(hole, 'power loss: a later append can survive while an earlier one is lost (a zero-filled hole)')

  // Crash points freeze the state; faults fire on the nth matching call.
  const c = new MemFileSystem()
  c.mkdirp('/d')
  c.faults.crashAt = c.faults.ops + 2
  const h = c.openWrite('/d/x')
  h.append(Buffer.from('1'))
  t.throws(() => h.append(Buffer.from('2')), /simulated crash/, 'the operation at the crash point throws CrashError')
  t.throws(() => c.list('/d'), /crash/, 'every later call throws too')
  t.is(bytes(killedProcessImage(c), '/d/x'), '1', 'the state is frozen before the crash point')
  const e = new MemFileSystem()
  e.mkdirp('/d')
  const fault = e.faults.inject({ op: 'append', nth: 2, code: 'ENOSPC' })
  const w = e.openWrite('/d/y')
  w.append(Buffer.from('a'))
  t.throws(() => w.append(Buffer.from('b')), (err: any) => err.code === 'ENOSPC', 'the second append fails with ENOSPC')
  w.append(Buffer.from('c'))
  t.is(fault.hits, 1, 'and only the second')
  t.is(bytes(e, '/d/y'), 'ac', 'a failed append writes nothing')
})

test('the in-memory file system: preallocated files write zeros ahead, overwrite them, and trim on close', async (t) => {
  const rnd = new Random(seed ^ 0x2468ace)
  const bytes = (fs: MemFileSystem, p: string): string => fs.exists(p) ? fs.readSmallFile(p).toString('latin1') : '(missing)'
  const fs = new MemFileSystem({ preallocateStep: 16 })
  fs.mkdirp('/d')
  const f = fs.openWrite('/d/log', { preallocate: true })
  f.append(Buffer.from('AAAAAA'))
  f.sync()
  fs.syncDir('/d')
  t.is(f.size(), 6, 'size() counts the data only')
  t.is(bytes(fs, '/d/log'), 'AAAAAA' + '\0'.repeat(10), 'the file holds zeros up to the step ahead of the data (all synced)')
  f.append(Buffer.from('BBBBBBBB')) // overwrites synced zeros, in place
  f.append(Buffer.from('CCCC')) // crosses the step: 16 more zeros, then the data
  t.is(bytes(fs, '/d/log'), 'AAAAAABBBBBBBBCCCC' + '\0'.repeat(14), 'zeros ahead again after crossing a step')
  t.is(powerLossImage(fs, rnd, 'drop').readSmallFile('/d/log').toString('latin1'), 'AAAAAA' + '\0'.repeat(10), 'drop: the synced zeros stay where the lost data was')
  const seen = new Set<string>()
  for (let i = 0; i < 400; i++) {
    const content = bytes(powerLossImage(fs, rnd, (['subset', 'torn', 'zeros', 'garbage', 'mixed'] as const)[i % 5]), '/d/log')
    if (!content.startsWith('AAAAAA') || content.length < 16) { t.fail(`image ${i}: synced data or synced zeros lost: ${JSON.stringify(content)}`); break }
    const b = content.slice(6, 14)
    if (b === '\0'.repeat(8)) seen.add('overwrite lost: zeros under it')
    if (b === 'BBBBBBBB') seen.add('overwrite kept')
    if (/^AAAAAA\0{8}CCCC/.test(content)) seen.add('later overwrite kept, earlier lost')
    if (content.length === 16) seen.add('second step lost')
    if (content.length === 32) seen.add('second step kept')
  }
  t.deepEqual([...seen].sort(), ['later overwrite kept, earlier lost', 'overwrite kept', 'overwrite lost: zeros under it', 'second step kept', 'second step lost'],
    'power loss: each zero extension and each overwrite is kept or lost on its own')
  const before = fs.faults.ops
  f.close()
  t.is(fs.faults.ops, before + 1, 'close() trims: a crash point of its own')
  t.is(bytes(fs, '/d/log'), 'AAAAAABBBBBBBBCCCC', 'close() trims the zeros')
  t.is(bytes(killedProcessImage(fs), '/d/log'), 'AAAAAABBBBBBBBCCCC', 'killed process: the trim survives')
  let reverted = 0
  for (let i = 0; i < 100; i++) if (bytes(powerLossImage(fs, rnd, 'mixed'), '/d/log').endsWith('\0')) reverted++
  t.ok(reverted > 0, `power loss: the unsynced trim may not have reached the disk (${reverted} of 100 images end in zeros)`)
  const g = fs.openWrite('/d/other', { preallocate: true })
  g.append(Buffer.from('x'))
  await g.closeAsync!()
  t.is(bytes(fs, '/d/other'), 'x', 'closeAsync() trims too')
  const plain = fs.openWrite('/d/plain')
  plain.append(Buffer.from('p'))
  t.is(bytes(fs, '/d/plain'), 'p', 'without the option nothing is written ahead')
})

test('the in-memory file system: syncDirAsync makes durable what was recorded when it was called', async (t) => {
  const rnd = new Random(seed ^ 0x7654321)
  const fs = new MemFileSystem()
  fs.mkdirp('/d')
  fs.openWrite('/d/before').close()
  const done = fs.syncDirAsync('/d')
  fs.openWrite('/d/after').close()
  t.is(powerLossImage(fs, rnd, 'drop').exists('/d/before'), false, 'not durable before it completes')
  await done
  const img = powerLossImage(fs, rnd, 'drop')
  t.ok(img.exists('/d/before'), 'an entry created before the call is durable once it completes')
  t.notOk(img.exists('/d/after'), 'an entry created after the call is not')
})

/**
 * Even seed variants run flushes and compactions as by default: on workers (in
 * process, over the in-memory file system, through the worker's job host; see
 * test/util/open-engine.ts); odd ones on the event loop (compactionWorker: false).
 */
function onWorkers (s: number): boolean {
  return s % 2 === 0
}

WORKLOADS.forEach((base, w) => {
  for (let s = 0; s < CONFIG.seedsPerWorkload; s++) {
    const spec = onWorkers(s) ? base : { ...base, options: { ...base.options, compactionWorker: false } }
    test(`crash sweep: ${spec.name} (seed variant ${s}, ${onWorkers(s) ? 'jobs on workers' : 'jobs on the event loop'})`, async (t) => {
      const wseed = (seed + w * 7919 + s * 104729) >>> 0
      const steps = spec.steps * CONFIG.stepsFactor
      const powerImages = spec.powerImages + CONFIG.extraPowerImages
      const t0 = Date.now()

      // A reference run without a crash: how many operations there are, and their trace.
      const ref = new MemFileSystem()
      ref.faults.trace = []
      const refLog = new WriteLog()
      const before = { ...processCounters }
      const refEngine = (await workload(ref, spec, wseed, steps, refLog))!
      await refEngine.close()
      const total = ref.faults.ops
      const kinds: Record<string, number> = {}
      for (const op of ref.faults.trace) { const kind = op.split(' ')[0]; kinds[kind] = (kinds[kind] ?? 0) + 1 }
      const count = (re: RegExp): number => ref.faults.trace!.filter((x) => re.test(x)).length
      const flushes = processCounters.flushes - before.flushes
      const compactions = processCounters.compactions - before.compactions + processCounters.trivialMoves - before.trivialMoves
      const jobsOnWorkers = workerJobs(ref)
      const rotations = count(/^openWrite \d+\.log$/)
      const manifestEdits = count(/^append MANIFEST/)
      t.comment(`seed ${wseed}: ${refLog.writes.length} writes (${refLog.writes.filter((x) => x.sync).length} sync), ${total} crash points: ${JSON.stringify(kinds)}`)
      t.comment(`reference run: ${rotations} new logs, ${flushes} flushes, ${compactions} compactions (incl. trivial moves), ${jobsOnWorkers} jobs handed to the workers, ${manifestEdits} manifest records, ${count(/^rename /)} renames`)
      const rangeDeletes = refLog.writes.filter((x) => x.ops.some((o) => o.length === 3)).length
      t.ok(rangeDeletes > 0, `the workload writes range deletes (${rangeDeletes})`)
      t.ok(rotations > 2 && flushes > 0 && compactions > 0 && manifestEdits > 2, 'the workload rotates logs, flushes, compacts and writes the manifest')
      if (onWorkers(s)) t.ok(jobsOnWorkers > 0, `flushes and compactions went through the worker job host (${jobsOnWorkers} jobs)`)
      else t.is(jobsOnWorkers, 0, 'flushes and compactions ran on the event loop')

      let failures = 0
      let nondeterministic = 0
      let unreached = 0
      let images = 0
      const rnd = new Random(wseed ^ 0x5bd1e995)
      for (let k = 0; k < total && failures < 3; k++) {
        const fs = new MemFileSystem()
        fs.faults.trace = []
        const log = new WriteLog()
        let ack: AckState | undefined
        fs.faults.crashAt = k
        fs.faults.onCrash = () => { ack = log.ackState() }
        const engine = await workload(fs, spec, wseed, steps, log)
        abandon(engine)
        if (!fs.faults.crashed || ack === undefined) {
          // The run finished in fewer operations than the reference run (the
          // engine's time-sliced yielding makes runs differ slightly).
          unreached++
          continue
        }
        if (fs.faults.trace.join('\n') !== ref.faults.trace.slice(0, k).join('\n')) nondeterministic++
        stats.crashPoints++
        const a = ack
        const candidates: Array<[string, MemFileSystem, number]> = [['kill', killedProcessImage(fs), a.ackedPrefix]]
        for (let j = 0; j < powerImages; j++) {
          const mode = CRASH_MODES[(k * powerImages + j) % CRASH_MODES.length]
          candidates.push([mode, powerLossImage(fs, rnd, mode), a.syncedPrefix])
        }
        const seen = new Set<string>()
        for (let i = 0; i < candidates.length && failures < 3; i++) {
          const [mode, image, required] = candidates[i]
          const fp = fingerprint(image) + ':' + required
          if (seen.has(fp)) { stats.duplicates++; continue }
          seen.add(fp)
          stats.images++
          images++
          stats.byMode[mode] = (stats.byMode[mode] ?? 0) + 1
          const where = `${spec.name}: crash point ${k}/${total} (before "${ref.faults.trace[k]}"), ${mode} image, acked ${a.ackedPrefix} synced ${a.syncedPrefix} issued ${a.issued}; replay with SEED=${seed}`
          const c: Context = { spec, log, required, issued: a.issued, rnd }
          const r = await checkImage(image, c)
          if (!r.ok) {
            failures++
            t.fail(`${where}: ${r.message}`)
            t.comment(`image files: ${image.describe(LOC)}`)
            continue
          }
          if (i % CONFIG.recoveryCrashEvery === 0) {
            const msg = await crashDuringRecovery(image, r.openOps, r.state!, c, CONFIG.nested ? 1 : 0)
            if (msg) {
              failures++
              t.fail(`${where}: ${msg}`)
              t.comment(`image files: ${image.describe(LOC)}`)
            }
          }
        }
      }
      if (nondeterministic > 0 || unreached > 0) t.comment(`${nondeterministic} crash runs diverged from the reference trace before their crash point (each still checked on its own terms); ${unreached} ended before reaching theirs`)
      t.is(failures, 0, `every crash image recovered a valid prefix (${total} crash points, ${images} distinct images, ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
    })
  }
})

test('crash sweep totals', (t) => {
  const main = stats.images - (stats.byMode['recovery-kill'] ?? 0) - (stats.byMode['recovery-power'] ?? 0)
  t.comment(`crash points ${stats.crashPoints}; images checked ${stats.images}: ${main} at workload crash points (+${stats.duplicates} duplicates skipped) and ${stats.images - main} after ${stats.recoveryCrashes} crashes during recovery`)
  t.comment(`images by mode: ${JSON.stringify(stats.byMode)}`)
  t.comment(`reopens that dropped a torn or damaged log tail: ${stats.droppedTails}; writes recovered beyond the required prefix (sum): ${stats.prefixLag}`)
  const want = LONG ? 20000 : 4000
  t.ok(stats.images >= want, `at least ${want} crash images checked (${stats.images})`)
  t.is(lockWaits, 0, 'no reopen waited for its LOCK to be written (a LOCK whose bytes a power loss took is stale at once)')
  t.end()
})

// The checker must not be vacuous: on a file system whose directory fsync does
// nothing (new files never become durable), some power-loss image must fail.
class NoDirSyncFileSystem extends MemFileSystem {
  override syncDir (p: string): void {
    this.faults.before('syncDir', p)
  }
}

test('self-check: the sweep notices a file system whose directory fsync is a no-op', async (t) => {
  const spec = WORKLOADS[0]
  const wseed = seed ^ 0x2545f491
  const rnd = new Random(wseed)
  let caught = 0
  let tried = 0
  for (let k = 20; k < 200 && caught === 0; k += 3) {
    const fs = new NoDirSyncFileSystem()
    const log = new WriteLog()
    let ack: AckState | undefined
    fs.faults.crashAt = k
    fs.faults.onCrash = () => { ack = log.ackState() }
    abandon(await workload(fs, spec, wseed, spec.steps, log))
    if (!ack) break
    for (const mode of ['drop', 'mixed'] as const) {
      tried++
      const r = await checkImage(powerLossImage(fs, rnd, mode), { spec, log, required: ack.syncedPrefix, issued: ack.issued, rnd })
      if (!r.ok) caught++
    }
  }
  t.ok(caught > 0, `a lost-file failure was detected (${caught} of ${tried} images failed)`)
})
