// The object-store interface that backups and restores (lib/backup/) go
// through: a flat namespace of immutable objects named by keys ('/'-separated by
// convention), as S3, GCS, Azure Blob and a directory all offer. The engine
// never writes an object twice under one key (lib/backup/layout.ts), so a
// store needs no read-after-overwrite consistency; it needs:
//
//   put      the whole object or nothing: a reader never sees part of one
//            (S3 PutObject; the directory store: a temporary file renamed)
//   get      the bytes written, whole or a byte range; LEVEL_NOT_FOUND if absent
//   list     every key under a prefix, in ascending byte order, with its size,
//            and an object put before the list started is in it
//            (S3 has had strong read-after-write and list consistency since
//            December 2020; a directory has it)
//   delete   idempotent: deleting an absent key is no error
//   putFile  optional: put the bytes of a file of this machine's file system,
//            read by the store itself (the directory store copies it in the
//            kernel), so that the caller never holds them; as put otherwise
//   conditional put (ifAbsent)  only where `conditionalPut` is true (S3's
//            If-None-Match: *, a directory's exclusive link): fails with
//            LEVEL_OBJECT_EXISTS if the key exists. Where it is false, a put
//            with ifAbsent is refused (LEVEL_NOT_SUPPORTED), never emulated
//            with a racy check.
//
// Errors: LEVEL_NOT_FOUND (get of an absent key), LEVEL_OBJECT_EXISTS (above);
// anything else thrown is a failure of the store or the way to it, which
// callers retry with backoff (withRetries below) and then report as
// LEVEL_IO_ERROR naming the store and the object.
import ModuleError = require('module-error')
import { ioError } from '../errors'

export interface ObjectInfo {
  key: string
  size: number
}

export interface ObjectStore {
  /** For messages: where the objects are (a directory, a bucket URL). */
  readonly description: string
  /** The store refuses a put with ifAbsent over an existing key (see above). */
  readonly conditionalPut: boolean
  put: (key: string, body: Uint8Array, options?: { ifAbsent?: boolean }) => Promise<void>
  /** Optional (see above): puts the bytes of the local file at `path`, which must not change meanwhile. */
  putFile?: (key: string, path: string) => Promise<void>
  /** The object's bytes, or `length` bytes from `offset` (fewer at its end). */
  get: (key: string, range?: { offset: number, length: number }) => Promise<Buffer>
  /** Every key that starts with `prefix`, ascending; with startAfter, only those after it (S3's StartAfter). */
  list: (prefix: string, options?: { startAfter?: string }) => Promise<ObjectInfo[]>
  delete: (keys: string[]) => Promise<void>
}

/** The codes of an object store's expected answers (not failures). */
export type StoreAnswerCode = 'LEVEL_NOT_FOUND' | 'LEVEL_OBJECT_EXISTS' | 'LEVEL_NOT_SUPPORTED'

export interface StoreError extends Error {
  code: StoreAnswerCode | 'LEVEL_IO_ERROR' | 'LEVEL_CORRUPTION'
  /** The object's key, where one is concerned. */
  object?: string
}

export function storeError (code: StoreAnswerCode, message: string, object?: string, cause?: unknown): StoreError {
  const err = new ModuleError(message, { code, cause: cause as Error | undefined }) as unknown as StoreError
  if (object !== undefined) err.object = object
  return err
}

export function isStoreAnswer (err: unknown, code?: StoreAnswerCode): boolean {
  const c = (err as StoreError | undefined)?.code
  return (c === 'LEVEL_NOT_FOUND' || c === 'LEVEL_OBJECT_EXISTS' || c === 'LEVEL_NOT_SUPPORTED') && (code === undefined || c === code)
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number
  /** The wait before the first retry (ms); doubled each time, with jitter, up to delayMsMax. */
  delayMs: number
  delayMsMax: number
}

export const DEFAULT_RETRIES: RetryPolicy = { attempts: 5, delayMs: 100, delayMsMax: 5000 }

/**
 * Runs `op` until it succeeds, answers (a StoreAnswerCode error: not retried),
 * or has failed `policy.attempts` times: then LEVEL_IO_ERROR naming the store
 * and `what`, the last failure as its cause. Never waits without end: a store
 * that hangs must be given a timeout by its implementation (the S3 store's
 * requestTimeoutMs).
 */
export async function withRetries<T> (store: ObjectStore, what: string, op: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRIES): Promise<T> {
  let delay = policy.delayMs
  for (let attempt = 1; ; attempt++) {
    try {
      return await op()
    } catch (err) {
      if (isStoreAnswer(err) || (err as StoreError).code === 'LEVEL_CORRUPTION') throw err
      if (attempt >= policy.attempts) {
        const e = ioError(`Object store ${store.description}: ${what} failed ${attempt} times: ${(err as Error).message}`, err) as StoreError
        e.object = what
        throw e
      }
      await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random() / 2)))
      delay = Math.min(policy.delayMsMax, delay * 2)
    }
  }
}

/** `prefix` and `rest` joined with one '/' ('' prefix: `rest` alone). */
export function objectKey (prefix: string, rest: string): string {
  if (prefix === '') return rest
  return prefix.endsWith('/') ? prefix + rest : prefix + '/' + rest
}
