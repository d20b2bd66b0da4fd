// The Node platform (lib/platform.ts): node:fs, node:path, the LOCK file of
// hosts/node/lock.ts, worker threads for flushes and compactions, and zlib's CRC-32.
// Installed on import.
import * as path from 'node:path'
import { installPlatform } from '../../lib/platform'
import { nodeFileSystem } from './node-fs'
import { acquireLock } from './lock'
import { sharedCompactionWorker, sharedFlushWorker } from '../../lib/compaction/worker'
import './crc'

installPlatform({
  fileSystem: nodeFileSystem,
  resolvePath: (location) => path.resolve(location),
  acquireLock,
  backgroundWorkers: (fs) => fs === nodeFileSystem ? { compaction: sharedCompactionWorker(), flush: sharedFlushWorker() } : undefined
})
