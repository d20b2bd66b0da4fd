// Mounting a directory of the OPFS file system: every pool file's handle
// opened in turn (retried while another context holds it, then LEVEL_LOCKED),
// its header read, claimants of one name settled, free files waited for.
import { levelError } from '../../lib/errors'
import type { DirectoryHandle, FileHandle, SyncAccessHandle } from './opfs-api'
import { decodeHeader, HEADER_BYTES } from './opfs-pool-header'
import { errnoError } from '../../lib/fs/fs'
import { MAX_OPEN_HANDLES, MIN_OPEN_HANDLES, PoolFile } from './opfs-handles'
import { BUSY_WAIT_MS, MOUNT_FREE_FILES, Pool, POOL_SUFFIX } from './opfs-pool'
import type { SnapshotReader } from './opfs-snapshot-reads'
export interface MountOptions {
  /** The most sync access handles open at once (default MAX_OPEN_HANDLES; at least 16). */
  maxOpenHandles?: number
  /** How long a pool file whose handle is held elsewhere is retried before the mount fails with LEVEL_LOCKED (default BUSY_WAIT_MS). */
  busyWaitMs?: number
  /** The first wait for a new pool file's sync access handle (default HANDLE_WAIT_MS; it doubles while none comes). */
  handleWaitMs?: number
  /** How long the pool's growth goes on with no new handle coming before it fails with LEVEL_IO_ERROR (default GROWTH_GIVE_UP_MS). */
  growthGiveUpMs?: number
}

/**
 * A browser whose OPFS has no sync access handles (WebKitGTK 2.50 has the
 * directory and file handles, but createSyncAccessHandle() fails with
 * NotSupportedError), or none in this kind of context (a page, a shared
 * worker: the method is missing, a TypeError): LEVEL_NOT_SUPPORTED naming
 * what is missing, instead of the browser's bare error.
 */
export function notSupportedIfMissing (err: unknown): unknown {
  const { name, message } = (err ?? {}) as { name?: unknown, message?: unknown }
  if (name === 'NotSupportedError' || (name === 'TypeError' && /createSyncAccessHandle/.test(String(message)))) {
    return levelError('LEVEL_NOT_SUPPORTED', `This browser's Origin Private File System gives no sync access handles here (createSyncAccessHandle() failed: ${String(name)}: ${String(message)}); lsm-level needs them, in a dedicated worker`, err)
  }
  return err
}

function isBusy (err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === 'NoModificationAllowedError'
}

/**
 * Mounts an OPFS directory's pool: opens every pool file's handle in turn,
 * reads its header, and at the bound closes the handle of a file read
 * earlier (tables first: they are immutable and read through the block
 * cache), keeping a snapshot of it for reads; then settles conflicts and
 * waits for a few free files.
 */
export async function openPool (dir: DirectoryHandle, options: MountOptions, readSnapshot: SnapshotReader, abandoned: Set<string>): Promise<Pool> {
  const pool = new Pool(dir, Math.max(MIN_OPEN_HANDLES, options.maxOpenHandles ?? MAX_OPEN_HANDLES), readSnapshot, abandoned, options)
  const header = new Uint8Array(HEADER_BYTES)
  const losers: PoolFile[] = []
  try {
    for await (const entry of dir.keys()) {
      if (!entry.endsWith(POOL_SUFFIX)) continue
      const n = Number(entry.slice(1, -POOL_SUFFIX.length))
      if (Number.isInteger(n) && n >= pool.count) pool.count = n + 1
      const fileHandle = await dir.getFileHandle(entry)
      if (pool.openHandles >= pool.maxOpenHandles) await makeRoomAtMount(pool)
      if (!pool.takeSlot()) throw errnoError('EIO', 'no sync access handle slot free at mount')
      let handle: SyncAccessHandle | undefined
      try {
        handle = await openWhenFree(fileHandle, entry, abandoned, options.busyWaitMs ?? BUSY_WAIT_MS)
      } finally {
        if (handle === undefined) pool.openHandles--
      }
      if (handle === undefined) continue
      const file = new PoolFile(fileHandle, handle)
      pool.all.add(file)
      header.fill(0)
      handle.read(header, { at: 0 })
      const h = decodeHeader(header)
      if (h !== undefined && h.generation > pool.generation) pool.generation = h.generation
      if (h === undefined || h.name === '') {
        // Free: kept open while the free files are few (cut to its header: a
        // crash may have left a freed file's old contents; an empty one stays
        // empty), else closed as a spare.
        if (pool.free.length < pool.maxFree) {
          if (handle.getSize() > HEADER_BYTES) handle.truncate(HEADER_BYTES)
          pool.free.push(file)
        } else {
          pool.closeHandle(file)
          pool.spare.push(file)
        }
        continue
      }
      file.name = h.name
      file.generation = h.generation
      // What an earlier context wrote may not be flushed (a log's default
      // writes): closing this handle flushes it first. Tables are flushed by
      // their writer before the manifest names them.
      file.dirty = !h.name.endsWith('.sst')
      file.lastUse = h.name.endsWith('.sst') ? 0 : 1
      const other = pool.byName.get(h.name)
      if (other === undefined || other.generation < h.generation) {
        pool.byName.set(h.name, file)
        if (other !== undefined) losers.push(other)
      } else {
        losers.push(file)
      }
    }
  } catch (err) {
    pool.close()
    throw err
  }
  try {
    // A rename interrupted between its two header writes: the older claimant is freed.
    for (const file of losers) pool.release(file)
    // Enough free files for an open (manifest, CURRENT and its temp, a log);
    // the rest of the reserve is created in the background.
    while (pool.free.length < MOUNT_FREE_FILES) await pool.whenGrown()
  } catch (err) {
    pool.close()
    throw err
  }
  pool.grow()
  for (const file of pool.unsyncedHeaders) pool.handleOf(file).flush()
  pool.unsyncedHeaders.clear()
  return pool
}

/** At mount, with every slot taken: the least recently used named file gets its snapshot (waited for) and loses its handle. */
async function makeRoomAtMount (pool: Pool): Promise<void> {
  let victim: PoolFile | undefined
  for (const file of pool.all) {
    if (file.handle !== undefined && file.name !== '' && (victim === undefined || file.lastUse < victim.lastUse)) victim = file
  }
  if (victim === undefined) return
  victim.snapshot ??= await victim.entry.getFile()
  pool.closeHandle(victim)
}

/**
 * The sync access handle of the pool file `name`, retried with backoff while
 * another context holds it (NoModificationAllowedError): a tab or worker that
 * has the database open, or one that ended and whose handles the browser has
 * not closed yet (a worker terminated while busy was seen to keep them for a
 * while). Fails with LEVEL_LOCKED after `waitMs`. Undefined for a file that
 * this worker's pool abandoned (a new file whose handle creation never
 * settled, see Pool#addFile): it holds nothing yet, and is skipped.
 */
async function openWhenFree (file: FileHandle, name: string, abandoned: Set<string>, waitMs: number): Promise<SyncAccessHandle | undefined> {
  const start = Date.now()
  for (let delayMs = 20; ; delayMs = Math.min(2 * delayMs, 1000)) {
    try {
      return await file.createSyncAccessHandle()
    } catch (err) {
      if (!isBusy(err)) throw err
      if (abandoned.has(name)) return undefined
      const waited = Date.now() - start
      if (waited >= waitMs) {
        throw levelError('LEVEL_LOCKED', `The database's OPFS files are held by another context: the database is open in another tab or worker, or one that ended has not released its files yet (waited ${waited} ms)`, err)
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, waitMs - waited)))
    }
  }
}
