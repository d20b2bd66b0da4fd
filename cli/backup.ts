// `lsm-level restore <store> <dir>` and `lsm-level backups <store>`: a backup
// that db.replicate() shipped to an object store (lib/backup/), restored into
// a new database directory, with progress on a terminal; the generations and
// points a store holds. <store> is a directory (the directory store) or
// s3://bucket[/prefix] (the S3 store; @aws-sdk/client-s3 must be installed,
// the endpoint and credentials from the AWS SDK's usual environment, or
// --endpoint).
import { restore, listGenerations, type RestoreResult } from '../lib/backup/restore'
import type { ObjectStore } from '../lib/backup/object-store'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { S3Store } from '../hosts/node/object-store/s3-store'
import { CliError, checkFlags, needArgs, type Parsed } from './args'
import { Progress } from './terminal'
import * as path from 'node:path'
import * as fs from 'node:fs'

const MB = 1e6

/** The store a command line names, and the prefix inside it (s3://bucket/prefix, or --prefix). */
export async function openStore (spec: string, p: Parsed): Promise<{ store: ObjectStore, prefix: string }> {
  const flagPrefix = p.flags.get('prefix')
  const prefix = typeof flagPrefix === 'string' ? flagPrefix : ''
  if (spec.startsWith('s3://')) {
    const rest = spec.slice(5)
    const slash = rest.indexOf('/')
    const bucket = slash < 0 ? rest : rest.slice(0, slash)
    const inUrl = slash < 0 ? '' : rest.slice(slash + 1).replace(/\/+$/, '')
    const endpoint = p.flags.get('endpoint')
    const store = await S3Store.create({ bucket, endpoint: typeof endpoint === 'string' ? endpoint : undefined })
    return { store, prefix: [inUrl, prefix].filter((x) => x !== '').join('/') }
  }
  if (!fs.existsSync(spec)) throw new CliError(`no such directory: ${spec}`)
  return { store: new DirectoryStore(spec), prefix }
}

function number (p: Parsed, name: string): number | undefined {
  const v = p.flags.get(name)
  if (v === undefined) return undefined
  const n = Number(v)
  if (typeof v !== 'string' || v === '' || !Number.isSafeInteger(n) || n < 0) throw new CliError(`--${name} must be an integer >= 0, got ${String(v)}`, 2)
  return n
}

function time (p: Parsed): number | undefined {
  const v = p.flags.get('time')
  if (v === undefined) return undefined
  const ms = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : Date.parse(String(v))
  if (!Number.isFinite(ms)) throw new CliError(`--time must be a date (ISO 8601) or milliseconds since the epoch, got ${String(v)}`, 2)
  return ms
}

export async function cmdRestore (p: Parsed): Promise<number> {
  checkFlags(p, 'restore', ['json', 'prefix', 'sequence', 'time', 'generation', 'endpoint'])
  const [spec, dir] = needArgs(p, 'restore', ['store', 'dir'])
  const { store, prefix } = await openStore(spec, p)
  const generation = p.flags.get('generation')
  const progress = new Progress()
  const started = Date.now()
  let result: RestoreResult
  try {
    result = await restore(store, nodeFileSystem, path.resolve(dir), {
      prefix,
      sequence: number(p, 'sequence'),
      time: time(p),
      generation: typeof generation === 'string' ? generation : undefined,
      onProgress: (x) => {
        const seconds = (Date.now() - started) / 1000
        progress.set(`restoring: ${x.objects} of ${x.objectsTotal} objects, ${(x.bytes / MB).toFixed(1)} of ${(x.bytesTotal / MB).toFixed(1)} MB, ${(x.bytes / MB / Math.max(seconds, 0.001)).toFixed(1)} MB/s`)
      }
    })
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'LEVEL_CORRUPTION') throw new CliError(`the backup is damaged: ${(err as Error).message}; nothing was written to ${dir}`)
    if (code === 'LEVEL_INVALID_OPTION') throw new CliError((err as Error).message)
    throw err
  } finally {
    progress.done()
  }
  const ms = Date.now() - started
  if (p.flags.has('json')) {
    process.stdout.write(JSON.stringify({ ...result, ms }, null, 2) + '\n')
    return 0
  }
  const bytes = result.tableBytes + result.logBytes
  process.stdout.write([
    `restored ${store.description}${prefix === '' ? '' : ' (prefix ' + prefix + ')'} into ${dir}`,
    `generation ${result.generation}, sequence number ${result.sequence} (point ${result.pointSequence})${result.stoppedAtHole ? '; stopped at a hole in the logs: the state is the one before it' : ''}`,
    `${result.tables} tables, ${result.segments} log segments, ${bytes} bytes in ${(ms / 1000).toFixed(1)}s (${(bytes / MB / Math.max(ms / 1000, 0.001)).toFixed(1)} MB/s)`
  ].join('\n') + '\n')
  return 0
}

export async function cmdBackups (p: Parsed): Promise<number> {
  checkFlags(p, 'backups', ['json', 'prefix', 'endpoint'])
  const [spec] = needArgs(p, 'backups', ['store'])
  const { store, prefix } = await openStore(spec, p)
  const gens = await listGenerations(store, prefix)
  const rows = gens.map((g) => ({
    generation: g.id,
    started: new Date(Number(g.id.slice(0, 13))).toISOString(),
    newest: new Date(g.newestMs).toISOString(),
    points: g.points.length,
    sequences: g.points.length === 0 ? null : [g.points[0].sequence, Math.max(g.points[g.points.length - 1].sequence, ...g.segments.map((s) => s.last))],
    segments: g.segments.length
  }))
  if (p.flags.has('json')) {
    process.stdout.write(JSON.stringify(rows, null, 2) + '\n')
    return 0
  }
  if (rows.length === 0) process.stdout.write(`no backup in ${store.description}${prefix === '' ? '' : ' under ' + prefix}\n`)
  for (const r of rows) {
    process.stdout.write(`${r.generation}  ${r.started} .. ${r.newest}  ${r.points} points, ${r.segments} log segments, sequence numbers ${r.sequences === null ? 'none' : r.sequences.join('..')}\n`)
  }
  return 0
}
