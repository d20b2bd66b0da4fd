// The worker side of background jobs: serves the requests that arrive on a
// message port, runs them over a file system and replies on the same port.
// A worker thread (hosts/node/job-thread.ts) serves its parent port over the node
// file system; tests serve one end of a MessageChannel on the main thread over
// the in-memory file system (JobThread.inProcess), so that the crash and
// fault tests drive this very code, with the same messages.
//
//   request  { id, job }      a compaction (CompactionJob, plain data)
//            { id, flush }    a memtable flush (FlushJob); its memtable copy is transferred
//            { id, cancel }   abandon compaction `id` at its next slice
//            { id, readTable } a table's checksums, and its bytes if asked (a backup's put)
//   reply    { id, result }   the TableWriterResult (keys arrive as Uint8Arrays)
//            { id, table }    the TableContent of a readTable; its bytes transferred
//            { id, error }    the error as plain data (ErrorData, the error codec
//                             shared with the remote database protocol)
//            + returned       a flush's memtable copy, transferred back
import type { MessagePort } from 'node:worker_threads'
import type { FileSystem } from '../fs/fs'
import { BlockCache } from '../sstable/cache'
import { TableCache } from '../sstable/table-cache'
import { SkipList } from '../memtable/skiplist'
import { errorToData, type ErrorData } from '../error-codec'
import { runCompactionJob, runFlushJob, reviveFlushJob, reviveJob, type CompactionJob, type FlushJob } from './job'
import type { TableWriterResult } from './table-writer'
import { readTableContent, type TableContent } from '../backup/table-content'

export interface JobRequest { id: number, job?: CompactionJob, flush?: FlushJob, cancel?: boolean, readTable?: { path: string, size: number, keepBytes: boolean } }

export interface JobReply {
  id: number
  result?: TableWriterResult
  table?: TableContent
  error?: ErrorData
  /** A flush's memtable copy, transferred back (see lib/memtable/skiplist.ts, "Handing over"); unused. */
  returned?: ArrayBuffer[]
}

/** Serves job requests arriving on `port`, over `fs`, until the port closes. */
export function serveJobs (port: MessagePort, fs: FileSystem): void {
  const tableCaches = new Map<string, TableCache>()
  const cancelled = new Set<number>()
  // Flushes go first: while one runs, compactions wait at their next yield
  // (writes may be waiting for the flush; a compaction only for its debt).
  let flushes = 0
  let flushesDone: Promise<void> | undefined
  let releaseCompactions: (() => void) | undefined
  const compactionTurn = (): Promise<void> | undefined => flushesDone

  const runFlush = (id: number, flush: FlushJob): void => {
    const entries = flush.entries
    if (flushes++ === 0) flushesDone = new Promise((resolve) => { releaseCompactions = resolve })
    runFlushJob(reviveFlushJob(flush), fs).then((result): JobReply => ({ id, result }),
      (err: unknown): JobReply => ({ id, error: errorToData(err) }))
      .then((reply) => {
        if (--flushes === 0) {
          flushesDone = undefined
          releaseCompactions!()
        }
        // The memtable copy goes back with the reply: a worker thread collects
        // garbage only when it allocates, which an idle worker never does.
        reply.returned = SkipList.stateTransferList(entries)
        port.postMessage(reply, reply.returned)
      })
  }

  const runCompaction = (id: number, plain: CompactionJob): void => {
    const job = reviveJob(plain)
    let tables = tableCaches.get(job.dir)
    if (!tables) {
      // Compaction reads each block once: a small cache is enough.
      tables = new TableCache(fs, job.dir, 64, new BlockCache(1024 * 1024))
      tableCaches.set(job.dir, tables)
    }
    const cache = tables
    const used = new Set<number>(job.runs.flat().map((f) => f.number))
    runCompactionJob(job, fs, cache, () => cancelled.has(id), compactionTurn).then((result): JobReply => ({ id, result }),
      (err: unknown): JobReply => ({ id, error: errorToData(err) }))
      .then((reply) => {
        // The inputs are about to be deleted: close them, BEFORE replying, so that
        // once the job is over (and a close() waiting for it has returned) no file
        // of the database is still open here.
        try {
          for (const n of used) cache.evict(n)
          cancelled.delete(id)
        } finally {
          port.postMessage(reply)
        }
      })
  }

  const readTable = (id: number, { path, size, keepBytes }: { path: string, size: number, keepBytes: boolean }): void => {
    readTableContent(fs, path, size, keepBytes).then(
      (table) => port.postMessage({ id, table } satisfies JobReply, table.bytes === undefined ? [] : [table.bytes.buffer as ArrayBuffer]),
      (err: unknown) => port.postMessage({ id, error: errorToData(err) } satisfies JobReply))
  }

  port.on('message', (req: JobRequest) => {
    if (req.cancel === true) cancelled.add(req.id)
    else if (req.readTable !== undefined) readTable(req.id, req.readTable)
    else if (req.flush !== undefined) runFlush(req.id, req.flush)
    else runCompaction(req.id, req.job!)
  })
}
