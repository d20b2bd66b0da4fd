// Helpers of the backup tests (test/backup*.test.ts): a store that can be
// switched off, a writer's history (each batch with its sequence number and
// when it was acknowledged) and the state it gives at any sequence number, a
// seeded random writer, and a database's contents.
import { LsmLevel } from '../../index'
import type { ObjectInfo, ObjectStore } from '../../lib/backup/object-store'
import type { Random } from './random'

/** A request that passed the switch and has not settled. */
interface Flight {
  /** cut() came before its answer: it must not land. */
  cut: boolean
  settled: Promise<unknown>
}

/** What the switch store saw of one put (the test's own clock): the key, when the put was called, when it landed (or was cut: landed false). */
export interface PutSeen { key: string, startMs: number, endMs: number, landed: boolean }

const unreachable = (): Error => Object.assign(new Error('store unreachable (test)'), { code: 'ECONNREFUSED' })

/**
 * A store in front of another: it can be switched off (every request fails), and it notes every key put and
 * when each put was called and landed. With delayMs, each request waits that long on its way to the store
 * (a network's latency), so that requests are in flight for a while.
 */
export class SwitchStore implements ObjectStore {
  readonly description = 'switch'
  off = false
  readonly putKeys: string[] = []
  /** The keys read (get), in order. */
  readonly getKeys: string[] = []
  readonly putsSeen: PutSeen[] = []
  private readonly inFlight = new Set<Flight>()
  private cutMs = 0
  constructor (readonly inner: ObjectStore, private readonly delayMs?: () => number) {}
  get conditionalPut (): boolean { return this.inner.conditionalPut }

  /** Turns the store off and waits for the requests already on their way (a renewal in flight lands after the cut otherwise). */
  async cutOff (): Promise<void> {
    this.off = true
    await Promise.allSettled([...this.inFlight].map(async (f) => await f.settled))
  }

  /**
   * Cuts the store off as the loss of the machine does: no request passes from now on, and every request
   * on its way and not answered yet fails and never lands (a put's object is removed once its request to
   * the inner store settles). Resolves when the inner store holds only what landed before the cut.
   */
  async cut (): Promise<void> {
    this.off = true
    this.cutMs = Date.now()
    for (const f of this.inFlight) f.cut = true
    await Promise.allSettled([...this.inFlight].map(async (f) => await f.settled))
  }

  private async pass<T> (op: () => Promise<T>, putKey?: string): Promise<T> {
    if (this.off) throw unreachable()
    const flight: Flight = { cut: false, settled: Promise.resolve() }
    const run = async (): Promise<T> => {
      const startMs = Date.now()
      const cutShort = (): Error => {
        if (putKey !== undefined) this.putsSeen.push({ key: putKey, startMs, endMs: this.cutMs, landed: false })
        return unreachable()
      }
      const delay = this.delayMs?.() ?? 0
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
      if (flight.cut) throw cutShort()
      let value: T
      try {
        value = await op()
      } catch (err) {
        if (flight.cut) throw cutShort()
        throw err
      }
      if (flight.cut) {
        // Answered after the cut: it never landed.
        if (putKey !== undefined) await this.inner.delete([putKey])
        throw cutShort()
      }
      if (putKey !== undefined) this.putsSeen.push({ key: putKey, startMs, endMs: Date.now(), landed: true })
      return value
    }
    const p = run()
    flight.settled = p.then(() => {}, () => {})
    this.inFlight.add(flight)
    try {
      return await p
    } finally {
      this.inFlight.delete(flight)
    }
  }

  async put (key: string, body: Uint8Array, options?: { ifAbsent?: boolean }): Promise<void> {
    await this.pass(async () => {
      this.putKeys.push(key)
      await this.inner.put(key, body, options)
    }, key)
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> {
    return await this.pass(async () => {
      this.getKeys.push(key)
      return await this.inner.get(key, range)
    })
  }

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

/**
 * The prefixes of `history`'s write order whose state is `state`: each a count of batches (0: none), ascending.
 * One pass: the keys where the state and the model at the prefix differ are counted as the batches apply.
 */
export function matchingPrefixes (history: History, state: Map<string, string>): number[] {
  const model = new Map<string, string>()
  let differ = state.size
  const out = differ === 0 ? [0] : []
  history.batches.forEach((b, i) => {
    for (const op of b.ops) {
      const before = state.get(op.key) === model.get(op.key)
      if (op.type === 'put') model.set(op.key, op.value)
      else model.delete(op.key)
      const after = state.get(op.key) === model.get(op.key)
      if (before && !after) differ++
      else if (!before && after) differ--
    }
    if (differ === 0) out.push(i + 1)
  })
  return out
}

/** The longest delay of a timer of `tickMs` the event loop gave while it ran (the test's own measure of load): so far (max), or until stop(). */
export function loopLag (tickMs = 10): { max: () => number, stop: () => number } {
  let max = 0
  let expected = Date.now() + tickMs
  let timer: NodeJS.Timeout
  const tick = (): void => {
    max = Math.max(max, Date.now() - expected)
    expected = Date.now() + tickMs
    timer = setTimeout(tick, tickMs)
  }
  timer = setTimeout(tick, tickMs)
  return { max: () => max, stop: () => { clearTimeout(timer); return max } }
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
