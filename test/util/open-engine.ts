// Opens an Engine over a test file system with its flushes and compactions on
// in-process workers (JobThread.inProcess): the job host a worker thread
// runs, served on this thread over that file system, so that crash and fault
// tests drive the code that runs by default. `compactionWorker: false` in the
// options still puts them on the event loop.
import { Engine } from '../../hosts/node/index'
import { JobThread } from '../../hosts/node/job-thread'
import type { FileSystem } from '../../lib/fs/fs'

/** The in-process workers of every engine opened over a file system. */
const workersByFs = new WeakMap<FileSystem, JobThread[]>()

export async function openEngine (location: string, options: Record<string, unknown>, fs: FileSystem): Promise<Engine> {
  const workers = { compaction: JobThread.inProcess(fs), flush: JobThread.inProcess(fs) }
  const list = workersByFs.get(fs) ?? []
  list.push(workers.compaction, workers.flush)
  workersByFs.set(fs, list)
  return await Engine.open(location, options, fs, workers)
}

/** Flushes and compactions handed to the in-process workers of engines opened over `fs`. */
export function workerJobs (fs: FileSystem): number {
  return (workersByFs.get(fs) ?? []).reduce((sum, w) => sum + w.jobs, 0)
}
