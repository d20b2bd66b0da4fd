// One tab's open of a database that every tab (and worker) of the origin may
// open at once: what BrowserLevel's dedicated worker serves to its page. The
// failover layer (adapters/failover/) over the tabs' election
// (tab-election.ts), with what the page may ask besides: who owns the
// database (tabs()) and the engine's additional methods, on the owner.
import type { OwnedDatabase } from '../remote/shared-host'
import { FailoverDatabase } from '../failover/failover-database'
import { ENGINE_METHODS } from '../failover/messages'
import type { OwnerInfo } from './owner'
import { OwnerTerm, TabElection, type ClientTerm, type TabOptions } from './tab-election'

export type { TabOptions }

/** What this tab is to the database now, for tabs(). */
export interface TabInfo {
  role: 'owner' | 'client' | 'none'
  clientId: string
  ownerId?: string
  /** The owner's sessions and handles, when this tab is the owner. */
  owner?: OwnerInfo
  /** Owner changes this open has seen. */
  ownerChanges: number
}

export class TabDatabase extends FailoverDatabase implements OwnedDatabase {
  private constructor (private readonly tab: TabElection) {
    super(tab)
  }

  /**
   * Opens the database at `location` for this tab: as its owner if the owner
   * lock is free, else as a client of the tab that owns it.
   */
  static async open (location: string, options: Record<string, unknown>, tab: TabOptions): Promise<TabDatabase> {
    const election = new TabElection(location, options, tab)
    try {
      await election.start()
    } catch (err) {
      await election.close().catch(() => {})
      throw err
    }
    return new TabDatabase(election)
  }

  /** Who owns the database, as this tab sees it. */
  tabs (): TabInfo {
    const term = this.tab.term
    const owner = term instanceof OwnerTerm ? term.owner : undefined
    return {
      role: term === undefined ? 'none' : owner !== undefined ? 'owner' : 'client',
      clientId: this.tab.clientId,
      ownerId: owner !== undefined ? owner.id : (term as ClientTerm | undefined)?.ownerId,
      owner: owner?.info(),
      ownerChanges: this.tab.ownerChanges
    }
  }

  async close (): Promise<void> {
    await this.tab.close()
  }
}

// The engine's additional methods, called by name by the page's session (ENGINE_METHODS): on the owner, retried like reads.
for (const method of ENGINE_METHODS) {
  Object.defineProperty(TabDatabase.prototype, method, {
    value: async function (this: TabDatabase, ...args: unknown[]): Promise<unknown> { return await this.call(method, args) },
    writable: true,
    configurable: true
  })
}
