// The commands that open the database: stats, get, put, del, scan, checkpoint, compact,
// and repair (which rebuilds it unopened). Keys and values are utf8. They open
// it as a multiProcess opener (open.ts, withLevel): through its owner when
// another process holds it that way.
import * as nodeFs from 'node:fs'
import { repair } from '../hosts/node/tools/repair'
import { formatStats } from '../lib/stats'
import { CliError, checkFlags, needArgs, type Parsed } from './args'
import { openFailure, withLevel } from './open'
import { Out, Progress } from './terminal'

export async function cmdStats (p: Parsed): Promise<number> {
  checkFlags(p, 'stats', ['json'])
  const [dir] = needArgs(p, 'stats', ['dir'])
  const stats = await withLevel(dir, async (db) => await db.fetchStats())
  if (p.flags.has('json')) {
    process.stdout.write(JSON.stringify(stats, null, 2) + '\n')
  } else {
    process.stdout.write(`database ${dir}\n` + formatStats(stats))
  }
  return 0
}

export async function cmdGet (p: Parsed): Promise<number> {
  checkFlags(p, 'get', [])
  const [dir, key] = needArgs(p, 'get', ['dir', 'key'])
  const value = await withLevel(dir, async (db) => await db.get(Buffer.from(key, 'utf8')))
  if (value === undefined) {
    process.stderr.write(`key not found: ${key}\n`)
    return 1
  }
  process.stdout.write(value.toString('utf8') + '\n')
  return 0
}

export async function cmdPut (p: Parsed): Promise<number> {
  checkFlags(p, 'put', [])
  const [dir, key, value] = needArgs(p, 'put', ['dir', 'key', 'value'])
  await withLevel(dir, async (db) => {
    await db.put(Buffer.from(key, 'utf8'), Buffer.from(value, 'utf8'))
  })
  return 0
}

export async function cmdDel (p: Parsed): Promise<number> {
  checkFlags(p, 'del', [])
  const [dir, key] = needArgs(p, 'del', ['dir', 'key'])
  await withLevel(dir, async (db) => {
    await db.del(Buffer.from(key, 'utf8'))
  })
  return 0
}

export async function cmdScan (p: Parsed): Promise<number> {
  checkFlags(p, 'scan', ['gte', 'gt', 'lte', 'lt', 'reverse', 'limit'])
  const [dir] = needArgs(p, 'scan', ['dir'])
  const range: { gte?: Buffer, gt?: Buffer, lte?: Buffer, lt?: Buffer, reverse: boolean } = { reverse: p.flags.has('reverse') }
  for (const k of ['gte', 'gt', 'lte', 'lt'] as const) {
    const v = p.flags.get(k)
    if (typeof v === 'string') range[k] = Buffer.from(v, 'utf8')
  }
  let limit = Infinity
  const limitFlag = p.flags.get('limit')
  if (typeof limitFlag === 'string') {
    limit = Number(limitFlag)
    if (!Number.isInteger(limit) || limit < 0) throw new CliError(`--limit must be a non-negative integer, got '${limitFlag}'`, 2)
  }
  const out = new Out()
  await withLevel(dir, async (db) => {
    const it = db.iterator({ ...range, limit: limit === Infinity ? -1 : limit })
    try {
      for (let entries = await it.nextv(1000); entries.length > 0; entries = await it.nextv(1000)) {
        for (const [key, value] of entries) await out.line(`${key.toString('utf8')}\t${value.toString('utf8')}`)
      }
    } finally {
      await it.close()
    }
  })
  await out.flush()
  return 0
}

export async function cmdCheckpoint (p: Parsed): Promise<number> {
  checkFlags(p, 'checkpoint', [])
  const [dir, target] = needArgs(p, 'checkpoint', ['dir', 'target'])
  const t0 = Date.now()
  const made = await withLevel(dir, async (db) => await db.checkpoint(target))
  process.stdout.write(`checkpoint ${target} at sequence ${made.sequence} in ${Date.now() - t0} ms: ` +
    `${made.linked} tables linked, ${made.copied} copied, ${made.logBytes} bytes of unflushed writes from ${made.logs} logs\n`)
  return 0
}

export async function cmdCompact (p: Parsed): Promise<number> {
  checkFlags(p, 'compact', [])
  const [dir] = needArgs(p, 'compact', ['dir'])
  const progress = new Progress()
  const t0 = Date.now()
  try {
    await withLevel(dir, async (db) => {
      progress.elapsed('compacting')
      await db.compactRange()
      progress.done()
      const levels = (await db.fetchStats()).levels
      process.stdout.write(`compacted in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`)
      process.stdout.write(levels.filter((l) => l.files > 0).map((l) => `  level ${l.level}: ${l.files} files, ${l.bytes} bytes`).join('\n') + '\n')
    })
  } finally {
    progress.done()
  }
  return 0
}

export async function cmdRepair (p: Parsed): Promise<number> {
  checkFlags(p, 'repair', [])
  const [dir] = needArgs(p, 'repair', ['dir'])
  let st: nodeFs.Stats | undefined
  try { st = nodeFs.statSync(dir) } catch {}
  if (st === undefined || !st.isDirectory()) throw new CliError(`no database at ${dir}`)
  const progress = new Progress()
  progress.elapsed('repairing')
  let report
  try {
    report = await repair(dir)
  } catch (err) {
    progress.done()
    throw openFailure(dir, err)
  }
  progress.done()
  const list = (xs: string[]): string => xs.length === 0 ? '-' : xs.join(', ')
  const lines = [
    `repaired ${dir}`,
    `tables: kept ${list(report.tables.kept)}; salvaged ${list(report.tables.salvaged)}; dropped ${list(report.tables.dropped)}; data blocks lost ${report.tables.blocksLost}`,
    `logs: replayed ${list(report.logs.replayed)}; ${report.logs.records} records; ${report.logs.droppedBytes} bytes dropped`,
    `entries recovered ${report.entriesRecovered}, live keys ${report.keys}, last sequence ${report.lastSequence}`,
    `new tables ${list(report.newTables)}; manifest ${report.manifest}`,
    `archived to lost/: ${list(report.archived)}`,
    `removed: ${list(report.removed)}`
  ]
  if (report.problems.length === 0) lines.push('problems: none')
  else {
    lines.push(`problems (${report.problems.length}):`)
    for (const pr of report.problems) lines.push(`  ${pr.file}: ${pr.message}`)
  }
  process.stdout.write(lines.join('\n') + '\n')
  return 0
}
