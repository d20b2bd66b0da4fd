// navigator.locks.request() with ifAvailable, as far as the browser's tab lock
// (hosts/browser/tab-lock.ts) uses it: a name held until its callback settles;
// a request for a held name gets a null lock at once.
export class FakeLocks {
  readonly held = new Set<string>()

  async request (name: string, _options: object, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown> {
    if (this.held.has(name)) return await callback(null)
    this.held.add(name)
    try {
      return await callback({ name })
    } finally {
      this.held.delete(name)
    }
  }
}
