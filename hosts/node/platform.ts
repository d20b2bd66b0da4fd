// The Node platform (lib/platform.ts): node:fs, node:path, the LOCK file of
// hosts/node/lock.ts, a worker thread for flushes and compactions, zlib's CRC-32
// and node:crypto's SHA-256. Installed on import.
import * as path from 'node:path'
import { installPlatform } from '../../lib/platform'
import { nodeFileSystem } from './node-fs'
import { acquireLock } from './lock'
import { sharedJobThread, sharedSecondJobThread } from './job-thread'
import './crc'
import './sha256'

installPlatform({
  fileSystem: nodeFileSystem,
  resolvePath: (location) => path.resolve(location),
  acquireLock,
  jobRunners: (fs) => fs === nodeFileSystem ? { compaction: sharedJobThread(), flush: sharedJobThread(), second: sharedSecondJobThread() } : undefined,
  isHostFileSystem: (fs) => fs === nodeFileSystem
})
