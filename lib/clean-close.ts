// What a clean close leaves for the next open: with flushOnClose, the
// memtables frozen so the scheduler writes them to level-0 tables as it closes
// (the logs left then hold no record: the next open replays nothing); and the
// manifest's record of the clean close (the logs still needed, each with where
// its records end, and the newest sequence number), which lets the next open
// refuse a log that differs, as no crash can explain it (lib/recovery.ts).
import { createWhenRoom } from './fs/fs'
import type { EngineParts } from './engine-parts'
import type { Rotation } from './write-path'

/** What the close steps need from the engine besides its parts. */
export interface CloseState {
  /** The engine's newest visible sequence number. */
  lastSequence: number
  /** Writes failed (the logs as they are then are what the next open recovers from). */
  writeError: unknown
}

/**
 * flushOnClose: freezes the active memtable (its log retired, a new empty log
 * started) and says whether the scheduler is to flush the frozen memtables as
 * it closes. Not after a failed write or job.
 */
export async function freezeForClose (parts: EngineParts, rotation: Rotation, state: CloseState): Promise<boolean> {
  const { fs, dir, options, memtables, scheduler } = parts
  if (!options.flushOnClose || state.writeError !== undefined || scheduler.error !== undefined) return false
  if (!memtables.active.isEmpty()) {
    try {
      await createWhenRoom(fs, dir, 1, () => { if (!memtables.active.isEmpty()) rotation.rotate() })
    } catch {
      // No new log: the writes stay in the current one, recorded at close as before.
    }
  }
  return memtables.frozen.length > 0
}

/**
 * Records in the manifest that the database was closed cleanly: the logs it
 * still needs (the frozen memtables' and the current one), each synced first.
 * Not after a failed write (the current log's end is not known); if the record
 * cannot be written, the next open takes the logs as a crash left them.
 */
export async function recordCleanClose (parts: EngineParts, state: CloseState): Promise<void> {
  const { logs, memtables, versions } = parts
  if (state.writeError !== undefined) return
  const logsAtClose: Array<{ number: number, size: number }> = []
  for (const number of new Set([...memtables.frozen.map((f) => f.logNumber), logs.number])) {
    if (number < versions.logNumber) continue
    const size = logs.recordsEnd(number)
    if (size === undefined) return
    logsAtClose.push({ number, size })
  }
  logsAtClose.sort((a, b) => a.number - b.number)
  try {
    logs.sync()
    await versions.recordClose({ lastSequence: state.lastSequence, logs: logsAtClose })
  } catch {}
}
