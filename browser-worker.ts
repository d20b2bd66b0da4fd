// The entry of the dedicated worker that runs one database for BrowserLevel,
// serving the remote protocol (adapters/remote/) to the page that started it.
// The first attach opens the database with that client's location and
// options, as one tab's open of a database every tab may open
// (adapters/tabs/tab-database.ts): the engine runs here (OpfsLevel) if this
// worker owns the database, else this worker relays its page's operations to
// the worker of the tab that owns it, and takes over if that one goes. It
// closes when the page detaches (its close()), and the worker may then serve
// another open. Flushes and compactions run in the owner's worker, on its
// event loop, in slices between requests.
//
// It posts a hello ({ lsmLevelWorkerStarted: true }) to the page once its
// script runs. Besides the protocol's messages (arrays), the page may send one object:
// { lsmLevelTabs: { relay?: MessagePort, ownerTimeoutMs?: number, storage?: string } },
// the port to the relay SharedWorker it started (browser-relay.ts) and the
// options of the next open.
import './hosts/browser/globals'
import { installBrowserPlatform } from './hosts/browser/platform'
import { WORKER_STARTED, workerScopeChannel, type MessagePortLike, type WorkerScopeLike } from './adapters/remote/channel'
import { serve } from './adapters/remote/server'
import { ENGINE_METHODS, SharedDatabaseHost } from './adapters/remote/shared-host'
import type { ServerChannel } from './adapters/remote/session'
import { OWNER_TIMEOUT_MS, TabDatabase } from './adapters/tabs/tab-database'
import { relayOverPort, type Relay } from './adapters/tabs/transports'

// Started now, so that the first open does not wait for it (an open that finds it failed tries again).
installBrowserPlatform().catch(() => {})

/** How long the relay has to answer this worker's hello before the fallback transport is used instead. */
const RELAY_HELLO_MS = 1000

interface TabsSetup { relay?: MessagePortLike, ownerTimeoutMs?: number, storage?: string }

/** The relay, once it answered this worker's hello (opens do not wait for it: one that never answers, its file missing, would hold each open back). */
let relay: Relay | undefined
let ownerTimeoutMs = OWNER_TIMEOUT_MS
/** The `storage` option of the next open (BrowserLevel checked it). */
let storage: string | undefined

const scope = globalThis as unknown as WorkerScopeLike
const protocolScope: WorkerScopeLike = { postMessage: (m, t) => scope.postMessage(m, t), onmessage: null }
scope.onmessage = (event) => {
  const setup = (event.data as { lsmLevelTabs?: TabsSetup } | null)?.lsmLevelTabs
  if (setup === undefined) {
    protocolScope.onmessage?.(event)
    return
  }
  if (setup.relay !== undefined) relayOverPort(setup.relay, RELAY_HELLO_MS).then((r) => { relay = r }, () => {})
  if (typeof setup.ownerTimeoutMs === 'number') ownerTimeoutMs = setup.ownerTimeoutMs
  storage = setup.storage
}

/** Opens this tab's share of the database; an error goes back as its cause (the client's open wraps it again). */
async function openDatabase (location: string, options: Record<string, unknown>): Promise<TabDatabase> {
  return await TabDatabase.open(location, storage === undefined ? options : { ...options, storage }, { relay: () => relay, ownerTimeoutMs })
}

serve(workerScopeChannel(protocolScope) as ServerChannel, new SharedDatabaseHost(openDatabase, new Set([...ENGINE_METHODS, 'tabs'])))
// The page's open waits for this before it counts on the worker (BrowserLevel's workerStartTimeoutMs).
scope.postMessage({ [WORKER_STARTED]: true })
