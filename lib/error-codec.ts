// Errors as plain data, for any message boundary (a worker thread, a Web
// Worker, a MessagePort): a structured clone keeps only an Error's message and
// stack, so the fields that matter travel as data and are revived on the other
// side. Shared by the remote database protocol and the background job host.

import { levelError, type LevelErrorCode } from './errors'

/**
 * An error as plain data: a LevelError's code and file, an errno error's code,
 * syscall and path, the name of an error class other than Error, the stack,
 * and the causes behind it.
 */
export interface ErrorData {
  message: string
  code?: string
  name?: string
  file?: string
  syscall?: string
  path?: string
  stack?: string
  cause?: ErrorData
}

/** Causes kept in an ErrorData, at most. */
const MAX_CAUSES = 8

/** Names that need no keeping: what a revived error is called anyway. */
const PLAIN_NAMES = new Set(['Error', 'ModuleError'])

export function errorToData (err: unknown, depth = 0): ErrorData {
  const e = err as { code?: unknown, name?: unknown, message?: unknown, file?: unknown, syscall?: unknown, path?: unknown, stack?: unknown, cause?: unknown } | undefined
  const str = (v: unknown): string | undefined => typeof v === 'string' ? v : undefined
  const name = str(e?.name)
  return {
    message: String(e?.message ?? err),
    code: str(e?.code),
    name: name !== undefined && !PLAIN_NAMES.has(name) ? name : undefined,
    file: str(e?.file),
    syscall: str(e?.syscall),
    path: str(e?.path),
    stack: str(e?.stack),
    cause: e?.cause !== undefined && depth < MAX_CAUSES ? errorToData(e.cause, depth + 1) : undefined
  }
}

/**
 * The error an ErrorData describes: a LevelError for LEVEL_* codes, else an
 * Error shaped like node:fs's (code, syscall, path), with its name and stack.
 */
export function errorFromData (d: ErrorData): Error {
  const cause = d.cause === undefined ? undefined : errorFromData(d.cause)
  let err: Error
  if (d.code?.startsWith('LEVEL_') === true) {
    err = levelError(d.code as LevelErrorCode, d.message, cause, d.file)
  } else {
    const e = new Error(d.message, cause === undefined ? undefined : { cause }) as Error & { code?: string, syscall?: string, path?: string }
    if (d.code !== undefined) e.code = d.code
    if (d.syscall !== undefined) e.syscall = d.syscall
    if (d.path !== undefined) e.path = d.path
    err = e
  }
  if (d.name !== undefined) Object.defineProperty(err, 'name', { value: d.name, configurable: true, writable: true })
  if (d.stack !== undefined) err.stack = d.stack
  return err
}
