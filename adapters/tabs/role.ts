// What a tab is to a database at a moment (its role), and what the handles made
// under one role (role-handles.ts) need of the tab's open: declared here so that
// the handles and the open name each other's types without importing each other.
import type { Owner } from './owner'
import type { RemoteConnection } from '../remote/connection'
import type { RemoteDatabase } from '../remote/remote-database'
import type { ServedDatabase } from '../remote/host'

/** The owner, serving the database from this tab's worker; or a client of one owner. */
export type Role =
  | { kind: 'owner', owner: Owner, db: ServedDatabase }
  | { kind: 'client', ownerId: string, connection: RemoteConnection, db: RemoteDatabase }

/** What a handle made under one role asks of the tab's open. */
export interface RoleSource {
  /** The role now, or undefined while none is settled (an election, a takeover). */
  readonly currentRole: Role | undefined
  /** The role once one is settled. */
  usable: () => Promise<Role>
  /** The error of an operation whose owner changed under it (LEVEL_OWNER_CHANGED). */
  ownerChanged: (cause?: unknown) => Error
  /** Runs `op` under `role`, failing it when that role ends first. */
  onRole: <T>(role: Role, op: () => Promise<T>) => Promise<T>
}
