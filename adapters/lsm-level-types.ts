// The typings of LsmLevel (lsm-level.ts) that abstract-level's do not have:
// its options, and the `sync` and `fillCache` options of its methods and its
// sublevels'. Types only.
import type { AbstractIterator, AbstractIteratorOptions, AbstractDatabaseOptions, AbstractPutOptions, AbstractDelOptions, AbstractBatchOptions, AbstractBatchOperation, AbstractChainedBatch, AbstractChainedBatchWriteOptions, AbstractSublevel, AbstractSublevelOptions } from 'abstract-level'
import type { EngineOptions } from '../lib/options'
import type { Format } from './bytes'

/** Options of the constructor and of open(): the Level options plus the engine's (lib/options.ts). */
export interface LsmLevelOptions<K = string, V = string> extends Partial<EngineOptions> {
  keyEncoding?: AbstractDatabaseOptions<K, V>['keyEncoding']
  valueEncoding?: AbstractDatabaseOptions<K, V>['valueEncoding']
  passive?: boolean
  /**
   * Let other processes open the database too (Node): the first open owns it
   * and serves the others over a socket; if it goes away, one of them takes
   * over (README, "Many processes"). Default false.
   */
  multiProcess?: boolean
  /** multiProcess: how long a client waits for an owner that does not answer before LEVEL_OWNER_UNREACHABLE (ms, default 5000). */
  ownerTimeoutMs?: number
  [other: string]: unknown
}

/** Options of put(): abstract-level's plus `sync` (resolve only after an fdatasync covering the write). */
export interface LsmPutOptions<K, V> extends AbstractPutOptions<K, V> {
  sync?: boolean | undefined
}

/** Options of del(): abstract-level's plus `sync`. */
export interface LsmDelOptions<K> extends AbstractDelOptions<K> {
  sync?: boolean | undefined
}

/** Options of batch(): abstract-level's plus `sync`. */
export interface LsmBatchOptions<K, V> extends AbstractBatchOptions<K, V> {
  sync?: boolean | undefined
}

/**
 * Options of iterator(): abstract-level's plus `fillCache`: whether the table
 * blocks the iterator reads go into the block cache (default: not those of a
 * long run of consecutive blocks; README).
 */
export interface LsmIteratorOptions<K, V> extends AbstractIteratorOptions<K, V> {
  fillCache?: boolean | undefined
}

/**
 * The write methods of an LsmSublevel with the `sync` option (abstract-level
 * forwards a sublevel's options to the root database), and its own sublevels.
 * Types only.
 */
export interface LsmSublevelMethods<K, V> {
  put (key: K, value: V): Promise<void>
  put<PK = K, PV = V> (key: PK, value: PV, options: LsmPutOptions<PK, PV>): Promise<void>
  del (key: K): Promise<void>
  del<DK = K> (key: DK, options: LsmDelOptions<DK>): Promise<void>
  batch (operations: Array<AbstractBatchOperation<this, K, V>>): Promise<void>
  batch<BK = K, BV = V> (operations: Array<AbstractBatchOperation<this, BK, BV>>, options: LsmBatchOptions<BK, BV>): Promise<void>
  batch (): LsmChainedBatch<this, K, V>
  iterator (): AbstractIterator<this, K, V>
  iterator<IK = K, IV = V> (options: LsmIteratorOptions<IK, IV>): AbstractIterator<this, IK, IV>
  sublevel (name: string | string[]): LsmSublevel<this, string, string>
  sublevel<SK = string, SV = string> (name: string | string[], options: AbstractSublevelOptions<SK, SV>): LsmSublevel<this, SK, SV>
}

/**
 * A sublevel of an LsmLevel (or of another such sublevel): abstract-level's
 * AbstractSublevel whose put/del/batch/write take `sync`. An intersection
 * rather than an interface extending AbstractSublevel: the latter makes the
 * compiler compare the two structurally, nesting the parent type one level
 * deeper at each sublevel() until it gives up (TS2589).
 */
export type LsmSublevel<TDatabase, K = string, V = string> = LsmSublevelMethods<K, V> & AbstractSublevel<TDatabase, Format, K, V>

/** Options of a chained batch's write(): abstract-level's plus `sync`. */
export interface LsmChainedBatchWriteOptions extends AbstractChainedBatchWriteOptions {
  sync?: boolean | undefined
}

/** A chained batch whose write() takes `sync`. */
export interface LsmChainedBatch<TDatabase, K, V> extends AbstractChainedBatch<TDatabase, K, V> {
  write (): Promise<void>
  write (options: LsmChainedBatchWriteOptions): Promise<void>
}
