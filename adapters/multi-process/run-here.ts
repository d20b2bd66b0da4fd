// What LsmLevel needs to know of multiProcess opens without loading them
// (they use node: modules; LsmLevel also runs in browsers).
import { levelError, type LevelError } from '../../lib/errors'

/** A client operation's answer when this process has become the owner meanwhile: run it on the engine. */
export const RUN_HERE = Symbol('run here')

/** The error of a synchronous method on a client: it needs the engine in this process. */
export function notOnClient (what: string, instead: string): LevelError {
  return levelError('LEVEL_NOT_SUPPORTED', `${what} needs the engine in this process, and this process is a client of the database's owner (another process, option multiProcess): use ${instead}`)
}
