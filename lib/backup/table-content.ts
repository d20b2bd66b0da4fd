// What a backup puts of a table: its CRC-32 (which the point records and a
// restore checks), its SHA-256 (the content name that lets a later generation
// name the object instead of putting it again) and, unless the store copies
// the file itself (ObjectStore.putFile), its bytes. Read a chunk a turn, so
// that it shares its thread: the shipper runs it on a job thread where the
// host has one (JobRunner.readTable), else on the event loop.
import type { FileSystem } from '../fs/fs'
import { crc } from '../util/crc'
import { sha256Hasher } from '../util/sha256'
import { nextTurn } from '../util/turn'
import { corruption } from '../errors'
import { contentHash, contentName } from './layout'

export interface TableContent {
  /** The whole file, in a buffer of its own (transferable: never a view of a shared pool); undefined if not asked for. */
  bytes: Buffer | undefined
  crc: number
  /** See contentHash; undefined where the runtime has no SHA-256. */
  sha: string | undefined
}

const CHUNK = 1024 * 1024

/**
 * Reads the table at `path`, `size` bytes long as the manifest says;
 * LEVEL_CORRUPTION if it is shorter. Without `keepBytes`, where the host hashes
 * piece by piece, a chunk at a time through one buffer.
 */
export async function readTableContent (fs: FileSystem, path: string, size: number, keepBytes = true): Promise<TableContent> {
  const hasher = keepBytes ? undefined : sha256Hasher()
  const file = fs.openRead(path)
  try {
    const whole = hasher === undefined ? Buffer.allocUnsafeSlow(size) : undefined
    const chunk = whole ?? Buffer.allocUnsafeSlow(Math.min(CHUNK, size))
    let c = 0
    for (let pos = 0; pos < size; pos += CHUNK) {
      const want = Math.min(CHUNK, size - pos)
      const at = whole === undefined ? 0 : pos
      let done = 0
      while (done < want) {
        const n = file.read(chunk, at + done, want - done, pos + done)
        if (n === 0) throw corruption(path, `is shorter (${pos + done} bytes) than the manifest says (${size})`)
        done += n
      }
      if (hasher !== undefined) {
        const piece = chunk.subarray(0, want)
        c = crc(piece, c)
        hasher.update(piece)
      }
      if (pos + CHUNK < size) await nextTurn()
    }
    if (whole !== undefined) return { bytes: keepBytes ? whole : undefined, crc: crc(whole) >>> 0, sha: await contentHash(whole) }
    return { bytes: undefined, crc: c >>> 0, sha: contentName(hasher!.digest()) }
  } finally {
    file.close()
  }
}
