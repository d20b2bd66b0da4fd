// The entry of the dedicated worker that runs one database for BrowserLevel:
// the engine in a worker (OpfsLevel), serving the remote protocol
// (adapters/remote/) to the page that started it. The first attach opens the
// database with that client's location and options; it closes when the client
// detaches (the page's close()), and the worker may then serve another open.
// Flushes and compactions run here, on this worker's event loop, in slices
// between requests.
import './hosts/browser/globals'
import { OpfsLevel } from './adapters/opfs-level'
import { installBrowserPlatform } from './hosts/browser/platform'
import { workerScopeChannel, type WorkerScopeLike } from './adapters/remote/channel'
import { serve } from './adapters/remote/server'
import { SharedDatabaseHost, type OwnedDatabase } from './adapters/remote/shared-host'
import type { ServerChannel } from './adapters/remote/session'

// Started now, so that the first open does not wait for it (an open that finds it failed tries again).
installBrowserPlatform().catch(() => {})

/** Opens the database; an error goes back as its cause (the client's open wraps it again). */
async function openDatabase (location: string, options: Record<string, unknown>): Promise<OwnedDatabase> {
  const db = new OpfsLevel<Uint8Array, Uint8Array>(location, { ...options, keyEncoding: 'view', valueEncoding: 'view' })
  try {
    await db.open({ passive: false, createIfMissing: options.createIfMissing !== false, errorIfExists: options.errorIfExists === true })
  } catch (err) {
    throw (err as { cause?: unknown }).cause ?? err
  }
  return db as unknown as OwnedDatabase
}

serve(workerScopeChannel(globalThis as unknown as WorkerScopeLike) as ServerChannel, new SharedDatabaseHost(openDatabase))
