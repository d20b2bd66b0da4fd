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
// One encoder (encodeBatch) and one decoder (readBatchOp, which reads an
// operation in place as positions). readBatchOp checks every length against
// the bytes that remain and reports a malformed operation rather than read out
// of bounds: the write path asserts on it (a bug), decodeBatch turns it into
// LEVEL_CORRUPTION naming the log file (damage that got past the record CRC),
// never a wrong value or a RangeError.
import { getFixed32, getFixed64, getVarint, putFixed32, putFixed64, putVarint, varintLength, varintOut } from '../util/coding'
import { corruption } from '../errors'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../keys'
import { assert } from '../invariants'

/** Version of the payload layout drawn above. */
export const FORMAT_VERSION = 2

/** A range tombstone (lib/range-tombstones.ts). Batch-only: never a table entry kind. */
export const OP_RANGE_DELETE = 2

export const BATCH_HEADER_SIZE = 12

/** One operation of a batch. Keys and values given as strings are stored as UTF-8. */
export interface BatchOp {
  kind: number
  key: string | Uint8Array
  /** Present (required) for KIND_VALUE; absent otherwise. */
  value?: string | Uint8Array
  /** OP_RANGE_DELETE only: the first key not deleted (`key` is the first deleted); undefined: no end. */
  end?: Uint8Array
}

/** An operation decodeBatch read from a log: views of the record's payload. */
export interface DecodedOp {
  kind: number
  key: Buffer
  value?: Buffer
  end?: Buffer
}

export interface DecodedBatch {
  firstSeq: number
  ops: DecodedOp[]
}

/** Byte lengths of encodeBatch's keys and values (or range ends), reused between calls. */
let lengths = new Int32Array(2048)

/**
 * Encodes `ops` as a batch payload whose sequence number is not known yet: the
 * first sequence number field is 0 until setBatchSequence() fills it in (at
 * commit). One copy of each key and value, straight from the caller's data, no
 * intermediate buffer or object per operation; the caller may reuse its
 * buffers afterwards. The payload becomes the log record and, at commit, the
 * memtable's source.
 */
export function encodeBatch (ops: ArrayLike<BatchOp>): Buffer {
  const n = ops.length
  assert(n <= 0xffffffff, 'batch has too many operations')
  if (lengths.length < 2 * n) lengths = new Int32Array(2 * n)
  const lens = lengths
  let size = BATCH_HEADER_SIZE
  for (let i = 0; i < n; i++) {
    const op = ops[i]
    const klen = byteLength(op.key)
    lens[2 * i] = klen
    size += 1 + (klen < 128 ? 1 : varintLength(klen)) + klen
    if (op.kind === KIND_VALUE) {
      assert(op.value !== undefined && op.value !== null, 'batch put has no value')
      const vlen = byteLength(op.value)
      lens[2 * i + 1] = vlen
      size += (vlen < 128 ? 1 : varintLength(vlen)) + vlen
    } else if (op.kind === OP_RANGE_DELETE) {
      const elen = op.end === undefined ? -1 : op.end.length
      lens[2 * i + 1] = elen
      size += varintLength(elen + 1) + Math.max(0, elen)
    } else {
      assert(op.kind === KIND_DELETE, 'batch op has an unknown kind')
    }
  }
  const out = Buffer.allocUnsafe(size)
  let pos = putFixed64(out, 0, 0)
  pos = putFixed32(out, pos, n)
  for (let i = 0; i < n; i++) {
    const op = ops[i]
    const kind = op.kind
    const klen = lens[2 * i]
    out[pos++] = kind
    if (klen < 128) out[pos++] = klen
    else pos = putVarint(out, pos, klen)
    pos = putData(out, pos, op.key, klen)
    if (kind === KIND_VALUE) {
      const vlen = lens[2 * i + 1]
      if (vlen < 128) out[pos++] = vlen
      else pos = putVarint(out, pos, vlen)
      pos = putData(out, pos, op.value as string | Uint8Array, vlen)
    } else if (kind === OP_RANGE_DELETE) {
      const elen = lens[2 * i + 1]
      pos = putVarint(out, pos, elen + 1)
      if (elen >= 0) pos = putData(out, pos, op.end as Uint8Array, elen)
    }
  }
  assert(pos === size, 'batch size mismatch')
  return out
}

/** Bytes a key or value takes in a payload: a string as UTF-8. */
function byteLength (data: string | Uint8Array): number {
  return typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : data.byteLength
}

/** Copies a key or value (a string as UTF-8) to out[pos] and returns the new position. */
function putData (out: Buffer, pos: number, data: string | Uint8Array, len: number): number {
  if (typeof data === 'string') {
    out.write(data, pos, len, 'utf8')
  } else if (len <= 16) {
    // Short copies by hand (TypedArray.set costs more than a few bytes' loop).
    for (let i = 0; i < len; i++) out[pos + i] = data[i]
  } else {
    out.set(data, pos)
  }
  return pos + len
}

/** Number of operations in an encoded batch. */
export function batchCount (payload: Uint8Array): number {
  return getFixed32(payload, 8)
}

/** The first sequence number of an encoded batch. */
export function batchSequence (payload: Uint8Array): number {
  return getFixed64(payload, 0)
}

/** Sets the first sequence number of an encoded batch (encodeBatch). */
export function setBatchSequence (payload: Uint8Array, firstSeq: number): void {
  assert(Number.isInteger(firstSeq) && firstSeq >= 1, 'batch first sequence number must be >= 1')
  assert(firstSeq + batchCount(payload) - 1 <= MAX_SEQ, 'batch sequence numbers exceed MAX_SEQ')
  putFixed64(payload, 0, firstSeq)
}

/**
 * One operation of an encoded batch, as positions in the payload (no views):
 * filled in by readBatchOp and reused from call to call. endLen is -1 for a
 * range delete without an end; `error` says what was wrong when it returned -1.
 */
export const batchOpOut = { kind: 0, keyOff: 0, keyLen: 0, valueOff: 0, valueLen: 0, endOff: 0, endLen: -1, error: '' }

function malformed (what: string): number {
  batchOpOut.error = what
  return -1
}

/**
 * Reads the operation at payload[pos] into batchOpOut and returns the position
 * of the next one, or -1 if the bytes there are not a whole, valid operation.
 */
export function readBatchOp (payload: Uint8Array, pos: number): number {
  const end = payload.length
  const o = batchOpOut
  if (pos >= end) return malformed('truncated')
  const kind = payload[pos++]
  if (kind !== KIND_VALUE && kind !== KIND_DELETE && kind !== OP_RANGE_DELETE) return malformed(`unknown kind ${kind}`)
  o.kind = kind
  let len = payload[pos]
  if (len < 128 && pos < end) pos++
  else if (getVarint(payload, pos, end)) { len = varintOut.value; pos = varintOut.pos } else return malformed('bad key length')
  if (len > end - pos) return malformed('bad key length')
  o.keyOff = pos
  o.keyLen = len
  pos += len
  if (kind === KIND_VALUE) {
    len = payload[pos]
    if (len < 128 && pos < end) pos++
    else if (getVarint(payload, pos, end)) { len = varintOut.value; pos = varintOut.pos } else return malformed('bad value length')
    if (len > end - pos) return malformed('bad value length')
    o.valueOff = pos
    o.valueLen = len
    pos += len
  } else if (kind === OP_RANGE_DELETE) {
    if (!getVarint(payload, pos, end)) return malformed('bad range end length')
    len = varintOut.value
    pos = varintOut.pos
    if (len === 0) {
      o.endLen = -1
    } else {
      if (len - 1 > end - pos) return malformed('bad range end length')
      o.endOff = pos
      o.endLen = len - 1
      pos += len - 1
    }
  }
  return pos
}

/** The operation count of a batch payload read from the log file `name`, after checking its header. Throws corruption(name, ...) if malformed. */
function checkedCount (payload: Uint8Array, name: string): number {
  const end = payload.length
  if (end < BATCH_HEADER_SIZE) throw corruption(name, `write batch too short (${end} bytes)`)
  const firstSeq = getFixed64(payload, 0)
  const count = getFixed32(payload, 8)
  if (firstSeq < 1 || firstSeq > MAX_SEQ) throw corruption(name, `write batch has an invalid sequence number ${firstSeq}`)
  if (count > 0 && firstSeq + count - 1 > MAX_SEQ) throw corruption(name, 'write batch sequence numbers exceed the maximum')
  // Every op takes at least 2 bytes (kind + key length); checked before any allocation.
  if (count > (end - BATCH_HEADER_SIZE) / 2) throw corruption(name, `write batch count ${count} exceeds its size`)
  return count
}

/**
 * Checks a whole batch payload read from the log file `name` as decodeBatch
 * does, without making views (log replay then adds it with MemTable.addBatch).
 * Returns its operation count. Throws corruption(name, ...) if malformed.
 */
export function checkBatch (payload: Uint8Array, name: string): number {
  const count = checkedCount(payload, name)
  let pos = BATCH_HEADER_SIZE
  for (let i = 0; i < count; i++) {
    pos = readBatchOp(payload, pos)
    if (pos < 0) throw corruption(name, `write batch operation ${i}: ${batchOpOut.error}`)
  }
  if (pos !== payload.length) throw corruption(name, `write batch has ${payload.length - pos} trailing bytes`)
  return count
}

/**
 * Decodes a batch payload read from the log file `name`. Keys and values are
 * subarrays of `payload` (no copies). Throws corruption(name, ...) if malformed.
 */
export function decodeBatch (payload: Buffer, name: string): DecodedBatch {
  const end = payload.length
  const count = checkedCount(payload, name)
  const firstSeq = getFixed64(payload, 0)
  const o = batchOpOut
  const ops: DecodedOp[] = new Array(count)
  let pos = BATCH_HEADER_SIZE
  for (let i = 0; i < count; i++) {
    pos = readBatchOp(payload, pos)
    if (pos < 0) throw corruption(name, `write batch operation ${i}: ${o.error}`)
    const key = payload.subarray(o.keyOff, o.keyOff + o.keyLen)
    if (o.kind === KIND_VALUE) ops[i] = { kind: o.kind, key, value: payload.subarray(o.valueOff, o.valueOff + o.valueLen) }
    else if (o.kind === OP_RANGE_DELETE && o.endLen >= 0) ops[i] = { kind: o.kind, key, end: payload.subarray(o.endOff, o.endOff + o.endLen) }
    else ops[i] = { kind: o.kind, key }
  }
  if (pos !== end) throw corruption(name, `write batch has ${end - pos} trailing bytes`)
  return { firstSeq, ops }
}
