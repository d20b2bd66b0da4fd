// What a backup puts of a table: its bytes, read whole, with their CRC-32
// (which the point records and a restore checks) and their SHA-256 (the
// content name that lets a later generation name the object instead of
// putting it again). Read a chunk a turn, so that it shares its thread: the
// shipper runs it on a job thread where the host has one (JobRunner.readTable),
// else on the event loop.
import type { FileSystem } from '../fs/fs'
import { crc } from '../util/crc'
import { nextTurn } from '../util/turn'
import { corruption } from '../errors'
import { contentHash } from './layout'

export interface TableContent {
  /** The whole file, in a buffer of its own (transferable: never a view of a shared pool). */
  bytes: Buffer
  crc: number
  /** See contentHash; undefined where the runtime has no SHA-256. */
  sha: string | undefined
}

const CHUNK = 1024 * 1024

/** Reads the table at `path`, `size` bytes long as the manifest says; LEVEL_CORRUPTION if it is shorter. */
export async function readTableContent (fs: FileSystem, path: string, size: number): Promise<TableContent> {
  const file = fs.openRead(path)
  try {
    const bytes = Buffer.allocUnsafeSlow(size)
    for (let pos = 0; pos < size; pos += CHUNK) {
      const want = Math.min(CHUNK, size - pos)
      let done = 0
      while (done < want) {
        const n = file.read(bytes, pos + done, want - done, pos + done)
        if (n === 0) throw corruption(path, `is shorter (${pos + done} bytes) than the manifest says (${size})`)
        done += n
      }
      if (pos + CHUNK < size) await nextTurn()
    }
    return { bytes, crc: crc(bytes) >>> 0, sha: await contentHash(bytes) }
  } finally {
    file.close()
  }
}
