// The failover layer's constants and its errors, one text per idea, for every
// election (tabs, processes): what a caller of a database shared by many
// openers gets when its owner goes away or stops answering.
import { levelError, type LevelError } from '../../lib/errors'

/** The default of the option ownerTimeoutMs: how long an operation waits for an owner to answer. */
export const OWNER_TIMEOUT_MS = 5000

/**
 * How many times a read whose owner was lost (or an iterator that had
 * delivered nothing) is tried again on the next owner. Each try waits for an
 * owner up to ownerTimeoutMs; a read that lost 1 + READ_RETRIES owners fails
 * with LEVEL_OWNER_UNREACHABLE (ownersLost): a bound, so that a database whose
 * owners keep dying does not hold a read forever.
 */
export const READ_RETRIES = 4

/** The additional methods of the engine, taking and returning plain data, that a client may call on its owner by name. */
export const ENGINE_METHODS: ReadonlySet<string> = new Set(['compactRange', 'flush', 'getProperty', 'approximateSize', 'stats', 'levels'])

/** ENGINE_METHODS and checkpoint(), which only an owner with a file system its clients share (processes) serves. */
export const OWNER_METHODS: ReadonlySet<string> = new Set([...ENGINE_METHODS, 'checkpoint'])

/** A write was in flight when its owner was lost: it may or may not have committed; never retried. */
export function outcomeUnknown (location: string, unreachable: boolean, ownerTimeoutMs: number, cause?: unknown): LevelError {
  const why = unreachable ? `its owner stopped answering (ownerTimeoutMs ${ownerTimeoutMs})` : 'its owner went away'
  return levelError('LEVEL_OUTCOME_UNKNOWN', `A write to the database at '${location}' was in flight when ${why}: it may or may not have committed`, cause)
}

/** A handle (iterator, snapshot, change feed) used after the owner that held it changed. */
export function ownerChanged (location: string, cause?: unknown): LevelError {
  return levelError('LEVEL_OWNER_CHANGED', `The owner of the database at '${location}' changed: iterators, snapshots and change feeds opened before are gone`, cause)
}

/** No owner answered within ownerTimeoutMs (alive but hung, or none could be reached). */
export function ownerUnreachable (location: string, ownerTimeoutMs: number, cause?: unknown): LevelError {
  return levelError('LEVEL_OWNER_UNREACHABLE', `No owner of the database at '${location}' answered within ${ownerTimeoutMs} ms (alive but hung?): option ownerTimeoutMs`, cause)
}

/** A read lost its owner READ_RETRIES + 1 times: no owner stayed long enough to answer it. */
export function ownersLost (location: string, cause?: unknown): LevelError {
  return levelError('LEVEL_OWNER_UNREACHABLE', `A read of the database at '${location}' lost its owner ${READ_RETRIES + 1} times: no owner stayed to answer it`, cause)
}

/** The reason the requests of a lost client line fail with (the failover layer turns it into one of the above). */
export function ownerGone (location: string): LevelError {
  return levelError('LEVEL_DATABASE_NOT_OPEN', `The owner of the database at '${location}' went away`)
}
