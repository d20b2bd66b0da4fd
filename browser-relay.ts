// The entry of the SharedWorker that BrowserLevel starts beside its dedicated
// worker (bundled as lsm-level-relay.js): it hands MessagePorts from the tabs
// that are clients of a database to the worker that owns it
// (adapters/tabs/relay-server.ts). One instance per origin, shared by every
// tab, for every database.
import { RelayServer } from './adapters/tabs/relay-server'
import type { MessagePortLike } from './adapters/remote/channel'

const relay = new RelayServer()
const scope = globalThis as unknown as { onconnect: ((event: { ports: MessagePortLike[] }) => void) | null }
scope.onconnect = (event) => {
  for (const port of event.ports) relay.accept(port)
}
