// Read-only opens that follow a writer (lib/follower.ts): they take no lock and
// change no file; writes fail; refresh() moves forward while snapshots and
// iterators keep their view; and, with real processes, readers refreshing in a
// loop see only prefixes of the writer's history, never older than the last,
// never missing what the writer had acknowledged before the refresh began,
// while the writer is SIGKILLed and restarted. The run prints the readers' lag
// (writer's acknowledgement to reader's visibility). READERS_SOAK_MS=<ms> runs
// the process test longer; SEED=<n> replays.
import test from 'tape'
import { createHash } from 'node:crypto'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { type ChildProcess, fork } from 'node:child_process'
import { LsmLevel } from '../index'
import { Engine } from '../hosts/node/index'
import { entryValue } from '../lib/iterators/db-iterator'
import { nodeFileSystem } from '../hosts/node/node-fs'
import type { FileSystem } from '../lib/fs/fs'
import { isLevelError } from '../lib/errors'
import { seedFromEnv, Random } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

/** Every file's name, size and SHA-256, and the directory's own entries. */
function fingerprint (dir: string): string {
  return nodeFs.readdirSync(dir).sort().map((name) => {
    const data = nodeFs.readFileSync(path.join(dir, name))
    return `${name} ${data.length} ${createHash('sha256').update(data).digest('hex')}`
  }).join('\n')
}

async function fill (dir: string, from: number, count: number, options: { flushOnClose?: boolean } = {}): Promise<void> {
  const db = new LsmLevel(dir, { writeBufferSize: 4096, ...options })
  await db.open()
  for (let i = from; i < from + count; i++) await db.put('k' + String(i).padStart(5, '0'), 'v' + i)
  await db.close()
}

test('a read-only open takes no lock and leaves every file as it was', async (t) => {
  const dir = tempDir()
  await fill(dir, 0, 500)
  const before = fingerprint(dir)
  const db = new LsmLevel(dir, { readOnly: true })
  await db.open()
  // A writer can open the directory meanwhile: the reader holds no LOCK.
  // (An open after a clean close writes nothing until its first write: the delete of a missing key is one.)
  const writer = new LsmLevel(dir)
  await writer.open()
  await writer.del('absent')
  await writer.close()
  t.is(await db.get('k00042'), 'v42', 'reads')
  t.is((await db.keys().all()).length, 500, 'iterates')
  await db.close()
  // The writer above changed files; open read-only once more, alone.
  const between = fingerprint(dir)
  const again = new LsmLevel(dir, { readOnly: true })
  await again.open()
  const snapshot = again.snapshot()
  t.is(again.getSync('k00007'), 'v7', 'getSync')
  t.is((await again.values({ snapshot }).all()).length, 500, 'snapshot reads')
  await again.refresh()
  again.stats()
  await snapshot.close()
  await again.close()
  t.is(fingerprint(dir), between, 'no file created, changed or removed by a read-only open')
  t.not(before, between, '(the writer, by contrast, changed files)')
})

test('a read-only open of a missing database fails and creates nothing', async (t) => {
  const dir = path.join(tempDir(), 'missing')
  const db = new LsmLevel(dir, { readOnly: true })
  try {
    await db.open()
    t.fail('opened')
  } catch (err) {
    t.ok(isLevelError((err as Error & { cause?: unknown }).cause ?? err), `fails (${String((err as Error & { cause?: Error }).cause?.message)})`)
  }
  t.notOk(nodeFs.existsSync(dir), 'the directory was not created')
})

test('writes, clear, flush, compactRange and checkpoint fail with LEVEL_READ_ONLY; supports says read-only', async (t) => {
  const dir = tempDir()
  await fill(dir, 0, 10)
  const db = new LsmLevel(dir, { readOnly: true })
  await db.open()
  t.is((db.supports as unknown as { readOnly: boolean }).readOnly, true, 'supports.readOnly')
  t.is(db.supports.additionalMethods.refresh, true, 'supports.additionalMethods.refresh')
  const attempts: Array<[string, () => Promise<unknown>]> = [
    ['put', () => db.put('a', 'b')],
    ['del', () => db.del('k00001')],
    ['batch', () => db.batch([{ type: 'put', key: 'a', value: 'b' }])],
    ['chained batch', () => db.batch().put('a', 'b').write()],
    ['clear', () => db.clear()],
    ['clear with a limit', () => db.clear({ limit: 2 })],
    ['flush', () => db.flush()],
    ['compactRange', () => db.compactRange()],
    ['checkpoint', () => db.checkpoint(path.join(tempDir(), 'cp'))]
  ]
  for (const [what, run] of attempts) {
    try {
      await run()
      t.fail(`${what} succeeded`)
    } catch (err) {
      const e = err as Error & { cause?: Error }
      t.ok(isLevelError(e, 'LEVEL_READ_ONLY') || isLevelError(e.cause, 'LEVEL_READ_ONLY'), `${what}: LEVEL_READ_ONLY`)
    }
  }
  t.is(await db.get('k00001'), 'v1', 'the data is unchanged')
  await db.close()
  const writer = new LsmLevel(dir)
  await writer.open()
  try {
    await writer.refresh()
    t.fail('refresh on a writer succeeded')
  } catch (err) {
    t.ok(isLevelError(err, 'LEVEL_NOT_SUPPORTED'), 'refresh() on a writable open: LEVEL_NOT_SUPPORTED')
  }
  await writer.close()
})

test('a manifest read before a flush retired its live log is not published with the log missing', async (t) => {
  // The directory a reader sees when it reads the manifest, then the writer
  // flushes the live log into a table and deletes the log, then the reader lists
  // the directory: the old manifest (live log N, without the new table) and no
  // log N. Published as is, the log's writes would be a hole; the reader must
  // take it for a writer that moved on and read the newer manifest instead.
  const dir = tempDir()
  // The last writes stay in the live log at close, for the reopen to flush.
  await fill(dir, 0, 50, { flushOnClose: false })
  const current = nodeFs.readFileSync(path.join(dir, 'CURRENT'))
  const oldManifest = current.toString().trim()
  const oldBytes = nodeFs.readFileSync(path.join(dir, oldManifest))
  const oldLogs = nodeFs.readdirSync(dir).filter((n) => n.endsWith('.log') && nodeFs.statSync(path.join(dir, n)).size > 0)
  const writer = new LsmLevel(dir)
  await writer.open()
  await writer.engine.waitForIdle() // the replayed log's flush (after open, lib/recovery.ts)
  await writer.close()
  // The reopen appended its edits to that manifest, or started a new one.
  t.ok(oldLogs.length > 0 && oldLogs.every((n) => !nodeFs.existsSync(path.join(dir, n))), `(the reopen's flush retired the live log: ${oldLogs.join(', ')})`)
  nodeFs.writeFileSync(path.join(dir, oldManifest), oldBytes)
  nodeFs.writeFileSync(path.join(dir, 'CURRENT'), current)
  const db = new LsmLevel(dir, { readOnly: true })
  try {
    await db.open()
    t.fail(`opened, showing ${(await db.keys().all()).length} of the 50 keys`)
    await db.close()
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause
    t.ok(isLevelError(cause, 'LEVEL_IO_ERROR'), `no state published: ${String(cause?.message)}`)
  }
})

/** The node file system, with every call that could change the directory recorded (and refused). */
function recordingFs (mutations: string[]): FileSystem {
  const reads = new Set(['openRead', 'readSmallFile', 'exists', 'list', 'modifiedMs'])
  return new Proxy(nodeFileSystem, {
    get (target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function' || reads.has(String(prop))) return typeof value === 'function' ? value.bind(target) : value
      return (...args: unknown[]) => {
        mutations.push(`${String(prop)} ${String(args[0])}`)
        throw new Error(`read-only open called ${String(prop)}`)
      }
    }
  })
}

test('a reader follows an in-process writer through flushes and compactions, calling nothing that writes', async (t) => {
  const dir = tempDir()
  const writer = await Engine.open(dir, { writeBufferSize: 4096, targetFileSize: 4096, maxBytesForLevelBase: 16 * 1024, compactionWorker: false })
  const put = async (i: number, value: string): Promise<void> => {
    await writer.write(Buffer.from(encodePut('k' + String(i % 700).padStart(5, '0'), value)), false)
  }
  for (let i = 0; i < 300; i++) await put(i, 'a' + i)
  const mutations: string[] = []
  const reader = await Engine.open(dir, { readOnly: true }, recordingFs(mutations))
  t.is(reader.lastSequence, writer.lastSequence, 'opens at the writer\'s state')
  const snapshot = reader.snapshot()
  const it = reader.iterator({})
  const rnd = new Random(seed)
  let last = reader.lastSequence
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 100; i++) await put(rnd.int(700), `b${round}-${i}-` + 'x'.repeat(rnd.int(100)))
    if (round % 10 === 9) await writer.compactRange()
    await reader.refresh()
    t.ok(reader.lastSequence >= last, 'never goes back')
    last = reader.lastSequence
  }
  await writer.waitForIdle()
  await reader.refresh()
  t.is(reader.lastSequence, writer.lastSequence, 'reaches the writer\'s state')
  let same = true
  for (let i = 0; i < 700; i++) {
    const key = Buffer.from('k' + String(i).padStart(5, '0'))
    if (reader.get(key)?.toString() !== writer.get(key)?.toString()) same = false
  }
  t.ok(same, 'reads agree with the writer\'s')
  t.ok(writer.counters.compactions > 0 && writer.counters.flushes > 3, `the writer flushed (${writer.counters.flushes}) and compacted (${writer.counters.compactions}) meanwhile`)
  // The snapshot and iterator from before: the first 300 puts, as they were.
  let seen = 0
  let old = true
  while (it.step(Infinity) === 1) {
    seen++
    if (!entryValue(it).toString().startsWith('a')) old = false
  }
  it.close()
  t.is(seen, 300, 'an iterator opened before keeps its view (all keys) after tables it read were deleted')
  t.ok(old, 'and its values')
  t.is(reader.get(Buffer.from('k00005'), snapshot)?.toString(), 'a5', 'a snapshot keeps its view')
  reader.releaseSnapshot(snapshot)
  await reader.close()
  await writer.close()
  t.same(mutations, [], 'the reader called no file-system method that changes anything')
})

test('a read-only open hands its logs\' memtables over (a multiProcess takeover) and stops following; resumed, it follows again from the logs\' start', async (t) => {
  const dir = tempDir()
  const writer = await Engine.open(dir, { compactionWorker: false })
  const put = async (i: number): Promise<void> => {
    await writer.write(Buffer.from(encodePut('k' + String(i).padStart(5, '0'), 'v' + i)), false)
  }
  for (let i = 0; i < 10; i++) await put(i)
  const reader = await Engine.open(dir, { readOnly: true, refreshIntervalMs: 0 })
  await put(10)
  const prefixes = reader.handOver()
  t.same(prefixes.map((p) => ({ records: p.records, firstSeq: p.firstSeq, nextSeq: p.nextSeq })), [{ records: 11, firstSeq: 1, nextSeq: 12 }], 'one log, read to its end first: its 11 records')
  t.is(prefixes[0].mem.entryCount(), 11, 'in the memtable handed over')
  t.same(reader.handOver(), [], 'handed over once only')
  await put(11)
  t.is(await reader.refresh(), false, 'handed over, it does not follow')
  t.is(reader.get(Buffer.from('k00011')), undefined, 'nor read what the writer wrote since')
  t.is(reader.get(Buffer.from('k00010'))?.toString(), 'v10', 'it reads the state it handed over')
  reader.resumeFollowing()
  t.is(await reader.refresh(), true, 'resumed, it follows again')
  t.is(reader.get(Buffer.from('k00011'))?.toString(), 'v11', 'the new write')
  t.is(reader.get(Buffer.from('k00000'))?.toString(), 'v0', 'and the first')
  const again = reader.handOver()
  t.is(again[0].records, 12, 'the logs were read anew from their start into a memtable of its own')
  t.not(again[0].mem, prefixes[0].mem, 'not the one it handed over')
  await reader.close()
  await writer.close()
})

// A read without a snapshot that continues on a later turn (getMany, has, a
// get past the turn budget) reads at a point taken before it waited: read-only,
// that point must pin its version, or a refresh in between can leave it with
// tables the writer has deleted.
test('a read-only point in time keeps its tables across a refresh that drops them', async (t) => {
  const dir = tempDir()
  const writer = await Engine.open(dir, { writeBufferSize: 4096, targetFileSize: 4096, compactionWorker: false })
  for (let i = 0; i < 400; i++) await writer.write(encodePut('k' + String(i).padStart(5, '0'), 'old' + i), false)
  await writer.compactRange()
  const reader = await Engine.open(dir, { readOnly: true })
  const at = reader.pointInTime()
  for (let i = 0; i < 400; i++) await writer.write(encodePut('k' + String(i).padStart(5, '0'), 'new' + i), false)
  await writer.compactRange()
  await writer.waitForIdle()
  await reader.refresh()
  let wrong = 0
  let failed = ''
  for (let i = 0; i < 400; i += 7) {
    try {
      if (reader.get(Buffer.from('k' + String(i).padStart(5, '0')), at)?.toString() !== 'old' + i) wrong++
    } catch (err) {
      failed ||= (err as Error).message
    }
  }
  t.is(failed, '', 'reads at the point taken before the refresh do not fail')
  t.is(wrong, 0, 'and see the values as they were')
  reader.releasePointInTime(at)
  t.is(reader.get(Buffer.from('k00007'))?.toString(), 'new7', 'after the release, reads see the refreshed state')
  await reader.close()
  await writer.close()
})

function encodePut (key: string, value: string): Buffer {
  // lib/wal/batch.ts encodes; the engine takes the buffer over.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { encodeBatch } = require('../lib/wal/batch') as typeof import('../lib/wal/batch')
  return encodeBatch([{ kind: 1, key: Buffer.from(key), value: Buffer.from(value) }])
}

// ---------------------------------------------------------------- processes

const DURATION_MS = Number(process.env.READERS_SOAK_MS ?? 20000)
/** How long the readers may take to show the writer's last acknowledged op once it is dead for good. */
const CATCH_UP_MS = 60000
const LOOP_READERS = 3

interface Reader {
  /** Resolves once the reader has opened the database. */
  ready: Promise<void>
  /** The newest marker it has printed a state for (-2 before any). */
  marker: () => number
  /** Asks it to stop after its current refresh. */
  stop: () => void
  result: Promise<ReaderResult>
}
interface ReaderResult { lines: string[], code: number | null, mode: string }

function lines (child: ChildProcess, onLine: (line: string) => void): void {
  let buf = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString()
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, nl))
      buf = buf.slice(nl + 1)
    }
  })
}

function startWriter (dir: string, acks: Map<number, number>): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'fixtures', 'readers-writer.js'), [dir, String(seed)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
    lines(child, (line) => {
      if (line === 'ready') resolve(child)
      const m = /^ack (\d+) ([\d.]+)$/.exec(line)
      if (m) acks.set(Number(m[1]), Number(m[2]))
    })
    child.on('exit', (code, signal) => { if (signal === null) reject(new Error(`writer exited with ${code}`)) })
  })
}

/**
 * A reader process. It runs until stop() (or `boundMs`, a bound for a test
 * gone wrong), so that how long it takes to start under load changes only how
 * long the test runs, not what the reader sees.
 */
function startReader (dir: string, mode: string, boundMs: number): Reader {
  const child = fork(path.join(__dirname, 'fixtures', 'readers-reader.js'), [dir, String(seed), String(boundMs), mode], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const out: string[] = []
  let marker = -2
  let onReady!: () => void
  const ready = new Promise<void>((resolve) => { onReady = resolve })
  lines(child, (line) => {
    out.push(line)
    if (line === 'ready') onReady()
    if (line.startsWith('seen ')) marker = Number(line.split(' ')[3])
  })
  const result = new Promise<ReaderResult>((resolve) => child.on('exit', (code) => { onReady(); resolve({ lines: out, code, mode }) }))
  return { ready, marker: () => marker, stop: () => { if (child.connected) child.send('stop') }, result }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function percentile (sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

test('reader processes follow a writer process that is killed and restarted', async (t) => {
  const dir = tempDir()
  const acks = new Map<number, number>()
  const rnd = new Random(seed ^ 0x5eed)
  let writer = await startWriter(dir, acks)
  const bound = DURATION_MS + CATCH_UP_MS + 60000
  const readers = [
    ...Array.from({ length: LOOP_READERS }, () => startReader(dir, 'loop', bound)),
    startReader(dir, 'interval:20', bound)
  ]
  // The clock starts once every reader is up (their start takes seconds on a
  // loaded machine). The writer is killed and restarted for DURATION_MS, then
  // killed for good: each reader's refreshes must reach its last write.
  await Promise.all(readers.map(async (r) => await r.ready))
  const started = Date.now()
  const stopAt = started + DURATION_MS
  let kills = 0
  for (;;) {
    await sleep(Math.max(0, Math.min(1500 + rnd.int(2500), stopAt - Date.now())))
    writer.kill('SIGKILL')
    kills++
    await new Promise((resolve) => writer.once('exit', resolve))
    if (Date.now() >= stopAt - 1000) break
    writer = await startWriter(dir, acks)
  }
  const lastAck = Math.max(...acks.keys())
  const caughtUpBy = Date.now() + CATCH_UP_MS
  while (Date.now() < caughtUpBy && readers.some((r) => r.marker() < lastAck)) await sleep(50)
  for (const r of readers) r.stop()
  const results = await Promise.all(readers.map(async (r) => await r.result))
  t.ok(kills >= 2, `the writer was killed ${kills} times; it acknowledged ${lastAck + 1} operations`)
  // Acknowledgement times in op order (ops run one after the other, across restarts).
  const acked = [...acks.entries()].sort((a, b) => a[0] - b[0])
  const loopLags: number[] = []
  const intervalLags: number[] = []
  for (const r of results) {
    const failed = r.lines.filter((l) => l.startsWith('fail'))
    t.same(failed, [], `reader (${r.mode}): no state that is not a prefix, nothing went back, views kept`)
    t.is(r.code, 0, `reader (${r.mode}) exited cleanly`)
    const seen = r.lines.filter((l) => l.startsWith('seen ')).map((l) => l.split(' ').slice(1).map(Number))
    // How many depends on the CPU the readers get (9 to 12 with a browser test beside them, over 20 alone); the checks below are what matter.
    t.ok(seen.length >= 5, `reader (${r.mode}) saw ${seen.length} states (${r.lines.find((l) => l.startsWith('done')) ?? ''})`)
    // Nothing missing: every op acknowledged before a refresh began is in its state.
    let missing = 0
    let a = 0
    for (const [start, , marker] of seen) {
      if (start < 0) continue
      while (a < acked.length && acked[a][1] < start) a++
      if (a > 0 && acked[a - 1][0] > marker) missing++
    }
    t.is(missing, 0, `reader (${r.mode}): no refresh missed an op acknowledged before it began`)
    t.ok(seen.length > 0 && seen[seen.length - 1][2] >= lastAck, `reader (${r.mode}) reached the last acknowledged op (${lastAck})`)
    // Lag: an op's acknowledgement to the end of the first refresh that shows
    // it, for the ops acknowledged once the reader was up (its first state).
    let s = 0
    for (const [op, ackMs] of acked) {
      if (seen.length === 0 || ackMs < seen[0][1]) continue
      while (s < seen.length && seen[s][2] < op) s++
      if (s === seen.length) break
      ;(r.mode === 'loop' ? loopLags : intervalLags).push(Math.max(0, seen[s][1] - ackMs))
    }
  }
  loopLags.sort((x, y) => x - y)
  intervalLags.sort((x, y) => x - y)
  const fmt = (l: number[]): string => `p50 ${percentile(l, 0.5).toFixed(1)} ms, p99 ${percentile(l, 0.99).toFixed(1)} ms (${l.length} ops)`
  console.log(`# lag, refresh() in a loop (${LOOP_READERS} readers): ${fmt(loopLags)}`)
  console.log(`# lag, refreshIntervalMs 20 (1 reader, polled every 1 ms): ${fmt(intervalLags)}`)
  t.ok(loopLags.length > 0 && intervalLags.length > 0, 'lags measured')
})
