// Opens an Engine over a test file system with its flushes and compactions on
// in-process workers (CompactionWorker.inProcess): the job host a worker thread
// runs, served on this thread over that file system, so that crash and fault
// tests drive the code that runs by default. `compactionWorker: false` in the
// options still puts them on the event loop.
import { Engine } from '../../lib/db'
import { CompactionWorker } from '../../lib/compaction/worker'
import type { FileSystem } from '../../lib/fs/fs'

export async function openEngine (location: string, options: Record<string, unknown>, fs: FileSystem): Promise<Engine> {
  return await Engine.open(location, options, fs, { compaction: CompactionWorker.inProcess(fs), flush: CompactionWorker.inProcess(fs) })
}
