// The `storage` option of BrowserLevel and OpfsLevel (README, "Fallback
// storage"): where a database's files are. Apart from storage.ts, so that the
// page's bundle checks it without the file systems.
import { invalidOption } from '../../lib/errors'

/** Where a database's files are: the OPFS pool, or the fallback in memory persisted to IndexedDB. */
export type StorageKind = 'opfs' | 'indexeddb'
/** What the `storage` option asks for; 'auto' picks (storage.ts). */
export type StorageChoice = 'auto' | StorageKind

const CHOICES: readonly StorageChoice[] = ['auto', 'opfs', 'indexeddb']

/** The `storage` option, checked: 'auto' when undefined, LEVEL_INVALID_OPTION for anything but the three. */
export function storageOption (value: unknown): StorageChoice {
  if (value === undefined) return 'auto'
  if (typeof value === 'string' && (CHOICES as readonly string[]).includes(value)) return value as StorageChoice
  throw invalidOption('storage', `must be 'auto', 'opfs' or 'indexeddb', got ${typeof value === 'string' ? `'${value}'` : String(value)}`)
}
