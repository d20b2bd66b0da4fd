// Many tabs on one database, in headless Chromium (playwright-core): the tests
// of test/browser/tabs-tests.ts (two tabs, a vanished client, failover when
// the owner's page is closed, crashed through chrome://crash or reloaded, a
// change feed across tabs, a hung owner, the torture, the compliance suite
// through a client tab). Skipped (loudly) without Chromium, like
// test/browser.test.ts; LSM_REQUIRE_BROWSERS=chromium makes that a failure.
import { skipBrowserTests } from './browser/skip'
import { chromiumMissing, findChromium, playwrightChromium } from './browser/harness'
import { registerTabTests } from './browser/tabs-tests'

const executablePath = findChromium()
const missing = chromiumMissing()

if (missing !== undefined) {
  skipBrowserTests('chromium', missing)
  process.on('exit', () => console.log(`${'#'.repeat(78)}\n# BROWSER TESTS SKIPPED: ${missing}\n${'#'.repeat(78)}`))
} else {
  registerTabTests({
    name: 'chromium',
    browser: `Chromium (${executablePath!})`,
    prefix: 'tabs',
    suiteAssertions: 4670,
    launch: async () => await playwrightChromium().launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
  })
}
