// An abstract-level iterator over a ServedIterator held elsewhere (a server's
// session, another process's owner): next() fetches entries in batches and
// serves them from the batch; nextv() asks for what it is asked. RemoteLevel's
// iterators and a multiProcess client's are this one.
//
// Read-ahead: from the second fetch in a row on, the next batch (the size the
// reader asked for last) is asked for as soon as one arrives, so that the
// server reads it while the reader uses this one: a scan costs one round trip
// at its start instead of one per batch. A lone nextv (a seek and one batch)
// reads nothing ahead. A seek or a close made while a batch is on its way is
// sent after it arrives (the server's iterator is busy until then), and that
// batch is dropped.
import { AbstractIterator } from 'abstract-level'
import type { ServedIterator } from './host'

type Entry = [unknown, unknown]

const utf8 = new TextEncoder()

/** Entries fetched by next()'s first request; each next one asks for twice as many, up to NEXT_BATCH_MAX. */
const NEXT_BATCH = 64
const NEXT_BATCH_MAX = 1024

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

const ignore = (): void => {}

export class ReadAheadIterator extends IteratorBase {
  private buffered: Entry[] = []
  private done = false
  /** The batch asked for ahead of the reader, if one is on its way. */
  private ahead: Promise<unknown[]> | undefined
  /** Settles once the batch that was on its way when the last seek came has arrived and the seek was sent. */
  private seeking: Promise<void> | undefined
  /** Fetches in a row since the iterator was made or sought. */
  private streak = 0
  private nextSize = NEXT_BATCH

  constructor (db: unknown, levelOptions: object, private readonly source: ServedIterator, private readonly options: ReadAheadOptions = {}) {
    super(db, levelOptions)
  }

  private async fetch (size: number): Promise<Entry[]> {
    const seeking = this.seeking
    if (seeking !== undefined) {
      try {
        await seeking
      } finally {
        if (this.seeking === seeking) this.seeking = undefined
      }
    }
    const ahead = this.ahead
    this.ahead = undefined
    const raw = await (ahead ?? this.source.nextv(size)) as Entry[]
    this.options.fetched?.()
    if (raw.length > 0 && ++this.streak >= 2) {
      const next = this.source.nextv(size)
      // Its failure is reported by the fetch that takes it.
      next.catch(ignore)
      this.ahead = next
    }
    const decode = this.options.decode
    if (decode === undefined) return raw
    const out = new Array<Entry>(raw.length)
    for (let i = 0; i < raw.length; i++) out[i] = decode(raw[i])
    return out
  }

  async _next (): Promise<Entry | undefined> {
    this.options.check?.()
    if (this.buffered.length === 0 && !this.done) {
      const size = this.nextSize
      this.nextSize = Math.min(size * 2, NEXT_BATCH_MAX)
      this.buffered = (await this.fetch(size)).reverse()
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
    // A batch read ahead for a larger size: the rest waits here.
    if (out.length > size) {
      this.buffered = out.splice(size).reverse()
    }
    return out
  }

  _seek (target: Uint8Array | string): void {
    this.buffered = []
    this.done = false
    this.streak = 0
    this.nextSize = NEXT_BATCH
    const bytes = typeof target === 'string' ? utf8.encode(target) : target
    const ahead = this.ahead
    this.ahead = undefined
    if (ahead === undefined && this.seeking === undefined) {
      this.source.seek(bytes)
      return
    }
    this.seeking = Promise.all([ahead?.catch(ignore), this.seeking?.catch(ignore)]).then(() => this.source.seek(bytes))
  }

  async _close (): Promise<void> {
    await Promise.all([this.ahead?.catch(ignore), this.seeking?.catch(ignore)])
    await this.source.close()
  }
}
