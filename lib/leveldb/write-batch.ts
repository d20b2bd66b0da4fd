// LevelDB's WriteBatch, the payload of each record of its write-ahead logs
// (LevelDB's db/write_batch.cc), read-only:
//
//   +-----------------+---------------+-----------+-----+-----------+
//   | sequence number | count         | operation | ... | operation |
//   | fixed64 (LE)    | fixed32 (LE)  |           |     |           |
//   +-----------------+---------------+-----------+-----+-----------+
//   |<---- header: HEADER_SIZE = 12 bytes -->|
//
//   operation: type 1 (a value): 1 B type, varint length + key, varint length + value
//              type 0 (a deletion): 1 B type, varint length + key
//
// Operation i takes sequence number `sequence number + i`. The types have the
// numbers of lsm-level's KIND_VALUE and KIND_DELETE (lib/keys.ts).
import { corruption, levelError } from '../errors'
import { getFixed32, getFixed64, getVarint, varintOut } from '../util/coding'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../keys'

export const HEADER_SIZE = 12

/** Receives a batch's operations: the key is src[keyStart, keyStart + keyLength), the value likewise (empty for a deletion). */
export type BatchOperationSink = (seq: number, kind: number, src: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number) => void

/**
 * Decodes one WriteBatch and hands each operation to `sink`, in order. Returns
 * the highest sequence number it holds (its first minus one if empty).
 * LEVEL_CORRUPTION naming `file` if malformed.
 */
export function decodeLevelDBBatch (rec: Uint8Array, file: string, sink: BatchOperationSink): number {
  if (rec.length < HEADER_SIZE) throw corruption(file, `a write batch of ${rec.length} bytes, shorter than its header`)
  const first = getFixed64(rec, 0)
  const count = getFixed32(rec, 8)
  if (first + count - 1 > MAX_SEQ) throw levelError('LEVEL_NOT_SUPPORTED', `${file} holds sequence number ${first + count - 1}, past lsm-level's largest (${MAX_SEQ})`, undefined, file)
  const end = rec.length
  let pos = HEADER_SIZE
  let n = 0
  const bad = (): Error => corruption(file, `malformed write batch (sequence number ${first}): operation ${n} of ${count}`)
  for (; pos < end; n++) {
    const kind = rec[pos++]
    if (kind !== KIND_VALUE && kind !== KIND_DELETE) throw bad()
    if (!getVarint(rec, pos, end)) throw bad()
    const keyLength = varintOut.value
    const keyStart = varintOut.pos
    pos = keyStart + keyLength
    if (pos > end) throw bad()
    let valueStart = pos
    let valueLength = 0
    if (kind === KIND_VALUE) {
      if (!getVarint(rec, pos, end)) throw bad()
      valueLength = varintOut.value
      valueStart = varintOut.pos
      pos = valueStart + valueLength
      if (pos > end) throw bad()
    }
    sink(first + n, kind, rec, keyStart, keyLength, valueStart, valueLength)
  }
  if (n !== count) throw corruption(file, `malformed write batch (sequence number ${first}): holds ${n} operations, its header says ${count}`)
  return first + count - 1
}
