// A database opened for one task by a tool (the `lsm-level` database commands):
// opened as it is, never created, and its entries read as plain data.
import type { FileSystem } from '../../../lib/fs/fs'
import { nodeFileSystem } from '../node-fs'
import '../platform'
import { Engine } from '../../../lib/engine'
import { entryKey, entryValue, FOUND, type RangeOptions } from '../../../lib/iterators/db-iterator'

/**
 * Opens the database in `location`, with the default options, only if it
 * exists (LEVEL_INVALID_OPTION if it does not; LEVEL_LOCKED if another process
 * has it open). The caller closes it.
 */
export async function openExisting (location: string, fs: FileSystem = nodeFileSystem): Promise<Engine> {
  return await Engine.open(location, { createIfMissing: false }, fs)
}

/**
 * The live entries of `range`, in its order, at most `limit` of them: [key,
 * value] copies the caller owns. They are read as of the first one (the
 * iterator is created then), and the iterator is closed when the loop over
 * them ends.
 */
export function* scan (engine: Engine, range: RangeOptions, limit = Infinity): Generator<[Buffer, Buffer]> {
  const it = engine.iterator(range)
  try {
    for (let n = 0; n < limit && it.step(Infinity) === FOUND; n++) {
      yield [Buffer.from(entryKey(it)), Buffer.from(entryValue(it))]
    }
  } finally {
    it.close()
  }
}
