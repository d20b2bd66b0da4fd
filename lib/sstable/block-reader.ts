// Reading a block's entries in the layout of its table's format version (the
// footer's; format.ts): the one place that picks the version 1 or version 2
// reader (format 3 keeps version 2's entries), once per call, so that neither
// hot loop tests the version per entry.
import type { BlockColumns } from './block-columns'
import { type RawBlock, checkBlockVersion } from './raw-block'
import { decodeV1, seekRawBlockV1 } from './block-v1'
import { decodeV2, seekRawBlockV2 } from './block-v2'
import { isV1Layout } from './format'

/**
 * Decodes block `contents` of table `name` (entry layout of table format
 * `version`) into `cols`, overwriting what they held. Throws corruption on any
 * damage.
 */
export function decodeBlockInto (name: string, contents: Buffer, version: number, cols: BlockColumns): void {
  checkBlockVersion(name, version)
  if (isV1Layout(version)) decodeV1(name, contents, cols)
  else decodeV2(name, contents, cols)
}

/**
 * Finds the first entry >= (userKey, seq) in internal order in `block` and, if
 * its user key is `userKey`, reports it in rawSeekOut (raw-block.ts) and returns
 * true (false if there is no such entry). Validates every entry it reads: damage
 * is a corruption error naming `name`, never a wrong answer.
 */
export function seekRawBlock (name: string, block: RawBlock, userKey: Uint8Array, seq: number): boolean {
  return isV1Layout(block.version) ? seekRawBlockV1(name, block, userKey, seq) : seekRawBlockV2(name, block, userKey, seq)
}
