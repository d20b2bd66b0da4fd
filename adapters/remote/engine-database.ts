// The database a multiProcess owner serves to the other processes: the
// remote protocol's ServedDatabase (host.ts) straight on the owner's Engine,
// beside (not through) the owner's own LsmLevel, so that the owner's own
// operations take no extra step and the clients' skip abstract-level's
// (their keys and values arrive encoded). Reads share the engine's turn
// budget with the owner's (a long run of them waits for the next turn), and
// iterators are LsmLevel's cursors.
import type { Engine } from '../../lib/engine'
import { encodeBatch, type BatchOp } from '../../lib/engine'
import type { Snapshot } from '../../lib/snapshots'
import { KIND_DELETE, KIND_VALUE } from '../../lib/keys'
import { levelError } from '../../lib/errors'
import { Cursor, ENTRIES, rangeFrom } from '../lsm-cursor'
import { toView } from '../bytes'
import { engineProperty } from '../engine-property'
import type { ServedDatabase, ServedIterator, ServedSnapshot } from './host'
import type { BatchOpMessage, ChangeBatchMessage, RangeMessage } from './protocol'

class EngineSnapshot implements ServedSnapshot {
  readonly inner: Snapshot

  constructor (private readonly engine: Engine) {
    this.inner = engine.snapshot()
  }

  async close (): Promise<void> {
    this.engine.releaseSnapshot(this.inner)
  }
}

class EngineIterator implements ServedIterator {
  constructor (private readonly cursor: Cursor) {}

  async nextv (size: number): Promise<unknown[]> {
    return await this.cursor.nextv(size)
  }

  seek (target: Uint8Array): void {
    this.cursor.seek(target)
  }

  async close (): Promise<void> {
    this.cursor.close()
  }
}

interface ReadOptions { snapshot?: ServedSnapshot }

function snapshotOf (options: ReadOptions): Snapshot | undefined {
  const s = options.snapshot
  if (s === undefined) return undefined
  if (!(s instanceof EngineSnapshot)) throw levelError('LEVEL_INVALID_OPTION', 'The snapshot belongs to another database')
  return s.inner
}

export class EngineDatabase implements ServedDatabase {
  constructor (private readonly engine: Engine) {}

  put (key: Uint8Array, value: Uint8Array, options: { sync: boolean }): Promise<void> {
    return this.engine.write(encodeBatch([{ kind: KIND_VALUE, key, value }]), options.sync)
  }

  del (key: Uint8Array, options: { sync: boolean }): Promise<void> {
    return this.engine.write(encodeBatch([{ kind: KIND_DELETE, key }]), options.sync)
  }

  batch (ops: BatchOpMessage[], options: { sync: boolean }): Promise<void> {
    const out = new Array<BatchOp>(ops.length)
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]
      if (op.type === 'put' && op.value !== undefined) out[i] = { kind: KIND_VALUE, key: op.key, value: op.value }
      else if (op.type === 'del') out[i] = { kind: KIND_DELETE, key: op.key }
      else throw levelError('LEVEL_INVALID_OPTION', `A batch operation's type must be 'put' (with a value) or 'del', not '${String(op.type)}'`)
    }
    return this.engine.write(encodeBatch(out), options.sync)
  }

  async get (key: Uint8Array, options: ReadOptions): Promise<Uint8Array | undefined> {
    return await this.engine.readAtPoint(snapshotOf(options), (at) => this.engine.get(toView(key), at))
  }

  async getMany (keys: Uint8Array[], options: ReadOptions): Promise<Array<Uint8Array | undefined>> {
    return await this.engine.readAtPoint(snapshotOf(options), (at) => keys.map((k) => this.engine.get(toView(k), at)))
  }

  async has (key: Uint8Array, options: ReadOptions): Promise<boolean> {
    return await this.engine.readAtPoint(snapshotOf(options), (at) => this.engine.get(toView(key), at) !== undefined)
  }

  async hasMany (keys: Uint8Array[], options: ReadOptions): Promise<boolean[]> {
    return await this.engine.readAtPoint(snapshotOf(options), (at) => keys.map((k) => this.engine.get(toView(k), at) !== undefined))
  }

  async clear (options: Record<string, unknown> & ReadOptions): Promise<void> {
    const range = options as RangeMessage
    const limit = typeof range.limit === 'number' && range.limit >= 0 ? range.limit : Infinity
    await this.engine.clear(rangeFrom(range), limit, snapshotOf(options))
  }

  iterator (options: Record<string, unknown> & ReadOptions): ServedIterator {
    const range = options as RangeMessage & { keys?: boolean, values?: boolean }
    const snapshot = snapshotOf(options)
    const cursor = new Cursor({
      ...rangeFrom(range),
      snapshot: snapshot === undefined ? undefined : { inner: snapshot },
      keys: range.keys !== false,
      values: range.values !== false,
      limit: typeof range.limit === 'number' ? range.limit : -1,
      keyEncoding: 'buffer',
      valueEncoding: 'buffer'
    }, this.engine, ENTRIES)
    return new EngineIterator(cursor)
  }

  snapshot (): ServedSnapshot {
    return new EngineSnapshot(this.engine)
  }

  get sequence (): number {
    return this.engine.lastSequence
  }

  changes (options: { since?: number }): AsyncGenerator<ChangeBatchMessage, void, undefined> {
    return this.engine.changes(options.since ?? this.engine.lastSequence)
  }

  // The methods of OWNER_METHODS (adapters/failover/messages.ts): plain data in and out.

  async compactRange (start?: Uint8Array, end?: Uint8Array): Promise<void> {
    await this.engine.compactRange(start, end)
  }

  async flush (): Promise<void> {
    await this.engine.flushMemTable()
  }

  getProperty (name: string): string {
    return engineProperty(this.engine, name)
  }

  async approximateSize (start: Uint8Array, end: Uint8Array): Promise<number> {
    return await this.engine.approximateSize(toView(start), toView(end))
  }

  stats (): unknown {
    return this.engine.stats()
  }

  levels (): unknown {
    return this.engine.levels()
  }

  /** `dir` is absolute (the client resolved it against its own working directory). */
  async checkpoint (dir: string): Promise<unknown> {
    return await this.engine.checkpoint(dir)
  }
}
