// Injected I/O errors (EIO, ENOSPC) on the in-memory file system
// (test/fs/mem-fs.ts): on log appends, log fsyncs (a sync write's, and the one at
// log rotation), new log and table files, table and manifest writes, CURRENT's
// rename, directory fsyncs, and reads (table blocks, the log and manifest at
// recovery). For each:
//   - the error reaches the caller as a LEVEL_* error (LEVEL_IO_ERROR for I/O, LEVEL_STORAGE_FULL for ENOSPC),
//     with the file system's error as its cause;
//   - the failed write is not acknowledged;
//   - after a failed write path (append, fsync, new log, flush, compaction,
//     manifest) the database refuses further writes until reopened, while reads
//     of good data keep working;
//   - nothing acknowledged is lost: after closing, the same file system with the
//     fault gone reopens to a prefix of the write order holding every
//     acknowledged write, and so does a killed-process image taken right after the
//     failure (a power-loss image must hold every acknowledged sync write);
//   - a failing read gives an error, never a wrong value, and the next read works.
// Flushes and compactions run as by default, on workers: in process, through the
// worker thread's job host (test/util/open-engine.ts), so a failure crosses the
// same messages as from a thread; each write-path case runs again with them on
// the event loop (compactionWorker: false). One case fails a flush on the real
// worker thread, over the node file system.
// Replay with SEED=<n>.
import test from 'tape'
import type { Test } from 'tape'
import * as nodeFs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Engine, encodeBatch } from '../hosts/node/index'
import { sharedJobThread } from '../hosts/node/job-thread'
import { openEngine, workerJobs } from './util/open-engine'
import { tableName } from '../lib/filenames'
import { MemFileSystem } from './fs/mem-fs'
import type { FaultSpec } from './fs/fault-injection'
import { killedProcessImage, powerLossImage, type CrashMode } from './fs/crash-images'
import { KIND_VALUE } from '../lib/keys'
import { FOUND, entryKey, entryValue } from '../lib/iterators/db-iterator'
import { Random, seedFromEnv } from './util/random'
import { WriteLog, checkPrefix, readAll } from './util/crash-model'

const seed = seedFromEnv()
const LOC = '/faults'
const OPTIONS = {
  writeBufferSize: 2048,
  blockSize: 256,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  level0CompactionTrigger: 2
}
const CODES = ['EIO', 'ENOSPC'] as const

let casesRun = 0
const readErrors: Array<[string, unknown]> = []
let reopensChecked = 0

function chainHas (err: unknown, code: string): boolean {
  for (let e = err as any, d = 0; e && d < 8; e = e.cause, d++) if (e.code === code) return true
  return false
}

function describe (err: unknown): string {
  const parts: string[] = []
  for (let e = err as any, d = 0; e && d < 8; e = e.cause, d++) parts.push(`${e.code ?? '?'}: ${e.message}`)
  return parts.join(' <- ')
}

/** Checks that `err` is a LEVEL_* error of `code` carrying the injected errno. */
/** The code an injected errno reaches the caller as: a full disk is LEVEL_STORAGE_FULL, other I/O errors LEVEL_IO_ERROR. */
function levelCode (injected: string): string {
  return injected === 'ENOSPC' ? 'LEVEL_STORAGE_FULL' : 'LEVEL_IO_ERROR'
}

function checkError (t: Test, err: unknown, injected: string, what: string, code = levelCode(injected)): void {
  if (err === undefined) { t.fail(`${what}: expected an error, got none`); return }
  t.is((err as any).code, code, `${what}: rejects with ${code} (${describe(err)})`)
  t.ok(chainHas(err, injected), `${what}: the cause carries ${injected}`)
}

async function rejection (p: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    if (typeof p === 'function') await p()
    else await p
  } catch (err) {
    return err
  }
  return undefined
}

const keyOf = (rnd: Random): string => 'key' + String(rnd.int(120)).padStart(4, '0')

/** `n` writes through `log` (some batches, some sync), all awaited. Returns false if one failed. */
async function fill (engine: Engine, log: WriteLog, rnd: Random, n: number, sync?: boolean): Promise<boolean> {
  for (let i = 0; i < n; i++) {
    const w = log.writes.length
    const ops: Array<[string, string | undefined]> = []
    const m = rnd.int(4) === 0 ? 2 + rnd.int(5) : 1
    for (let j = 0; j < m; j++) ops.push(rnd.int(6) === 0 ? [keyOf(rnd), undefined] : [keyOf(rnd), `val-${w}-${j}-` + 'p'.repeat(rnd.int(60))])
    if (!await log.write(engine, ops, sync ?? rnd.int(5) === 0)) return false
  }
  return true
}

/** The engine's visible state must be a prefix holding every acknowledged write. */
function checkReads (t: Test, engine: Engine, log: WriteLog, what: string): void {
  let got: Map<string, string>
  try {
    got = readAll(engine)
  } catch (err) {
    t.fail(`${what}: reads fail after the error: ${describe(err)}`)
    return
  }
  const a = log.ackState()
  const v = checkPrefix(log, got, a.ackedPrefix, a.issued)
  t.ok(v.ok, `${what}: reads of good data still work and see every acknowledged write${v.ok ? '' : ': ' + v.message}`)
}

/** Reopens `fs` (a copy) and checks the recovered state holds every write up to `required`. */
async function checkReopen (t: Test, fs: MemFileSystem, log: WriteLog, required: number, what: string): Promise<void> {
  const copy = fs.clone()
  let engine: Engine | undefined
  try {
    engine = await openEngine(LOC, OPTIONS, copy)
    const v = checkPrefix(log, readAll(engine), required, log.ackState().issued)
    t.ok(v.ok, `${what}: reopened state is a prefix holding the ${required} required writes${v.ok ? ` (it holds ${v.prefix})` : ': ' + v.message}`)
    await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('later'), value: Buffer.from('ok') }]), true)
    t.is(engine.get(Buffer.from('later'))?.toString(), 'ok', `${what}: the reopened database takes writes`)
    reopensChecked++
  } catch (err) {
    t.fail(`${what}: reopen failed: ${describe(err)}`)
  } finally {
    if (engine) await engine.close().catch(() => {})
  }
}

interface PendingImage { what: string, fs: MemFileSystem, required: number }

/**
 * Images a crash right now could leave: a killed process (must hold every
 * acknowledged write) and a power loss (every acknowledged sync write). Checked
 * later, once the engine is closed (its lock is this process's).
 */
function takeImages (fs: MemFileSystem, log: WriteLog, rnd: Random, what: string): PendingImage[] {
  const a = log.ackState()
  const mode: CrashMode = (['drop', 'subset', 'torn', 'mixed'] as const)[rnd.int(4)]
  return [
    { what: `${what}, killed-process image`, fs: killedProcessImage(fs), required: a.ackedPrefix },
    { what: `${what}, power-loss image (${mode})`, fs: powerLossImage(fs, rnd, mode), required: a.syncedPrefix }
  ]
}

async function checkImages (t: Test, images: PendingImage[], log: WriteLog): Promise<void> {
  for (const img of images) await checkReopen(t, img.fs, log, img.required, img.what)
}

/** Closes after a failure, clears the faults and checks the reopened database. */
async function closeAndReopen (t: Test, engine: Engine, fs: MemFileSystem, log: WriteLog, what: string): Promise<void> {
  const closeErr = await rejection(() => engine.close())
  t.is(closeErr, undefined, `${what}: close after the error succeeds${closeErr ? ': ' + describe(closeErr) : ''}`)
  fs.faults.clear()
  await checkReopen(t, fs, log, log.ackState().ackedPrefix, `${what}, after close`)
}

async function openFresh (options: Record<string, unknown> = OPTIONS): Promise<{ fs: MemFileSystem, engine: Engine }> {
  const fs = new MemFileSystem()
  const engine = await openEngine(LOC, options, fs)
  return { fs, engine }
}

// ------------------------------------------------------------------ write path

interface WriteFault {
  name: string
  fault: (code: typeof CODES[number]) => FaultSpec
  /** Drives the engine until the fault fires; returns the error the caller saw. */
  trigger: (engine: Engine, log: WriteLog, rnd: Random) => Promise<unknown>
  /** True if the failure comes from background work (flush or compaction). */
  background?: boolean
  /** Engine options for this case (default OPTIONS). */
  options?: Record<string, unknown>
  /** True if the failing operation is on a table file, which the error must name. */
  onTable?: boolean
}

/** Issues writes until one fails (or gives up); the failed write's error. */
async function writeUntilFailure (engine: Engine, log: WriteLog, rnd: Random, sync: boolean | undefined, limit = 400): Promise<unknown> {
  for (let i = 0; i < limit; i++) {
    if (!await fill(engine, log, rnd, 1, sync)) return log.writes[log.writes.length - 1].error
  }
  return undefined
}

/** Writes (non-sync) and waits for background work until something fails; the error seen. */
async function backgroundUntilFailure (engine: Engine, log: WriteLog, rnd: Random): Promise<unknown> {
  for (let i = 0; i < 200; i++) {
    if (!await fill(engine, log, rnd, 5, false)) return log.writes[log.writes.length - 1].error
    const err = await rejection(engine.waitForIdle())
    if (err) return err
  }
  return undefined
}

/**
 * Bursts of one sync write and two non-sync writes in the same tick (one commit
 * group), then one more in the next tick (a group committed behind it), until
 * a write fails; the failed write's error. Up to 400 bursts: an inline fsync
 * that happens to take over 1 ms (a loaded machine) sends the next 256 to the
 * thread pool, where a fault on the inline one cannot fire.
 */
async function syncWithWritesQueued (e: Engine, l: WriteLog, r: Random): Promise<unknown> {
  for (let i = 0; i < 400; i++) {
    const burst = [
      l.write(e, [[keyOf(r), `burst-${i}-a`]], true),
      l.write(e, [[keyOf(r), `burst-${i}-b`]], false),
      l.write(e, [[keyOf(r), undefined], [keyOf(r), `burst-${i}-c`]], false)
    ]
    await Promise.resolve()
    burst.push(l.write(e, [[keyOf(r), `burst-${i}-d`]], false))
    const ok = await Promise.all(burst)
    if (ok.includes(false)) return l.writes.find((w) => w.failed)?.error
  }
  return undefined
}

const WRITE_FAULTS: WriteFault[] = [
  {
    name: 'log append (write of a non-sync write)',
    fault: (code) => ({ op: 'append', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, false)
  },
  {
    name: 'log append, short write (part of the record reaches the file)',
    fault: (code) => ({ op: 'append', path: /\.log$/, code, partial: true }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, true)
  },
  {
    name: 'log fsync of a sync write, on the event loop (inlineSync)',
    fault: (code) => ({ op: 'sync', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, true)
  },
  {
    name: 'log fsync of a sync write, thread pool (fails when issued)',
    fault: (code) => ({ op: 'syncAsync', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, true),
    options: { ...OPTIONS, inlineSync: false }
  },
  {
    name: 'log fsync of a sync write, thread pool (fails on completion)',
    fault: (code) => ({ op: 'syncDone', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, true),
    options: { ...OPTIONS, inlineSync: false }
  },
  {
    name: 'log fsync at rotation (writes fill the memtable)',
    fault: (code) => ({ op: ['sync', 'syncAsync'], path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, false)
  },
  {
    // Non-sync writes only: the first fsync of a log is the background one
    // halfway to its rotation (Engine.logSyncStep); it acknowledges nothing, but
    // a failure stops the writes all the same.
    name: 'log background fsync halfway to rotation (fails on completion)',
    fault: (code) => ({ op: 'syncDone', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, false)
  },
  {
    name: 'log fsync at rotation (flushMemTable)',
    fault: (code) => ({ op: ['sync', 'syncAsync'], path: /\.log$/, code }),
    trigger: async (e, l, r) => {
      if (!await fill(e, l, r, 3, false)) return l.writes[l.writes.length - 1].error
      // flushMemTable may report it, or (if the retired log is synced off the event
      // loop and the flush made its data durable anyway) the next write must.
      return (await rejection(e.flushMemTable())) ?? await writeUntilFailure(e, l, r, false, 5)
    }
  },
  {
    name: 'log fsync of a sync write with writes queued behind it',
    options: { ...OPTIONS, inlineSync: false },
    fault: (code) => ({ op: 'syncDone', path: /\.log$/, code }),
    trigger: syncWithWritesQueued
  },
  {
    name: 'log fsync of a sync write with writes queued behind it, on the event loop',
    fault: (code) => ({ op: 'sync', path: /\.log$/, code }),
    trigger: syncWithWritesQueued
  },
  {
    name: 'new log file (openWrite at rotation)',
    fault: (code) => ({ op: 'openWrite', path: /\.log$/, code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, false)
  },
  {
    name: 'directory fsync at rotation',
    fault: (code) => ({ op: ['syncDir', 'syncDirAsync'], code }),
    trigger: (e, l, r) => writeUntilFailure(e, l, r, false)
  },
  {
    name: 'new table file (flush)',
    fault: (code) => ({ op: 'openWrite', path: /\.sst$/, code }),
    trigger: backgroundUntilFailure,
    background: true,
    onTable: true
  },
  {
    name: 'table append (flush)',
    fault: (code) => ({ op: 'append', path: /\.sst$/, code }),
    trigger: backgroundUntilFailure,
    background: true,
    onTable: true
  },
  {
    name: 'table fsync (flush)',
    fault: (code) => ({ op: ['sync', 'syncAsync'], path: /\.sst$/, code }),
    trigger: backgroundUntilFailure,
    background: true,
    onTable: true
  },
  {
    name: 'manifest append (flush or compaction edit)',
    fault: (code) => ({ op: 'append', path: /MANIFEST/, code }),
    trigger: backgroundUntilFailure,
    background: true
  },
  {
    name: 'manifest fsync (flush or compaction edit)',
    fault: (code) => ({ op: ['sync', 'syncAsync'], path: /MANIFEST/, code }),
    trigger: backgroundUntilFailure,
    background: true
  },
  {
    name: 'compaction output table (compactRange)',
    // The fault is armed only after the data is in level-0 tables (see below).
    fault: (code) => ({ op: ['openWrite', 'append'], path: /\.sst$/, code, nth: 2 }),
    trigger: async (e) => rejection(e.compactRange()),
    background: true,
    onTable: true
  }
]

// Deleting an obsolete file (a flushed log, a compacted table) is housekeeping,
// as in LevelDB: a failure leaves an orphan that the next open removes, and the
// database goes on.
for (const code of CODES) {
  test(`fault: ${code} on removal of a flushed log is not fatal`, async (t) => {
    casesRun++
    const rnd = new Random(seed + casesRun)
    const { fs, engine } = await openFresh()
    const log = new WriteLog(false)
    t.ok(await fill(engine, log, rnd, 25), 'good writes before the fault')
    const fault = fs.faults.inject({ op: 'remove', path: /\.log$/, code })
    for (let i = 0; i < 50 && fault.hits === 0; i++) {
      await fill(engine, log, rnd, 5)
      await engine.flushMemTable()
    }
    t.ok(fault.hits > 0, `the fault fired (${fault.hits} time(s))`)
    t.ok(await fill(engine, log, rnd, 10), 'writes go on after it')
    await engine.waitForIdle()
    checkReads(t, engine, log, 'after the failed removal')
    await closeAndReopen(t, engine, fs, log, 'after the failed removal')
    const again = await openEngine(LOC, OPTIONS, fs)
    await again.waitForIdle() // the replayed log is live until its memtable's flush after the open
    const logs = fs.list(LOC).filter((n) => n.endsWith('.log'))
    t.is(logs.length, 1, `the next open removed the orphaned log (${logs.join(', ')} left: the live one)`)
    await again.close()
  })
}

const JOB_PLACES = [
  { name: 'jobs on workers', options: {} },
  { name: 'jobs on the event loop', options: { compactionWorker: false } }
]

for (const place of JOB_PLACES) {
  for (const wf of WRITE_FAULTS) {
    for (const code of CODES) {
      writeFaultCase(wf, code, place.name, place.options)
    }
  }
}

function writeFaultCase (wf: WriteFault, code: typeof CODES[number], placeName: string, placeOptions: Record<string, unknown>): void {
  test(`fault: ${code} on ${wf.name} (${placeName})`, async (t) => {
    casesRun++
    const rnd = new Random(seed + casesRun)
    const { fs, engine } = await openFresh({ ...(wf.options ?? OPTIONS), ...placeOptions })
    const log = new WriteLog(false)
    t.ok(await fill(engine, log, rnd, 25), 'good writes before the fault')
    if (wf.name.startsWith('compaction')) {
      await engine.flushMemTable()
      await fill(engine, log, rnd, 10)
      await engine.flushMemTable()
      await engine.waitForIdle()
    }
    const before = log.ackState()
    const fault = fs.faults.inject(wf.fault(code))
    const err = await wf.trigger(engine, log, rnd)
    t.ok(fault.hits > 0, `the fault fired (${fault.hits} time(s))`)
    checkError(t, err, code, 'the failing operation')
    if (wf.onTable === true) t.match(String((err as any)?.file), /^\d+\.sst$/, `the error names the table (${String((err as any)?.file)})`)
    if (wf.background === true && placeOptions.compactionWorker === undefined) t.ok(workerJobs(fs) > 0, 'the failing job ran on a worker')
    // Nothing issued after the fault armed and failed may be acknowledged.
    const failedAt = log.writes.findIndex((w, i) => i >= before.issued && w.failed)
    if (failedAt >= 0) {
      const ackedAfter = log.writes.slice(failedAt).filter((w) => w.acked).length
      t.is(ackedAfter, 0, `the failed write and every write after it are unacknowledged (${log.writes.length - failedAt} writes)`)
    }

    // Writes are refused until reopen (the fault is gone: the refusal is the engine's).
    fs.faults.clear()
    const after = await rejection(engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('refused'), value: Buffer.from('x') }]), false))
    if (after === undefined) t.fail('a write after the failure was accepted')
    else t.is((after as any).code, levelCode(code), `a later write is refused with ${levelCode(code)} (${describe(after)})`)
    if (wf.background) {
      const idle = await rejection(engine.waitForIdle())
      t.ok(idle !== undefined && (idle as any).code === levelCode(code), `waitForIdle reports the background failure (${describe(idle)})`)
    }
    checkReads(t, engine, log, 'after the failure')
    const images = takeImages(fs, log, rnd, 'crash right after the failure')
    await closeAndReopen(t, engine, fs, log, 'after the failure')
    await checkImages(t, images, log)
  })
}

// ------------------------------------------------------------------ open path

interface OpenFault {
  name: string
  fault: (code: typeof CODES[number]) => FaultSpec
}

const OPEN_FAULTS: OpenFault[] = [
  { name: 'rename of the new CURRENT', fault: (code) => ({ op: 'rename', path: /CURRENT|\.tmp$/, code }) },
  { name: 'new manifest file', fault: (code) => ({ op: 'openWrite', path: /MANIFEST/, code }) },
  { name: 'new manifest append', fault: (code) => ({ op: 'append', path: /MANIFEST/, code }) },
  { name: 'new manifest fsync', fault: (code) => ({ op: ['sync', 'syncAsync'], path: /MANIFEST/, code }) },
  { name: 'directory fsync', fault: (code) => ({ op: ['syncDir', 'syncDirAsync'], code }) },
  { name: 'read of CURRENT', fault: (code) => ({ op: 'readSmallFile', path: 'CURRENT', code }) },
  { name: 'read of the manifest', fault: (code) => ({ op: 'read', path: /MANIFEST/, code }) },
  { name: 'read of a log being replayed', fault: (code) => ({ op: 'read', path: /\.log$/, code }) },
  { name: 'open of a log being replayed', fault: (code) => ({ op: 'openRead', path: /\.log$/, code }) },
  // The replayed memtable's flush runs after open resolves (lib/recovery.ts): a fault there is background work's.
  { name: 'table file of the replayed log (its flush after open)', fault: (code) => ({ op: ['openWrite', 'append', 'sync', 'syncAsync'], path: /\.sst$/, code }) },
  { name: 'new log file', fault: (code) => ({ op: 'openWrite', path: /\.log$/, code }) }
]

for (const of of OPEN_FAULTS) {
  for (const code of CODES) {
    test(`fault on open: ${code} on ${of.name}`, async (t) => {
      casesRun++
      const rnd = new Random(seed + 1000 + casesRun)
      const { fs, engine } = await openFresh()
      const log = new WriteLog(false)
      await fill(engine, log, rnd, 60)
      // Kill the process (the log holds unflushed writes), then reopen with the fault.
      const image = killedProcessImage(fs)
      await engine.close()
      const fault = image.faults.inject(of.fault(code))
      let opened: Engine | undefined
      const err = await rejection(async () => { opened = await openEngine(LOC, OPTIONS, image) })
      if (opened !== undefined) {
        // Background work the open started (the replayed memtable's flush) may meet the fault.
        const background = await rejection(opened.waitForIdle())
        await rejection(opened.close())
        if (fault.hits === 0) {
          t.is(background, undefined, 'the operation did not occur in this open or after it; the open succeeded')
          t.comment(`(${of.name}: not reached)`)
          return
        }
        checkError(t, background, code, 'the open succeeded; the background work after it')
      } else {
        checkError(t, err, code, 'open')
      }
      image.faults.clear()
      await checkReopen(t, image, log, log.ackState().ackedPrefix, 'reopen without the fault')
      // A power loss right after the failed open must not lose synced writes either.
      await checkReopen(t, powerLossImage(image, rnd, 'mixed'), log, log.ackState().syncedPrefix, 'power-loss image after the failed open')
    })
  }
}

// ------------------------------------------------------------------ reads

test('read faults: table block reads give errors, never wrong values, and do not stick', async (t) => {
  casesRun++
  const rnd = new Random(seed + 2000)
  const { fs, engine: e0 } = await openFresh()
  const log = new WriteLog(false)
  await fill(e0, log, rnd, 150, false)
  await e0.flushMemTable()
  await e0.waitForIdle()
  await e0.close()
  // Reopen with no block cache, so every table read goes to the file.
  const engine = await openEngine(LOC, { ...OPTIONS, cacheSize: 0 }, fs)
  const model = log.stateAfter(log.writes.length)
  const keys = [...model.keys()]
  t.ok(engine.levels().some((l) => l.files > 0), 'the data is in tables')
  for (const code of CODES) {
    let errors = 0
    let wrong = 0
    let right = 0
    for (let i = 0; i < 60; i++) {
      const k = rnd.pick(keys)
      fs.faults.inject({ op: 'read', path: /\.sst$/, code, nth: 1 + rnd.int(2) })
      try {
        const v = engine.get(Buffer.from(k))
        if (v?.toString() === model.get(k)) right++
        else wrong++
      } catch (err) {
        errors++
        if (errors === 1) {
          t.ok(chainHas(err, code), `get with a failing ${code} table read throws an error carrying ${code}`)
          readErrors.push([`get, ${code}`, err])
        }
      }
      fs.faults.clear()
      // The next read, without a fault, works.
      if (engine.get(Buffer.from(k))?.toString() !== model.get(k)) wrong++
    }
    t.is(wrong, 0, `${code}: no get returned a wrong value (${errors} errors, ${right} right despite the fault)`)
    t.ok(errors > 0, `${code}: failing reads surfaced as errors`)

    // Iterators: a failing read mid-scan throws; it never yields a wrong entry.
    let scanErrors = 0
    for (let i = 0; i < 20; i++) {
      fs.faults.inject({ op: 'read', path: /\.sst$/, code, nth: 1 + rnd.int(6) })
      const it = engine.iterator({})
      try {
        while (it.step(Infinity) === FOUND) {
          const k = entryKey(it).toString()
          if (model.get(k) !== entryValue(it).toString()) { wrong++; break }
        }
      } catch (err) {
        scanErrors++
        if (scanErrors === 1) {
          t.ok(chainHas(err, code), `iteration with a failing ${code} table read throws an error carrying ${code}`)
          readErrors.push([`iterator, ${code}`, err])
        }
      } finally {
        it.close()
      }
      fs.faults.clear()
    }
    t.is(wrong, 0, `${code}: iteration yielded no wrong entry (${scanErrors} scans failed)`)
  }
  // Reads failing do not stop writes: they are not write-path errors.
  await engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('w'), value: Buffer.from('1') }]), true)
  t.is(engine.get(Buffer.from('w'))?.toString(), '1', 'writes still work after read errors')
  const all = readAll(engine)
  all.delete('w')
  t.ok(checkPrefix(log, all, log.writes.length, log.writes.length).ok, 'the full state reads back once the faults are gone')
  await engine.close()
})

// Read errors reach the caller as LEVEL_IO_ERROR naming the file (an injected
// ENOSPC as LEVEL_STORAGE_FULL), with the file system's error as the cause.
test('read faults: table read errors are LEVEL_IO_ERROR', (t) => {
  for (const [what, err] of readErrors) t.is((err as any).code, levelCode(/ENOSPC/.test(what) ? 'ENOSPC' : 'EIO'), `${what}: ${describe(err)}`)
  t.end()
})

test('a read fault during compaction is a background error: writes stop, data stays', async (t) => {
  casesRun++
  const rnd = new Random(seed + 3000)
  const { fs, engine } = await openFresh({ ...OPTIONS, cacheSize: 0 })
  const log = new WriteLog(false)
  await fill(engine, log, rnd, 60, false)
  await engine.flushMemTable()
  await fill(engine, log, rnd, 60, false)
  await engine.flushMemTable()
  await engine.waitForIdle()
  fs.faults.inject({ op: 'read', path: /\.sst$/, code: 'EIO', nth: 3 })
  const err = await rejection(engine.compactRange())
  checkError(t, err, 'EIO', 'compactRange with a failing table read')
  fs.faults.clear()
  const after = await rejection(engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('x'), value: Buffer.from('y') }]), false))
  t.is((after as any)?.code, 'LEVEL_IO_ERROR', 'writes are refused after the background failure')
  checkReads(t, engine, log, 'after the compaction failure')
  await closeAndReopen(t, engine, fs, log, 'after the compaction failure')
})

// The flush worker thread itself, over the node file system: a directory stands
// where the flush's table goes, so its open fails (EISDIR) on that thread. The
// error must cross back whole: LEVEL_IO_ERROR, the errno as its cause, the
// table named.
// A compaction split in two (lib/compaction/scheduler.ts): when one half fails,
// the tables the other half wrote are removed, nothing is installed, and the
// failure reaches the caller as any background failure does.
const SUBCOMPACTION_FAULTS = [1, 3, 6]

test('a subcompaction failing removes the other half\'s tables', async (t) => {
  for (const nth of SUBCOMPACTION_FAULTS) {
    casesRun++
    const rnd = new Random(seed + 3100 + nth)
    const { fs, engine } = await openFresh({ ...OPTIONS, targetFileSize: 256, subcompactions: true })
    const log = new WriteLog(false)
    for (let i = 0; i < 3; i++) {
      await fill(engine, log, rnd, 60, false)
      await engine.flushMemTable()
    }
    // compactRange works level by level; with every table in the bottom level
    // the faulted one below is a single job (bottom into bottom), the split one.
    await engine.compactRange()
    t.is(engine.tables().filter((files) => files.length > 0).length, 1, `one level holds every table (write ${nth})`)
    const splitBefore = engine.stats().compactions.split
    const tablesBefore = new Set(engine.tables().flat().map((f) => f.number))
    fs.faults.inject({ op: 'append', path: /\.sst$/, code: 'ENOSPC', nth })
    const err = await rejection(engine.compactRange())
    checkError(t, err, 'ENOSPC', `compactRange, table write ${nth} failing`)
    fs.faults.clear()
    t.ok(engine.stats().compactions.split > splitBefore, `the failed compaction was split in two (write ${nth})`)
    const onDisk = fs.list(LOC).filter((n) => n.endsWith('.sst')).map((n) => Number(n.slice(0, -4)))
    const stray = onDisk.filter((n) => !tablesBefore.has(n))
    t.deepEqual(stray, [], `write ${nth}: no table of either half is left behind`)
    t.deepEqual(new Set(engine.tables().flat().map((f) => f.number)), tablesBefore, `write ${nth}: the version is unchanged`)
    checkReads(t, engine, log, `after the subcompaction failure (write ${nth})`)
    await engine.close().catch(() => {})
    await checkReopen(t, fs, log, log.writes.length, `reopen after the subcompaction failure (write ${nth})`)
  }
})

test('fault: a flush failing on the worker thread (node file system) reaches the caller whole', async (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-faults-thread-'))
  const engine = await Engine.open(dir, { ...OPTIONS, compactionWorker: true })
  try {
    for (let n = 1; n <= 64; n++) nodeFs.mkdirSync(path.join(dir, tableName(n)), { recursive: true })
    const rnd = new Random(seed + 4000)
    const log = new WriteLog(false)
    t.ok(await fill(engine, log, rnd, 5, false), 'writes before the flush')
    const jobsBefore = sharedJobThread().jobs
    const err = await rejection(engine.flushMemTable())
    t.ok(sharedJobThread().jobs > jobsBefore, 'the flush ran on the worker thread')
    checkError(t, err, 'EISDIR', 'flushMemTable with the flush failing on the thread')
    t.match(String((err as any)?.file), /^\d+\.sst$/, `the error names the table (${String((err as any)?.file)})`)
    const after = await rejection(engine.write(encodeBatch([{ kind: KIND_VALUE, key: Buffer.from('x'), value: Buffer.from('y') }]), false))
    t.is((after as any)?.code, 'LEVEL_IO_ERROR', 'writes are refused after the failure')
    checkReads(t, engine, log, 'after the failure on the thread')
  } finally {
    await engine.close().catch(() => {})
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('fault totals', (t) => {
  t.comment(`fault cases run: ${casesRun} (${WRITE_FAULTS.length} write-path faults x ${CODES.length} codes x ${JOB_PLACES.length} places for jobs, ${OPEN_FAULTS.length} open-path faults x ${CODES.length} codes, plus read faults); reopens checked: ${reopensChecked}`)
  // Each case counts itself first thing: a case skipped, left out by an `only`,
  // or never registered leaves the total short.
  const registered = CODES.length * (1 + WRITE_FAULTS.length * JOB_PLACES.length + OPEN_FAULTS.length) + 2 + SUBCOMPACTION_FAULTS.length
  t.is(casesRun, registered, 'every fault case ran: log removal, each write-path fault per code and place for jobs, each open-path fault per code, table read faults, a read fault in compaction, a failing subcompaction')
  // Every case but the table read-fault one reopens a copy of its files at least once.
  t.ok(reopensChecked >= registered - 1, `every case that reopens checked at least one reopened database (${reopensChecked} for ${registered - 1} cases)`)
  t.end()
})
