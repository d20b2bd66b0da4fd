// Event-loop fairness. Writes and reads that complete without I/O wait resolve
// through microtasks only, so a loop of awaited operations never lets the event
// loop turn: timers, sockets and our own flush slices would starve. A TurnBudget
// notices when the current macrotask turn has run longer than `budgetMs` and
// asks the caller to continue on the next turn (setImmediate) instead: one
// deferral every millisecond or so, a negligible cost per operation.

// Read once: in Node, the global `performance` is an accessor property, looked
// up again on every use; this is called once per operation.
const clock = globalThis.performance

/** Runs `callback` once the current task has ended (see useTaskEnd). */
type TaskEnd = (callback: () => void) => void

let taskEnd: TaskEnd = (callback) => setImmediate(callback)

/**
 * How a TurnBudget learns that a task ended: setImmediate, unless the host
 * gives a cheaper way. In a browser's worker setImmediate is a MessageChannel
 * message (hosts/browser/globals.ts), which an awaited operation from the page
 * paid for each time, being a task of its own; a timer of 0 ms is cheaper there.
 */
export function useTaskEnd (end: TaskEnd): void {
  taskEnd = end
}

export class TurnBudget {
  private turnStart = 0
  private markerPending = false
  private readonly clearMarker = (): void => { this.markerPending = false }

  constructor (private readonly budgetMs = 1) {}

  /** True if the caller should defer its work to the next turn of the event loop. */
  exhausted (): boolean {
    const now = clock.now()
    if (!this.markerPending) {
      // First operation of this turn: remember when it started, and learn when it ends.
      this.markerPending = true
      this.turnStart = now
      taskEnd(this.clearMarker)
      return false
    }
    return now - this.turnStart > this.budgetMs
  }
}

export function nextTurn (): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

let sharedTurn: Promise<void> | undefined

/**
 * nextTurn() shared by every caller until it resolves: the reads a used-up
 * budget put off all continue in one task of the next turn, so what they
 * start then runs together too (64 awaited gets in flight stay one batch a
 * turn, not one task each). Immediates queued before a turn's check phase all
 * run in it anyway, with no I/O between them: the event loop waits no longer.
 */
export function sharedNextTurn (): Promise<void> {
  sharedTurn ??= new Promise((resolve) => setImmediate(() => {
    sharedTurn = undefined
    resolve()
  }))
  return sharedTurn
}

/**
 * Long work cut into slices of about `sliceMs` of the event loop each: the
 * worker calls next() after each step, which continues on the next turn once
 * the current slice is used up (a loop of awaited writes meanwhile gets its
 * turns, and no turn is held longer than one slice and one step).
 */
export class TurnSlices {
  private sliceStart = clock.now()

  constructor (private readonly sliceMs: number) {}

  async next (): Promise<void> {
    if (clock.now() - this.sliceStart < this.sliceMs) return
    await nextTurn()
    this.sliceStart = clock.now()
  }
}

/**
 * A timer for background work between rounds (a backup's next round, a lease
 * renewal, a poll): in Node it does not keep the process alive on its own, as
 * an open database holds no handle that does.
 */
export function backgroundTimer (fn: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(fn, ms)
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}
