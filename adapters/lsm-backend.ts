// What LsmLevel (lsm-level.ts) runs its operations on, chosen at open: the
// engine in this process (engine-backend.ts), or, with multiProcess, whichever
// of the engine and the owner's line this process has now
// (multi-process/backend.ts). Keys and values come as abstract-level encoded
// them; results go back in the encodings it asked for.
import type { AbstractIterator } from 'abstract-level'
import type { Engine, ChangeBatch } from '../lib/engine'
import { levelError, type LevelError } from '../lib/errors'
import type { EncodingName, Format } from './bytes'
import type { IteratorOptions, RangeReadOptions } from './lsm-cursor'

/** Options of abstract-level's point reads (encodings normalised by abstract-level). */
export interface ReadOptions {
  snapshot?: RangeReadOptions['snapshot']
  valueEncoding: EncodingName
}

/** Options of abstract-level's _put, _del and _batch, with ours. */
export interface WriteOptions {
  sync?: boolean
}

/** An operation of abstract-level's _batch(): key and value already encoded. */
export interface LevelBatchOp {
  type: 'put' | 'del'
  key: Format
  value?: Format
}

type AnyIterator = AbstractIterator<unknown, unknown, unknown>

export interface Backend {
  /** 'owner' or 'client' (multiProcess), undefined while no owner is known or without multiProcess. */
  readonly role: 'owner' | 'client' | undefined
  put: (key: Format, value: Format, options: WriteOptions) => Promise<void>
  del: (key: Format, options: WriteOptions) => Promise<void>
  batch: (operations: LevelBatchOp[], options: WriteOptions) => Promise<void>
  getSync: (key: Format, options: ReadOptions) => Format | undefined
  /** A plain value when the read completes now, a promise when it waits for the next turn. */
  get: (key: Format, options: ReadOptions) => Format | undefined | Promise<Format | undefined>
  getMany: (keys: Format[], options: ReadOptions) => Promise<Array<Format | undefined>>
  has: (key: Format, options: ReadOptions) => Promise<boolean>
  hasMany: (keys: Format[], options: ReadOptions) => Promise<boolean[]>
  clear: (options: RangeReadOptions & { limit: number }) => Promise<void>
  iterator: (db: unknown, options: IteratorOptions) => AnyIterator
  /** keys() and values(); undefined where abstract-level's, over iterator(), serve. */
  keys: ((db: unknown, options: IteratorOptions) => unknown) | undefined
  values: ((db: unknown, options: IteratorOptions) => unknown) | undefined
  snapshot: (options: object) => object
  /** The engine in this process; throws LEVEL_NOT_SUPPORTED (naming `what` and what to use `instead`) on a client. */
  engine: (what: string, instead: string) => Engine
  /** One of the owner's additional methods (adapters/failover/messages.ts, OWNER_METHODS); `once`: not retried on the next owner. */
  call: (method: string, args: unknown[], once?: boolean) => Promise<unknown>
  currentSequence: () => Promise<number>
  changes: (since: number | undefined) => AsyncGenerator<ChangeBatch, void, undefined>
  close: () => Promise<void>
}

/** The error of a synchronous method on a client: it needs the engine in this process. */
export function notOnClient (what: string, instead: string): LevelError {
  return levelError('LEVEL_NOT_SUPPORTED', `${what} needs the engine in this process, and this process is a client of the database's owner (another process, option multiProcess): use ${instead}`)
}
