// What the engine expects of its global scope and a browser worker lacks:
// Buffer (the `buffer` package, which abstract-level depends on as well) and
// setImmediate (a MessageChannel turn: setTimeout(0) is clamped to 4 ms once
// nested). Imported first by the worker's entry, before any engine module.
import { Buffer } from 'buffer'
import { useTaskEnd } from '../../lib/util/turn'

const scope = globalThis as unknown as Record<string, unknown>

if (scope.Buffer === undefined) scope.Buffer = Buffer

if (scope.setImmediate === undefined) {
  const queue: Array<() => void> = []
  const channel = new MessageChannel()
  // The DOM's MessagePort (onmessage), which the build's typings (Node's) do not describe.
  const port = channel.port1 as unknown as { onmessage: () => void }
  port.onmessage = () => {
    const due = queue.splice(0)
    for (const run of due) run()
  }
  scope.setImmediate = (callback: (...args: unknown[]) => void, ...args: unknown[]) => {
    if (queue.length === 0) channel.port2.postMessage(null)
    queue.push(() => callback(...args))
  }
}

// A timer's end of a task, not a MessageChannel message's (lib/util/turn.ts).
useTaskEnd((callback) => { setTimeout(callback, 0) })
