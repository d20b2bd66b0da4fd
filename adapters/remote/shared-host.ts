// A host that serves one database to any number of sessions: the first attach
// opens it (with that client's location and options), later attaches share
// it, and it closes when the last session detaches, or at once by close(),
// which tells every session (their clients get a 'closed' push). A client that
// asks for another location, or other engine options, than the open database
// has is refused; so is errorIfExists once it is open.
import { levelError } from '../../lib/errors'
import type { DatabaseHost, ServedDatabase, SessionEvents } from './host'
import { ENGINE_METHODS } from '../failover/messages'

/** A database the host opened and will close. */
export interface OwnedDatabase extends ServedDatabase {
  close (): Promise<void>
}

/** Opens the database at `location` with the engine `options` and the client's createIfMissing and errorIfExists. */
export type OpenDatabase = (location: string, options: Record<string, unknown>) => Promise<OwnedDatabase>

/** Per-open flags, not properties of the open database: they may differ between clients. */
const OPEN_FLAGS = new Set(['createIfMissing', 'errorIfExists'])

interface Opened {
  location: string
  /** The engine options, canonical (see optionsKey). */
  key: string
  db: Promise<OwnedDatabase>
}

export class SharedDatabaseHost implements DatabaseHost {
  private opened: Opened | undefined
  private closing: Promise<void> = Promise.resolve()
  private readonly sessions = new Set<SessionEvents>()

  constructor (private readonly open: OpenDatabase, readonly callable: ReadonlySet<string> = ENGINE_METHODS) {}

  /** Sessions attached now. */
  get sessionCount (): number {
    return this.sessions.size
  }

  async attach (session: SessionEvents, location: string, options: Record<string, unknown>): Promise<ServedDatabase> {
    await this.closing
    const key = optionsKey(options)
    if (this.opened === undefined) {
      this.opened = { location, key, db: this.open(location, options) }
      const opened = this.opened
      opened.db.catch(() => {
        if (this.opened === opened) this.opened = undefined
      })
    } else if (this.opened.location !== location) {
      throw levelError('LEVEL_INVALID_OPTION', `This server serves the database at '${this.opened.location}', not '${location}'`)
    } else if (this.opened.key !== key) {
      throw levelError('LEVEL_INVALID_OPTION', `The database at '${location}' is open with other options: ${this.opened.key}, not ${key}`)
    } else if (options.errorIfExists === true) {
      throw levelError('LEVEL_INVALID_OPTION', `The database at '${location}' exists (errorIfExists)`)
    }
    const db = await this.opened.db
    this.sessions.add(session)
    return db
  }

  async detach (session: SessionEvents): Promise<void> {
    if (!this.sessions.delete(session)) return
    if (this.sessions.size === 0) await this.closeDatabase()
  }

  /** Closes the database now (if open); the attached sessions are told (`reason` when it failed) and detached. */
  async close (reason?: Error): Promise<void> {
    const sessions = [...this.sessions]
    this.sessions.clear()
    for (const s of sessions) s.closed(reason)
    await this.closeDatabase()
  }

  private async closeDatabase (): Promise<void> {
    const opened = this.opened
    this.opened = undefined
    if (opened === undefined) return
    const closing = opened.db.then(async (db) => await db.close(), () => {})
    this.closing = closing.catch(() => {})
    await closing
  }
}

/** The engine options, without the per-open flags, as canonical JSON (keys sorted). */
function optionsKey (options: Record<string, unknown>): string {
  const names = Object.keys(options).filter((n) => !OPEN_FLAGS.has(n) && options[n] !== undefined).sort()
  return JSON.stringify(names.map((n) => [n, options[n]]))
}
