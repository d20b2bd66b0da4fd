// The worker of the browser benchmark's floor (browser-page.ts, floor()),
// bundled by scripts/build-browser.js into dist/browser-bench/floor.js: it
// answers each message with its own data, at once, on the worker's scope and
// on each port the page hands it ({ port }); a message marked { turn: true }
// is answered after one more MessageChannel turn here (setImmediate in a
// browser's worker), as a server that gathers a turn's replies into one
// message would answer; one marked { timer: true } after a timer of 0 ms (a
// worker's other way to reach the next task). Handed { forward: port } instead, it passes each
// later message on its scope to that port and each one from the port back to
// its scope: the hop a client tab's worker adds on the way to the owner's.

interface PortLike {
  onmessage: ((event: { data: unknown }) => void) | null
  postMessage (message: unknown): void
}
interface FloorScope extends PortLike {
  MessageChannel: new () => { port1: PortLike, port2: PortLike }
}
const scope = globalThis as unknown as FloorScope

const turn = new scope.MessageChannel()
const due: Array<() => void> = []
turn.port1.onmessage = () => { for (const run of due.splice(0)) run() }

function echo (to: PortLike): (event: { data: unknown }) => void {
  return (event) => {
    const data = event.data as { turn?: boolean, timer?: boolean, port?: PortLike, forward?: PortLike } | null
    if (data?.forward !== undefined) {
      const port = data.forward
      port.onmessage = (reply) => to.postMessage(reply.data)
      scope.onmessage = (message) => port.postMessage(message.data)
      to.postMessage('ready')
    } else if (data?.port !== undefined) {
      data.port.onmessage = echo(data.port)
      to.postMessage('ready')
    } else if (data?.timer === true) {
      setTimeout(() => to.postMessage(data), 0)
    } else if (data?.turn === true) {
      if (due.length === 0) turn.port2.postMessage(null)
      due.push(() => to.postMessage(data))
    } else {
      to.postMessage(data)
    }
  }
}

scope.onmessage = echo(scope)
scope.postMessage('ready')
