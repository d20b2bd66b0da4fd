// The seam between the failover layer (failover-database.ts) and the ways
// openers of one database elect its owner: Web Locks and a relay or
// BroadcastChannels between tabs (adapters/tabs/), the LOCK file and a Unix
// socket between processes (adapters/multi-process/). An election says who
// owns the database now (a term), tells the failover layer when that changes
// (the term ends, the next one comes), and reaches the owner (the term's db).
// It knows nothing of what operations in flight get when a term ends: that is
// the failover layer's contract, one for every election.
import type { ServedDatabase } from '../remote/host'

/**
 * One owner's time, as one open sees it: this open is the owner (local: its
 * db is the engine's, and the term lasts until the open closes), or a client
 * whose db is the owner's, over a line that may end.
 */
export interface Term {
  /** The owner's database: the engine here, or the remote one over the line. */
  readonly db: ServedDatabase
  /** This open runs the engine: nothing it does can be lost to a failover. */
  readonly local: boolean
  /** The line ended (the owner went away, closed, or stopped answering). */
  readonly ended: boolean
  /** It ended because the owner stopped answering within ownerTimeoutMs. */
  readonly unreachable: boolean
  /** Runs a request on the line, watched: an owner silent for ownerTimeoutMs ends the term (unreachable). */
  track: <T>(request: () => Promise<T>) => Promise<T>
  /** Ends the term now: requests in flight fail with `reason`; the election looks for the next owner. */
  end: (reason: Error) => void
}

export interface Election {
  /** The database's location, as the open named it (for error texts). */
  readonly location: string
  readonly ownerTimeoutMs: number
  /** The term now; undefined while no owner is known (opening, failing over). */
  readonly term: Term | undefined
  /** The term once there is one: waits up to ownerTimeoutMs, then fails with LEVEL_OWNER_UNREACHABLE. */
  settled: () => Promise<Term>
}
