// Crash points and injected I/O errors for the in-memory file system
// (mem-fs.ts), which calls `before` at the start of every operation, with
// nothing changed yet. This module knows operations only by kind and path.
//
//   - Every operation that changes state (see MUTATING_OPS) is numbered: `ops`
//     counts them. The completion of a syncAsync / syncDirAsync and a
//     preallocated file's trim on close are operations of their own.
//   - `crashAt = k`: operation number k throws CrashError instead of running, and
//     every later call throws CrashError too: the disk state is frozen as it was
//     before operation k. `onCrash` runs at that moment.
//   - `inject({ op, nth, code })`: the nth matching call of `op` (counted from 1
//     among calls whose path matches `path`, if given) throws an Error with
//     `code` (EIO or ENOSPC) without changing anything (an append with `partial`
//     first writes part of its data). `times` makes it fail that many matching
//     calls in a row (Infinity: for good).
import * as path from 'node:path'

/** Thrown by every call once the file system has "crashed" (see `crashAt`). */
export class CrashError extends Error {
  readonly code = 'ECRASH'
  constructor (message = 'simulated crash: the process is gone') {
    super(message)
    this.name = 'CrashError'
  }
}

/** Whether `err`, or an error in its chain of causes, is a CrashError. */
export function isCrashError (err: unknown): boolean {
  for (let e = err as any, depth = 0; e && depth < 8; e = e.cause, depth++) {
    if (e instanceof CrashError || e.code === 'ECRASH') return true
  }
  return false
}

/**
 * The calls of the file system and its handles, plus 'syncDone' / 'syncDirDone'
 * (a syncAsync / syncDirAsync completing) and 'truncate' (a preallocated file's
 * trim on close).
 */
export type OpKind =
  | 'openRead' | 'read' | 'readSmallFile' | 'exists' | 'modifiedMs' | 'list'
  | 'openWrite' | 'openAppend' | 'append' | 'sync' | 'syncAsync' | 'syncDone' | 'syncFile'
  | 'createExclusive' | 'hardLink' | 'rename' | 'remove' | 'removeDirIfEmpty' | 'mkdirp' | 'syncDir' | 'syncDirAsync' | 'syncDirDone' | 'truncate'

/** Operations that change the (current or durable) state: the crash points. */
const MUTATING_OPS: ReadonlySet<OpKind> = new Set<OpKind>([
  'openWrite', 'append', 'sync', 'syncAsync', 'syncDone', 'syncFile',
  'createExclusive', 'hardLink', 'rename', 'remove', 'removeDirIfEmpty', 'mkdirp', 'syncDir', 'syncDirAsync', 'syncDirDone', 'truncate'
])

export interface FaultSpec {
  op: OpKind | OpKind[]
  /** Fail the nth matching call (1-based). Default 1. */
  nth?: number
  /** Only calls whose path (or basename) matches count. */
  path?: string | RegExp
  code?: 'EIO' | 'ENOSPC'
  /** Number of consecutive matching calls that fail, from the nth on. Default 1; Infinity: all. */
  times?: number
  /** For `append`: write the first half of the data before failing (a short write). */
  partial?: boolean
}

export interface Fault extends Required<Omit<FaultSpec, 'path' | 'partial'>> {
  path: string | RegExp | undefined
  partial: boolean
  /** Matching calls seen so far. */
  seen: number
  /** Calls this fault made fail. */
  hits: number
}

/** A fault that fired: the error to throw, and whether to write part of the data first. */
export interface FiredFault {
  error: Error
  partial: boolean
}

/** An Error shaped like those of node:fs (code, syscall, path). */
export function errnoError (code: string, message: string, syscall: string, p?: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${message}${p !== undefined ? `, ${syscall} '${p}'` : ''}`) as NodeJS.ErrnoException
  err.code = code
  err.syscall = syscall
  if (p !== undefined) err.path = p
  return err
}

export class FaultInjector {
  /** State-changing operations so far (the crash-point counter). */
  ops = 0
  /** Operation number at which to crash (see the top of this file); -1: never. */
  crashAt = -1
  crashed = false
  /** Runs once, when `crashAt` is reached. */
  onCrash: (() => void) | undefined
  /** When an array, "op basename" of every state-changing operation is pushed to it. */
  trace: string[] | undefined
  private readonly faults: Fault[] = []

  inject (spec: FaultSpec): Fault {
    const f: Fault = {
      op: spec.op,
      nth: spec.nth ?? 1,
      path: spec.path,
      code: spec.code ?? 'EIO',
      times: spec.times ?? 1,
      partial: spec.partial ?? false,
      seen: 0,
      hits: 0
    }
    this.faults.push(f)
    return f
  }

  /** Removes every injected fault (crash points stay). */
  clear (): void {
    this.faults.length = 0
  }

  /**
   * Runs at the start of operation `op` on path `p`: throws CrashError once
   * crashed or at the crash point, and the error of an injected fault that fires.
   */
  before (op: OpKind, p: string): void {
    const fired = this.beforePartial(op, p)
    if (fired) throw fired.error
  }

  /**
   * `before` for an operation that can fail part-way (append): a fault that fires
   * is returned instead of thrown, so that the caller can do part of the work first.
   */
  beforePartial (op: OpKind, p: string): FiredFault | undefined {
    if (this.crashed) throw new CrashError()
    if (MUTATING_OPS.has(op)) {
      const index = this.ops
      if (index === this.crashAt) {
        this.crashed = true
        this.onCrash?.()
        throw new CrashError(`simulated crash at operation ${index} (${op} ${path.basename(p)})`)
      }
      this.ops++
      this.trace?.push(`${op} ${path.basename(p)}`)
    }
    for (const f of this.faults) {
      if (!matches(f, op, p)) continue
      f.seen++
      if (f.seen >= f.nth && f.seen < f.nth + f.times) {
        f.hits++
        const error = errnoError(f.code, f.code === 'EIO' ? 'i/o error (injected)' : 'no space left on device (injected)', op, p)
        return { error, partial: f.partial }
      }
    }
    return undefined
  }
}

function matches (f: Fault, op: OpKind, p: string): boolean {
  const ops = Array.isArray(f.op) ? f.op : [f.op]
  if (!ops.includes(op)) return false
  if (f.path === undefined) return true
  const base = path.basename(p)
  return typeof f.path === 'string' ? (p === f.path || base === f.path) : (f.path.test(p) || f.path.test(base))
}
