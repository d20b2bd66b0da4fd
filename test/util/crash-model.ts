// Helpers for crash tests: a log of the writes a workload issued (in write
// order) and which of them were acknowledged, and the check that a recovered
// database holds exactly the state after some prefix of that order.
import { Engine, encodeBatch, type BatchOp } from '../../hosts/node/index'
import { KIND_DELETE, KIND_VALUE } from '../../lib/keys'
import { FOUND, entryKey, entryValue } from '../../lib/iterators/db-iterator'
import { OP_RANGE_DELETE } from '../../lib/wal/batch'
import { isCrashError } from '../fs/fault-injection'
import type { Random } from './random'

/** [key, value] (value undefined: delete), or [start, undefined, end]: a range delete of [start, end). */
export type LoggedOp = [string, string | undefined] | [string, undefined, string]

/** Applies one logged op to a model; calls `touched` with every key it changed. */
function applyLogged (m: Map<string, string>, op: LoggedOp, touched?: (k: string) => void): void {
  if (op.length === 3) {
    for (const k of [...m.keys()]) {
      if (k >= op[0] && k < op[2]) { m.delete(k); touched?.(k) }
    }
    return
  }
  const [k, v] = op
  if (v === undefined) m.delete(k)
  else m.set(k, v)
  touched?.(k)
}

export interface LoggedWrite {
  /** In batch order. */
  ops: LoggedOp[]
  sync: boolean
  acked: boolean
  failed: boolean
  /** Why it failed (when it did). */
  error?: unknown
}

/** Acknowledgement counters at some instant (a crash point). */
export interface AckState {
  /** Writes issued so far (the write order's length). */
  issued: number
  /** 1 + index of the last acknowledged write (any kind): a killed process keeps at least this prefix. */
  ackedPrefix: number
  /** 1 + index of the last acknowledged sync write: a power loss keeps at least this prefix. */
  syncedPrefix: number
}

export class WriteLog {
  readonly writes: LoggedWrite[] = []
  private ackedPrefix = 0
  private syncedPrefix = 0

  /** strict: a write failing with anything but a crash, LEVEL_IO_ERROR or LEVEL_DATABASE_NOT_OPEN rejects (a bug to see). */
  constructor (private readonly strict = true) {}

  /** Issues a write through the engine and logs it. Resolves to whether it succeeded. */
  write (engine: Engine, ops: LoggedOp[], sync: boolean): Promise<boolean> {
    const index = this.writes.length
    const entry: LoggedWrite = { ops, sync, acked: false, failed: false }
    this.writes.push(entry)
    const batch: BatchOp[] = ops.map((op) => op.length === 3
      ? { kind: OP_RANGE_DELETE, key: Buffer.from(op[0]), end: Buffer.from(op[2]) }
      : op[1] === undefined
        ? { kind: KIND_DELETE, key: Buffer.from(op[0]) }
        : { kind: KIND_VALUE, key: Buffer.from(op[0]), value: Buffer.from(op[1]) })
    return engine.write(encodeBatch(batch), sync).then(() => {
      entry.acked = true
      if (index + 1 > this.ackedPrefix) this.ackedPrefix = index + 1
      if (sync && index + 1 > this.syncedPrefix) this.syncedPrefix = index + 1
      return true
    }, (err) => {
      entry.failed = true
      entry.error = err
      if (this.strict && !isCrashError(err) && (err as any)?.code !== 'LEVEL_IO_ERROR' && (err as any)?.code !== 'LEVEL_DATABASE_NOT_OPEN') {
        // Anything else is a bug worth seeing.
        throw err
      }
      return false
    })
  }

  ackState (): AckState {
    return { issued: this.writes.length, ackedPrefix: this.ackedPrefix, syncedPrefix: this.syncedPrefix }
  }

  /** The model state after the first `n` writes. */
  stateAfter (n: number): Map<string, string> {
    const m = new Map<string, string>()
    for (let i = 0; i < n; i++) for (const op of this.writes[i].ops) applyLogged(m, op)
    return m
  }

  /**
   * The prefix lengths n in [0, upTo] whose state equals `got`. Incremental: one
   * pass over the writes, tracking the keys where model and `got` differ.
   */
  matchingPrefixes (got: Map<string, string>, upTo: number): number[] {
    const model = new Map<string, string>()
    const differ = new Set<string>(got.keys())
    const out: number[] = []
    if (differ.size === 0) out.push(0)
    for (let i = 0; i < upTo && i < this.writes.length; i++) {
      for (const op of this.writes[i].ops) {
        applyLogged(model, op, (k) => {
          if (model.get(k) === got.get(k)) differ.delete(k)
          else differ.add(k)
        })
      }
      if (differ.size === 0) out.push(i + 1)
    }
    return out
  }

  /** Every value ever written (to tell "a value that was never written" from "a wrong prefix"). */
  writtenValues (): Map<string, Set<string>> {
    const m = new Map<string, Set<string>>()
    for (const w of this.writes) {
      for (const [k, v] of w.ops) {
        if (v === undefined) continue
        let s = m.get(k)
        if (!s) m.set(k, s = new Set())
        s.add(v)
      }
    }
    return m
  }
}

export interface PrefixVerdict {
  ok: boolean
  /** The longest matching prefix (-1 if none). */
  prefix: number
  message: string
}

/**
 * Checks that `got` equals the state after some prefix n of the log's write order
 * with required <= n <= issued. Reports the longest such prefix, or why none fits.
 */
export function checkPrefix (log: WriteLog, got: Map<string, string>, required: number, issued: number): PrefixVerdict {
  const matches = log.matchingPrefixes(got, issued)
  const fitting = matches.filter((n) => n >= required)
  if (fitting.length > 0) {
    return { ok: true, prefix: fitting[fitting.length - 1], message: '' }
  }
  if (matches.length > 0) {
    return { ok: false, prefix: -1, message: `recovered the state after ${matches[matches.length - 1]} writes, but ${required} were acknowledged as durable (issued ${issued})` }
  }
  // No prefix at all: say what is wrong, preferring the most damning explanation.
  const written = log.writtenValues()
  for (const [k, v] of got) {
    if (!written.get(k)?.has(v)) return { ok: false, prefix: -1, message: `key ${k} holds ${JSON.stringify(v.slice(0, 40))}, a value never written to it` }
  }
  // Closest prefix, by number of differing keys, among those that fit.
  let best = -1
  let bestDiff = Infinity
  let bestKeys: string[] = []
  for (let n = Math.max(0, required); n <= issued; n++) {
    const m = log.stateAfter(n)
    const keys = new Set([...m.keys(), ...got.keys()])
    const diff = [...keys].filter((k) => m.get(k) !== got.get(k))
    if (diff.length < bestDiff) { bestDiff = diff.length; best = n; bestKeys = diff.slice(0, 4) }
  }
  const m = best >= 0 ? log.stateAfter(best) : new Map<string, string>()
  const detail = bestKeys.map((k) => `${k}: got ${short(got.get(k))}, want ${short(m.get(k))}`).join('; ')
  return { ok: false, prefix: -1, message: `recovered state is no prefix of the write order (required >= ${required}, issued ${issued}); nearest is ${best} writes, ${bestDiff} keys differ: ${detail}` }
}

function short (v: string | undefined): string {
  return v === undefined ? '(absent)' : JSON.stringify(v.slice(0, 24))
}

/** The whole database as a Map (by iterator), cross-checked with get on a few keys. */
export function readAll (engine: Engine, rnd?: Random): Map<string, string> {
  const out = new Map<string, string>()
  const it = engine.iterator({})
  try {
    while (it.step(Infinity) === FOUND) out.set(entryKey(it).toString('latin1'), entryValue(it).toString('latin1'))
  } finally {
    it.close()
  }
  if (rnd) {
    const keys = [...out.keys()]
    for (let i = 0; i < 3 && keys.length > 0; i++) {
      const k = keys[rnd.int(keys.length)]
      const v = engine.get(Buffer.from(k, 'latin1'))
      if (v === undefined || v.toString('latin1') !== out.get(k)) throw new Error(`get(${k}) disagrees with the iterator`)
    }
  }
  return out
}

/**
 * Forgets an engine whose process "died" (its file system crashed): releases its
 * lock registration so the same path can be opened again in this process, and
 * swallows the errors of its file system.
 */
export function abandon (engine: Engine | undefined): void {
  if (!engine) return
  try { (engine as any).lock?.release() } catch {}
  ;(engine as any).lock = undefined
}
