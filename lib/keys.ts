// The key vocabulary of the engine.
//
//   userKey      the caller's bytes (a Buffer), ordered bytewise
//   seq          sequence number, 0 < seq <= MAX_SEQ, one per write (a batch's
//                operations take consecutive numbers)
//   kind         what the entry is: a value or a deletion (tombstone)
//   internal key (userKey, seq, kind). Internal order: userKey ascending, then
//                seq DEscending, so the newest version of a key comes first.
//
// Encoded internal key (in the manifest, in a table's properties block, and in
// the block entries of table format 1; format 2 blocks store the user key and a
// varint tag = seq * 2 + kind instead, lib/sstable/block-builder.ts):
//
//   +-----------------+------+--------------------------+----------+
//   | userKey (n B)   | kind | seq (6 B, little-endian) | reserved |
//   +-----------------+------+--------------------------+----------+
//                      1 B    6 B                        1 B (0)
//
// The 8-byte trailer follows the user key; MAX_SEQ is therefore 2^48 - 1. These
// constants are part of the on-disk format and must never change.
import { compareBytes } from './util/coding'

export const KIND_DELETE = 0
export const KIND_VALUE = 1
export type Kind = typeof KIND_DELETE | typeof KIND_VALUE

export const MAX_SEQ = 2 ** 48 - 1
export const TRAILER_SIZE = 8

export function encodeInternalKey (userKey: Uint8Array, seq: number, kind: number): Buffer {
  const out = Buffer.allocUnsafe(userKey.length + TRAILER_SIZE)
  out.set(userKey, 0)
  writeTrailer(out, userKey.length, seq, kind)
  return out
}

export function writeTrailer (buf: Buffer, pos: number, seq: number, kind: number): void {
  buf[pos] = kind
  buf.writeUIntLE(seq, pos + 1, 6)
  buf[pos + 7] = 0
}

/** The seq of the trailer at `trailerPos`: 6 bytes little-endian after the kind byte. */
export function trailerSeq (buf: Uint8Array, trailerPos: number): number {
  const p = trailerPos + 1
  return buf[p] + buf[p + 1] * 0x100 + buf[p + 2] * 0x10000 + buf[p + 3] * 0x1000000 +
    buf[p + 4] * 0x100000000 + buf[p + 5] * 0x10000000000
}

export function trailerKind (buf: Uint8Array, trailerPos: number): number {
  return buf[trailerPos]
}

/** Compares internal keys given as parts: userKey ascending, then seq descending. */
export function compareInternal (aKey: Uint8Array, aSeq: number, bKey: Uint8Array, bSeq: number): number {
  const c = compareBytes(aKey, bKey)
  if (c !== 0) return c
  return bSeq - aSeq
}

/** Internal key as a value (used for table bounds and in the manifest). */
export interface InternalKey {
  userKey: Buffer
  seq: number
  kind: number
}

export function compareInternalKeys (a: InternalKey, b: InternalKey): number {
  return compareInternal(a.userKey, a.seq, b.userKey, b.seq)
}
