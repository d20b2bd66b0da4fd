// Which retired logs are kept for the change feed (lib/change-feed.ts), and which
// are deleted. A log is retired once its memtable is in tables (the flush's
// version edit moved the manifest's logNumber past it); without retention it
// is deleted then. With retention (options retainLogBytes, retainLogAgeMs), the
// retired logs are kept, newest first, while either limit allows:
//
//   newest retired  ...  oldest retired
//   [ kept: total bytes <= retainLogBytes, or retired less than retainLogAgeMs ago ][ deleted ]
//
// The kept logs are always the newest retired ones, without a hole, so the
// feed's history is contiguous from its oldest record to the live log. Recovery
// never replays them (it replays logs >= the manifest's logNumber only) and
// open does not take them for orphans. A log's age counts from its retirement
// in this process, or from the open that found it already retired (file times
// are not part of the FileSystem interface).
import { fileSize, type FileSystem } from '../fs/fs'
import { join, logName } from '../filenames'

export interface RetentionPolicy {
  /** Retired logs kept while their total size stays within this many bytes (0: no byte allowance). */
  retainLogBytes: number
  /** Retired logs kept for this many milliseconds after their retirement (0: no age allowance). */
  retainLogAgeMs: number
}

interface Retained {
  number: number
  bytes: number
  retiredAt: number
}

export class LogRetention {
  /** Oldest first. */
  private readonly retained: Retained[] = []

  constructor (
    private readonly fs: FileSystem,
    private readonly dir: string,
    private readonly policy: RetentionPolicy,
    private readonly now: () => number = Date.now
  ) {}

  /** True if some retired log may be kept. */
  get enabled (): boolean {
    return this.policy.retainLogBytes > 0 || this.policy.retainLogAgeMs > 0
  }

  /**
   * At open: `numbers` are the retired logs in the directory (below the
   * manifest's logNumber). Returns those kept; the caller deletes the others.
   */
  adopt (numbers: number[]): Set<number> {
    for (const number of numbers.slice().sort((a, b) => a - b)) this.add(number)
    this.trim()
    return new Set(this.retained.map((r) => r.number))
  }

  /** Log `number` was retired: returns the names of the logs to delete now (it, or older ones that fell out). */
  retire (number: number): string[] {
    if (!this.enabled) return [logName(number)]
    this.add(number)
    return this.trim().map(logName)
  }

  /** The retained logs' numbers, oldest first. */
  numbers (): number[] {
    return this.retained.map((r) => r.number)
  }

  private add (number: number): void {
    this.retained.push({ number, bytes: fileSize(this.fs, join(this.dir, logName(number))), retiredAt: this.now() })
  }

  /** Drops the oldest logs beyond both limits; returns their numbers. */
  private trim (): number[] {
    const { retainLogBytes, retainLogAgeMs } = this.policy
    const now = this.now()
    let bytes = 0
    let keep = this.retained.length
    for (let i = this.retained.length - 1; i >= 0; i--) {
      const r = this.retained[i]
      bytes += r.bytes
      const byBytes = retainLogBytes > 0 && bytes <= retainLogBytes
      const byAge = retainLogAgeMs > 0 && now - r.retiredAt <= retainLogAgeMs
      if (!byBytes && !byAge) break
      keep = i
    }
    return this.retained.splice(0, keep).map((r) => r.number)
  }
}
