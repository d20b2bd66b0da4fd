// Bulk load: a sorted stream of entries written straight into tables as the
// whole state of a database, with no memtable and no log in between: for the
// offline tools that write a database whole, into a directory that is locked
// or not yet visible to anyone else (bulkLoad below takes no lock itself).
//
//   1. The stream (internal order: user key ascending, newest version first)
//      goes through the table writer (lib/compaction/table-writer.ts) with no
//      snapshot to keep: only the newest version of each key is written, and
//      only if it is a value (nothing lies below the output to hide).
//   2. The tables go to the deepest level, as one sorted run (they cannot
//      overlap: the stream is sorted).
//   3. An empty log is created, then a fresh manifest names the tables, that
//      log as the live one (numbered past every file number in use, so no older
//      log is ever replayed on top), and `lastSequence`; CURRENT is pointed at
//      it (lib/manifest/version-set.ts).
import type { FileSystem } from '../../../lib/fs/fs'
import type { InternalIterator } from '../../../lib/iterators/internal-iterator'
import type { RangeTombstoneIndex } from '../../../lib/range-tombstones'
import type { FileMeta } from '../../../lib/manifest/file-meta'
import { join, logName, manifestName } from '../../../lib/filenames'
import { MAX_SEQ } from '../../../lib/keys'
import { NUM_LEVELS, type EngineOptions } from '../../../lib/options'
import { writeTables } from '../../../lib/compaction/table-writer'
import { VersionSet } from '../../../lib/manifest/version-set'
import { Version } from '../../../lib/manifest/version'
import { tableOptionsOf } from '../../../lib/sstable/table-builder'

export interface BulkLoadParams {
  fs: FileSystem
  dir: string
  /** How tables are built. */
  options: Pick<EngineOptions, 'blockSize' | 'blockRestartInterval' | 'bloomBitsPerKey' | 'compression' | 'targetFileSize'>
  /** The entries, in internal order; closed when done. */
  input: InternalIterator
  /** The first file number no file in `dir` uses, nor ever used. */
  firstFileNumber: number
  /** The newest sequence number in the stream (or ever used): the database continues after it. */
  lastSequence: number
  /** Range tombstones the stream's entries are still subject to (repair: those its logs held). */
  rangeTombstones?: RangeTombstoneIndex
}

export interface BulkLoadResult {
  /** The tables written, in key order. */
  tables: FileMeta[]
  /** Entries read from the stream (every version and tombstone). */
  entriesIn: number
  /** The new manifest's name. */
  manifest: string
}

/** Steps 1 to 3 above. `dir` is locked or not yet visible to anyone else. */
export async function bulkLoad (p: BulkLoadParams): Promise<BulkLoadResult> {
  const { fs, dir, options } = p
  let next = p.firstFileNumber
  const result = await writeTables(p.input, {
    fs,
    dir,
    table: tableOptionsOf(options),
    targetFileSize: options.targetFileSize,
    smallestSnapshot: MAX_SEQ,
    isBaseLevelForKey: () => true,
    newFileNumber: () => next++,
    shouldAbort: () => false,
    rangeTombstones: p.rangeTombstones
  })
  const vs = new VersionSet(fs, dir)
  try {
    vs.current = Version.empty().apply({ newFiles: result.outputs.map((meta) => ({ level: NUM_LEVELS - 1, meta })) })
    vs.nextFileNumber = next + 1
    vs.logNumber = next
    vs.lastSequence = p.lastSequence
    // The live log exists before the manifest names it (lib/recovery.ts).
    fs.openWrite(join(dir, logName(next))).close()
    fs.syncDir(dir)
    vs.writeNewManifest()
    return { tables: result.outputs, entriesIn: result.entriesIn, manifest: manifestName(vs.manifestNumber) }
  } finally {
    vs.close()
  }
}
