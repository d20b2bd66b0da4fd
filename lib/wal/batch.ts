// The write-ahead-log record payload for a write batch. A single put or del is a
// batch of one. One batch is one log record (lib/wal/log-format.ts), so a batch
// is recovered whole or not at all.
//
//   +---------------------+-------------+-------+-------+-----+-------+
//   | first seq           | count       | op 0  | op 1  | ... | op n-1|
//   | fixed64 (LE)        | fixed32 (LE)|       |       |     |       |
//   +---------------------+-------------+-------+-------+-----+-------+
//   |<---- BATCH_HEADER_SIZE = 12 ----->|
//
//   op (value):   | kind = KIND_VALUE (1 B) | varint keyLen | key | varint valueLen | value |
//   op (delete):  | kind = KIND_DELETE (1 B) | varint keyLen | key |
//   op (range delete, format 2):
//                 | kind = OP_RANGE_DELETE (1 B) | varint startLen | start |
//                 | varint endLen + 1 | end |       (endLen + 1 = 0: no end, and no end bytes)
//
//   Operation i has sequence number firstSeq + i. KIND_VALUE, KIND_DELETE and
//   MAX_SEQ come from lib/keys.ts; OP_RANGE_DELETE (lib/range-tombstones.ts) deletes
//   [start, end) as of its sequence number. The ops fill the payload exactly:
//   trailing bytes are corruption.
//
//   Format 2 (lsm-level 0.2) added the range delete; format 1 logs read unchanged.
//
// Decoding validates every length against the bytes that remain, so a damaged
// payload (one that got past the record CRC, or a bug) is LEVEL_CORRUPTION
// naming the log file, never a wrong value or a RangeError.
import { ByteWriter, getFixed32, getFixed64, getVarint, putFixed32, putFixed64, putVarint, varintLength, varintOut } from '../util/coding'
import { corruption } from '../errors'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../keys'
import { assert } from '../invariants'

/** Version of the payload layout drawn above. */
export const FORMAT_VERSION = 2

/** A range tombstone (lib/range-tombstones.ts). Batch-only: never a table entry kind. */
export const OP_RANGE_DELETE = 2

export const BATCH_HEADER_SIZE = 12

export interface BatchOp {
  kind: number
  key: Buffer
  /** Present (required) for KIND_VALUE; absent otherwise. */
  value?: Buffer
  /** OP_RANGE_DELETE only: the first key not deleted (`key` is the first deleted); undefined: no end. */
  end?: Buffer
}

export interface DecodedBatch {
  firstSeq: number
  ops: BatchOp[]
}

/** Exact encoded size of a batch holding `ops`. */
export function batchByteSize (ops: readonly BatchOp[]): number {
  let size = BATCH_HEADER_SIZE
  for (const op of ops) {
    size += 1 + varintLength(op.key.length) + op.key.length
    if (op.kind === KIND_VALUE) {
      const vlen = (op.value as Buffer).length
      size += varintLength(vlen) + vlen
    } else if (op.kind === OP_RANGE_DELETE) {
      size += op.end === undefined ? 1 : varintLength(op.end.length + 1) + op.end.length
    }
  }
  return size
}

function checkEncodable (firstSeq: number, ops: readonly BatchOp[]): void {
  assert(Number.isInteger(firstSeq) && firstSeq >= 1, 'batch first sequence number must be >= 1')
  assert(firstSeq + ops.length - 1 <= MAX_SEQ, 'batch sequence numbers exceed MAX_SEQ')
  assert(ops.length <= 0xffffffff, 'batch has too many operations')
  for (const op of ops) {
    assert(op.kind === KIND_VALUE || op.kind === KIND_DELETE || op.kind === OP_RANGE_DELETE, 'batch op has an unknown kind')
    assert(op.kind !== KIND_VALUE || op.value !== undefined, 'batch put has no value')
  }
}

/** Encodes a batch into a fresh buffer of exactly `batchByteSize(ops)` bytes. */
export function encodeBatch (firstSeq: number, ops: readonly BatchOp[]): Buffer {
  checkEncodable(firstSeq, ops)
  const out = Buffer.allocUnsafe(batchByteSize(ops))
  let pos = putFixed64(out, 0, firstSeq)
  pos = putFixed32(out, pos, ops.length)
  for (const op of ops) {
    out[pos++] = op.kind
    pos = putVarint(out, pos, op.key.length)
    out.set(op.key, pos)
    pos += op.key.length
    if (op.kind === KIND_VALUE) {
      const value = op.value as Buffer
      pos = putVarint(out, pos, value.length)
      out.set(value, pos)
      pos += value.length
    } else if (op.kind === OP_RANGE_DELETE) {
      if (op.end === undefined) {
        out[pos++] = 0
      } else {
        pos = putVarint(out, pos, op.end.length + 1)
        out.set(op.end, pos)
        pos += op.end.length
      }
    }
  }
  assert(pos === out.length, 'batch size mismatch')
  return out
}

/**
 * Appends the encoded batch to `w` (no intermediate buffer), e.g. to build a
 * payload in a reused writer; the payload is `w.view()` from the starting position.
 */
export function encodeBatchInto (w: ByteWriter, firstSeq: number, ops: readonly BatchOp[]): void {
  checkEncodable(firstSeq, ops)
  w.ensure(batchByteSize(ops))
  w.fixed64(firstSeq)
  w.fixed32(ops.length)
  for (const op of ops) {
    w.byte(op.kind)
    w.lengthPrefixed(op.key)
    if (op.kind === KIND_VALUE) {
      w.lengthPrefixed(op.value as Buffer)
    } else if (op.kind === OP_RANGE_DELETE) {
      if (op.end === undefined) {
        w.varint(0)
      } else {
        w.varint(op.end.length + 1)
        w.bytes(op.end)
      }
    }
  }
}

/**
 * Decodes a batch payload read from the log file `name`. Keys and values are
 * subarrays of `payload` (no copies). Throws corruption(name, ...) if malformed.
 */
export function decodeBatch (payload: Buffer, name: string): DecodedBatch {
  const end = payload.length
  if (end < BATCH_HEADER_SIZE) throw corruption(name, `write batch too short (${end} bytes)`)
  const firstSeq = getFixed64(payload, 0)
  const count = getFixed32(payload, 8)
  if (firstSeq < 1 || firstSeq > MAX_SEQ) throw corruption(name, `write batch has an invalid sequence number ${firstSeq}`)
  if (count > 0 && firstSeq + count - 1 > MAX_SEQ) throw corruption(name, 'write batch sequence numbers exceed the maximum')
  // Every op takes at least 2 bytes (kind + key length); checked before any allocation.
  if (count > (end - BATCH_HEADER_SIZE) / 2) throw corruption(name, `write batch count ${count} exceeds its size`)

  const ops: BatchOp[] = new Array(count)
  let pos = BATCH_HEADER_SIZE
  for (let i = 0; i < count; i++) {
    if (pos >= end) throw corruption(name, `write batch truncated at operation ${i}`)
    const kind = payload[pos++]
    if (kind !== KIND_VALUE && kind !== KIND_DELETE && kind !== OP_RANGE_DELETE) throw corruption(name, `write batch operation ${i} has unknown kind ${kind}`)
    if (!getVarint(payload, pos, end) || varintOut.value > end - varintOut.pos) {
      throw corruption(name, `write batch operation ${i} has a bad key length`)
    }
    const key = payload.subarray(varintOut.pos, varintOut.pos + varintOut.value)
    pos = varintOut.pos + varintOut.value
    if (kind === KIND_VALUE) {
      if (!getVarint(payload, pos, end) || varintOut.value > end - varintOut.pos) {
        throw corruption(name, `write batch operation ${i} has a bad value length`)
      }
      const value = payload.subarray(varintOut.pos, varintOut.pos + varintOut.value)
      pos = varintOut.pos + varintOut.value
      ops[i] = { kind, key, value }
    } else if (kind === OP_RANGE_DELETE) {
      if (!getVarint(payload, pos, end) || (varintOut.value > 0 && varintOut.value - 1 > end - varintOut.pos)) {
        throw corruption(name, `write batch operation ${i} has a bad range end length`)
      }
      if (varintOut.value === 0) {
        pos = varintOut.pos
        ops[i] = { kind, key }
      } else {
        const rangeEnd = payload.subarray(varintOut.pos, varintOut.pos + varintOut.value - 1)
        pos = varintOut.pos + varintOut.value - 1
        ops[i] = { kind, key, end: rangeEnd }
      }
    } else {
      ops[i] = { kind, key }
    }
  }
  if (pos !== end) throw corruption(name, `write batch has ${end - pos} trailing bytes`)
  return { firstSeq, ops }
}
