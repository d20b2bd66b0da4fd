// The options an adapter's constructor and open() take are abstract-level's
// and the engine's together; each goes to its own side. createIfMissing and
// errorIfExists are abstract-level's: they reach _open() through it, normalised.
import { ENGINE_OPTION_NAMES, type EngineOptions } from '../lib/options'

const ENGINE_OPTION_KEYS: string[] = ENGINE_OPTION_NAMES.filter((n) => n !== 'createIfMissing' && n !== 'errorIfExists')

/** The engine's options among `options` (those given). */
export function pickEngineOptions (options: Record<string, unknown>): Partial<EngineOptions> {
  const out: Record<string, unknown> = {}
  for (const name of ENGINE_OPTION_KEYS) if (options[name] !== undefined) out[name] = options[name]
  return out as Partial<EngineOptions>
}

/** The Level options alone: engine options stay with the engine (and out of hooks' view). */
export function withoutEngineOptions (options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) if (!ENGINE_OPTION_KEYS.includes(k)) out[k] = v
  return out
}
