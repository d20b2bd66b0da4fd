// Snapshots and iterators of a tab's open (tab-database.ts), each made under
// one role (owner or client of one owner) and usable while that role lasts:
// after an owner change they fail with LEVEL_OWNER_CHANGED, but for an
// iterator that has delivered nothing yet, which is made again on the next owner.
import type { ServedIterator, ServedSnapshot } from '../remote/host'
import type { Role, RoleSource } from './role'

/** Retries of a read (or an iterator that delivered nothing) whose owner was lost. */
export const READ_RETRIES = 4

/** A handle (snapshot or iterator) made under one role: usable while that role lasts. */
export class Pinned<T> {
  private made: { role: Role, inner: T } | undefined
  private readonly waiting: Promise<{ role: Role, inner: T }> | undefined

  constructor (tab: RoleSource, make: (role: Role) => T) {
    const role = tab.currentRole
    if (role !== undefined) this.made = { role, inner: make(role) }
    else {
      this.waiting = tab.usable().then((r) => {
        this.made = { role: r, inner: make(r) }
        return this.made
      })
      this.waiting.catch(() => {})
    }
  }

  get now (): { role: Role, inner: T } | undefined {
    return this.made
  }

  async get (): Promise<{ role: Role, inner: T }> {
    return this.made ?? await this.waiting!
  }
}

export class TabSnapshot implements ServedSnapshot {
  constructor (readonly pinned: Pinned<ServedSnapshot>) {}

  async close (): Promise<void> {
    const made = await this.pinned.get().catch(() => undefined)
    await made?.inner.close().catch(() => {})
  }
}

/**
 * An iterator on the role that made it. One that has delivered nothing yet
 * (and reads at no explicit snapshot) is made again on the next owner if its
 * owner is lost: as if it had been made a moment later. After its first
 * entries, a lost owner is LEVEL_OWNER_CHANGED.
 */
export class TabIterator implements ServedIterator {
  private pinned: Pinned<ServedIterator>
  private delivered = false
  private lastSeek: Uint8Array | undefined

  constructor (private readonly tab: RoleSource, private readonly options: Record<string, unknown>, private readonly snapshot: TabSnapshot | undefined) {
    this.pinned = this.make()
  }

  private make (): Pinned<ServedIterator> {
    return new Pinned(this.tab, (role) => {
      if (this.snapshot !== undefined && this.snapshot.pinned.now?.role !== role) throw this.tab.ownerChanged()
      const it = role.db.iterator({ ...this.options, snapshot: this.snapshot?.pinned.now?.inner })
      if (this.lastSeek !== undefined) it.seek(this.lastSeek)
      return it
    })
  }

  async nextv (size: number): Promise<unknown[]> {
    for (let attempt = 0; ; attempt++) {
      // Started in this turn when the iterator is made (no await first): the
      // session starts a client's requests in order, and a seek sent after
      // this nextv must not reach the iterator before it.
      const { role, inner } = this.pinned.now ?? await this.pinned.get()
      try {
        const out = await this.tab.onRole(role, async () => await inner.nextv(size))
        this.delivered = true
        return out
      } catch (err) {
        const code = (err as { code?: string }).code
        if (code !== 'LEVEL_OWNER_CHANGED' || this.delivered || this.snapshot !== undefined || attempt >= READ_RETRIES) throw err
        this.pinned = this.make()
      }
    }
  }

  seek (target: Uint8Array): void {
    // A seek starts the iterator afresh: what it delivered before does not pin it.
    this.delivered = false
    this.lastSeek = target
    const made = this.pinned.now
    if (made !== undefined) made.inner.seek(target)
    else this.pinned.get().then(({ inner }) => inner.seek(target), () => {})
  }

  async close (): Promise<void> {
    const made = await this.pinned.get().catch(() => undefined)
    await made?.inner.close().catch(() => {})
  }
}
