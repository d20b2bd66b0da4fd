// Helpers of the backup tests (test/backup*.test.ts): a store that can be
// switched off, a writer's history (each batch with its sequence number and
// when it was acknowledged) and the state it gives at any sequence number, a
// seeded random writer, and a database's contents.
import { LsmLevel } from '../../index'
import type { ObjectInfo, ObjectStore } from '../../lib/backup/object-store'
import type { Random } from './random'

/** A store in front of another: it can be switched off (every request fails), and it notes every key put. */
export class SwitchStore implements ObjectStore {
  readonly description = 'switch'
  off = false
  readonly putKeys: string[] = []
  /** The requests that passed the switch and have not settled. */
  private readonly inFlight = new Set<Promise<unknown>>()
  constructor (readonly inner: ObjectStore) {}
  get conditionalPut (): boolean { return this.inner.conditionalPut }

  /** Turns the store off and waits for the requests already on their way (a renewal in flight lands after the cut otherwise). */
  async cutOff (): Promise<void> {
    this.off = true
    await Promise.allSettled([...this.inFlight])
  }

  private async pass<T> (op: () => Promise<T>): Promise<T> {
    if (this.off) throw Object.assign(new Error('store unreachable (test)'), { code: 'ECONNREFUSED' })
    const p = op()
    this.inFlight.add(p)
    try {
      return await p
    } finally {
      this.inFlight.delete(p)
    }
  }

  async put (key: string, body: Uint8Array, options?: { ifAbsent?: boolean }): Promise<void> {
    await this.pass(async () => {
      this.putKeys.push(key)
      await this.inner.put(key, body, options)
    })
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> { return await this.pass(async () => await this.inner.get(key, range)) }
  async list (prefix: string, options?: { startAfter?: string }): Promise<ObjectInfo[]> { return await this.pass(async () => await this.inner.list(prefix, options)) }
  async delete (keys: string[]): Promise<void> { await this.pass(async () => { await this.inner.delete(keys) }) }
}

export type Op = { type: 'put', key: string, value: string } | { type: 'del', key: string }

/** The writes of one writer, each with its sequence numbers and when it was acknowledged. */
export class History {
  readonly batches: Array<{ last: number, ops: Op[], ackMs: number }> = []

  stateAt (seq: number): Map<string, string> {
    const m = new Map<string, string>()
    for (const b of this.batches) {
      if (b.last > seq) break
      for (const op of b.ops) {
        if (op.type === 'put') m.set(op.key, op.value)
        else m.delete(op.key)
      }
    }
    return m
  }

  /** The newest batch acknowledged at or before `ms`. */
  lastAckedBy (ms: number): number {
    let last = 0
    for (const b of this.batches) if (b.ackMs <= ms) last = b.last
    return last
  }

  ackOf (seq: number): number | undefined {
    return this.batches.find((b) => b.last === seq)?.ackMs
  }
}

export const OPTIONS = { writeBufferSize: 32 * 1024, targetFileSize: 16 * 1024, level0CompactionTrigger: 2 }

export async function writeFor (db: LsmLevel<string, string>, rnd: Random, history: History, until: () => boolean): Promise<void> {
  while (!until()) {
    const key = (): string => 'k' + String(rnd.int(2000)).padStart(5, '0')
    const r = rnd.int(100)
    const ops: Op[] = r < 75
      ? [{ type: 'put', key: key(), value: rnd.bytes(10 + rnd.int(200)).toString('hex') }]
      : r < 90 ? [{ type: 'del', key: key() }] : [{ type: 'put', key: key(), value: 'b' + rnd.int(1e9) }, { type: 'del', key: key() }, { type: 'put', key: key(), value: 'c' }]
    if (ops.length === 1) {
      const op = ops[0]
      if (op.type === 'put') await db.put(op.key, op.value)
      else await db.del(op.key)
    } else {
      await db.batch(ops)
    }
    history.batches.push({ last: db.sequence, ops, ackMs: Date.now() })
  }
}

export async function contents (dir: string): Promise<Map<string, string>> {
  const db = new LsmLevel<string, string>(dir)
  await db.open()
  try {
    return new Map(await db.iterator().all())
  } finally {
    await db.close()
  }
}

export function sameMap (a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false
  for (const [k, v] of a) if (b.get(k) !== v) return false
  return true
}

export const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))
