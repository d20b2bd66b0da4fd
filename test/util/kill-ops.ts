// The deterministic operation stream shared by the kill test and its child
// writer: operation i is a function of (seed, i) alone, so the parent can rebuild
// the model of any prefix the child wrote before it was killed.
import { Random } from './random'

export type KillOp =
  | { type: 'put', key: string, value: string }
  | { type: 'del', key: string }
  | { type: 'batch', ops: Array<{ type: 'put' | 'del', key: string, value?: string }> }

const KEYS = 500

export function killOp (seed: number, i: number): KillOp {
  const rnd = new Random((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0)
  const key = (): string => 'k' + String(rnd.int(KEYS)).padStart(4, '0')
  const value = (): string => `v${i}-` + 'x'.repeat(rnd.int(200))
  const r = rnd.int(10)
  if (r < 6) return { type: 'put', key: key(), value: value() }
  if (r < 8) return { type: 'del', key: key() }
  const ops: Array<{ type: 'put' | 'del', key: string, value?: string }> = []
  const n = 2 + rnd.int(8)
  for (let j = 0; j < n; j++) ops.push(rnd.int(4) === 0 ? { type: 'del', key: key() } : { type: 'put', key: key(), value: value() })
  return { type: 'batch', ops }
}

export function applyKillOp (model: Map<string, string>, op: KillOp): void {
  if (op.type === 'put') model.set(op.key, op.value)
  else if (op.type === 'del') model.delete(op.key)
  else for (const o of op.ops) { if (o.type === 'put') model.set(o.key, o.value!); else model.delete(o.key) }
}
