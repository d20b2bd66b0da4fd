// An object store in memory (lib/backup/object-store.ts), for tests that model
// the network to a store themselves (test/util/backup-history.ts SwitchStore
// with a latency): a put costs no disk, so a round's puts take the modelled
// latency and not the machine's fsyncs under load. test/object-store.test.ts
// runs the store contract on it.
import { storeError, type ObjectInfo, type ObjectStore } from '../../lib/backup/object-store'

export class MemoryStore implements ObjectStore {
  readonly description = 'memory'
  readonly conditionalPut = true
  private readonly objects = new Map<string, Buffer>()

  async put (key: string, body: Uint8Array, options: { ifAbsent?: boolean } = {}): Promise<void> {
    if (options.ifAbsent === true && this.objects.has(key)) throw storeError('LEVEL_OBJECT_EXISTS', `Object exists: ${key}`, key)
    this.objects.set(key, Buffer.from(body))
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> {
    const body = this.objects.get(key)
    if (body === undefined) throw storeError('LEVEL_NOT_FOUND', `No object ${key} in memory`, key)
    if (range === undefined) return Buffer.from(body)
    return Buffer.from(body.subarray(range.offset, range.offset + Math.max(0, range.length)))
  }

  async list (prefix: string, options: { startAfter?: string } = {}): Promise<ObjectInfo[]> {
    const after = options.startAfter
    return [...this.objects].filter(([k]) => k.startsWith(prefix) && (after === undefined || k > after))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, body]) => ({ key, size: body.length }))
  }

  async delete (keys: string[]): Promise<void> {
    for (const k of keys) this.objects.delete(k)
  }
}
