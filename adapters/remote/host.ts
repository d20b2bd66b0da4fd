// What a remote database server serves: the database its sessions use, and the
// host that hands it to them. The server knows these shapes only; an
// abstract-level database with 'view' encodings (LsmLevel, OpfsLevel) is a
// ServedDatabase as it is, and SharedDatabaseHost (shared-host.ts) is the host
// that opens one database for many sessions.
import type { BatchOpMessage, ChangeBatchMessage } from './protocol'

/** An open snapshot of the served database. */
export interface ServedSnapshot {
  close (): Promise<void>
}

/** An open iterator of the served database. */
export interface ServedIterator {
  nextv (size: number): Promise<unknown[]>
  seek (target: Uint8Array): void
  close (): Promise<void>
}

interface ReadOptions { snapshot?: ServedSnapshot }

/** The operations a session forwards, keys and values as Uint8Arrays. */
export interface ServedDatabase {
  put (key: Uint8Array, value: Uint8Array, options: { sync: boolean }): Promise<void>
  del (key: Uint8Array, options: { sync: boolean }): Promise<void>
  batch (ops: BatchOpMessage[], options: { sync: boolean }): Promise<void>
  get (key: Uint8Array, options: ReadOptions): Promise<Uint8Array | undefined>
  getMany (keys: Uint8Array[], options: ReadOptions): Promise<Array<Uint8Array | undefined>>
  has (key: Uint8Array, options: ReadOptions): Promise<boolean>
  hasMany (keys: Uint8Array[], options: ReadOptions): Promise<boolean[]>
  clear (options: Record<string, unknown> & ReadOptions): Promise<void>
  iterator (options: Record<string, unknown> & ReadOptions): ServedIterator
  snapshot (): ServedSnapshot
  /** The sequence number of the last committed write. */
  readonly sequence: number
  /**
   * Asks for the sequence number of the last committed write, where
   * `sequence` may lag (a database that is itself a client of another
   * server); sessions use it when there is one.
   */
  currentSequence? (): Promise<number>
  /** The committed batches after `since` (default: the current sequence number), then live ones. */
  changes (options: { since?: number }): AsyncGenerator<ChangeBatchMessage, void, undefined>
}

/** What a host may tell a session. */
export interface SessionEvents {
  /** The database closed under the session (`reason` when it failed): the session is detached. */
  closed (reason?: Error): void
}

/**
 * Gives sessions their database. `attach` resolves to the database for
 * `location` (opened, with `options`, if the host does that); each session
 * that attached detaches once, by `detach`, before its channel goes.
 */
export interface DatabaseHost {
  attach (session: SessionEvents, location: string, options: Record<string, unknown>): Promise<ServedDatabase>
  detach (session: SessionEvents): Promise<void>
  /** The additional methods (taking and returning plain data) sessions may call on the database by name. */
  readonly callable: ReadonlySet<string>
}
