// Fails every tape test of ours that ends without an assertion. A test that
// never reaches an assertion otherwise passes, and looks the same as one that
// checked something (the compliance suite has such tests; see
// test/compliance-audit.ts). test/run.ts preloads this module into each test
// file's process (`node --require`); it replaces tape's export with a `test`
// function that counts each test's assertions and, when the test ends with
// none, adds a failure (and a test.skip that tape would drop unprinted is
// registered as skipped). Tests registered by abstract-level's compliance suite
// are left as they are: that suite is not ours to change, and our own tests
// cover what its zero-assertion tests meant to check.
import { isMainThread } from 'node:worker_threads'
import { TESTS_ENDED } from './tests-ended'

interface TapeTest {
  on (event: 'result', listener: (result: object | string) => void): void
  end (...args: unknown[]): void
  fail (message: string): void
}

type TestFunction = (t: TapeTest) => unknown
type Tape = ((...args: unknown[]) => unknown) & Record<string, unknown>

/** The test function with a check at its end: a failure if no assertion was made. */
function guarded (cb: TestFunction): TestFunction {
  return function (this: unknown, t: TapeTest) {
    let assertions = 0
    // Comments arrive as strings, assertions as objects.
    t.on('result', (result) => { if (typeof result === 'object') assertions++ })
    const end = t.end
    t.end = function (this: TapeTest, ...args: unknown[]) {
      if (assertions === 0) t.fail('this test made no assertion')
      return end.apply(this, args)
    }
    return cb.call(this, t)
  }
}

/** Whether the caller of `test` is abstract-level's compliance suite. */
function fromComplianceSuite (): boolean {
  return /abstract-level[\\/]test[\\/]/.test(new Error().stack?.split('\n').slice(3).join('\n') ?? '')
}

function install (): void {
  const id = require.resolve('tape')
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const tape = require(id) as Tape
  let announced = false
  /** Registers the end's announcement, once, after the first test (which makes tape's harness). */
  const announceEnd = (): void => {
    if (announced) return
    announced = true
    ;(tape.onFinish as (cb: () => void) => void)(() => { process.stdout.write(TESTS_ENDED + '\n') })
  }
  const wrap = (register: (...args: unknown[]) => unknown) => (...args: unknown[]): unknown => {
    const at = args.findIndex((a) => typeof a === 'function')
    if (at >= 0 && !fromComplianceSuite()) args[at] = guarded(args[at] as TestFunction)
    const registered = register(...args)
    announceEnd()
    return registered
  }
  const test = Object.assign(wrap(tape), tape) as Tape
  test.test = test
  test.only = wrap(tape.only as (...args: unknown[]) => unknown)
  // Tape's own test.skip makes a test it never registers: nothing is printed,
  // so no runner can count the skip. This one registers the test with
  // { skip: true }, which tape prints as "# SKIP <name>".
  test.skip = (...args: unknown[]): unknown => {
    const at = args.findIndex((a) => typeof a === 'object' && a !== null)
    if (at >= 0) args[at] = { ...(args[at] as object), skip: true }
    else args.splice(typeof args[0] === 'string' ? 1 : 0, 0, { skip: true })
    const registered = tape(...args)
    announceEnd()
    return registered
  }
  require.cache[id]!.exports = test
}

// Worker threads inherit --require; they run no tests.
if (isMainThread) install()
