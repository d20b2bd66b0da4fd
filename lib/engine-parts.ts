// The parts an engine (lib/engine.ts) is wired from, as the modules that work
// on several of them (lib/write-path.ts, lib/outlets.ts, lib/engine-stats.ts)
// take them.
import type { FileSystem } from './fs/fs'
import type { EngineOptions } from './options'
import type { VersionSet } from './manifest/version-set'
import type { MemTableSet } from './memtable/memtable-set'
import type { BlockCache } from './sstable/cache'
import type { TableCache } from './sstable/table-cache'
import type { LogManager } from './wal/log-manager'
import type { CompactionScheduler } from './compaction/scheduler'

export interface EngineParts {
  fs: FileSystem
  /** The database's directory. */
  dir: string
  options: EngineOptions
  versions: VersionSet
  memtables: MemTableSet
  tableCache: TableCache
  blockCache: BlockCache
  logs: LogManager
  scheduler: CompactionScheduler
}
