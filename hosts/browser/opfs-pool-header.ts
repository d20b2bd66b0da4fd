// The header at the start of every pool file of the OPFS file system: which
// engine file the pool file carries, if any, and its generation.
//
//   [0, 4096)   header (one sector, written by one write() call):
//                 0  u32 LE  magic 'LSMP' (0x504d534c)
//                 4  u32 LE  FORMAT_VERSION
//                 8  f64 LE  generation (an integer: the higher wins between two claimants)
//                16  u32 LE  name length in bytes (0: the file is free)
//                20  bytes   name (UTF-8, at most MAX_NAME_BYTES)
//               532  u32 LE  CRC-32 of bytes [0, 532)
//   [4096, ...) the engine's file contents
import { crc32Js } from '../../lib/util/crc32-table'
import { levelError } from '../../lib/errors'

/** Version of the pool file header drawn above. Bump only with a migration path. */
export const FORMAT_VERSION = 1

const MAGIC = 0x504d534c
export const HEADER_BYTES = 4096
const MAX_NAME_BYTES = 512
const CRC_OFFSET = 20 + MAX_NAME_BYTES

export interface Header {
  generation: number
  name: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export function encodeHeader (header: Header): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES)
  const view = new DataView(out.buffer)
  const name = encoder.encode(header.name)
  if (name.length > MAX_NAME_BYTES) throw levelError('LEVEL_IO_ERROR', `File name too long for the OPFS pool: ${header.name}`)
  view.setUint32(0, MAGIC, true)
  view.setUint32(4, FORMAT_VERSION, true)
  view.setFloat64(8, header.generation, true)
  view.setUint32(16, name.length, true)
  out.set(name, 20)
  view.setUint32(CRC_OFFSET, crc32Js(out.subarray(0, CRC_OFFSET)), true)
  return out
}

/** The header in `bytes`, or undefined if it is not a valid one (never written, torn, damaged). */
export function decodeHeader (bytes: Uint8Array): Header | undefined {
  if (bytes.length < HEADER_BYTES) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== FORMAT_VERSION) return undefined
  if (view.getUint32(CRC_OFFSET, true) !== crc32Js(bytes.subarray(0, CRC_OFFSET))) return undefined
  const length = view.getUint32(16, true)
  if (length > MAX_NAME_BYTES) return undefined
  return { generation: view.getFloat64(8, true), name: decoder.decode(bytes.subarray(20, 20 + length)) }
}
