// An abstract-level iterator over a ServedIterator held elsewhere (a server's
// session, another process's owner): next() fetches entries in batches and
// serves them from the batch; nextv() asks for what it is asked. RemoteLevel's
// iterators and a multiProcess client's are this one.
import { AbstractIterator } from 'abstract-level'
import type { ServedIterator } from './host'

type Entry = [unknown, unknown]

const utf8 = new TextEncoder()

/** Entries fetched per request by next() (nextv() asks for what it is asked). */
const NEXT_BATCH = 64

// abstract-level's typings of the iterator constructor lag its runtime (options).
const IteratorBase = AbstractIterator as unknown as new (db: unknown, options: object) => AbstractIterator<unknown, unknown, unknown>

export interface ReadAheadOptions {
  /** Each entry as it comes from the source, in the encodings asked for (default: as it is). */
  decode?: (entry: Entry) => Entry
  /** Checked before each step: throws when the source may no longer be read (even what was read ahead). */
  check?: () => void
  /** Called after each fetch: throws when the iterator was aborted meanwhile (its abort signal). */
  fetched?: () => void
}

export class ReadAheadIterator extends IteratorBase {
  private buffered: Entry[] = []
  private done = false

  constructor (db: unknown, levelOptions: object, private readonly source: ServedIterator, private readonly options: ReadAheadOptions = {}) {
    super(db, levelOptions)
  }

  private async fetch (size: number): Promise<Entry[]> {
    const raw = await this.source.nextv(size) as Entry[]
    this.options.fetched?.()
    const decode = this.options.decode
    if (decode === undefined) return raw
    const out = new Array<Entry>(raw.length)
    for (let i = 0; i < raw.length; i++) out[i] = decode(raw[i])
    return out
  }

  async _next (): Promise<Entry | undefined> {
    this.options.check?.()
    if (this.buffered.length === 0 && !this.done) {
      this.buffered = (await this.fetch(NEXT_BATCH)).reverse()
      if (this.buffered.length === 0) this.done = true
    }
    return this.buffered.pop()
  }

  async _nextv (size: number): Promise<Entry[]> {
    this.options.check?.()
    if (this.buffered.length > 0) return this.buffered.splice(Math.max(0, this.buffered.length - size)).reverse()
    if (this.done) return []
    const out = await this.fetch(size)
    if (out.length === 0) this.done = true
    return out
  }

  _seek (target: Uint8Array | string): void {
    this.buffered = []
    this.done = false
    this.source.seek(typeof target === 'string' ? utf8.encode(target) : target)
  }

  async _close (): Promise<void> {
    await this.source.close()
  }
}
