// Structured statistics of an engine (db.stats()), and their text form for
// getProperty('lsm.stats'). Users of LevelDB parse its text stats and complain
// that they are brittle; here the object is the interface and the text is only
// a rendering of it.
import type { RecoveryReport } from './recovery'
import type { ReplicationStats } from './backup/shipper'
import type { FollowStats } from './backup/follow'

export interface LevelStats {
  level: number
  files: number
  bytes: number
}

export interface LsmStats {
  levels: LevelStats[]
  /**
   * Bytes written to tables (flushes + compactions) per byte of user data written
   * (keys + values) since open. The log is counted apart (bytes.wal). Table
   * bytes are as stored: with compression, data that compresses well can
   * give less than 1.
   */
  writeAmplification: number
  /**
   * Estimate of bytes on disk per byte of live data: all table bytes divided by
   * the bytes of the deepest non-empty level (where, under leveled compaction,
   * ~90% of live data settles). 1 means no redundant versions; 0 when empty.
   */
  spaceAmplification: number
  /**
   * Sorted runs a point read may have to consult in the worst case: memtables,
   * each level-0 table, and one table per non-empty deeper level (Bloom filters
   * make most of them cheap).
   */
  readAmplification: number
  bytes: {
    /** Keys + values written by the user (puts; deletes count their keys). */
    user: number
    /** Bytes appended to write-ahead logs. */
    wal: number
    /** Bytes of level-0 tables written by flushes. */
    flushed: number
    /** Bytes of tables written by compactions. */
    compacted: number
    /** Bytes of all live tables. */
    tables: number
  }
  bloom: {
    /** Table probes the filter answered "absent", saving a block read. */
    useful: number
    /** Probes the filter let through that found nothing (false positives). */
    falsePositives: number
    /** All filter checks. */
    checked: number
  }
  blockCache: { hits: number, misses: number, bytes: number, capacity: number }
  /** Bytes in the active and frozen memtables. */
  memtableBytes: number
  /**
   * Memory the engine holds, in bytes, by what bounds it (README, "Memory"):
   * memtables (writeBufferSize, maxImmutableMemtables; as memtableBytes), the
   * block cache (cacheSize; as blockCache.bytes), the open tables' indexes and
   * Bloom filters (maxOpenFiles), and their total. Not counted: a flush's copy
   * of a memtable on the flush thread, iterators' blocks and readahead, the job
   * threads' heaps, and what the runtime has freed but not yet returned.
   */
  memory: { memtables: number, blockCache: number, tables: number, total: number }
  /**
   * Range tombstones (written by clear()) in the memtables plus those in the
   * manifest that may still hide data; each is dropped once compactions have
   * removed everything older in its range.
   */
  rangeTombstones: number
  /**
   * Writes issued and not yet committed to the log (waiting for the next tick,
   * a slowdown or a stall). The engine buffers nothing beyond what memtables and
   * level 0 allow: during a stall this is exactly the writes the application has
   * in flight (1 for a loop of awaited writes).
   */
  pendingWrites: number
  /** Time writes spent delayed or waiting for flushes or compactions (write stalls), in ms. */
  stallMs: number
  /** Write groups delayed by 1 ms because level 0 reached level0SlowdownWritesTrigger. */
  slowdowns: number
  flushes: number
  /** Merging compactions running and done; trivialMoves: tables moved down by a manifest edit alone; split: compactions run as two subcompactions (lib/compaction/scheduler.ts). */
  compactions: { running: number, done: number, trivialMoves: number, split: number }
  /** What the last open() replayed from the logs and what it dropped (option walRecovery). */
  recovery: RecoveryReport
  /** Shipping to an object store (db.replicate, lib/backup/shipper.ts), if started. */
  replication?: ReplicationStats
  /** A replica following an object store (ReplicaLevel, lib/backup/follow.ts). */
  replica?: FollowStats
}

function fmtBytes (n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(2)} GiB`
}

/** A human-readable rendering of the stats (getProperty('lsm.stats')). */
export function formatStats (s: LsmStats): string {
  const lines = ['Level  Files        Size']
  for (const l of s.levels) {
    lines.push(`${String(l.level).padStart(5)}  ${String(l.files).padStart(5)}  ${fmtBytes(l.bytes).padStart(10)}`)
  }
  lines.push(
    `write amplification ${s.writeAmplification.toFixed(2)}, space amplification ${s.spaceAmplification.toFixed(2)}, read amplification ${s.readAmplification}`,
    `bytes: user ${fmtBytes(s.bytes.user)}, wal ${fmtBytes(s.bytes.wal)}, flushed ${fmtBytes(s.bytes.flushed)}, compacted ${fmtBytes(s.bytes.compacted)}, tables ${fmtBytes(s.bytes.tables)}`,
    `bloom: ${s.bloom.useful} useful, ${s.bloom.falsePositives} false positives, ${s.bloom.checked} checked`,
    `block cache: ${s.blockCache.hits} hits, ${s.blockCache.misses} misses, ${fmtBytes(s.blockCache.bytes)} of ${fmtBytes(s.blockCache.capacity)}`,
    `memory: memtables ${fmtBytes(s.memory.memtables)}, block cache ${fmtBytes(s.memory.blockCache)}, tables ${fmtBytes(s.memory.tables)}, total ${fmtBytes(s.memory.total)}`,
    `memtables ${fmtBytes(s.memtableBytes)}, range tombstones ${s.rangeTombstones}, stalls ${s.stallMs} ms (${s.slowdowns} slowdowns, ${s.pendingWrites} writes waiting), flushes ${s.flushes}, compactions ${s.compactions.done} (${s.compactions.split} split in two, +${s.compactions.trivialMoves} moves, ${s.compactions.running} running)`
  )
  const r = s.recovery
  lines.push(`recovery (walRecovery '${r.walRecovery}'): ${r.logsReplayed} logs, ${r.recordsReplayed} records replayed` + (r.recordsAdopted > 0 ? ` (${r.recordsAdopted} adopted from this process's read-only open)` : '') +
    (r.dropped.length === 0 ? ', nothing dropped' : '; dropped: ' + r.dropped.map((d) => `${d.file} from offset ${d.offset} (${fmtBytes(d.bytes)}, ${d.reason})`).join(', ')))
  return lines.join('\n') + '\n'
}
