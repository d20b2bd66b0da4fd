// Opening the database for a command, and errors as the user reads them.
// Commands never create a database: a directory without CURRENT is refused
// before anything in it is touched.
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { CURRENT } from '../lib/filenames'
import { CliError } from './args'

/** Refuses `dir` unless it is a directory holding a database (CURRENT). */
export function requireDatabase (dir: string): void {
  let st: nodeFs.Stats
  try {
    st = nodeFs.statSync(dir)
  } catch {
    throw new CliError(`no database at ${dir}`)
  }
  if (!st.isDirectory()) throw new CliError(`no database at ${dir} (not a directory)`)
  if (!nodeFs.existsSync(path.join(dir, CURRENT))) throw new CliError(`no database at ${dir}`)
}

/** The outermost error in `err`'s cause chain carrying `code`. */
function findCode (err: unknown, code: string): Error | undefined {
  let e: unknown = err
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if ((e as { code?: unknown }).code === code) return e
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

/**
 * Translates a failed open, operation or close into a message (exit code 1).
 * `context` (what failed: "Database failed to open") heads the message of an
 * error with no known code.
 */
export function openFailure (dir: string, err: unknown, context?: string): CliError {
  if (findCode(err, 'LEVEL_LOCKED') !== undefined) return new CliError(`database is locked by another process: ${dir}`)
  if (findCode(err, 'LEVEL_OWNER_UNREACHABLE') !== undefined) {
    return new CliError(`database is locked by another process, which does not answer: it did not open the database with multiProcess, or it is hung: ${dir}`)
  }
  const corrupt = findCode(err, 'LEVEL_CORRUPTION')
  if (corrupt !== undefined) return new CliError(`corruption: ${corrupt.message} (try: lsm-level repair ${dir})`)
  const inner = findCode(err, 'LEVEL_INVALID_OPTION')
  if (inner !== undefined && /does not exist/.test(inner.message)) return new CliError(`no database at ${dir}`)
  const io = findCode(err, 'LEVEL_IO_ERROR')
  if (io !== undefined) return new CliError(`I/O error: ${io.message}`)
  const parts: string[] = context === undefined ? [] : [context]
  let e: unknown = err
  while (e instanceof Error && parts.length < 4) {
    parts.push(e.message)
    e = (e as { cause?: unknown }).cause
  }
  return new CliError(parts.length > 0 ? parts.join(': ') : String(err))
}

/** How long a command waits for the process that holds the database to answer (it may not serve others at all). */
const OWNER_TIMEOUT_MS = 2000

/**
 * Opens the database in `dir` as a multiProcess opener (keys and values as
 * Buffers), runs `fn` on it and closes it, whatever `fn` does: when another
 * process has it open with multiProcess, the command goes through that
 * process; otherwise this one owns it for the command's duration (and serves
 * any other multiProcess opener meanwhile).
 */
export async function withLevel<T> (dir: string, fn: (db: LsmLevel<Buffer, Buffer>) => Promise<T>): Promise<T> {
  requireDatabase(dir)
  const db = new LsmLevel<Buffer, Buffer>(dir, { multiProcess: true, ownerTimeoutMs: OWNER_TIMEOUT_MS, keyEncoding: 'buffer', valueEncoding: 'buffer' })
  try {
    await db.open({ createIfMissing: false })
  } catch (err) {
    throw openFailure(dir, err, 'Database failed to open')
  }
  let result: T
  try {
    result = await fn(db)
  } catch (err) {
    await db.close().catch(() => {})
    if (err instanceof CliError) throw err
    throw openFailure(dir, err)
  }
  try {
    await db.close()
  } catch (err) {
    throw openFailure(dir, err, 'Database failed to close')
  }
  return result
}
