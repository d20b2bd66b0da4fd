// The compaction scheduler alone (lib/compaction/scheduler.ts), through its
// environment: a real version set, memtable set and table cache over the
// in-memory file system, with the engine's side (logs, sequence numbers,
// errors) faked, and jobs on the event loop (compactionWorker off). Flushes go
// oldest first and one at a time; flushed(mems) waits for those memtables and
// rejects with a flush's failure; a failure stops later jobs and is reported
// once; waitForIdle leaves nothing due; close waits for a running flush.
import test from 'tape'
import { CompactionScheduler, type SchedulerEnv } from '../lib/compaction/scheduler'
import { VersionSet } from '../lib/manifest/version-set'
import { MemTableSet } from '../lib/memtable/memtable-set'
import { MemTable } from '../lib/memtable/memtable'
import { TableCache } from '../lib/sstable/table-cache'
import { BlockCache } from '../lib/sstable/cache'
import { resolveOptions } from '../lib/options'
import { KIND_VALUE, MAX_SEQ } from '../lib/keys'
import { isLevelError, type LevelError } from '../lib/errors'
import { MemFileSystem } from './fs/mem-fs'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()
const DIR = '/db'
const tick = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

/** The scheduler over a fresh in-memory database, and what the fake engine side saw. */
class Harness {
  readonly fs = new MemFileSystem()
  readonly versions: VersionSet
  readonly memtables = new MemTableSet(1 << 20)
  readonly tableCache: TableCache
  readonly scheduler: CompactionScheduler
  seq = 0
  /** The active memtable's log. */
  log = 1
  /** Logs retired by flushes, in order. */
  readonly retired: number[] = []
  readonly errors: LevelError[] = []
  /** Flushes between their table write and their manifest edit (waiting in logEntryDurable), and the most at once. */
  flushesWaiting = 0
  maxFlushesWaiting = 0
  /** While set, flushes wait here before their manifest edit. */
  gate: Promise<void> | undefined
  private openGate: (() => void) | undefined

  constructor (options: Record<string, unknown> = {}) {
    this.fs.mkdirp(DIR)
    this.versions = new VersionSet(this.fs, DIR)
    this.versions.writeNewManifest({ logNumber: 1, lastSequence: 0 })
    this.tableCache = new TableCache(this.fs, DIR, 100, new BlockCache(1 << 20))
    const env: SchedulerEnv = {
      fs: this.fs,
      dir: DIR,
      options: resolveOptions({ compactionWorker: false, level0CompactionTrigger: 100, level0SlowdownWritesTrigger: 100, level0StopWritesTrigger: 100, ...options }),
      versions: this.versions,
      tableCache: this.tableCache,
      memtables: this.memtables,
      smallestSnapshot: () => this.seq,
      lastSequence: () => this.seq,
      currentLogNumber: () => this.log,
      retireLog: (n) => { this.retired.push(n); return [] },
      logEntryDurable: async () => {
        this.flushesWaiting++
        this.maxFlushesWaiting = Math.max(this.maxFlushesWaiting, this.flushesWaiting)
        try {
          if (this.gate) await this.gate
          else await tick()
        } finally {
          this.flushesWaiting--
        }
      },
      onError: (err) => { this.errors.push(err) },
      onJobDone: () => {}
    }
    this.scheduler = new CompactionScheduler(env)
  }

  /** Writes `keys` to the active memtable and freezes it (its log: the current one); returns it. */
  freeze (keys: string[]): MemTable {
    const mem = this.memtables.active
    for (const key of keys) mem.add(++this.seq, KIND_VALUE, Buffer.from(key), Buffer.from(`${key}@${this.seq}`))
    this.memtables.freeze(this.log++)
    return mem
  }

  hold (): void {
    this.gate = new Promise((resolve) => { this.openGate = resolve })
  }

  release (): void {
    this.gate = undefined
    this.openGate?.()
  }

  /** The value the tables hold for `key`. */
  read (key: string): string | undefined {
    return this.versions.current.get(this.tableCache, Buffer.from(key), MAX_SEQ, { tableGets: 0, tableGetMisses: 0 })?.value.toString()
  }
}

test('compaction scheduler: flushes oldest first, one at a time, each retiring its memtable\'s log', async (t) => {
  const h = new Harness()
  const mems = [h.freeze(['a', 'b']), h.freeze(['a', 'c']), h.freeze(['a', 'd'])]
  h.hold()
  h.scheduler.schedule()
  for (let i = 0; i < 5; i++) await tick()
  t.is(h.scheduler.running, 1, 'one job running')
  t.is(h.flushesWaiting, 1, 'one flush')
  t.same(h.retired, [], 'not yet in the manifest')
  h.release()
  await h.scheduler.flushed(mems)
  t.same(h.retired, [1, 2, 3], 'logs retired oldest first')
  t.is(h.maxFlushesWaiting, 1, 'never two flushes at once')
  t.is(h.memtables.frozen.length, 0, 'every memtable flushed')
  t.is(h.versions.current.levels[0].length, 3, 'three level-0 tables')
  t.is(h.read('a'), `a@${h.seq - 1}`, 'the newest memtable\'s value wins for a key in all three')
  t.same(['b', 'c', 'd'].map((k) => h.read(k) !== undefined), [true, true, true], 'every key in a table')
  t.is(h.versions.logNumber, 4, 'the manifest\'s live log: the active memtable\'s')
  t.is(h.scheduler.counters.flushes, 3, 'three flushes counted')
  await h.scheduler.close()
})

test('compaction scheduler: flushed(mems) resolves once those memtables (and the older ones) are in tables', async (t) => {
  const h = new Harness()
  const first = h.freeze(['a'])
  const second = h.freeze(['b'])
  const third = h.freeze(['c'])
  await h.scheduler.flushed([second])
  const frozen = h.memtables.frozen.map((f) => f.mem)
  t.notOk(frozen.includes(first) || frozen.includes(second), 'the older one and the one waited for are in tables')
  t.ok(h.retired.includes(1) && h.retired.includes(2), 'their logs retired')
  await h.scheduler.flushed([third])
  t.is(h.memtables.frozen.length, 0, 'then the last')
  await h.scheduler.flushed([third])
  t.pass('waiting for memtables already in tables resolves at once')
  await h.scheduler.close()
})

test('compaction scheduler: a memtable with writes in flight is not flushed until they are applied', async (t) => {
  const h = new Harness()
  const mem = h.memtables.groupWritten()
  const frozen = h.freeze(['a'])
  t.is(mem, frozen, 'the group went to the memtable now frozen')
  h.scheduler.schedule()
  for (let i = 0; i < 5; i++) await tick()
  t.is(h.scheduler.running, 0, 'nothing flushed while a group is in flight')
  t.is(h.memtables.frozen.length, 1, 'still frozen')
  t.ok(h.memtables.groupApplied(mem), 'the group applied: ready')
  await h.scheduler.flushed([mem])
  t.same(h.retired, [1], 'then flushed')
  await h.scheduler.close()
})

test('compaction scheduler: a failed flush rejects flushed(), is reported once through onError, and stops later jobs', async (t) => {
  const h = new Harness()
  const first = h.freeze(['a'])
  const second = h.freeze(['b'])
  h.fs.faults.inject({ op: 'append', path: /\.sst$/ })
  try {
    await h.scheduler.flushed([first])
    t.fail('flushed() must reject')
  } catch (err) {
    const e = err as LevelError
    t.ok(isLevelError(e, 'LEVEL_IO_ERROR'), `LEVEL_IO_ERROR: ${e.message}`)
    t.ok(/\.sst$/.test(e.file ?? ''), `naming the table it failed on (${e.file ?? '-'})`)
  }
  for (let i = 0; i < 10; i++) await tick()
  t.is(h.errors.length, 1, 'onError once')
  t.same(h.retired, [], 'no log retired')
  t.same(h.memtables.frozen.map((f) => f.mem), [first, second], 'both memtables still frozen: no later flush ran')
  h.scheduler.schedule()
  for (let i = 0; i < 10; i++) await tick()
  t.is(h.scheduler.running, 0, 'schedule() starts nothing after the failure')
  await h.scheduler.waitForIdle().then(() => t.fail('waitForIdle must reject'), (err) => t.is(err, h.errors[0], 'waitForIdle rejects with the same error'))
  await h.scheduler.flushed([second]).then(() => t.fail('flushed must reject'), (err) => t.is(err, h.errors[0], 'so does a later flushed()'))
  t.is(h.errors.length, 1, 'still reported once')
  await h.scheduler.close()
})

test('compaction scheduler: a failed manifest edit after a flush stops later jobs too', async (t) => {
  const h = new Harness()
  h.freeze(['a'])
  const second = h.freeze(['b'])
  h.fs.faults.inject({ op: 'syncAsync', path: /MANIFEST/ })
  await h.scheduler.flushed([second]).then(() => t.fail('must reject'), (err) => t.ok(isLevelError(err, 'LEVEL_IO_ERROR'), `rejected: ${err.message}`))
  t.is(h.errors.length, 1, 'reported once')
  t.same(h.retired, [], 'no log retired: the flush is not recorded')
  t.is(h.memtables.frozen.length, 2, 'both memtables still frozen')
  await h.scheduler.close()
})

test('compaction scheduler: waitForIdle runs every flush and every compaction due; one compaction at a time', async (t) => {
  const rnd = new Random(seed)
  const h = new Harness({ level0CompactionTrigger: 2, writeBufferSize: 1024, targetFileSize: 2048 })
  /** Each key's last write. */
  const model = new Map<string, string>()
  let compactionsAtOnce = 0
  let maxCompactionsAtOnce = 0
  const logAndApply = h.versions.logAndApply.bind(h.versions)
  h.versions.logAndApply = async (edit) => {
    const compaction = (edit.deletedFiles?.length ?? 0) > 0
    if (compaction) maxCompactionsAtOnce = Math.max(maxCompactionsAtOnce, ++compactionsAtOnce)
    try {
      await tick()
      await logAndApply(edit)
    } finally {
      if (compaction) compactionsAtOnce--
    }
  }
  for (let m = 0; m < 12; m++) {
    const keys: string[] = []
    for (let i = 0; i < 40; i++) keys.push(`key${String(rnd.int(200)).padStart(3, '0')}`)
    const unique = [...new Set(keys)]
    const mem = h.freeze(unique)
    for (const key of unique) model.set(key, mem.get(Buffer.from(key), MAX_SEQ)!.value.toString())
    h.scheduler.schedule()
    if (rnd.int(2) === 0) await tick()
  }
  await h.scheduler.waitForIdle()
  t.is(h.memtables.frozen.length, 0, 'every memtable flushed')
  t.is(h.scheduler.counters.flushes, 12, '12 flushes')
  t.ok(h.scheduler.counters.compactions + h.scheduler.counters.trivialMoves > 0, `compactions ran (${h.scheduler.counters.compactions}, ${h.scheduler.counters.trivialMoves} moves)`)
  t.ok(h.versions.current.levels[0].length < 2, `level 0 below its trigger (${h.versions.current.levels[0].length})`)
  t.is(h.scheduler.running, 0, 'nothing running')
  t.is(h.scheduler.pendingRemovalCount, 0, 'obsolete tables deleted')
  t.is(maxCompactionsAtOnce, 1, 'one compaction at a time')
  let wrong = 0
  for (const [key, value] of model) if (h.read(key) !== value) wrong++
  t.is(wrong, 0, `all ${model.size} keys read back their last value`)
  await h.scheduler.close()
})

test('compaction scheduler: close() waits for a running flush, which completes; nothing starts after', async (t) => {
  const h = new Harness()
  const first = h.freeze(['a'])
  const second = h.freeze(['b'])
  h.hold()
  h.scheduler.schedule()
  for (let i = 0; i < 5; i++) await tick()
  t.is(h.flushesWaiting, 1, 'a flush is running')
  let closed = false
  const closing = h.scheduler.close().then(() => { closed = true })
  for (let i = 0; i < 10; i++) await tick()
  t.notOk(closed, 'close() waits for it')
  h.release()
  await closing
  t.same(h.retired, [1], 'the running flush completed and was recorded')
  t.same(h.memtables.frozen.map((f) => f.mem), [second], 'the next one was not started')
  t.notOk(h.memtables.frozen.some((f) => f.mem === first), 'the first is in a table')
  await h.scheduler.flushed([second])
  t.is(h.memtables.frozen.length, 1, 'flushed() after close returns without flushing')
  t.is(h.errors.length, 0, 'no error')
})
