// Engine options: meaning, default and trade-off of each, and their validation.
// Names follow classic-level (LevelDB) where the meaning is the same.
import { invalidOption } from './errors'

export const NUM_LEVELS = 7

export interface EngineOptions {
  /** Create the directory and an empty database if missing. Default true. */
  createIfMissing: boolean
  /** Fail to open if a database already exists. Default false. */
  errorIfExists: boolean
  /**
   * Open a database that another process may be writing, without taking its
   * LOCK and without creating, changing or removing any file (lib/follower.ts).
   * Reads see a prefix of the writer's committed writes; `refresh()` moves to its
   * latest. Writes fail with LEVEL_READ_ONLY. Default false.
   */
  readOnly: boolean
  /**
   * Read-only opens: refresh on a timer every this many milliseconds (0: only
   * when `refresh()` is called). A write becomes visible at most about this long
   * (plus one refresh) after the writer acknowledged it. Default 0.
   */
  refreshIntervalMs: number
  /**
   * Memtable size in bytes before it is frozen and flushed to a level-0 table.
   * Default 4 MiB. Larger: fewer, larger L0 tables and less write amplification,
   * but more memory and a longer log replay after a crash.
   */
  writeBufferSize: number
  /** Approximate size of a data block in a table. Default 4096. Smaller blocks make point reads cheaper and indexes larger. */
  blockSize: number
  /** Entries between restart points in a block. Default 16. */
  blockRestartInterval: number
  /**
   * Byte budget of the cache of (raw) data blocks, shared by all tables (CLOCK
   * eviction, lib/sstable/cache.ts). Default 32 MiB: classic-level's block
   * cache is 8 MB, but LevelDB reads tables through mmap, so every block it
   * touches stays in its memory as page cache and a miss of its block cache
   * costs no system call; here a miss is a pread (~3 µs). Measured by
   * benchmarks/cache-size.ts (200,000 keys of 16 + 100 bytes, getSync of every
   * key in random order, fresh processes, 3 runs): 8 MiB 0.47-0.64x
   * classic-level (RSS 161-163 MB), 32 MiB 1.02-1.55x (140-141 MB),
   * classic-level's RSS 151 MB. 0 disables it.
   */
  cacheSize: number
  /** Open table files kept in the table cache (each holds a file descriptor). Default 1000. */
  maxOpenFiles: number
  /** Bloom filter bits per key. Default 10 (~1% false positives). 0 disables filters. */
  bloomBitsPerKey: number
  /**
   * Snappy-compress the data and index blocks of the tables compactions write
   * (on their worker thread), keeping a block compressed only when that saves
   * at least 1/8. Flushes write level-0 tables uncompressed: a fill waits for
   * them, and compaction soon rewrites them (JSON batch fills: about 1.3x
   * faster than compressing them too), nor do merges into level 1 while a
   * deeper level holds tables (lib/compaction/scheduler.ts,
   * compactionTableOptions: level 1 is merged again soon; a JSON fill and its
   * compactRange on the event loop: 0.87-0.92x the CPU). Default true, as in classic-level: JSON and text
   * take 2-4x less disk and scans move fewer bytes; incompressible values cost
   * one quick attempt per block when written and nothing when read. Tables
   * already written keep their blocks as they are until compacted.
   */
  compression: boolean
  /** Target size of a table written by compaction. Default writeBufferSize / 2 (2 MiB by default). */
  targetFileSize: number
  /** Size limit of level 1; level n+1 may be `levelMultiplier` times larger. Default 2.5 x writeBufferSize (10 MiB by default). */
  maxBytesForLevelBase: number
  /** Size ratio between adjacent levels. Default 10. */
  levelMultiplier: number
  /**
   * Leveled: number of L0 tables that triggers an L0 -> L1 compaction. Default 4.
   * Tiered: number of sorted runs (each L0 table, each non-empty level) at which
   * runs are merged; more than this many are merged down to it. Default 8: more
   * runs to read, less rewriting.
   */
  level0CompactionTrigger: number
  /** Number of L0 tables at which each write group is delayed by 1 ms (a slowdown). Default 8. */
  level0SlowdownWritesTrigger: number
  /** Number of L0 tables at which writes wait for compaction (a write stall). Default 12. */
  level0StopWritesTrigger: number
  /** Frozen memtables waiting for flush before writes wait. Default 2. (RocksDB calls frozen memtables immutable; the option keeps its name.) */
  maxImmutableMemtables: number
  /**
   * Run compactions, and memtable flushes, on worker threads (the second core)
   * so they never block the event loop. Default true. Only with the node file
   * system; otherwise they run on the event loop, in short slices.
   */
  compactionWorker: boolean
  /**
   * close() writes the memtables to level-0 tables (on the event loop), so that
   * the next open has no log to replay: it reads the manifest and takes writes.
   * Default true. false: the writes stay in the logs, synced and recorded in
   * the manifest (lib/recovery.ts), and the next open replays them.
   */
  flushOnClose: boolean
  /**
   * Split a compaction of at least 4 x targetFileSize of input in two halves
   * run at once, the second half on a second worker thread
   * (lib/compaction/scheduler.ts), so that a large compaction can use two
   * cores. Default false: measured on 2 shared cores
   * (benchmarks/subcompactions.ts, load 4, when the second half ran on the
   * flush thread), compactRange() took 0.83-0.99x the time, but a fill that
   * waits for compaction ran at 0.79-0.98x. No effect without compactionWorker.
   */
  subcompactions: boolean
  /**
   * Run the log's fdatasync for `{ sync: true }` writes on the event loop while
   * this disk's fdatasync takes under 1 ms (the turn budget), saving the
   * thread-pool round trip. An inline fdatasync that takes longer sends the
   * next 256 syncs to the thread pool. Default true; false: always the thread
   * pool (the event loop never waits on an fsync of a sync write).
   */
  inlineSync: boolean
  /**
   * Compaction strategy. 'leveled' (default): one sorted run per level, levels
   * `levelMultiplier` apart; low read and space amplification, higher write
   * amplification. 'tiered' (universal-style): runs of similar size merged
   * together; lower write amplification, more runs to read and more space.
   */
  compaction: 'leveled' | 'tiered'
  /**
   * Tiered: merge every run into one once the runs newer than the oldest hold more
   * than this percentage of its bytes. Default 200: bytes on disk stay within about
   * 3x the oldest run (the live data, in an update-heavy workload).
   */
  maxSizeAmplificationPercent: number
  /**
   * Tiered: a window of adjacent runs, from the newest, takes the next older run
   * while that run is at most the window's total size plus this percentage; a
   * window of two or more runs is merged. Default 1 (RocksDB's universal default).
   */
  sizeRatioPercent: number
  /**
   * What open() does with damaged write-ahead logs (RocksDB's WAL recovery
   * modes, under names that say what they do). A crash leaves damage only at
   * the end of the newest log holding records: an interrupted write, or pages
   * written back out of order, whose lost bytes read as zeros (then valid
   * records can follow). Everything dropped is listed in db.stats().recovery.
   * - 'torn-tail' (default): drops such crash damage and the records after it
   *   (none of them was synced: a sync makes everything before it durable).
   *   Damage a crash cannot leave fails the open with LEVEL_CORRUPTION naming
   *   the log and the offset: a flipped bit with valid records after it, a
   *   damaged log followed by newer ones, a missing live log, missing sequence
   *   numbers. The default because it loses nothing a crash did not lose and
   *   hides no damage: the other modes must be chosen knowingly.
   * - 'point-in-time': any damage ends the replay there: the database opens as
   *   it was just before it, and every later record (newer logs too) is dropped.
   *   Consistent (a prefix of the writes), but silent about synced writes lost.
   * - 'skip-damaged': replays every valid record of every log, skipping damaged
   *   stretches. Salvage: the result may be a state that never existed.
   * - 'absolute': any damage, even a torn last record, fails the open.
   */
  walRecovery: WalRecovery
  /**
   * Retired write-ahead logs (their writes are in tables) kept for the change
   * feed (Engine.changes) while their total size is within this many bytes.
   * Default 0: none kept by size. Kept logs survive restarts; see
   * lib/wal/log-retention.ts.
   */
  retainLogBytes: number
  /** Retired logs kept for the change feed for this many milliseconds after their retirement. Default 0: none kept by age. */
  retainLogAgeMs: number
}

export type WalRecovery = 'torn-tail' | 'point-in-time' | 'skip-damaged' | 'absolute'
export const WAL_RECOVERY_MODES: readonly WalRecovery[] = ['torn-tail', 'point-in-time', 'skip-damaged', 'absolute']

export const DEFAULT_WRITE_BUFFER_SIZE = 4 * 1024 * 1024

type Validator = (name: string, value: unknown) => void

function positiveInt (min: number, max = Number.MAX_SAFE_INTEGER): Validator {
  return (name, value) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw invalidOption(name, `must be an integer between ${min} and ${max}, got ${String(value)}`)
    }
  }
}

function boolean (name: string, value: unknown): void {
  if (typeof value !== 'boolean') throw invalidOption(name, `must be a boolean, got ${String(value)}`)
}

const validators: Record<keyof EngineOptions, Validator> = {
  createIfMissing: boolean,
  errorIfExists: boolean,
  readOnly: boolean,
  refreshIntervalMs: positiveInt(0, 3600 * 1000),
  writeBufferSize: positiveInt(256, 1024 * 1024 * 1024),
  blockSize: positiveInt(64, 64 * 1024 * 1024),
  blockRestartInterval: positiveInt(1, 1024),
  cacheSize: positiveInt(0),
  maxOpenFiles: positiveInt(2),
  bloomBitsPerKey: positiveInt(0, 64),
  compression: boolean,
  targetFileSize: positiveInt(256),
  maxBytesForLevelBase: positiveInt(256),
  levelMultiplier: positiveInt(2, 1000),
  level0CompactionTrigger: positiveInt(1, 1000),
  level0SlowdownWritesTrigger: positiveInt(1, 10000),
  level0StopWritesTrigger: positiveInt(1, 10000),
  maxImmutableMemtables: positiveInt(1, 64),
  compactionWorker: boolean,
  flushOnClose: boolean,
  subcompactions: boolean,
  inlineSync: boolean,
  compaction: (name, value) => {
    if (value !== 'leveled' && value !== 'tiered') throw invalidOption(name, `must be 'leveled' or 'tiered', got ${String(value)}`)
  },
  maxSizeAmplificationPercent: positiveInt(1, 100000),
  sizeRatioPercent: positiveInt(0, 100000),
  retainLogBytes: positiveInt(0),
  retainLogAgeMs: positiveInt(0),
  walRecovery: (name, value) => {
    if (!(WAL_RECOVERY_MODES as readonly unknown[]).includes(value)) {
      throw invalidOption(name, `must be one of ${WAL_RECOVERY_MODES.map((m) => `'${m}'`).join(', ')}, got ${String(value)}`)
    }
  }
}

export const ENGINE_OPTION_NAMES = Object.keys(validators) as Array<keyof EngineOptions>

/** Fills defaults and validates. Unknown keys are ignored (the Level API passes its own). */
export function resolveOptions (input: Partial<Record<keyof EngineOptions, unknown>> = {}): EngineOptions {
  // The validator checked the value's type: the option's own.
  const pick = <T>(name: keyof EngineOptions, dflt: T): T => {
    const v = input[name] === undefined ? dflt : input[name]
    validators[name](name, v)
    return v as T
  }
  const writeBufferSize: number = pick('writeBufferSize', DEFAULT_WRITE_BUFFER_SIZE)
  const compaction = pick<EngineOptions['compaction']>('compaction', 'leveled')
  const opts: EngineOptions = {
    createIfMissing: pick('createIfMissing', true),
    errorIfExists: pick('errorIfExists', false),
    readOnly: pick('readOnly', false),
    refreshIntervalMs: pick('refreshIntervalMs', 0),
    writeBufferSize,
    blockSize: pick('blockSize', 4096),
    blockRestartInterval: pick('blockRestartInterval', 16),
    cacheSize: pick('cacheSize', 32 * 1024 * 1024),
    maxOpenFiles: pick('maxOpenFiles', 1000),
    bloomBitsPerKey: pick('bloomBitsPerKey', 10),
    compression: pick('compression', true),
    targetFileSize: pick('targetFileSize', Math.max(256, Math.floor(writeBufferSize / 2))),
    maxBytesForLevelBase: pick('maxBytesForLevelBase', Math.max(256, Math.floor(writeBufferSize * 2.5))),
    levelMultiplier: pick('levelMultiplier', 10),
    level0CompactionTrigger: pick('level0CompactionTrigger', compaction === 'tiered' ? 8 : 4),
    level0SlowdownWritesTrigger: pick('level0SlowdownWritesTrigger', 8),
    level0StopWritesTrigger: pick('level0StopWritesTrigger', 12),
    maxImmutableMemtables: pick('maxImmutableMemtables', 2),
    compactionWorker: pick('compactionWorker', true),
    flushOnClose: pick('flushOnClose', true),
    subcompactions: pick('subcompactions', false),
    inlineSync: pick('inlineSync', true),
    compaction,
    maxSizeAmplificationPercent: pick('maxSizeAmplificationPercent', 200),
    sizeRatioPercent: pick('sizeRatioPercent', 1),
    walRecovery: pick('walRecovery', 'torn-tail'),
    retainLogBytes: pick('retainLogBytes', 0),
    retainLogAgeMs: pick('retainLogAgeMs', 0)
  }
  if (opts.level0StopWritesTrigger < opts.level0CompactionTrigger) {
    throw invalidOption('level0StopWritesTrigger', `must be >= level0CompactionTrigger (${opts.level0CompactionTrigger})`)
  }
  return opts
}

/** Size limit of a level >= 1. */
export function maxBytesForLevel (opts: EngineOptions, level: number): number {
  let bytes = opts.maxBytesForLevelBase
  for (let l = 1; l < level; l++) bytes *= opts.levelMultiplier
  return bytes
}
