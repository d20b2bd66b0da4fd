// The tables a shipper (lib/backup/shipper.ts) puts for its points: each
// table not put yet in this generation, read, CRC-32'd and SHA-256'd
// (TABLE_UPLOADS at once; on a job thread where the engine has one), then put,
// or, if an older generation holds an object of the same size and SHA-256
// (listed at the start: a restart, a restored copy), named instead: a refs
// marker put (the retention keeps what it names) and the point names that
// object. Each table's bytes reach the store once per prefix.
import type { Version } from '../manifest/version'
import { join, tableName } from '../filenames'
import { objectKey, type ObjectStore } from './object-store'
import type { FileSystem } from '../fs/fs'
import { readTableContent, type TableContent } from './table-content'
import { parseTableKey, refKey, tableKey, type PointTable } from './layout'

/** Tables put at once (each one in memory meanwhile). */
export const TABLE_UPLOADS = 4

/** A table object of an older generation that a table of this one may be: by size and SHA-256. */
const contentId = (size: number, sha: string): string => `${size}-${sha}`

/** What the tables need of the engine (see ShipperSource). */
export interface TableSource {
  fs: FileSystem
  dir: string
  readTable?: (path: string, size: number, keepBytes: boolean) => Promise<TableContent>
  hostFiles?: boolean
}

export interface TableCounters {
  bytesUploaded: number
  tablesUploaded: number
  tablesReused: number
  bytesReused: number
}

export class ShippedTables {
  /** The tables put or named in this generation, by number. */
  readonly byNumber = new Map<number, PointTable>()
  /** Table objects of older generations, by content (contentId), relative to the prefix: listed at start. */
  readonly reusable = new Map<string, string>()
  /** Refs markers put (relative keys of the tables named), for the retention. */
  readonly refs = new Set<string>()

  constructor (
    private readonly store: ObjectStore,
    private readonly source: TableSource,
    private readonly generation: string,
    private readonly prefix: string,
    private readonly counters: TableCounters,
    private readonly request: <T>(what: string, op: () => Promise<T>) => Promise<T>
  ) {}

  private key (rest: string): string {
    return objectKey(this.prefix, rest)
  }

  /** The layout-2 table objects under the prefix, by content. */
  async listReusable (): Promise<void> {
    const root = this.prefix === '' ? '' : objectKey(this.prefix, '')
    const all = await this.request(root || '(root)', () => this.store.list(root))
    for (const { key, size } of all) {
      const rel = key.slice(root.length)
      const t = parseTableKey(rel)
      if (t !== undefined && t.gen !== this.generation) this.reusable.set(contentId(size, t.sha), rel)
    }
  }

  /** Puts the tables of `version` not put yet (TABLE_UPLOADS at once), or names the older generations' objects holding the same bytes. */
  async put (version: Version): Promise<void> {
    const { fs, dir } = this.source
    const todo = version.levels.flat().filter((meta) => !this.byNumber.has(meta.number))
    let next = 0
    let failed: { err: unknown } | undefined
    const worker = async (): Promise<void> => {
      while (failed === undefined && next < todo.length) {
        const meta = todo[next++]
        try {
          const path = join(dir, tableName(meta.number))
          // A store that copies the file itself gets its path: the bytes are read here (or on the job thread) only to hash them.
          const byPath = this.source.hostFiles === true && this.store.putFile !== undefined
          const { bytes: body, crc: c, sha } = this.source.readTable !== undefined
            ? await this.source.readTable(path, meta.size, !byPath)
            : await readTableContent(fs, path, meta.size, !byPath)
          const found = sha === undefined ? undefined : this.reusable.get(contentId(meta.size, sha))
          if (found !== undefined) {
            // The same bytes are in the store already (an older generation's): a marker, so that the retention keeps them.
            if (!this.refs.has(found)) {
              const marker = this.key(refKey(this.generation, found))
              await this.request(marker, () => this.store.put(marker, Buffer.alloc(0)))
              this.refs.add(found)
            }
            this.byNumber.set(meta.number, { number: meta.number, size: meta.size, crc: c, key: found })
            this.counters.tablesReused++
            this.counters.bytesReused += meta.size
            continue
          }
          const rel = tableKey(this.generation, meta.number, sha)
          const key = this.key(rel)
          await this.request(key, async () => body === undefined ? await this.store.putFile!(key, path) : await this.store.put(key, body))
          this.byNumber.set(meta.number, { number: meta.number, size: meta.size, crc: c, key: rel })
          this.counters.tablesUploaded++
          this.counters.bytesUploaded += meta.size
        } catch (err) {
          failed ??= { err }
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(TABLE_UPLOADS, todo.length) }, worker))
    if (failed !== undefined) throw failed.err
  }
}
