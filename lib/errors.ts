// Errors with LEVEL_* codes (module-error), the Level ecosystem's convention.
// Damaged bytes read from disk are corruption; a broken invariant is a bug and is
// thrown as a plain Error by `assert` (lib/invariants.ts), never mixed with these.
import ModuleError = require('module-error')

export type LevelErrorCode =
  | 'LEVEL_CORRUPTION'
  | 'LEVEL_IO_ERROR'
  | 'LEVEL_STORAGE_FULL'
  | 'LEVEL_LOCKED'
  | 'LEVEL_INVALID_OPTION'
  | 'LEVEL_DATABASE_NOT_OPEN'
  | 'LEVEL_ABORTED'
  | 'LEVEL_NOT_SUPPORTED'
  | 'LEVEL_CHANGES_NOT_RETAINED'
  | 'LEVEL_READ_ONLY'
  // Many openers (one owner, the others its clients):
  /** A write was in flight when the owner was lost: it may or may not have committed. */
  | 'LEVEL_OUTCOME_UNKNOWN'
  /** An iterator, snapshot or change feed opened before the owner changed, used after. */
  | 'LEVEL_OWNER_CHANGED'
  /** No owner answered within the bounded time (alive but hung, or unreachable). */
  | 'LEVEL_OWNER_UNREACHABLE'

export interface LevelError extends Error {
  code: LevelErrorCode
  cause?: unknown
  /** The file a corruption or I/O error is about, relative to the database directory when known. */
  file?: string
}

export function levelError (code: LevelErrorCode, message: string, cause?: unknown, file?: string): LevelError {
  const err = new ModuleError(message, { code, cause: cause as Error | undefined }) as unknown as LevelError
  if (file !== undefined) err.file = file
  return err
}

/** Damaged on-disk data. `file` names the file (basename) so users know what broke. */
export function corruption (file: string, message: string, cause?: unknown): LevelError {
  return levelError('LEVEL_CORRUPTION', `Corruption in ${file}: ${message}`, cause, file)
}

/**
 * A failed read, write or fsync: LEVEL_IO_ERROR, or LEVEL_STORAGE_FULL when
 * the cause is a full disk or quota (isStorageFull), so that callers can tell
 * "free some space" from a broken disk whichever layer wrapped the error.
 */
export function ioError (message: string, cause?: unknown, file?: string): LevelError {
  return levelError(isStorageFull(cause) ? 'LEVEL_STORAGE_FULL' : 'LEVEL_IO_ERROR', message, cause, file)
}

/** Errno codes of a full disk or quota (ENOSPC; EDQUOT where quotas are per user). */
const FULL_CODES = new Set(['LEVEL_STORAGE_FULL', 'ENOSPC', 'EDQUOT'])

/**
 * Whether `err` or an error in its cause chain says the storage is full: a
 * full disk (ENOSPC, EDQUOT), a browser's full quota (QuotaExceededError), or
 * LEVEL_STORAGE_FULL itself.
 */
export function isStorageFull (err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Object && depth < 16; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, name } = e as { code?: unknown, name?: unknown }
    if (FULL_CODES.has(String(code)) || name === 'QuotaExceededError') return true
  }
  return false
}

export function invalidOption (name: string, message: string): LevelError {
  return levelError('LEVEL_INVALID_OPTION', `Invalid option '${name}': ${message}`)
}

export function isLevelError (err: unknown, code?: LevelErrorCode): err is LevelError {
  const c = err instanceof Error ? (err as LevelError).code : undefined
  return typeof c === 'string' && c.startsWith('LEVEL_') && (code === undefined || c === code)
}
