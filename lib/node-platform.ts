// The Node platform (lib/platform.ts): node:fs, node:path, the LOCK file of
// lib/lock.ts, worker threads for flushes and compactions, and zlib's CRC-32.
// Installed on import.
import * as path from 'node:path'
import * as zlib from 'node:zlib'
import { installPlatform } from './platform'
import { nodeFileSystem } from './fs/node-fs'
import { acquireLock } from './lock'
import { sharedCompactionWorker, sharedFlushWorker } from './compaction/worker'
import { useCrc32 } from './util/crc'

const zlibCrc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32

// zlib.crc32, as before the browser build. Per call, the table loop of
// crc32Js wins below about 200 bytes (random buffers, ns per call, zlib / js:
// 32 B 136 / 51, 128 B 172 / 152, 256 B 251 / 319, 4 KiB 1296 / 4177), but a
// switch between the two by length showed no gain on awaited 100-byte puts
// (against the build before: 0.79 to 1.04 with the switch, 0.91 to 1.20 with
// zlib alone, medians of alternating runs on a loaded 2-core machine).
useCrc32(zlibCrc32)

installPlatform({
  fileSystem: nodeFileSystem,
  resolvePath: (location) => path.resolve(location),
  acquireLock,
  backgroundWorkers: (fs) => fs === nodeFileSystem ? { compaction: sharedCompactionWorker(), flush: sharedFlushWorker() } : undefined
})
