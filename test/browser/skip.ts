// A browser test file that cannot run here (no browser, a package missing, or
// not opted in) registers its tests as skipped, saying why: tape prints
// "# SKIP <name>", which test/run.ts counts and lists, so that a skipped file
// is never read as a passed one. Where the environment says the browser must
// run (LSM_REQUIRE_BROWSERS, a comma-separated list such as "chromium", set by
// CI once it has installed the browser), the file fails instead.
import test from 'tape'

export function requiredBrowsers (): string[] {
  return (process.env.LSM_REQUIRE_BROWSERS ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
}

/** Registers `browser`'s tests as skipped because of `why`, or as a failure where the browser is required. */
export function skipBrowserTests (browser: string, why: string): void {
  if (requiredBrowsers().includes(browser)) {
    test(`${browser} tests`, (t) => {
      t.fail(`${browser} must run here (LSM_REQUIRE_BROWSERS=${process.env.LSM_REQUIRE_BROWSERS ?? ''}), but ${why}`)
      t.end()
    })
    return
  }
  test(`${browser} tests: ${why}`, { skip: true }, (t) => { t.end() })
}
