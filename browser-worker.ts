// The entry of the dedicated worker that runs the databases of BrowserLevel,
// serving the remote protocol (adapters/remote/) to the page that started it.
// Each database's first attach opens it with that client's location and
// options, as one tab's open of a database every tab may open
// (adapters/tabs/tab-database.ts): the engine runs here (OpfsLevel) if this
// worker owns the database, else this worker relays its page's operations to
// the worker of the tab that owns it, and takes over if that one goes. It
// closes when the page detaches (its close()). Flushes and compactions run in
// the owner's worker, on its event loop, in slices between requests.
//
// It serves every BrowserLevel of the page that started it (engine-worker.ts),
// each over a line of its own on the worker's postMessage
// (adapters/remote/worker-lines.ts), and posts a hello
// ({ lsmLevelWorkerStarted: true, lines }, the format of its lines' messages)
// to the page once its script runs. The page
// opens a database's line with
// { lsmLevelConnect: { line, relay?, useRelay, ownerTimeoutMs?, storage? } }:
// the line's number, the port to the relay SharedWorker it started
// (browser-relay.ts) with the first database that has one, and that
// database's options.
import './hosts/browser/globals'
import { installBrowserPlatform } from './hosts/browser/platform'
import { WORKER_CONNECT, WORKER_STARTED, type MessagePortLike, type WorkerScopeLike } from './adapters/remote/channel'
import { LINES_FORMAT, WorkerLines } from './adapters/remote/worker-lines'
import { serve } from './adapters/remote/server'
import { SharedDatabaseHost } from './adapters/remote/shared-host'
import type { ServerChannel } from './adapters/remote/session'
import { TabDatabase } from './adapters/tabs/tab-database'
import { ENGINE_METHODS, OWNER_TIMEOUT_MS } from './adapters/failover/messages'
import { relayOverPort, type Relay } from './adapters/tabs/transports'

// Started now, so that the first open does not wait for it (an open that finds it failed tries again).
installBrowserPlatform().catch(() => {})

/** How long the relay has to answer this worker's hello before the fallback transport is used instead. */
const RELAY_HELLO_MS = 1000

interface ConnectMessage { line: number, relay?: MessagePortLike, useRelay: boolean, ownerTimeoutMs?: number, storage?: string }

/** The relay, once it answered this worker's hello (opens do not wait for it: one that never answers, its file missing, would hold each open back). */
let relay: Relay | undefined

const CALLABLE = new Set([...ENGINE_METHODS, 'tabs'])

const scope = globalThis as unknown as WorkerScopeLike
const lines = new WorkerLines((message, transfer) => scope.postMessage(message, transfer))

/** Serves one database of the page over its line; the first attach opens it, with the options that came with the line. */
function serveDatabase (connect: ConnectMessage): void {
  const tab = { relay: () => connect.useRelay ? relay : undefined, ownerTimeoutMs: connect.ownerTimeoutMs ?? OWNER_TIMEOUT_MS }
  // An error goes back as the open's cause (the client's open wraps it again).
  const open = async (location: string, options: Record<string, unknown>): Promise<TabDatabase> =>
    await TabDatabase.open(location, connect.storage === undefined ? options : { ...options, storage: connect.storage }, tab)
  serve(lines.open(connect.line) as ServerChannel, new SharedDatabaseHost(open, CALLABLE))
}

scope.onmessage = (event) => {
  if (lines.deliver(event.data)) return
  const connect = (event.data as { [WORKER_CONNECT]?: ConnectMessage } | null)?.[WORKER_CONNECT]
  if (connect === undefined) return
  if (connect.relay !== undefined) relayOverPort(connect.relay, RELAY_HELLO_MS).then((r) => { relay = r }, () => {})
  serveDatabase(connect)
}
// The page's open waits for this before it counts on the worker (BrowserLevel's workerStartTimeoutMs).
scope.postMessage({ [WORKER_STARTED]: true, lines: LINES_FORMAT })
