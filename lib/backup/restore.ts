// Point-in-time restore from an object store (LsmLevel.restore, `lsm-level
// restore`): a backup (lib/backup/layout.ts) written into a new database
// directory, as of the newest state the store holds, a sequence number, or a
// time. The directory is an ordinary database (the checkpoint's form,
// lib/checkpoint.ts): the point's tables, one log per shipped log holding the
// records kept, MANIFEST-<n> (one snapshot edit) and CURRENT, written last.
//
// Which state: the target sequence number T is the one asked for, or, for a
// time, the newest sequence number a segment or point taken at or before that
// time holds, or, by default, no bound. The generation: the one asked for, or
// the newest (by its newest object) that has a point at or below T. The point
// P: the newest of that generation at or below T. Then the logs >= P's
// logNumber, segment after segment, byte-contiguous within a log and
// sequence-contiguous across logs, up to the last whole batch <= T: a hole (a
// segment never put, or a log flushed between two rounds of the shipper) ends
// the restore there. The result is the state at a batch boundary: a prefix of
// the write order. The records up to P's sequence number must all be there
// (the point promises them): a hole before it is damage.
//
// Checks: every table's size and CRC-32 against the point (which has its own
// CRC-32), every segment's size and CRC-32 against its name, every log
// record's CRC and batch encoding. Damage, or an object the point needs that
// is missing, is LEVEL_CORRUPTION naming the object; nothing is left in the
// directory then (what was written is removed).
import { syncDirAsync, type FileSystem, type WritableFile } from '../fs/fs'
import { encodeVersionEdit, MANIFEST_FORMAT_VERSION } from '../manifest/version-edit'
import { LogWriter } from '../wal/log-writer'
import { recordFaultText, walkRecords } from '../wal/log-format'
import { checkBatch } from '../wal/batch'
import { getFixed64 } from '../util/coding'
import { crc } from '../util/crc'
import { CURRENT, join, logName, manifestName, parentDir, tableName, tempName } from '../filenames'
import { corruption, levelError } from '../errors'
import { objectKey, withRetries, type ObjectStore, type RetryPolicy, type StoreError } from './object-store'
import { decodePoint, isGenerationId, parsePointKey, parseSegmentKey, tableKey, type Point, type SegmentName } from './layout'

export interface RestoreOptions {
  prefix?: string
  /** Restore the state as of this sequence number (the newest batch boundary at or below it). */
  sequence?: number
  /** Restore the newest state shipped at or before this time (ms since the epoch, or a Date). */
  time?: number | Date
  /** Restore from this generation rather than the newest. */
  generation?: string
  /** Tables fetched at once. Default 4. */
  concurrency?: number
  retries?: RetryPolicy
  /** Called as objects are fetched. */
  onProgress?: (progress: RestoreProgress) => void
}

export interface RestoreProgress {
  objects: number
  objectsTotal: number
  bytes: number
  bytesTotal: number
}

export interface RestoreResult {
  generation: string
  /** The sequence number of the restored state. */
  sequence: number
  /** The point it starts from, and its sequence number. */
  point: string
  pointSequence: number
  tables: number
  tableBytes: number
  segments: number
  logBytes: number
  /** The restore stopped at a hole in the logs before reaching the target (what it holds is still a prefix). */
  stoppedAtHole: boolean
}

interface Generation {
  id: string
  points: Array<{ key: string, sequence: number, ms: number }>
  segments: Array<SegmentName & { key: string, size: number }>
  newestMs: number
}

/** The generations under `prefix`, newest first. */
export async function listGenerations (store: ObjectStore, prefix: string, retries?: RetryPolicy): Promise<Generation[]> {
  const root = prefix === '' ? '' : objectKey(prefix, '')
  const all = await withRetries(store, `list ${root}`, () => store.list(root), retries)
  const gens = new Map<string, Generation>()
  for (const { key, size } of all) {
    const id = key.slice(root.length).split('/')[0]
    if (!isGenerationId(id)) continue
    let g = gens.get(id)
    if (g === undefined) gens.set(id, g = { id, points: [], segments: [], newestMs: Number(id.slice(0, 13)) })
    const p = parsePointKey(key)
    if (p !== undefined) {
      g.points.push({ key, ...p })
      g.newestMs = Math.max(g.newestMs, p.ms)
      continue
    }
    const s = parseSegmentKey(key)
    if (s !== undefined) {
      g.segments.push({ ...s, key, size })
      g.newestMs = Math.max(g.newestMs, s.ms)
    }
  }
  for (const g of gens.values()) {
    g.points.sort((a, b) => a.sequence - b.sequence || a.ms - b.ms)
    // A segment whose put failed after the store took it is put again from the same start (maybe to a later end): the longest first.
    g.segments.sort((a, b) => a.log - b.log || a.start - b.start || b.end - a.end)
  }
  return [...gens.values()].sort((a, b) => b.newestMs - a.newestMs || (a.id < b.id ? 1 : -1))
}

/** The target sequence number for a time: the newest held by a segment or point taken at or before it. */
function sequenceAtTime (g: Generation, ms: number): number | undefined {
  let best: number | undefined
  for (const s of g.segments) if (s.ms <= ms && (best === undefined || s.last > best)) best = s.last
  for (const p of g.points) if (p.ms <= ms && (best === undefined || p.sequence > best)) best = p.sequence
  return best
}

function chooseTarget (gens: Generation[], options: RestoreOptions): { g: Generation, point: Generation['points'][number], target: number } {
  const candidates = options.generation !== undefined ? gens.filter((g) => g.id === options.generation) : gens
  if (options.generation !== undefined && candidates.length === 0) throw levelError('LEVEL_INVALID_OPTION', `restore(): no generation ${options.generation} in the store`)
  const timeMs = options.time instanceof Date ? options.time.getTime() : options.time
  for (const g of candidates) {
    let target = options.sequence ?? Infinity
    if (timeMs !== undefined) target = Math.min(target, sequenceAtTime(g, timeMs) ?? -1)
    let point: Generation['points'][number] | undefined
    for (const p of g.points) if (p.sequence <= target && (timeMs === undefined || p.ms <= timeMs)) point = p
    if (point !== undefined) return { g, point, target }
  }
  const what = options.sequence !== undefined ? ` at or before sequence number ${options.sequence}` : timeMs !== undefined ? ` at or before ${new Date(timeMs).toISOString()}` : ''
  throw levelError('LEVEL_INVALID_OPTION', `restore(): the store holds no backup${what} (${gens.length} generation(s) found)`)
}

function checkOptions (options: RestoreOptions): void {
  const { sequence, time, concurrency } = options
  if (sequence !== undefined && (!Number.isSafeInteger(sequence) || sequence < 0)) throw levelError('LEVEL_INVALID_OPTION', `restore(): sequence must be an integer >= 0, got ${String(sequence)}`)
  if (time !== undefined && !(time instanceof Date ? Number.isFinite(time.getTime()) : Number.isFinite(time))) throw levelError('LEVEL_INVALID_OPTION', `restore(): time must be a Date or milliseconds since the epoch, got ${String(time)}`)
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw levelError('LEVEL_INVALID_OPTION', `restore(): concurrency must be an integer >= 1, got ${String(concurrency)}`)
}

/**
 * Restores the backup under options.prefix in `store` into `dir` (which must
 * not exist or be empty). See the top of the file.
 */
export async function restore (store: ObjectStore, fs: FileSystem, dir: string, options: RestoreOptions = {}): Promise<RestoreResult> {
  checkOptions(options)
  if (fs.exists(dir) && fs.list(dir).length > 0) throw levelError('LEVEL_INVALID_OPTION', `restore(): the directory is not empty: ${dir}`)
  const gens = await listGenerations(store, options.prefix ?? '', options.retries)
  const { g, point: pointRef, target } = chooseTarget(gens, options)
  const fetch = async (key: string): Promise<Buffer> => {
    try {
      return await withRetries(store, key, () => store.get(key), options.retries)
    } catch (err) {
      if ((err as StoreError).code === 'LEVEL_NOT_FOUND') throw corruption(key, 'the object is missing from the store', err)
      throw err
    }
  }
  const point = decodePoint(await fetch(pointRef.key), pointRef.key)
  const { segments, hole } = planSegments(g, point, target)
  const progress: RestoreProgress = {
    objects: 1,
    objectsTotal: 1 + point.tables.length + segments.length,
    bytes: 0,
    bytesTotal: point.tables.reduce((s, t) => s + t.size, 0) + segments.reduce((s, x) => s + x.size, 0)
  }
  const made: string[] = []
  const syncs: Array<Promise<void>> = []
  try {
    fs.mkdirp(dir)
    // Layout 2: the point names each table's object (maybe another generation's); layout 1: this generation's, by number.
    const tableKeyOf = (t: Point['tables'][number]): string => objectKey(options.prefix ?? '', t.key ?? tableKey(g.id, t.number))
    await pool(point.tables, options.concurrency ?? 4, async (t) => {
      const key = tableKeyOf(t)
      const body = await fetch(key)
      if (body.length !== t.size) throw corruption(key, `${body.length} bytes, the point says ${t.size}`)
      if ((crc(body) >>> 0) !== t.crc) throw corruption(key, 'checksum mismatch')
      syncs.push(writeNewFile(fs, join(dir, tableName(t.number)), made, body))
      progress.objects++
      progress.bytes += body.length
      options.onProgress?.({ ...progress })
    })
    const logs = await restoreLogs(fs, dir, made, syncs, fetch, point, segments, target, progress, options.onProgress)
    const restoredSeq = Math.max(point.sequence, logs.lastSeq)
    const nextFree = Math.max(point.nextFileNumber, ...point.tables.map((t) => t.number + 1), ...logs.numbers.map((n) => n + 1))
    let logNumber = point.logNumber
    if (logs.numbers.length === 0) {
      logNumber = nextFree
      syncs.push(writeNewFile(fs, join(dir, logName(logNumber)), made, Buffer.alloc(0)))
    }
    const manifest = Math.max(nextFree, logNumber + 1)
    const edit = encodeVersionEdit({
      formatVersion: MANIFEST_FORMAT_VERSION,
      logNumber,
      nextFileNumber: manifest + 2,
      lastSequence: restoredSeq,
      compactPointers: [],
      newFiles: point.files,
      rangeTombstones: point.rangeTombstones
    })
    syncs.push(writeNewFile(fs, join(dir, manifestName(manifest)), made, edit, true))
    const tmp = join(dir, tempName(manifest + 1))
    syncs.push(writeNewFile(fs, tmp, made, Buffer.from(manifestName(manifest) + '\n', 'latin1')))
    syncs.push(syncDirAsync(fs, dir), syncDirAsync(fs, parentDir(dir)).catch(() => {}))
    await Promise.all(syncs)
    fs.rename(tmp, join(dir, CURRENT))
    made.push(join(dir, CURRENT))
    await syncDirAsync(fs, dir)
    return {
      generation: g.id,
      sequence: restoredSeq,
      point: pointRef.key,
      pointSequence: point.sequence,
      tables: point.tables.length,
      tableBytes: point.tables.reduce((s, t) => s + t.size, 0),
      segments: logs.segments,
      logBytes: logs.bytes,
      stoppedAtHole: hole || logs.hole
    }
  } catch (err) {
    await Promise.allSettled(syncs)
    for (const p of made.reverse()) {
      try { fs.remove(p) } catch {}
    }
    throw err
  }
}

type Segment = Generation['segments'][number]

/**
 * The segments to fetch: of the logs >= the point's logNumber, from byte 0 on,
 * byte-contiguous, while they start at or below the target; a log's segments
 * stop at its first hole, and so do the later logs'. Every log the point
 * names must be covered up to its length (else: damage, naming the missing range).
 */
function planSegments (g: Generation, point: Point, target: number): { segments: Segment[], hole: boolean } {
  const byLog = new Map<number, Segment[]>()
  for (const s of g.segments) {
    if (s.log < point.logNumber) continue
    if (!byLog.has(s.log)) byLog.set(s.log, [])
    byLog.get(s.log)!.push(s)
  }
  const need = new Map(point.logs)
  const out: Segment[] = []
  let stop = false
  let hole = false
  for (const log of [...byLog.keys()].sort((a, b) => a - b)) {
    let offset = 0
    for (const s of byLog.get(log)!) {
      if (s.start < offset && s.end <= offset) continue
      // A hole in this log, or past the target: nothing after it (in this log or a later one) is taken.
      if (!stop && s.start !== offset && s.first <= target) hole = true
      if (stop || s.start !== offset || (s.first > target && offset >= (need.get(log) ?? 0))) { stop = true; break }
      out.push(s)
      offset = s.end
    }
    if (offset < (need.get(log) ?? 0)) {
      throw corruption(`${g.id}/logs/${String(log).padStart(10, '0')}`, `the segments of log ${log} end at byte ${offset}; the point ${point.sequence} needs ${need.get(log)!} bytes (an object is missing)`)
    }
    need.delete(log)
  }
  for (const [log, length] of need) {
    if (length > 0) throw corruption(`${g.id}/logs/${String(log).padStart(10, '0')}`, `no segment of log ${log}; the point ${point.sequence} needs ${length} bytes of it (an object is missing)`)
  }
  return { segments: out, hole }
}

/**
 * Fetches the segments in order, checks them and their records, and writes
 * each log's records up to the last whole batch <= target (and before any
 * sequence hole). Every log the point names is written, even empty.
 */
async function restoreLogs (fs: FileSystem, dir: string, made: string[], syncs: Array<Promise<void>>, fetch: (key: string) => Promise<Buffer>,
  point: Point, segments: Segment[], target: number, progress: RestoreProgress, onProgress: RestoreOptions['onProgress']):
Promise<{ numbers: number[], lastSeq: number, segments: number, bytes: number, hole: boolean }> {
  const out = { numbers: [] as number[], lastSeq: 0, segments: 0, bytes: 0, hole: false }
  let file: WritableFile | undefined
  let fileLog = -1
  let expected: number | undefined
  let done = false
  const open = (log: number): void => {
    if (file !== undefined) syncs.push(closeSynced(file))
    file = undefined
    const path = join(dir, logName(log))
    file = fs.openWrite(path)
    made.push(path)
    fileLog = log
    out.numbers.push(log)
  }
  try {
    for (const s of segments) {
      if (done) break
      const body = await fetch(s.key)
      if (body.length !== s.end - s.start) throw corruption(s.key, `${body.length} bytes, its name says ${s.end - s.start}`)
      if ((crc(body) >>> 0) !== s.crc) throw corruption(s.key, 'checksum mismatch')
      if (s.log !== fileLog) open(s.log)
      // Whole batches <= target, each continuing the sequence.
      const walk = walkRecords(body, (payload, at) => {
        const count = checkBatch(payload, s.key)
        const first = getFixed64(payload, 0)
        const last = first + count - 1
        if (expected !== undefined && first !== expected) {
          if (first < expected) throw corruption(s.key, `batch ${first} at byte ${at} repeats sequence numbers up to ${expected - 1}`)
          out.hole = true
          return false
        }
        if (last > target) return false
        expected = last + 1
        out.lastSeq = last
      })
      if (walk.fault !== undefined) throw corruption(s.key, recordFaultText(walk.fault, walk.end))
      done = walk.stopped
      const pos = walk.end
      if (pos > 0) file!.append(body.subarray(0, pos))
      out.segments++
      out.bytes += pos
      progress.objects++
      progress.bytes += body.length
      onProgress?.({ ...progress })
    }
    // The point's logs that held no record are still its logs: an empty file each.
    for (const [log] of point.logs) if (!out.numbers.includes(log)) open(log)
    out.numbers.sort((a, b) => a - b)
  } finally {
    if (file !== undefined) syncs.push(closeSynced(file))
  }
  return out
}

async function closeSynced (file: WritableFile): Promise<void> {
  try {
    await file.syncAsync()
  } finally {
    file.close()
  }
}

/** Writes a new file holding `body` (as one log record with `record`); resolves once it is synced and closed. */
function writeNewFile (fs: FileSystem, path: string, made: string[], body: Uint8Array, record = false): Promise<void> {
  const out = fs.openWrite(path)
  made.push(path)
  try {
    if (record) new LogWriter(out).addRecord(body)
    else if (body.length > 0) out.append(body)
  } catch (err) {
    out.close()
    throw err
  }
  return closeSynced(out)
}

/** Runs `work` over `items`, `limit` at a time; the first failure rejects (after the running ones settle). */
async function pool<T> (items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed: { err: unknown } | undefined
  const runner = async (): Promise<void> => {
    while (failed === undefined && next < items.length) {
      const item = items[next++]
      try {
        await work(item)
      } catch (err) {
        failed ??= { err }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner))
  if (failed !== undefined) throw failed.err
}
