// The block codecs of LevelDB tables: type 1 is Snappy.
import { levelError } from '../errors'

/** Uncompresses a Snappy block. Throws a plain Error if it is malformed. */
export function decompressBlock (_src: Uint8Array): Buffer {
  throw levelError('LEVEL_NOT_SUPPORTED', 'Snappy-compressed blocks cannot be read yet')
}
