// An engine's statistics and introspection (db.stats(), levels, approximate
// sizes), computed from its parts; lib/stats.ts documents every field.
import type { Version } from './manifest/version'
import { overlapsHalfOpen } from './manifest/file-meta'
import type { MemTableSet } from './memtable/memtable-set'
import type { BlockCache } from './sstable/cache'
import type { TableCache } from './sstable/table-cache'
import type { EngineParts } from './engine-parts'
import type { RecoveryReport } from './recovery'
import type { LsmStats } from './stats'
import type { ReplicationStats } from './backup/shipper-options'
import { compareBytes } from './util/coding'

export interface LevelInfo {
  level: number
  files: number
  bytes: number
}

/** What the statistics are computed from besides the engine's parts. */
export interface StatsState {
  /** Point reads' table searches, and those that did not hold the key. */
  tableReads: { tableGets: number, tableGetMisses: number }
  /** Keys and values written by the user since open. */
  userBytes: number
  /** Writes queued in the commit pipeline, time stalled (ms) and slowdowns. */
  pendingWrites: number
  stallMs: number
  slowdowns: number
  recovery: RecoveryReport
  replication: ReplicationStats | undefined
}

/** The files and bytes of each level of `version`. */
export function levelInfo (version: Version): LevelInfo[] {
  return version.levels.map((files, level) => ({
    level,
    files: files.length,
    bytes: files.reduce((s, f) => s + f.size, 0)
  }))
}

/** stats().memory: what the engine holds, by what bounds it. */
export function memoryBytes (memtables: MemTableSet, blockCache: BlockCache, tableCache: TableCache): LsmStats['memory'] {
  const mem = memtables.approximateBytes()
  const cache = blockCache.usedBytes()
  const tables = tableCache.memoryBytes
  return { memtables: mem, blockCache: cache, tables, total: mem + cache + tables }
}

/** Structured statistics (lib/stats.ts documents every field). */
export function engineStats (p: EngineParts, s: StatsState): LsmStats {
  const version = p.versions.current
  const levels = levelInfo(version)
  let tables = 0
  let deepest = 0
  let runs = 1 + p.memtables.frozen.length
  for (const l of levels) {
    tables += l.bytes
    if (l.files > 0) deepest = l.bytes
    runs += l.level === 0 ? l.files : l.files > 0 ? 1 : 0
  }
  const c = p.scheduler.counters
  const written = c.bytesFlushed + c.bytesCompacted
  const bloomUseful = p.tableCache.bloomUseful
  return {
    levels,
    writeAmplification: s.userBytes > 0 ? written / s.userBytes : 0,
    spaceAmplification: deepest > 0 ? tables / deepest : 0,
    readAmplification: runs,
    bytes: { user: s.userBytes, wal: p.logs.bytesWritten, flushed: c.bytesFlushed, compacted: c.bytesCompacted, tables },
    bloom: {
      useful: bloomUseful,
      falsePositives: Math.max(0, s.tableReads.tableGetMisses - bloomUseful),
      checked: p.tableCache.bloomChecked
    },
    blockCache: {
      hits: p.blockCache.hits,
      misses: p.blockCache.misses,
      bytes: p.blockCache.usedBytes(),
      capacity: p.blockCache.capacityBytes
    },
    memtableBytes: p.memtables.approximateBytes(),
    memory: memoryBytes(p.memtables, p.blockCache, p.tableCache),
    rangeTombstones: p.memtables.rangeTombstoneCount() + version.rangeTombstones.length,
    pendingWrites: s.pendingWrites,
    stallMs: s.stallMs,
    slowdowns: s.slowdowns,
    flushes: c.flushes,
    compactions: {
      running: p.scheduler.running,
      done: c.compactions,
      trivialMoves: c.trivialMoves,
      split: c.splitCompactions
    },
    recovery: structuredClone(s.recovery),
    ...(s.replication !== undefined ? { replication: s.replication } : {})
  }
}

/**
 * Approximate bytes in `version`'s tables used by keys in [start, end): whole
 * tables inside the range plus the part of each boundary table before/after
 * the key's position (from the table's index). The engine awaits the flush of
 * the memtables replayed at open first, so that a reopen reports what was in
 * tables at close plus what the logs held, as LevelDB does (it writes the
 * replayed log to a table during the open), and two reopens with no write
 * between them report the same size.
 */
export function approximateSizeOf (version: Version, tableCache: TableCache, start: Uint8Array, end: Uint8Array): number {
  if (compareBytes(start, end) >= 0) return 0
  let total = 0
  for (const files of version.levels) {
    for (const f of files) {
      if (!overlapsHalfOpen(f, start, end)) continue
      const startsInside = compareBytes(f.smallest.userKey, start) >= 0
      const endsInside = compareBytes(f.largest.userKey, end) < 0
      if (startsInside && endsInside) { total += f.size; continue }
      const table = tableCache.get(f.number)
      const from = startsInside ? 0 : table.approximateOffsetOf(start)
      const to = endsInside ? f.size : table.approximateOffsetOf(end)
      total += Math.max(0, to - from)
    }
  }
  return total
}
