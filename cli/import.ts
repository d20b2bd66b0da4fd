// `lsm-level import <source> <dir>`: a LevelDB (classic-level) directory into a
// new lsm-level database (hosts/node/tools/import-leveldb.ts), with progress on a
// terminal and the report at the end.
import { importLevelDB, type ImportReport } from '../hosts/node/tools/import-leveldb'
import { CliError, checkFlags, needArgs, type Parsed } from './args'
import { openFailure } from './open'
import { Progress } from './terminal'

const MB = 1e6

export async function cmdImport (p: Parsed): Promise<number> {
  checkFlags(p, 'import', ['json'])
  const [source, dir] = needArgs(p, 'import', ['source', 'dir'])
  const progress = new Progress()
  const started = Date.now()
  let report: ImportReport
  try {
    report = await importLevelDB(source, dir, {
      onProgress: (read, total) => {
        const seconds = (Date.now() - started) / 1000
        const percent = total > 0 ? Math.floor(100 * read / total) : 100
        progress.set(`importing: ${(read / MB).toFixed(1)} of ${(total / MB).toFixed(1)} MB (${percent}%), ${(read / MB / Math.max(seconds, 0.001)).toFixed(1)} MB/s`)
      }
    })
  } catch (err) {
    // Not openFailure's advice to repair: the source is LevelDB's, and is never written.
    if ((err as { code?: unknown }).code === 'LEVEL_CORRUPTION') throw new CliError(`the source is damaged: ${(err as Error).message}; nothing was written to ${dir}`)
    throw openFailure(source, err)
  } finally {
    progress.done()
  }
  if (p.flags.has('json')) {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n')
    return 0
  }
  const seconds = report.ms / 1000
  process.stdout.write([
    `imported ${source} into ${dir}`,
    `read: ${report.tables} tables, ${report.logs} logs, ${report.entries} entries, ${report.bytesRead} bytes in ${seconds.toFixed(1)}s (${(report.bytesRead / MB / Math.max(seconds, 0.001)).toFixed(1)} MB/s)`,
    `wrote: ${report.keys} keys in ${report.newTables.length} tables, last sequence ${report.lastSequence}`,
    ...(report.logBytesDropped > 0 ? [`dropped: ${report.logBytesDropped} bytes of a log record cut off by the end of its log (an interrupted write)`] : [])
  ].join('\n') + '\n')
  return 0
}
