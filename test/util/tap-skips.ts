// The skips in tape's TAP output. Tape prints a skipped test (`{ skip: true }`
// or a reason string) as the comment "# SKIP <name>[ <reason>]" and runs none
// of it, and a skipped assertion (t.skip(msg), or an assertion given
// `{ skip }`) as "ok N <msg> # SKIP[ <reason>]", counted with the passes. The
// test runner (test/run.ts) lists each one, and the browser tests re-emit the
// skips of a page's run into their own output (test/browser/harness.ts), so a
// skip is never read as a pass.

const SKIPPED_TEST = /^# SKIP (.*)$/
const SKIPPED_ASSERTION = /^ok \d+(?: (.*?))? # SKIP(?: (.*))?$/

/** A skip: a whole test (tape ran none of it) or one assertion (tape counted it as a pass), described. */
export interface TapSkip { kind: 'test' | 'assertion', text: string }

/**
 * Each skip in `tap` (TAP text or its lines), described: a skipped test by its
 * name (and reason); a skipped assertion by the comment line before it (its
 * test's name, unless the test printed a comment since), its message and its
 * reason.
 */
export function tapSkips (tap: string | string[]): TapSkip[] {
  const lines = typeof tap === 'string' ? tap.split('\n') : tap
  const skips: TapSkip[] = []
  let testName = ''
  for (const raw of lines) {
    const line = raw.replace(/\r$/, '')
    const test = SKIPPED_TEST.exec(line)
    if (test !== null) {
      skips.push({ kind: 'test', text: test[1] })
      continue
    }
    const assertion = SKIPPED_ASSERTION.exec(line)
    if (assertion !== null) {
      const message = assertion[1] ?? ''
      const reason = assertion[2] ?? ''
      const text = `${testName === '' ? '' : testName + ': '}${message === '' ? '(an assertion)' : message}${reason === '' ? '' : ` (${reason})`}`
      skips.push({ kind: 'assertion', text })
      continue
    }
    if (line.startsWith('# ')) testName = line.slice(2)
  }
  return skips
}
