// The term of an open that owns the database: its operations run on the
// engine here, with no line to lose and no watchdog.
import type { ServedDatabase } from '../remote/host'
import type { Term } from './election'

export class LocalTerm implements Term {
  readonly local = true
  readonly ended = false
  readonly unreachable = false

  constructor (readonly db: ServedDatabase) {}

  async track<T> (request: () => Promise<T>): Promise<T> {
    return await request()
  }

  end (): void {}
}
