// Writes a sorted internal stream into one or more tables: the executor shared by
// memtable flushes and compactions. It applies the rules for what may be
// dropped, splits outputs at a target size on user-key boundaries, and yields to
// the event loop every few thousand entries so that a flush or compaction never
// blocks the application for long.
//
// Drop rules (LevelDB's):
//   - an older version of a key is dropped if a newer version of the same key,
//     already seen in this stream, is visible to every open snapshot
//     (its seq <= smallestSnapshot);
//   - a tombstone is dropped if it is visible to every snapshot and no level
//     below the output can hold an older version of its key (`isBaseLevelForKey`);
//   - a version hidden by a range tombstone (lib/range-tombstones.ts) that every
//     snapshot sees is dropped.
// Each output's `floor` is the larger of its smallest seq and `floorBase`, the
// newest range tombstone the caller guarantees was applied in full.
import { createWhenRoom, syncDirAsync, type FileSystem } from '../fs/fs'
import type { InternalIterator } from '../iterators/internal-iterator'
import type { FileMeta } from '../manifest/file-meta'
import { TableBuilder, type TableOptions } from '../sstable/table-builder'
import { join, tableName } from '../filenames'
import { KIND_DELETE } from '../keys'
import { compareRange } from '../util/coding'
import { levelError } from '../errors'
import type { RangeTombstoneIndex } from '../range-tombstones'

export interface TableWriterParams {
  fs: FileSystem
  dir: string
  /** How the tables are built. */
  table: TableOptions
  /** Split outputs once a table reaches this size (Infinity: one table). */
  targetFileSize: number
  smallestSnapshot: number
  /** True if no table below the output level can hold `userKey`. */
  isBaseLevelForKey: (userKey: Uint8Array) => boolean
  newFileNumber: () => number
  /** Checked between chunks; true aborts the job (the database is closing). */
  shouldAbort: () => boolean
  /**
   * Called at each yield between slices; the job waits for the promise it
   * returns, if any (a compaction waits there while a flush runs on its
   * thread, which writes may be waiting for).
   */
  waitTurn?: () => Promise<void> | undefined
  /** Range tombstones to apply (versions they hide from every snapshot are dropped). */
  rangeTombstones?: RangeTombstoneIndex
  /** Every range tombstone with seq <= floorBase hides nothing in the outputs (0: no claim). */
  floorBase?: number
}

export interface TableWriterResult {
  outputs: FileMeta[]
  entriesIn: number
  entriesDropped: number
  bytesWritten: number
}

/** Bytes of an output table between incremental syncs (see writeTables). */
const BYTES_PER_SYNC = 1024 * 1024

/** A slice of work between yields to the event loop: checked every 64 entries. */
const SLICE_MS = 1

/** Why writeTables's loop of entries returned: the input's end, or what it must await first. */
const enum Stop { End, Slice, Split, Open, Sync }

export async function writeTables (input: InternalIterator, p: TableWriterParams): Promise<TableWriterResult> {
  const outputs: FileMeta[] = []
  const created: number[] = []
  let builder: TableBuilder | undefined
  let file: ReturnType<FileSystem['openWrite']> | undefined
  let number = 0
  let entriesIn = 0
  let entriesDropped = 0
  let bytesWritten = 0
  // A copy of the current user key, currentKey[0, currentLen) (an iterator's
  // key is valid only until it moves, and all versions of a key are compared
  // with it); none before the first entry.
  let currentKey = Buffer.allocUnsafe(64)
  let currentLen = -1
  let lastSeqForKey = Infinity
  let smallestSeq = Infinity
  const tombstones = p.rangeTombstones !== undefined && p.rangeTombstones.size > 0 ? p.rangeTombstones : undefined
  const floorBase = p.floorBase ?? 0

  // Outputs are fsynced off the event loop (a multi-megabyte fsync can take
  // hundreds of milliseconds).
  // Incremental syncs (RocksDB's bytes_per_sync): an fdatasync of the output
  // is started off the thread each time another BYTES_PER_SYNC bytes were
  // written, while building goes on, so that no sync has more than about that
  // much dirty data to push. One big fsync at the end of a table holds the file
  // system's journal commit while it writes the table out (ext4, data=ordered),
  // and a log append on the event loop that needs the journal (its mtime) then
  // waited for it: up to 44 ms, measured.
  let syncedUpTo = 0
  let pendingSync: Promise<void> | undefined
  const settlePendingSync = async (): Promise<void> => {
    const s = pendingSync
    pendingSync = undefined
    if (s !== undefined) await s
  }

  const finishOutput = async (): Promise<void> => {
    if (!builder || !file) return
    const r = builder.finish()
    await settlePendingSync()
    syncedUpTo = 0
    await file.syncAsync()
    file.close()
    const floor = Math.max(smallestSeq, floorBase)
    outputs.push({ number, size: r.size, entries: r.entries, smallest: r.smallest, largest: r.largest, floor })
    smallestSeq = Infinity
    bytesWritten += r.size
    builder = undefined
    file = undefined
  }

  // The entries are copied by a synchronous loop (copyEntries) that returns
  // whenever something must be awaited: V8 replaces a hot loop's code while it
  // runs (on-stack replacement) only in a plain function, so a loop in this
  // async function would run interpreted through the first calls of a fresh
  // thread (the first flushes took 4-6 times as long as the later ones).
  // It returns before changing anything for an entry it cannot take yet, so that
  // it takes the same entry again once called again.
  let sliceStart = performance.now()
  const copyEntries = (): Stop => {
    let slice = 0
    while (input.valid()) {
      if ((++slice & 63) === 0 && performance.now() - sliceStart > SLICE_MS) return Stop.Slice
      // Byte ranges of the iterator's buffers: no view per entry.
      const keySrc = input.keySource()
      const keyOff = input.keyStart()
      const keyLen = input.keyEnd() - keyOff
      const seq = input.seq()
      const kind = input.kind()
      const newKey = currentLen < 0 || compareRange(keySrc, keyOff, keyOff + keyLen, currentKey, 0, currentLen) !== 0
      if (newKey) {
        // Split only between user keys: all versions of a key stay in one table.
        if (builder && builder.estimatedSize() >= p.targetFileSize) return Stop.Split
        if (keyLen > currentKey.length) currentKey = Buffer.allocUnsafe(Math.max(keyLen, 2 * currentKey.length))
        for (let i = 0; i < keyLen; i++) currentKey[i] = keySrc[keyOff + i]
        currentLen = keyLen
        lastSeqForKey = Infinity
      }
      let drop = false
      if (lastSeqForKey <= p.smallestSnapshot) drop = true
      else if (kind === KIND_DELETE && seq <= p.smallestSnapshot && p.isBaseLevelForKey(keySrc.subarray(keyOff, keyOff + keyLen))) drop = true
      else if (tombstones !== undefined && tombstones.coveringSeq(keySrc.subarray(keyOff, keyOff + keyLen), p.smallestSnapshot) > seq) drop = true
      // Taken again after the output is open: the key is the current one and
      // lastSeqForKey unchanged, so the same decision.
      if (!drop && !builder) return Stop.Open
      entriesIn++
      lastSeqForKey = seq
      if (drop) {
        entriesDropped++
        input.next()
        continue
      }
      const valueOff = input.valueStart()
      builder!.addRange(keySrc, keyOff, keyLen, seq, kind, input.valueSource(), valueOff, input.valueEnd() - valueOff)
      if (seq < smallestSeq) smallestSeq = seq
      input.next()
      if (builder!.estimatedSize() - syncedUpTo >= BYTES_PER_SYNC) return Stop.Sync
    }
    return Stop.End
  }

  try {
    input.seekToFirst()
    for (let stop = copyEntries(); stop !== Stop.End; stop = copyEntries()) {
      if (stop === Stop.Slice) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        const turn = p.waitTurn?.()
        if (turn !== undefined) await turn
        if (p.shouldAbort()) throw levelError('LEVEL_ABORTED', 'Background job aborted: database closing')
        sliceStart = performance.now()
      } else if (stop === Stop.Split) {
        await finishOutput()
      } else if (stop === Stop.Open) {
        // A file system that makes files ahead of use may have to make one first.
        file = await createWhenRoom(p.fs, p.dir, 1, () => {
          number = p.newFileNumber()
          created.push(number)
          return p.fs.openWrite(join(p.dir, tableName(number)))
        })
        builder = new TableBuilder(file, p.table)
      } else {
        await settlePendingSync() // one at a time
        syncedUpTo = builder!.estimatedSize()
        const started = file!.syncAsync()
        started.catch(() => {}) // awaited (and its failure thrown) by settlePendingSync
        pendingSync = started
      }
    }
    await finishOutput()
    if (outputs.length > 0) await syncDirAsync(p.fs, p.dir)
  } catch (err) {
    // Not while a sync of the file may still be running on its descriptor.
    try { await settlePendingSync() } catch {}
    if (file) { try { file.close() } catch {} }
    for (const n of created) { try { p.fs.remove(join(p.dir, tableName(n))) } catch {} }
    throw err
  } finally {
    input.close()
  }
  return { outputs, entriesIn, entriesDropped, bytesWritten }
}
