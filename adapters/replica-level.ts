// ReplicaLevel: a read-only database that follows a backup in an object store
// (README, "Backups and replicas"), on any machine that reaches the store. Its
// directory is a local copy: restored from the store at the first open
// (lib/backup/restore.ts), then kept up to date by a StoreFollower
// (lib/backup/follow.ts) that applies the shipped batches in order through the
// engine's own write path, so that readers see a prefix of the writer's
// writes that only moves forward. The Level API's writes fail with
// LEVEL_READ_ONLY; reads, iterators, snapshots and the change feed work.
//
// Rebuild: when the follower finds that the store's history no longer
// continues the replica's (the writer restored to an earlier point and
// shipping again, another database on the prefix), the replica restores the
// store's newest state into a sibling directory (<dir>.rebuild) while it
// still serves the old one, then closes (its iterators and snapshots are
// closed: abstract-level's close), puts the new directory in place of the
// old (renames), opens again and follows the new generation: it never shows
// a mix of the two histories. Its sequence number may go back then (the
// writer's history did); 'rebuild' is emitted with the restore's result, and
// stats().replica.rebuilds counts them.
import { LsmLevel, type LsmLevelOptions } from './lsm-level'
import { restore } from '../lib/backup/restore'
import { StoreFollower, type FollowStats } from '../lib/backup/follow'
import type { ObjectStore, RetryPolicy } from '../lib/backup/object-store'
import type { LsmStats } from '../lib/stats'
import { platform } from '../lib/platform'
import { CURRENT, join } from '../lib/filenames'
import type { FileSystem } from '../lib/fs/fs'
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
  private store: ObjectStore | undefined
  private replicaOptions: Pick<ReplicaOptions, 'prefix' | 'pollIntervalMs' | 'generationCheckMs' | 'retries'> = {}
  private dir = ''
  private rebuilding: Promise<void> | undefined
  private rebuilds = 0

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
    db.store = store
    db.replicaOptions = { prefix, pollIntervalMs, generationCheckMs, retries }
    db.dir = dir
    await db.open()
    await db.follow(generation)
    return db
  }

  /** Starts a follower of `generation` (undefined: the newest that continues the replica's history), caught up once. */
  private async follow (generation: string | undefined): Promise<void> {
    const engine = this.engine
    const { prefix, pollIntervalMs, generationCheckMs, retries } = this.replicaOptions
    const follower = new StoreFollower(this.store!, {
      sequence: () => engine.lastSequence,
      apply: async (batch) => await engine.write(batch, false),
      diverged: () => { this.rebuilding ??= this.rebuild().finally(() => { this.rebuilding = undefined }) }
    }, { prefix, intervalMs: pollIntervalMs, generationCheckMs, generation, retries })
    this.follower = follower
    await follower.poll()
    follower.start()
  }

  /** See the top of the file. A failure leaves the replica as it was (or closed, if it fails after the close), and is emitted as 'error'. */
  private async rebuild (): Promise<void> {
    const fs = platform().fileSystem
    const next = this.dir + '.rebuild'
    const old = this.dir + '.replaced'
    try {
      removeTree(fs, next)
      const result = await restore(this.store!, fs, next, { prefix: this.replicaOptions.prefix, retries: this.replicaOptions.retries })
      if (this.status !== 'open') { removeTree(fs, next); return }
      await this.close()
      removeTree(fs, old)
      fs.rename(this.dir, old)
      fs.rename(next, this.dir)
      await this.open()
      await this.follow(result.generation)
      removeTree(fs, old)
      this.rebuilds++
      this.emit('rebuild', result)
    } catch (err) {
      this.emit('error', err)
    }
  }

  /** Polls the store now (and waits for a rebuild it starts); resolves with the replica's stats after it. */
  async poll (): Promise<FollowStats> {
    if (this.follower === undefined && this.rebuilding === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'The replica is not open (open it with ReplicaLevel.open)')
    await this.follower?.poll()
    await this.rebuilding
    if (this.follower === undefined) throw levelError('LEVEL_DATABASE_NOT_OPEN', 'The replica closed')
    return { ...this.follower.stats(), rebuilds: this.rebuilds }
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
    return this.follower === undefined ? stats : { ...stats, replica: { ...this.follower.stats(), rebuilds: this.rebuilds } }
  }
}

/** Removes a database directory (flat: files only) if it exists. */
function removeTree (fs: FileSystem, dir: string): void {
  if (!fs.exists(dir)) return
  for (const name of fs.list(dir)) fs.remove(join(dir, name))
  fs.removeDirIfEmpty(dir)
}
