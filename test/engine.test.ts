// Engine tests through the public API: large fills across flush and compaction,
// deletes, snapshots, bounded memory while iterating, torn log tails, and the lock.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { fork } from 'node:child_process'
import { LsmLevel } from '../index'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'
import { logName, parseFileName } from '../lib/filenames'

const seed = seedFromEnv()

function key (i: number): string {
  return 'k' + String(i).padStart(8, '0')
}

test('200,000 random keys with a 64 KiB write buffer survive reopen, by get and by iteration', async (t) => {
  const rnd = new Random(seed)
  const dir = tempDir()
  let db = new LsmLevel(dir, { writeBufferSize: 64 * 1024 })
  await db.open()
  const model = new Map<string, string>()
  const N = 200_000
  let batch: Array<{ type: 'put', key: string, value: string }> = []
  const t0 = Date.now()
  for (let i = 0; i < N; i++) {
    const k = rnd.bytes(8).toString('hex')
    const v = rnd.bytes(24).toString('hex')
    model.set(k, v)
    if (i % 10 === 0) {
      await db.put(k, v)
    } else {
      batch.push({ type: 'put', key: k, value: v })
      if (batch.length === 100) { await db.batch(batch); batch = [] }
    }
  }
  if (batch.length) await db.batch(batch)
  const fillMs = Date.now() - t0
  await db.engine.waitForIdle()
  const levelsBefore = db.levels()
  t.comment(`fill ${N} keys: ${fillMs} ms; levels ${JSON.stringify(levelsBefore.filter((l) => l.files > 0))}`)
  await db.close()

  db = new LsmLevel(dir, { writeBufferSize: 64 * 1024 })
  await db.open()
  const levels = db.levels().filter((l) => l.files > 0)
  t.ok(levels.length >= 2, `tables on ${levels.length} levels (need >= 2): ${JSON.stringify(levels)}`)
  t.ok(levels.some((l) => l.level >= 2), 'compaction reached level 2 or deeper')

  let wrong = 0
  const t1 = Date.now()
  for (const [k, v] of model) {
    if (await db.get(k) !== v) wrong++
  }
  t.is(wrong, 0, `every key read back by get (${model.size} keys, ${Date.now() - t1} ms)`)

  const sorted = [...model.keys()].sort()
  let i = 0
  let mismatches = 0
  for await (const [k, v] of db.iterator()) {
    if (k !== sorted[i] || v !== model.get(k)) mismatches++
    i++
  }
  t.is(i, sorted.length, 'full iteration yields every key once')
  t.is(mismatches, 0, 'full iteration is ordered and matches')
  await db.close()
})

test('a long for-await or nextv loop lets timers run (the iterator yields a turn about every millisecond)', async (t) => {
  const dir = tempDir('lsm-iter-turns')
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  const batch = []
  for (let i = 0; i < 100_000; i++) batch.push({ type: 'put' as const, key: key(i), value: 'v' + i })
  await db.batch(batch)
  // Measured in entries, not milliseconds: a loaded machine deschedules the
  // process for tens of milliseconds whatever it does, but an iterator that
  // yields lets the timer run after at most a turn's worth of entries.
  for (const mode of ['for await', 'nextv(10)'] as const) {
    let ticks = 0
    let n = 0
    let atLastTick = 0
    let longestRun = 0
    const timer = setInterval(() => { longestRun = Math.max(longestRun, n - atLastTick); atLastTick = n; ticks++ }, 1)
    if (mode === 'for await') {
      for await (const [k] of db.iterator()) if (k !== undefined) n++
    } else {
      const it = db.iterator()
      for (let b = await it.nextv(10); b.length > 0; b = await it.nextv(10)) n += b.length
      await it.close()
    }
    clearInterval(timer)
    longestRun = Math.max(longestRun, n - atLastTick)
    t.is(n, 100_000, `${mode}: every entry`)
    t.ok(ticks >= 5 && longestRun <= 25_000, `${mode}: a 1 ms timer ran ${ticks} times, at most ${longestRun} entries apart`)
  }
  await db.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test('deletes never come back across flush, compaction and reopen', async (t) => {
  const dir = tempDir()
  const opts = { writeBufferSize: 4096, blockSize: 512, targetFileSize: 4096, maxBytesForLevelBase: 16384 }
  let db = new LsmLevel(dir, opts)
  await db.open()
  const N = 5000
  for (let i = 0; i < N; i += 100) {
    await db.batch(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'old' + (i + j) })))
  }
  await db.flush()
  await db.compactRange()
  const deleted = new Set<number>()
  for (let i = 0; i < N; i += 3) { await db.del(key(i)); deleted.add(i) }
  await db.flush()
  // Rewrite some neighbours so compactions merge tombstones with live data.
  for (let i = 1; i < N; i += 7) if (!deleted.has(i)) await db.put(key(i), 'new' + i)
  await db.engine.waitForIdle()

  const check = async (label: string): Promise<void> => {
    let back = 0
    for (const i of deleted) if (await db.get(key(i)) !== undefined) back++
    t.is(back, 0, `${label}: no deleted key is readable by get`)
    let seen = 0
    let resurrected = 0
    for await (const k of db.keys()) {
      seen++
      if (deleted.has(Number(k.slice(1)))) resurrected++
    }
    t.is(resurrected, 0, `${label}: no deleted key is iterated`)
    t.is(seen, N - deleted.size, `${label}: every live key is iterated`)
  }
  await check('after flush')
  await db.compactRange()
  await check('after full compaction')
  await db.close()
  db = new LsmLevel(dir, opts)
  await db.open()
  await check('after reopen')
  // Tombstones at the bottom level are dropped once nothing older remains.
  await db.compactRange()
  const entries = db.engine.tables().flat().reduce((s, f) => s + f.entries, 0)
  t.is(entries, N - deleted.size, 'after full compaction only live entries remain on disk')
  await db.close()
})

test('a snapshot keeps seeing old values across flush and compaction', async (t) => {
  const dir = tempDir()
  const db = new LsmLevel(dir, { writeBufferSize: 4096, blockSize: 512, targetFileSize: 4096, maxBytesForLevelBase: 16384 })
  await db.open()
  const N = 2000
  for (let i = 0; i < N; i++) await db.put(key(i), 'v1-' + i)
  const snap = db.snapshot()
  const it = db.iterator({ gte: key(100), lt: key(200) }) // implicit snapshot
  for (let i = 0; i < N; i++) {
    if (i % 2 === 0) await db.put(key(i), 'v2-' + i)
    else if (i % 5 === 0) await db.del(key(i))
  }
  await db.put(key(N + 1), 'new')
  await db.flush()
  await db.compactRange()

  let wrong = 0
  for (let i = 0; i < N; i++) if (await db.get(key(i), { snapshot: snap }) !== 'v1-' + i) wrong++
  t.is(wrong, 0, 'get with snapshot sees v1 for every key after flush and compaction')
  t.is(await db.get(key(N + 1), { snapshot: snap }), undefined, 'snapshot does not see later writes')
  const viaSnap = await db.iterator({ snapshot: snap }).all()
  t.is(viaSnap.length, N, 'iterator on the snapshot sees every original key')
  t.ok(viaSnap.every(([k, v]) => v === 'v1-' + Number(k.slice(1))), 'iterator on the snapshot sees v1 values')
  const implicit = await it.all()
  t.same(implicit.map(([k]) => k), Array.from({ length: 100 }, (_, j) => key(100 + j)), 'iterator created before the writes keeps its implicit snapshot')
  t.ok(implicit.every(([k, v]) => v === 'v1-' + Number(k.slice(1))), 'implicit snapshot values are v1')

  let now = 0
  for (let i = 0; i < N; i++) {
    const v = await db.get(key(i))
    const expect = i % 2 === 0 ? 'v2-' + i : i % 5 === 0 ? undefined : 'v1-' + i
    if (v === expect) now++
  }
  t.is(now, N, 'reads without the snapshot see the new state')
  await snap.close()
  await db.compactRange()
  const entries = db.engine.tables().flat().reduce((s, f) => s + f.entries, 0)
  t.ok(entries <= N + 1, `old versions dropped once the snapshot is released (${entries} entries)`)
  await db.close()
})

test('iterating 1,000,000 entries keeps memory bounded', async (t) => {
  const dir = tempDir()
  // The cache size is set (the default is 32 MiB): the bound below is what it
  // adds to the indexes, filters and iterator state.
  const db = new LsmLevel<string, Buffer>(dir, { valueEncoding: 'buffer', cacheSize: 8 * 1024 * 1024 })
  await db.open()
  const N = 1_000_000
  const value = Buffer.alloc(40, 7)
  for (let i = 0; i < N; i += 10_000) {
    const ops = []
    for (let j = i; j < i + 10_000; j++) ops.push({ type: 'put' as const, key: key(j), value })
    await db.batch(ops)
  }
  await db.flush()
  await db.engine.waitForIdle()
  // Live memory (after a full GC) is what must stay bounded: the JS heap plus
  // the array buffers (blocks, file reads) held outside it. Node: the runner
  // passes --expose-gc, buffers are `arrayBuffers`. Deno (--v8-flags=--expose-gc)
  // reports arrayBuffers as 0 and counts them in `external`. Bun has no gc() but
  // Bun.gc(true) (a synchronous full collection), and its heapUsed already
  // includes the memory array buffers hold (it too reports arrayBuffers as 0).
  const bun = (globalThis as any).Bun as { gc: (force: boolean) => void } | undefined
  const deno = (globalThis as any).Deno !== undefined
  const gc = bun !== undefined ? () => bun.gc(true) : (globalThis as any).gc as (() => void) | undefined
  const live = (): number => {
    gc?.()
    const m = process.memoryUsage()
    return bun !== undefined ? m.heapUsed : m.heapUsed + (deno ? m.external : m.arrayBuffers)
  }
  // V8 frees the backing stores of dead array buffers after a GC, concurrently;
  // Deno's `external` only drops then (measured at once, its baseline held ~60 MB
  // of the fill's garbage). So each measurement lets a few GCs settle first.
  const settled = async (): Promise<number> => {
    for (let i = 0; i < 3; i++) { live(); await new Promise((resolve) => setTimeout(resolve, 50)) }
    return live()
  }
  const before = await settled()
  let peak = 0
  let peakAbs = 0
  let count = 0
  let ordered = true
  let prev = ''
  const it = db.iterator()
  for (;;) {
    const entries = await it.nextv(1000)
    if (entries.length === 0) break
    for (const [k] of entries) {
      if (k <= prev) ordered = false
      prev = k
    }
    count += entries.length
    if (count % 100_000 === 0) { const l = await settled(); peak = Math.max(peak, l - before); peakAbs = Math.max(peakAbs, l) }
  }
  await it.close()
  t.is(count, N, 'iterated every entry')
  t.ok(ordered, 'in order')
  const dataMb = (N * (9 + 40)) / 1e6
  t.ok(gc !== undefined, 'measured after full GCs')
  t.comment(`live memory (heap + array buffers) before the scan ${(before / 1e6).toFixed(1)} MB, peak during it ${(peakAbs / 1e6).toFixed(1)} MB`)
  t.ok(peakAbs < 40e6, `absolute live memory stays far below the data size (${(peakAbs / 1e6).toFixed(1)} MB < 40 MB)`)
  // The bound: the block cache (8 MiB) plus the open tables' indexes and Bloom
  // filters (~1.3 MB per million keys) plus the iterators' current blocks and
  // V8's slack: well below the data size, and independent of it.
  t.ok(peak < 24e6, `live memory growth during the scan ${(peak / 1e6).toFixed(1)} MB for ${dataMb.toFixed(0)} MB of data (bound 24 MB)`)
  await db.close()
})

test('a torn log tail recovers a prefix of the writes', async (t) => {
  const dir = tempDir()
  // The writes stay in the log at close (flushOnClose: false), as after a crash.
  const db = new LsmLevel(dir, { flushOnClose: false })
  await db.open()
  const N = 200
  for (let i = 0; i < N; i++) await db.put(key(i), 'v' + i)
  await db.batch([{ type: 'put', key: 'batch-a', value: '1' }, { type: 'put', key: 'batch-b', value: '2' }])
  // A crash, not a clean close: the manifest as it was while the database ran
  // (a clean close records the logs' sizes, and the open then refuses a torn log).
  const manifestWhileOpen = new Map<string, Buffer>()
  for (const name of fs.readdirSync(dir)) if (name === 'CURRENT' || name.startsWith('MANIFEST-')) manifestWhileOpen.set(name, fs.readFileSync(path.join(dir, name)))
  await db.close()
  for (const [name, data] of manifestWhileOpen) fs.writeFileSync(path.join(dir, name), data)
  const logs = fs.readdirSync(dir).map((n) => parseFileName(n)).filter((p) => p?.type === 'log')
  t.is(logs.length, 1, 'one log holds the writes')
  const logPath = path.join(dir, logName(logs[0]!.number))
  const full = fs.readFileSync(logPath)
  const rnd = new Random(seed)
  const cuts = [full.length - 1, full.length - 5, Math.floor(full.length / 2), 13, 0]
  for (let i = 0; i < 10; i++) cuts.push(rnd.int(full.length))
  let prefixes = 0
  for (const cut of cuts) {
    const copy = tempDir()
    for (const name of fs.readdirSync(dir)) if (name !== 'LOCK') fs.copyFileSync(path.join(dir, name), path.join(copy, name))
    fs.writeFileSync(path.join(copy, path.basename(logPath)), full.subarray(0, cut))
    const db2 = new LsmLevel(copy)
    await db2.open()
    const keys = await db2.keys().all()
    const ks = keys.filter((k) => k.startsWith('k'))
    const isPrefix = ks.every((k, i) => k === key(i))
    const a = await db2.get('batch-a')
    const b = await db2.get('batch-b')
    if (isPrefix && (a === undefined) === (b === undefined) && (a === undefined || ks.length === N)) prefixes++
    else t.comment(`cut ${cut}: ${ks.length} keys, batch ${a} ${b}`)
    if (cut === full.length - 1) {
      t.is(ks.length, N, 'cutting the last byte loses only the last record')
      t.is(a, undefined, 'and the batch is lost whole')
    }
    await db2.close()
  }
  t.is(prefixes, cuts.length, `every cut (${cuts.length}) recovers a prefix, with the batch all-or-nothing`)
})

function startWriter (dir: string, count: number, mode: 'hold' | 'forever'): Promise<{ child: ReturnType<typeof fork>, acked: () => number }> {
  const child = fork(path.join(__dirname, 'fixtures', 'writer.js'), [dir, String(count), mode], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  let last = count - 1
  let buf = ''
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString()
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        if (line.startsWith('ready')) resolve({ child, acked: () => last })
        else if (line.startsWith('ack ')) last = Number(line.slice(4))
      }
    })
    child.on('exit', (code) => reject(new Error('writer exited early: ' + code)))
  })
}

test('a second process gets LEVEL_LOCKED; a killed writer does not block the next open', async (t) => {
  const dir = tempDir()
  const { child } = await startWriter(dir, 500, 'hold')
  const db = new LsmLevel(dir)
  try {
    await db.open()
    t.fail('open should fail while another process holds the database')
  } catch (err: any) {
    t.is(err.code, 'LEVEL_DATABASE_NOT_OPEN', 'open fails')
    t.is(err.cause?.code, 'LEVEL_LOCKED', 'cause is LEVEL_LOCKED')
  }
  const exited = new Promise((resolve) => child.on('exit', resolve))
  child.kill('SIGKILL')
  await exited
  const db2 = new LsmLevel(dir)
  await db2.open()
  t.pass('open succeeds after the holder was killed')
  t.is(await db2.get(key(499)), 'v499', 'writes acknowledged by the killed process survived (they reached the OS)')
  t.is((await db2.keys().all()).length, 500, 'all of them')
  await db2.close()
})

test('a writer killed mid-stream: every acknowledged write survives, in order', async (t) => {
  const dir = tempDir()
  const { child, acked } = await startWriter(dir, 10, 'forever')
  await new Promise((resolve) => setTimeout(resolve, 300))
  const exited = new Promise((resolve) => child.on('exit', resolve))
  child.kill('SIGKILL')
  await exited
  const last = acked()
  const db = new LsmLevel(dir)
  await db.open()
  const keys = await db.keys().all()
  t.ok(keys.length >= last + 1, `recovered ${keys.length} keys, ${last + 1} acknowledged`)
  t.ok(keys.every((k, i) => k === key(i)), 'recovered keys are a prefix of the write order')
  await db.close()
})

test('a second open in the same process gets LEVEL_LOCKED', async (t) => {
  const dir = tempDir()
  const a = new LsmLevel(dir)
  await a.open()
  const b = new LsmLevel(dir)
  try {
    await b.open()
    t.fail('second open should fail')
  } catch (err: any) {
    t.is(err.cause?.code, 'LEVEL_LOCKED', 'LEVEL_LOCKED')
  }
  await a.close()
  await b.open()
  t.pass('opens once the first is closed')
  await b.close()
})

test('invalid options get an error naming the option', async (t) => {
  const dir = tempDir()
  for (const [name, value] of [['writeBufferSize', -1], ['blockSize', 'big'], ['cacheSize', 1.5], ['maxOpenFiles', 0]] as const) {
    try {
      // eslint-disable-next-line no-new
      new LsmLevel(dir, { [name]: value })
      t.fail(`${name}=${value} should throw`)
    } catch (err: any) {
      t.is(err.code, 'LEVEL_INVALID_OPTION', `${name}: LEVEL_INVALID_OPTION`)
      t.ok(err.message.includes(name), `${name}: message names the option: ${err.message}`)
    }
  }
})
