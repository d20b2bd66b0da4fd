// ReplicaLevel: a read-only database that follows a backup in an object store
// (README, "Backups and replicas"), on any machine that reaches the store. Its
// directory is a local copy: restored from the store at the first open
// (lib/backup/restore.ts), then kept up to date by a StoreFollower
// (lib/backup/follow.ts) that applies the shipped batches in order through the
// engine's own write path, so that readers see a prefix of the writer's
// writes that only moves forward. The Level API's writes fail with
// LEVEL_READ_ONLY; reads, iterators, snapshots and the change feed work.
import { LsmLevel, type LsmLevelOptions } from './lsm-level'
import { restore } from '../lib/backup/restore'
import { StoreFollower, type FollowStats } from '../lib/backup/follow'
import type { ObjectStore, RetryPolicy } from '../lib/backup/object-store'
import type { LsmStats } from '../lib/stats'
import { platform } from '../lib/platform'
import { CURRENT, join } from '../lib/filenames'
import { levelError } from '../lib/errors'

export interface ReplicaOptions<K = string, V = string> extends LsmLevelOptions<K, V> {
  /** The backup's prefix in the store. Default ''. */
  prefix?: string
  /** How often the store is polled (ms). Default 1000. */
  pollIntervalMs?: number
  /** How often a newer generation (the writer restarted) is looked for (ms). Default 10 x pollIntervalMs. */
  generationCheckMs?: number
  retries?: RetryPolicy
}

const readOnly = (): Promise<never> => Promise.reject(levelError('LEVEL_READ_ONLY', 'Cannot write: a ReplicaLevel follows an object store'))

export class ReplicaLevel<K = string, V = string> extends LsmLevel<K, V> {
  private follower: StoreFollower | undefined

  /**
   * Opens a replica of the backup under options.prefix in `store`, in the
   * local directory `location`: restored first if it holds no database, then
   * caught up with the store before this resolves, then polled every
   * pollIntervalMs until close().
   */
  static async open<K = string, V = string> (store: ObjectStore, location: string, options: ReplicaOptions<K, V> = {}): Promise<ReplicaLevel<K, V>> {
    const { prefix, pollIntervalMs, generationCheckMs, retries, ...levelOptions } = options
    const fs = platform().fileSystem
    const dir = platform().resolvePath(location)
    let generation: string | undefined
    if (!fs.exists(join(dir, CURRENT))) generation = (await restore(store, fs, dir, { prefix, retries })).generation
    const db = new ReplicaLevel<K, V>(location, levelOptions as LsmLevelOptions<K, V>)
    await db.open()
    const engine = db.engine
    const follower = new StoreFollower(store, {
      sequence: () => engine.lastSequence,
      apply: async (batch) => await engine.write(batch, false)
    }, { prefix, intervalMs: pollIntervalMs, generationCheckMs, generation, retries })
    db.follower = follower
    await follower.poll()
    follower.start()
    return db
  }

  /** Polls the store now; resolves with the replica's stats after it. */
  async poll (): Promise<FollowStats> {
    if (this.follower === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'The replica is not open (open it with ReplicaLevel.open)')
    await this.follower.poll()
    return this.follower.stats()
  }

  override _put (): Promise<void> { return readOnly() }
  override _del (): Promise<void> { return readOnly() }
  override _batch (): Promise<void> { return readOnly() }
  override async _clear (): Promise<void> { return await readOnly() }

  override async _close (): Promise<void> {
    await this.follower?.stop()
    this.follower = undefined
    await super._close()
  }

  override stats (): LsmStats {
    const stats = super.stats()
    return this.follower === undefined ? stats : { ...stats, replica: this.follower.stats() }
  }
}
