// Writing to the terminal: buffered lines that wait for a slow reader, and a
// one-line progress display.

/** Buffered stdout that respects backpressure (a scan of millions of keys piped to `head`). */
export class Out {
  private parts: string[] = []
  private size = 0

  async line (s: string): Promise<void> {
    this.parts.push(s, '\n')
    this.size += s.length + 1
    if (this.size >= 64 * 1024) await this.flush()
  }

  async flush (): Promise<void> {
    if (this.parts.length === 0) return
    const text = this.parts.join('')
    this.parts = []
    this.size = 0
    if (!process.stdout.write(text)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          process.stdout.off('drain', done)
          process.stdout.off('close', done)
          process.stdout.off('error', done)
          resolve()
        }
        process.stdout.on('drain', done)
        process.stdout.on('close', done)
        process.stdout.on('error', done)
      })
    }
  }
}

/** One-line progress on a terminal; silent when stdout is not a TTY. */
export class Progress {
  private readonly tty = process.stdout.isTTY === true
  private timer: NodeJS.Timeout | undefined
  private shown = false

  set (text: string): void {
    if (!this.tty) return
    process.stdout.write(`\r\x1b[K${text}`)
    this.shown = true
  }

  /** Shows "<what>... <elapsed>s" until done() (for work with no countable steps). */
  elapsed (what: string): void {
    if (!this.tty) return
    const start = Date.now()
    const show = (): void => this.set(`${what}... ${((Date.now() - start) / 1000).toFixed(1)}s`)
    show()
    this.timer = setInterval(show, 200)
  }

  done (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (this.shown) process.stdout.write('\r\x1b[K')
    this.shown = false
  }
}
