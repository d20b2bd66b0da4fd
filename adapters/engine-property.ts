// The engine's properties as text, as classic-level's getProperty() gives
// them: LsmLevel#getProperty for an owner, and the same answer served to the
// other processes of a multiProcess database.
import type { Engine } from '../lib/engine'
import { invalidOption, levelError } from '../lib/errors'
import { formatStats } from '../lib/stats'

/**
 * 'lsm.stats', 'lsm.num-files-at-level<N>', 'lsm.sstables',
 * 'lsm.approximate-memory-usage' (each also under the 'leveldb.' prefix).
 */
export function engineProperty (engine: Engine, name: string): string {
  if (typeof name !== 'string') throw invalidOption('name', 'property name must be a string')
  const m = /^(?:lsm|leveldb)\.(.+)$/.exec(name)
  const prop = m ? m[1] : ''
  const files = /^num-files-at-level(\d+)$/.exec(prop)
  if (files) {
    const level = Number(files[1])
    const levels = engine.levels()
    if (level >= levels.length) throw levelError('LEVEL_NOT_SUPPORTED', `No level ${level}: levels are 0-${levels.length - 1}`)
    return String(levels[level].files)
  }
  if (prop === 'stats') return formatStats(engine.stats())
  if (prop === 'approximate-memory-usage') {
    const st = engine.stats()
    return String(st.memtableBytes + st.blockCache.bytes)
  }
  if (prop === 'sstables') {
    return engine.tables().map((files, level) => `--- level ${level} ---\n` + files.map((f) =>
      ` ${f.number}:${f.size}[${f.smallest.userKey.toString('hex')} .. ${f.largest.userKey.toString('hex')}]\n`).join('')).join('')
  }
  throw levelError('LEVEL_NOT_SUPPORTED', `Unknown property: ${name}`)
}
