// The server side of the remote database protocol (adapters/remote/protocol.ts):
// each channel that comes is served by a session of its own, and all sessions
// get their database from one host. A server calls serve() once per channel:
// BrowserLevel's worker for each database of its page, a tab that owns a
// database for each of the other tabs' workers.
import type { DatabaseHost } from './host'
import { Session, type ServerChannel } from './session'

/** Serves `channel` until it closes: a session whose database comes from `host`. */
export function serve (channel: ServerChannel, host: DatabaseHost): Session {
  return new Session(channel, host)
}

export type { Session, ServerChannel }
