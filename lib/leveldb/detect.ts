// Telling a LevelDB directory (as classic-level writes it) from an lsm-level
// one, by its files alone and without changing anything: open() refuses such a
// directory before it takes the lock, and the import checks its source.
//
// LevelDB's signs, any one of which is enough:
//   - a table named <n>.ldb (lsm-level's tables are <n>.sst; LevelDB before
//     1.14 used .sst too, hence the next sign);
//   - the manifest CURRENT names starts with a record in LevelDB's log framing
//     (lib/leveldb/log-reader.ts: 7-byte header, CRC-32C) whose checksum holds
//     and whose version edit names a comparator, as LevelDB's first record
//     always does. lsm-level's manifest framing (lib/wal/log-format.ts: 9-byte
//     header, zlib's CRC-32) passes that checksum only by a 2^-32 chance.
import type { FileSystem } from '../fs/fs'
import { join } from '../filenames'
import { levelError } from '../errors'
import { getFixed32 } from '../util/coding'
import { unmaskCrc } from '../util/crc'
import { crc32c } from './crc32c'
import { BLOCK_SIZE, HEADER_SIZE } from './log-reader'
import { decodeLevelDBEdit } from './manifest'

const FULL = 1
const FIRST = 2

/**
 * Why `dir` holds a LevelDB database (for an error message), or undefined if it
 * does not look like one. A missing file is no sign; other errors reading the
 * directory, CURRENT or the manifest are thrown (an open would fail on them too).
 */
export function levelDBSigns (fs: FileSystem, dir: string): string | undefined {
  const names = fs.list(dir)
  const ldb = names.find((n) => /^\d+\.ldb$/.test(n))
  if (ldb !== undefined) return `it holds LevelDB tables (${ldb})`
  if (!names.includes('CURRENT')) return undefined
  const current = ifExists(() => fs.readSmallFile(join(dir, 'CURRENT')))
  const m = current === undefined ? null : /^(MANIFEST-\d+)\n$/.exec(current.toString('latin1'))
  if (m === null) return undefined
  return firstRecordIsLevelDBEdit(fs, join(dir, m[1])) ? `its ${m[1]} is a LevelDB manifest` : undefined
}

/**
 * Throws LEVEL_NOT_SUPPORTED if `dir` holds a LevelDB database: `action` (open,
 * repair, destroy) is refused before anything in it changes, with the way across.
 */
export function refuseLevelDB (fs: FileSystem, dir: string, action: string): void {
  const signs = levelDBSigns(fs, dir)
  if (signs === undefined) return
  throw levelError('LEVEL_NOT_SUPPORTED', `${dir} holds a LevelDB database, as classic-level writes it (${signs}): lsm-level cannot ${action} it. Import it into a new directory with \`npx lsm-level import ${dir} <new-dir>\` (or LsmLevel.importLevelDB) and open that; the LevelDB directory is left as it is`)
}

/** `read()`, or undefined if the file does not exist. */
function ifExists<T> (read: () => T): T | undefined {
  try {
    return read()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

function firstRecordIsLevelDBEdit (fs: FileSystem, path: string): boolean {
  const buf = ifExists(() => {
    const file = fs.openRead(path)
    try {
      const head = Buffer.allocUnsafe(Math.min(BLOCK_SIZE, file.size()))
      return head.subarray(0, file.read(head, 0, head.length, 0))
    } finally {
      file.close()
    }
  })
  if (buf === undefined) return false
  const got = buf.length
  if (got < HEADER_SIZE) return false
  const length = buf[4] | (buf[5] << 8)
  const type = buf[6]
  if ((type !== FULL && type !== FIRST) || HEADER_SIZE + length > got) return false
  if (crc32c(buf, 6, HEADER_SIZE + length) !== unmaskCrc(getFixed32(buf, 0))) return false
  if (type === FIRST) return buf[HEADER_SIZE] === 1 // the comparator's tag; the rest is in the next fragment
  try {
    return decodeLevelDBEdit(buf.subarray(HEADER_SIZE, HEADER_SIZE + length), path).comparator !== undefined
  } catch {
    return false
  }
}
