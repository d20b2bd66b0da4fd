// Node's CRC-32 (zlib.crc32, native) for lib/util/crc.ts, installed on import:
// by the Node platform on the main thread (hosts/node/platform.ts) and by the
// flush and compaction threads (hosts/node/job-thread.ts), which build and
// check every table block's checksum.
//
// Per call, the table loop of crc32Js wins below about 200 bytes (random
// buffers, ns per call, zlib / js: 32 B 136 / 51, 128 B 172 / 152, 256 B
// 251 / 319, 4 KiB 1296 / 4177), but a switch between the two by length
// showed no gain on awaited 100-byte puts (against the build before: 0.79 to
// 1.04 with the switch, 0.91 to 1.20 with zlib alone, medians of alternating
// runs on a loaded 2-core machine).
import * as zlib from 'node:zlib'
import { useCrc32 } from '../../lib/util/crc'

useCrc32((zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32)
