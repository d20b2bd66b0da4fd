// The server side of the remote database protocol (adapters/remote/protocol.ts):
// each channel that comes is served by a session of its own, and all sessions
// get their database from one host. A dedicated worker serves its one channel
// (the page that started it); a server with many clients (a shared worker's
// ports, a tab that owns the database) calls serve() once per channel.
import type { DatabaseHost } from './host'
import { Session, type ServerChannel } from './session'

/** Serves `channel` until it closes: a session whose database comes from `host`. */
export function serve (channel: ServerChannel, host: DatabaseHost): Session {
  return new Session(channel, host)
}

export type { Session, ServerChannel }
