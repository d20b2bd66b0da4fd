// A shipper's options (db.replicate) with their defaults and checks, and the
// stats it reports: the shipping itself is lib/backup/shipper.ts.
import { levelError } from '../errors'
import type { RetryPolicy } from './object-store'

export interface ReplicateOptions {
  /** Keys start with this ('' or a path like 'backups/db1'). Default ''. */
  prefix?: string
  /** The most often a round starts (ms): writes reach the store about this often. Default 1000. */
  intervalMs?: number
  /** Largest log segment object (bytes); a longer stretch of log is cut in several. Default 4 MiB. */
  maxSegmentBytes?: number
  /** Points (and the logs and tables only they need) older than this are deleted, the newest point always kept; other generations whose newest object is older are deleted whole. 0: no bound by age. Default 7 days. */
  retainMs?: number
  /** At most this many points of this generation are kept (the newest; with their logs and tables). Default: no bound by count. */
  retainPoints?: number
  /** At most this many generations are kept, this one included (the newest by their newest object); older ones are deleted whole. Default: no bound by count. */
  retainGenerations?: number
  /** The writers' lease (lib/backup/lease.ts): renewed every leaseMs / 3; a writer that stops renewing loses it after leaseMs. Default 30000. */
  leaseMs?: number
  /** How often the retention runs (ms). Default 10 minutes. */
  retentionIntervalMs?: number
  /**
   * A round puts a point (and the tables it needs) when the version changed and this many bytes of log
   * were put since the last point, or pointIntervalMs passed: the most log a restore replays after its
   * point. Between points only log segments are put, so tables that compactions replace in the meantime
   * are never put. The first and last rounds, and the round after a log let go unshipped, put one
   * anyway. 0: a point each round the version changed. Default 64 MiB.
   */
  pointLogBytes?: number
  /** See pointLogBytes (ms). 0: no bound by time. Default 60000. */
  pointIntervalMs?: number
  /** Bytes of retired logs not shipped yet kept readable for the shipper (their disk space is not freed meanwhile). Default 256 MiB. */
  maxHeldLogBytes?: number
  /** Retries of one request (lib/backup/object-store.ts). */
  retries?: RetryPolicy
  /** The longest wait between failed rounds (ms). Default 30000. */
  retryDelayMsMax?: number
}

export interface ReplicationStats {
  store: string
  prefix: string
  generation: string
  /** The newest sequence number in the store (restorable from it). */
  shippedSequence: number
  /** The database's sequence number minus shippedSequence. */
  lagSequences: number
  /** How long writes have been waiting to reach the store (ms): 0 when everything visible is shipped. */
  lagMs: number
  /** Bytes put: tables, log segments, points. */
  bytesUploaded: number
  tablesUploaded: number
  /** Tables found in the store under an older generation (same size and SHA-256) and named instead of put, and their bytes. */
  tablesReused: number
  bytesReused: number
  segmentsUploaded: number
  pointsUploaded: number
  /** Requests made to the store (puts, lists, deletes, retries included). */
  requests: number
  objectsDeleted: number
  /** Points of this generation, and other generations, deleted by the retention. */
  pointsDeleted: number
  generationsDeleted: number
  /** This shipper holds the writers' lease on the prefix (false once it is lost or released). */
  leaseHeld: boolean
  /** Retired logs let go before they were shipped (maxHeldLogBytes): holes in the restorable sequence numbers. */
  logsDropped: number
  rounds: number
  failedRounds: number
  /** How long the last successful round took, and the longest one (ms), tables included. */
  lastRoundMs: number
  maxRoundMs: number
  /** How long the last round took to put its log segments (from its capture), and the longest (ms): the upload time a write waits for after its round's capture. */
  lastLogsMs: number
  maxLogsMs: number
  /** The last round's failure, until a round succeeds. */
  lastError: string | undefined
}

/** The options with their defaults applied: every bound a number. */
export type ShipperSettings = Required<Omit<ReplicateOptions, 'retries'>> & { retries: RetryPolicy | undefined }

/** The options with their defaults; LEVEL_INVALID_OPTION for one out of range. */
export function resolveOptions (options: ReplicateOptions): ShipperSettings {
  const s: ShipperSettings = {
    prefix: options.prefix ?? '',
    intervalMs: options.intervalMs ?? 1000,
    maxSegmentBytes: options.maxSegmentBytes ?? 4 * 1024 * 1024,
    retainMs: options.retainMs ?? 7 * 24 * 3600 * 1000,
    retentionIntervalMs: options.retentionIntervalMs ?? 10 * 60 * 1000,
    retries: options.retries,
    retryDelayMsMax: options.retryDelayMsMax ?? 30000,
    maxHeldLogBytes: options.maxHeldLogBytes ?? 256 * 1024 * 1024,
    retainPoints: options.retainPoints ?? Infinity,
    retainGenerations: options.retainGenerations ?? Infinity,
    leaseMs: options.leaseMs ?? 30000,
    pointLogBytes: options.pointLogBytes ?? 64 * 1024 * 1024,
    pointIntervalMs: options.pointIntervalMs ?? 60000
  }
  checkOptions(s)
  return s
}

function checkOptions (s: ShipperSettings): void {
  const check = (name: string, v: number, min: number): void => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw levelError('LEVEL_INVALID_OPTION', `replicate(): ${name} must be a number >= ${min}, got ${String(v)}`)
  }
  check('intervalMs', s.intervalMs, 1)
  check('maxSegmentBytes', s.maxSegmentBytes, 64)
  check('retainMs', s.retainMs, 0)
  check('retentionIntervalMs', s.retentionIntervalMs, 1)
  check('retryDelayMsMax', s.retryDelayMsMax, 1)
  check('maxHeldLogBytes', s.maxHeldLogBytes, 0)
  check('leaseMs', s.leaseMs, 30)
  check('pointLogBytes', s.pointLogBytes, 0)
  check('pointIntervalMs', s.pointIntervalMs, 0)
  for (const [name, v] of [['retainPoints', s.retainPoints], ['retainGenerations', s.retainGenerations]] as const) {
    if (v !== Infinity && (!Number.isInteger(v) || v < 1)) throw levelError('LEVEL_INVALID_OPTION', `replicate(): ${name} must be an integer >= 1, got ${String(v)}`)
  }
}
