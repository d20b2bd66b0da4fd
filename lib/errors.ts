// Errors with LEVEL_* codes (module-error), the Level ecosystem's convention.
// Damaged bytes read from disk are corruption; a broken invariant is a bug and is
// thrown as a plain Error by `assert` (lib/invariants.ts), never mixed with these.
import ModuleError = require('module-error')

export type LevelErrorCode =
  | 'LEVEL_CORRUPTION'
  | 'LEVEL_IO_ERROR'
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

export function ioError (message: string, cause?: unknown, file?: string): LevelError {
  return levelError('LEVEL_IO_ERROR', message, cause, file)
}

export function invalidOption (name: string, message: string): LevelError {
  return levelError('LEVEL_INVALID_OPTION', `Invalid option '${name}': ${message}`)
}

export function isLevelError (err: unknown, code?: LevelErrorCode): err is LevelError {
  const c = err instanceof Error ? (err as LevelError).code : undefined
  return typeof c === 'string' && c.startsWith('LEVEL_') && (code === undefined || c === code)
}
