// The IndexedDB layout of the fallback storage (idb-fs.ts): one IndexedDB
// database per database directory, named 'lsm-level:' + the directory's
// absolute path, whose schema version is FORMAT_VERSION:
//
//   object store 'files'   key: the file's name in the directory (string, '/'
//                          for subdirectories)
//                          value: { id: number, size: number, chunkBytes: number }
//   object store 'chunks'  key: [id, index] (numbers)
//                          value: Uint8Array, the file's bytes
//                          [index * chunkBytes, (index + 1) * chunkBytes):
//                          chunkBytes long but for the last chunk, which holds
//                          the rest (a file of size 0 has no chunk)
//
// chunkBytes: CHUNK_BYTES for every file written now (kept per file, so that
// a later version may choose otherwise without a new format). Why 256 KiB,
// measured in Chromium 150 (which stores a value over 64 KiB as a blob file,
// a smaller one in its database): 32 MiB written in transactions of 1 MiB
// took 2.8 s as 256 KiB chunks, 3.6 s as 64 KiB and 47 s as 32 KiB ones
// (durability 'strict', a busy machine), and loaded in 1.9-3.1 s, 7.9 s and
// 18.7 s; a sync write rewrites the log's last chunk (up to 256 KiB), which
// cost no more than 64 KiB chunks did.
//
// A file id is never reused while a record names it: a file written anew
// (openWrite) takes a new id, and the chunks of an id no longer named are
// deleted in the transaction that drops its name. Every transaction takes the
// directory from one state of the in-memory files to a later one (commit(),
// below), so the stored state is always one the engine had, a prefix of its
// operations: its crash rules then hold as after a killed process.
import { corruption, levelError } from '../../lib/errors'

/** The schema version of the IndexedDB database drawn above. Bump only with a migration path. */
export const FORMAT_VERSION = 1
/** Bytes per stored chunk (see above). */
export const CHUNK_BYTES = 256 * 1024

const FILES = 'files'
const CHUNKS = 'chunks'

// The part of the IndexedDB API used here (no DOM types in this build).
export interface IdbRequest<T = unknown> {
  result: T
  error: { name: string, message: string } | null
  onsuccess: ((event: unknown) => void) | null
  onerror: ((event: unknown) => void) | null
}
export interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: ((event: { oldVersion: number }) => void) | null
  onblocked: ((event: unknown) => void) | null
}
export interface IdbObjectStore {
  put (value: unknown, key: unknown): IdbRequest
  delete (key: unknown): IdbRequest
  getAll (query?: unknown): IdbRequest<unknown[]>
  getAllKeys (query?: unknown): IdbRequest<unknown[]>
}
export interface IdbTransaction {
  objectStore (name: string): IdbObjectStore
  error: { name: string, message: string } | null
  oncomplete: ((event: unknown) => void) | null
  onerror: ((event: unknown) => void) | null
  onabort: ((event: unknown) => void) | null
}
export interface IdbDatabase {
  readonly objectStoreNames: { contains (name: string): boolean }
  createObjectStore (name: string): unknown
  transaction (stores: string[], mode: 'readonly' | 'readwrite', options?: { durability?: 'strict' | 'relaxed' | 'default' }): IdbTransaction
  close (): void
  onversionchange: ((event: unknown) => void) | null
}
export interface IdbKeyRangeStatic {
  bound (lower: unknown, upper: unknown): unknown
}
export interface IdbFactory {
  open (name: string, version: number): IdbOpenRequest
  databases? (): Promise<Array<{ name?: string }>>
}

/** The browser's IndexedDB, or undefined where there is none. */
export function browserIndexedDb (): { factory: IdbFactory, keyRange: IdbKeyRangeStatic } | undefined {
  const g = globalThis as unknown as { indexedDB?: IdbFactory, IDBKeyRange?: IdbKeyRangeStatic }
  if (g.indexedDB === undefined || g.IDBKeyRange === undefined) return undefined
  return { factory: g.indexedDB, keyRange: g.IDBKeyRange }
}

export function databaseName (dir: string): string {
  return 'lsm-level:' + dir
}

/** Whether an IndexedDB database for `dir` exists; undefined where the browser cannot tell (no indexedDB.databases()). */
export async function storeExists (factory: IdbFactory, dir: string): Promise<boolean | undefined> {
  if (typeof factory.databases !== 'function') return undefined
  try {
    return (await factory.databases()).some((d) => d.name === databaseName(dir))
  } catch {
    return undefined
  }
}

/** What one file's record says. */
export interface FileRecord { id: number, size: number, chunkBytes: number }

/** A loaded file: its record and its chunks, in order. */
export interface StoredFile extends FileRecord { chunks: Uint8Array[] }

/**
 * What a transaction writes: the ids whose chunks go (all of them), then the
 * names' records (undefined: the name goes), then chunks.
 */
export interface Changes {
  dropIds: number[]
  names: Map<string, FileRecord | undefined>
  chunks: Array<{ id: number, index: number, bytes: Uint8Array }>
}

function requestDone<T> (request: IdbRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

/**
 * The IndexedDB error `err` as the engine's kind: a full quota keeps its
 * QuotaExceededError cause (ENOSPC: LEVEL_STORAGE_FULL), anything else is EIO.
 */
export function storageError (err: unknown, what: string): Error {
  const e = (err ?? {}) as { name?: string, message?: string }
  const full = e.name === 'QuotaExceededError'
  const out = new Error(`${what}: IndexedDB ${String(e.name ?? 'Error')}: ${String(e.message ?? '')}`) as Error & { code: string, cause?: unknown }
  out.code = full ? 'ENOSPC' : 'EIO'
  out.cause = err
  return out
}

/** Opens (creating if missing) the IndexedDB database of `dir`. A newer format is LEVEL_NOT_SUPPORTED. */
export async function openStore (factory: IdbFactory, dir: string): Promise<IdbDatabase> {
  const request = factory.open(databaseName(dir), FORMAT_VERSION)
  request.onupgradeneeded = () => {
    const db = request.result
    if (!db.objectStoreNames.contains(FILES)) db.createObjectStore(FILES)
    if (!db.objectStoreNames.contains(CHUNKS)) db.createObjectStore(CHUNKS)
  }
  let db: IdbDatabase
  try {
    db = await requestDone(request)
  } catch (err) {
    if ((err as { name?: string } | null)?.name === 'VersionError') {
      throw levelError('LEVEL_NOT_SUPPORTED', `The IndexedDB database of ${dir} was written by a newer lsm-level (format newer than ${FORMAT_VERSION})`, err)
    }
    throw levelError('LEVEL_IO_ERROR', `Cannot open the IndexedDB database of ${dir}`, storageError(err, 'open'))
  }
  // Another context deleting or upgrading the database: let it (this one then fails its next transaction).
  db.onversionchange = () => db.close()
  return db
}

function transactionDone (tx: IdbTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onabort = () => reject(tx.error ?? { name: 'AbortError', message: 'transaction aborted' })
  })
}

/** Every file of the store with its chunks, checked against its record (a missing or misfit chunk is LEVEL_CORRUPTION naming the file). */
export async function loadFiles (db: IdbDatabase, keyRange: IdbKeyRangeStatic, dir: string): Promise<Map<string, StoredFile>> {
  const tx = db.transaction([FILES, CHUNKS], 'readonly')
  const done = transactionDone(tx)
  const files = tx.objectStore(FILES)
  const chunkStore = tx.objectStore(CHUNKS)
  const names = files.getAllKeys()
  const records = files.getAll()
  const chunks: Array<IdbRequest<unknown[]> | undefined> = []
  // The chunk requests go in the records' success callback: a transaction
  // takes new requests only while it is active (not after an await).
  records.onsuccess = () => {
    for (const r of records.result as FileRecord[]) chunks.push(Number.isInteger(r?.id) ? chunkStore.getAll(keyRange.bound([r.id, 0], [r.id, Infinity])) : undefined)
  }
  try {
    await done
  } catch (err) {
    throw levelError('LEVEL_IO_ERROR', `Cannot read the IndexedDB database of ${dir}`, storageError(err, 'load'))
  }
  const out = new Map<string, StoredFile>()
  for (let i = 0; i < names.result.length; i++) {
    const name = names.result[i] as string
    const record = records.result[i] as FileRecord
    const stored = (chunks[i]?.result ?? []) as Uint8Array[]
    checkChunks(`${dir}/${name}`, record, stored)
    out.set(name, { ...record, chunks: stored })
  }
  return out
}

function checkChunks (path: string, record: FileRecord, chunks: Uint8Array[]): void {
  if (!Number.isInteger(record?.id) || !Number.isInteger(record?.size) || record.size < 0 || !Number.isInteger(record?.chunkBytes) || record.chunkBytes <= 0) {
    throw corruption(path, `bad IndexedDB file record ${JSON.stringify(record)}`)
  }
  const count = Math.ceil(record.size / record.chunkBytes)
  if (chunks.length !== count) throw corruption(path, `${chunks.length} chunks stored in IndexedDB for ${record.size} bytes (expected ${count})`)
  for (let i = 0; i < count; i++) {
    const want = i < count - 1 ? record.chunkBytes : record.size - i * record.chunkBytes
    if (!(chunks[i] instanceof Uint8Array) || chunks[i].length !== want) {
      throw corruption(path, `chunk ${i} stored in IndexedDB holds ${String(chunks[i]?.length)} bytes (expected ${want})`)
    }
  }
}

/**
 * Writes `changes` in one readwrite transaction with durability 'strict'
 * (where the browser supports it: the commit waits for the disk), resolving
 * once it committed. Rejects with storageError's error if it aborted. (With
 * 'relaxed' for transactions that no sync write waits for, writes were no
 * faster in Chromium: they do not wait for these transactions.)
 */
export async function commit (db: IdbDatabase, keyRange: IdbKeyRangeStatic, changes: Changes): Promise<void> {
  let tx: IdbTransaction
  try {
    tx = db.transaction([FILES, CHUNKS], 'readwrite', { durability: 'strict' })
  } catch (err) {
    throw storageError(err, 'cannot start an IndexedDB transaction')
  }
  const done = transactionDone(tx)
  const files = tx.objectStore(FILES)
  const chunks = tx.objectStore(CHUNKS)
  try {
    for (const id of changes.dropIds) chunks.delete(keyRange.bound([id, 0], [id, Infinity]))
    for (const [name, record] of changes.names) {
      if (record === undefined) files.delete(name)
      else files.put(record, name)
    }
    for (const c of changes.chunks) chunks.put(c.bytes, [c.id, c.index])
  } catch (err) {
    // A request refused at once (DataCloneError, a closed database): the transaction aborts.
    done.catch(() => {})
    try { (tx as unknown as { abort?: () => void }).abort?.() } catch {}
    throw storageError(err, 'IndexedDB refused a write')
  }
  try {
    await done
  } catch (err) {
    throw storageError(err, 'an IndexedDB transaction failed')
  }
}
