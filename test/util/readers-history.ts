// The writer's history in the readers test: operation i is a function of
// (seed, i) alone (puts, deletes, batches and range clears over a small key
// space), so a reader process can rebuild the state after any prefix. Each
// operation is followed by a put of MARKER = i (inside the batch, for a batch):
// a state a reader sees names the prefix it claims to be.
import { Random } from './random'

export const MARKER = '~op'

export type HistoryOp =
  | { type: 'put', key: string, value: string }
  | { type: 'del', key: string }
  | { type: 'batch', ops: Array<{ type: 'put' | 'del', key: string, value?: string }> }
  | { type: 'clear', gte: string, lt: string }

const KEYS = 300

const keyName = (n: number): string => 'k' + String(n).padStart(4, '0')

export function historyOp (seed: number, i: number): HistoryOp {
  const rnd = new Random((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0)
  const key = (): string => keyName(rnd.int(KEYS))
  const value = (): string => `v${i}-` + 'x'.repeat(rnd.int(200))
  const r = rnd.int(100)
  if (r < 55) return { type: 'put', key: key(), value: value() }
  if (r < 75) return { type: 'del', key: key() }
  if (r < 98) {
    const ops: Array<{ type: 'put' | 'del', key: string, value?: string }> = []
    const n = 2 + rnd.int(12)
    for (let j = 0; j < n; j++) ops.push(rnd.int(4) === 0 ? { type: 'del', key: key() } : { type: 'put', key: key(), value: value() })
    return { type: 'batch', ops }
  }
  const from = rnd.int(KEYS)
  return { type: 'clear', gte: keyName(from), lt: keyName(from + 1 + rnd.int(40)) }
}

/** The state after ops 0..applied, built forward. */
export class HistoryModel {
  readonly state = new Map<string, string>()
  applied = -1

  constructor (private readonly seed: number) {}

  /** Applies the ops up to and including `i`. */
  advanceTo (i: number): void {
    for (; this.applied < i; this.applied++) apply(this.state, historyOp(this.seed, this.applied + 1))
  }
}

function apply (state: Map<string, string>, op: HistoryOp): void {
  if (op.type === 'put') state.set(op.key, op.value)
  else if (op.type === 'del') state.delete(op.key)
  else if (op.type === 'clear') {
    for (const k of [...state.keys()]) if (k >= op.gte && k < op.lt) state.delete(k)
  } else {
    for (const o of op.ops) { if (o.type === 'put') state.set(o.key, o.value!); else state.delete(o.key) }
  }
}

/** The state after op `i` + 1 applied to `state` (a copy). */
export function stateAfter (seed: number, state: Map<string, string>, i: number): Map<string, string> {
  const next = new Map(state)
  apply(next, historyOp(seed, i))
  return next
}
