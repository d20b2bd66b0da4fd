// The log's life cycle alone (lib/wal/log-manager.ts), over the in-memory file
// system: a rotation retires the old log (fdatasync, directory fsync, trim)
// before `retiring` clears and onRetired fires, so that a crash at that moment
// keeps every record of the old log under every power-loss mode; a sync write
// waits for earlier retirements; failed syncs and retirements are reported
// naming the log; where each log's records end; close.
import test from 'tape'
import { LogManager } from '../lib/wal/log-manager'
import { LogReader } from '../lib/wal/log-reader'
import { join, logName } from '../lib/filenames'
import { isLevelError, type LevelError } from '../lib/errors'
import { MemFileSystem } from './fs/mem-fs'
import { CRASH_MODES, killedProcessImage, powerLossImage } from './fs/crash-images'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()
const DIR = '/db'

/** A log manager over a fresh in-memory file system, log 1 open with its entry durable (as after recovery), and what it reported. */
interface Setup {
  fs: MemFileSystem
  logs: LogManager
  /** 'retired' per onRetired, 'error <file>' per onError. */
  events: string[]
  errors: LevelError[]
  /** Resolves at the next onRetired or onError. */
  retired: () => Promise<void>
  /** Runs inside onRetired, before anything else. */
  hooks: { atRetired: () => void }
}

function setup (backgroundSyncBytes = 1 << 20): Setup {
  const fs = new MemFileSystem()
  fs.mkdirp(DIR)
  const events: string[] = []
  const errors: LevelError[] = []
  const hooks = { atRetired: () => {} }
  let waiters: Array<() => void> = []
  const logs = new LogManager(fs, DIR, backgroundSyncBytes, {
    onRetired: () => {
      hooks.atRetired()
      events.push('retired')
      for (const w of waiters.splice(0)) w()
    },
    onError: (err) => {
      events.push(`error ${err.file ?? '?'}`)
      errors.push(err)
      for (const w of waiters.splice(0)) w()
    }
  })
  logs.open(1)
  fs.syncDir(DIR)
  const retired = async (): Promise<void> => { await new Promise<void>((resolve) => { waiters.push(resolve) }) }
  waiters = []
  return { fs, logs, events, errors, retired, hooks }
}

/** The records log `number` holds in `fs`, read as recovery would. */
function records (fs: MemFileSystem, number: number): string[] {
  const r = new LogReader(fs, join(DIR, logName(number)), logName(number))
  const out: string[] = []
  try {
    for (let rec = r.next(); rec !== undefined; rec = r.next()) out.push(rec.toString('hex'))
  } finally {
    r.close()
  }
  return out
}

function payloads (rnd: Random, n: number): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < n; i++) out.push(rnd.bytes(1 + rnd.int(300)))
  return out
}

const hex = (bufs: Buffer[]): string[] => bufs.map((b) => b.toString('hex'))
const tick = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

test('log manager: a rotation retires the old log (fdatasync, directory fsync, trim) before onRetired; records go to the new log', async (t) => {
  const rnd = new Random(seed)
  const { fs, logs, events, retired, hooks } = setup()
  const first = payloads(rnd, 20)
  for (let i = 0; i < first.length; i += 4) logs.append(first.slice(i, i + 4))
  fs.faults.trace = []
  let imagesAtRetired: Array<[string, MemFileSystem]> = []
  let traceAtRetired: string[] = []
  hooks.atRetired = () => {
    traceAtRetired = fs.faults.trace!.slice()
    // A crash now, under every power-loss mode (and a killed process).
    imagesAtRetired = [['kill', killedProcessImage(fs)], ...CRASH_MODES.map((m): [string, MemFileSystem] => [m, powerLossImage(fs, rnd, m)])]
  }
  const wait = retired()
  logs.rotate(2)
  t.is(logs.number, 2, 'log 2 is current')
  t.ok(logs.retiring, 'retiring from the rotation on')
  t.same(fs.faults.trace.slice(0, 1), ['openWrite 000002.log'], 'the new log is created first')
  await wait
  t.notOk(logs.retiring, 'not retiring once onRetired fired')
  for (const op of ['syncAsync 000001.log', 'syncDone 000001.log', 'syncDirAsync db', 'syncDirDone db', 'truncate 000001.log']) {
    t.ok(traceAtRetired.includes(op), `before onRetired: ${op}`)
  }
  t.is(imagesAtRetired.length, CRASH_MODES.length + 1, 'an image per crash mode')
  for (const [mode, image] of imagesAtRetired) {
    t.same(records(image, 1), hex(first), `${mode}: log 1 keeps all ${first.length} records`)
    t.ok(image.exists(join(DIR, logName(2))), `${mode}: log 2's directory entry survives`)
  }
  const second = payloads(rnd, 3)
  logs.append(second)
  await logs.syncAsync()
  t.same(records(fs, 1), hex(first), 'log 1 holds only its own records')
  t.same(records(fs, 2), hex(second), 'log 2 holds the records appended after the rotation')
  t.is(fs.readSmallFile(join(DIR, logName(1))).length, logs.recordsEnd(1), 'log 1 trimmed to its last record')
  t.same(events, ['retired'], 'no error')
  logs.close()
})

test('log manager: a crash right after rotate() loses none of the old log\'s written records (killed process)', (t) => {
  const rnd = new Random(seed + 1)
  const { fs, logs } = setup()
  const first = payloads(rnd, 10)
  logs.append(first)
  logs.rotate(2)
  const image = killedProcessImage(fs)
  t.same(records(image, 1), hex(first), 'every record of log 1 (its zero tail read as torn)')
  t.same(records(image, 2), [], 'log 2 exists, empty')
  t.end()
})

test('log manager: syncAsync resolves only after every earlier retirement is durable', async (t) => {
  const rnd = new Random(seed + 2)
  const { fs, logs, events } = setup()
  const first = payloads(rnd, 5)
  logs.append(first)
  logs.rotate(2)
  logs.append(payloads(rnd, 1))
  // Log 2's own fdatasync returns before log 1's retirement (which also closes it) is over.
  let dropImage: MemFileSystem | undefined
  await logs.syncAsync().then(() => {
    events.push('synced')
    dropImage = powerLossImage(fs, rnd, 'drop')
  })
  t.same(events, ['retired', 'synced'], 'the sync write is acknowledged after the retirement')
  t.same(records(dropImage!, 1), hex(first), 'log 1 durable when the sync write is acknowledged')
  t.is(records(dropImage!, 2).length, 1, 'and the synced record of log 2')
  logs.close()
})

test('log manager: a failed retirement is reported through onError naming the old log; later sync writes fail', async (t) => {
  const rnd = new Random(seed + 3)
  const { fs, logs, events, errors, retired } = setup()
  logs.append(payloads(rnd, 4))
  fs.faults.inject({ op: 'syncAsync', path: logName(1) })
  const wait = retired()
  logs.rotate(2)
  await wait
  t.same(events, ['error 000001.log'], 'onError, not onRetired')
  t.ok(isLevelError(errors[0], 'LEVEL_IO_ERROR'), 'LEVEL_IO_ERROR')
  t.is((errors[0].cause as NodeJS.ErrnoException).code, 'EIO', 'caused by the failed fsync')
  t.notOk(logs.retiring, 'no longer retiring')
  logs.append(payloads(rnd, 1))
  try {
    await logs.syncAsync()
    t.fail('a sync write after a failed retirement must fail')
  } catch (err) {
    t.ok(isLevelError(err, 'LEVEL_IO_ERROR'), 'a sync write after it fails: ' + (err as Error).message)
  }
  await logs.settle()
  logs.close()
  t.is(fs.readSmallFile(join(DIR, logName(1))).length, logs.recordsEnd(1), 'close() closed (trimmed) the log whose retirement failed')
  logs.close()
  t.pass('close() again does nothing')
})

test('log manager: a failed background sync is reported through onError naming the log; a failed inline sync or append throws naming it', async (t) => {
  const rnd = new Random(seed + 4)
  const { fs, logs, events, errors, retired } = setup(1000)
  fs.faults.inject({ op: 'syncDone', path: logName(1) })
  fs.faults.trace = []
  const wait = retired()
  logs.append([rnd.bytes(600)])
  t.notOk(fs.faults.trace.some((op) => op.startsWith('syncAsync')), 'below the threshold: no background sync yet')
  logs.append([rnd.bytes(600)])
  await wait
  t.same(events, ['error 000001.log'], 'the background fdatasync past the threshold failed, reported once')
  t.ok(isLevelError(errors[0], 'LEVEL_IO_ERROR'), 'LEVEL_IO_ERROR')

  fs.faults.inject({ op: 'sync', path: logName(1) })
  t.throws(() => { logs.sync() }, (err: LevelError) => err.code === 'LEVEL_IO_ERROR' && err.file === logName(1), 'inline sync: LEVEL_IO_ERROR naming the log')
  fs.faults.inject({ op: 'append', path: logName(1) })
  t.throws(() => { logs.append([rnd.bytes(10)]) }, (err: LevelError) => err.code === 'LEVEL_IO_ERROR' && err.file === logName(1), 'append: LEVEL_IO_ERROR naming the log')
  await logs.settle()
  logs.close()
})

test('log manager: one background sync per log, started once the threshold is crossed', async (t) => {
  const rnd = new Random(seed + 5)
  const { fs, logs, retired } = setup(1000)
  fs.faults.trace = []
  const syncs = (): number => fs.faults.trace!.filter((op) => op.startsWith('syncAsync')).length
  logs.append([rnd.bytes(500)])
  t.is(syncs(), 0, '500 bytes: none')
  logs.append([rnd.bytes(600)])
  t.is(syncs(), 1, 'past 1000 bytes: one')
  logs.append([rnd.bytes(3000)])
  t.is(syncs(), 1, 'not a second on the same log')
  const wait = retired()
  logs.rotate(2)
  await wait
  const before = syncs()
  logs.append([rnd.bytes(1200)])
  t.is(syncs(), before + 1, 'the next log gets its own')
  await logs.settle()
  logs.close()
})

test('log manager: recordsEnd, adopt and forget', async (t) => {
  const rnd = new Random(seed + 6)
  const fs = new MemFileSystem()
  fs.mkdirp(DIR)
  let retired = (): void => {}
  const logs = new LogManager(fs, DIR, 1 << 20, { onRetired: () => retired(), onError: (e) => t.fail(e.message) })
  logs.adopt(3, 700)
  logs.adopt(4, 900)
  logs.open(5)
  t.is(logs.recordsEnd(3), 700, 'an adopted log: the end it was given')
  t.is(logs.recordsEnd(5), 0, 'the new current log: empty')
  t.is(logs.recordsEnd(99), undefined, 'an unknown log: undefined')
  logs.append(payloads(rnd, 3))
  const end5 = logs.recordsEnd(5)!
  t.ok(end5 > 0, 'the current log: its size')
  const done = new Promise<void>((resolve) => { retired = resolve })
  logs.rotate(6)
  logs.append(payloads(rnd, 2))
  t.is(logs.recordsEnd(5), end5, 'a retired log: its size when it took its last record')
  t.ok(logs.recordsEnd(6)! > 0, 'the new log: its own size')
  logs.forget(3)
  logs.forget(4)
  t.same([3, 4, 5, 6].map((n) => logs.recordsEnd(n)), [undefined, undefined, end5, logs.recordsEnd(6)], 'forget(3) and forget(4) forget those logs only')
  t.is(logs.sealedLog(5)?.length, end5, 'the retired log is sealed at that size')
  logs.forget(5)
  t.is(logs.recordsEnd(5), undefined, 'forget(5): a sealed log forgotten too')
  await done
  await logs.settle()
  logs.close()
  logs.close()
  t.is(fs.readSmallFile(join(DIR, logName(6))).length, logs.recordsEnd(6), 'close() trims the current log; a second close() does nothing')
})

test('log manager: entryDurable(n) resolves once the rotated-to log\'s directory entry is durable', async (t) => {
  const { fs, logs, retired } = setup()
  const wait = retired()
  logs.rotate(2)
  t.notOk(powerLossImage(fs, new Random(seed), 'drop').exists(join(DIR, logName(2))), 'right after rotate: log 2\'s entry not yet durable')
  await logs.entryDurable(2)
  t.ok(powerLossImage(fs, new Random(seed), 'drop').exists(join(DIR, logName(2))), 'after entryDurable(2): durable')
  await wait
  await tick()
  logs.close()
})
