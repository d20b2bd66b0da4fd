// Many tabs on one database in headless Firefox (test/browser/firefox.ts): the
// tests of test/browser/tabs-tests.ts, as in Chromium (test/browser-tabs.test.ts),
// each tab a page of one browser context (a container of the profile: its own
// OPFS, Web Locks and SharedWorkers). Firefox offers no way from here to crash
// one tab's content process (chrome://crash is Chromium's; WebDriver BiDi has
// no such command), so the crash failover is reported as skipped and the
// torture closes and reloads the owner's page. The compliance suite through a
// client tab is reported as skipped too, for its time (TABS_COMPLIANCE=1 runs
// it). Runs wherever Firefox is found;
// skipped (loudly) without it; LSM_REQUIRE_BROWSERS=firefox makes that a failure.
import { skipBrowserTests } from './browser/skip'
import { firefoxMissing, launchFirefox } from './browser/firefox'
import { registerTabTests } from './browser/tabs-tests'

const missing = firefoxMissing()

if (missing !== undefined) {
  skipBrowserTests('firefox', missing)
  process.on('exit', () => console.log(`${'#'.repeat(78)}\n# FIREFOX TESTS SKIPPED: ${missing}\n# Install it (apt-get install firefox-esr) to run them; .ci/run does.\n${'#'.repeat(78)}`))
} else {
  registerTabTests({
    name: 'firefox',
    browser: 'Firefox',
    prefix: 'firefox tabs',
    suiteAssertions: 4668,
    launch: launchFirefox,
    crash: 'no way to crash one tab\'s content process from WebDriver BiDi; chrome://crash is Chromium\'s',
    compliance: 'too slow for npm test: over 8 minutes on 2 busy cores, where the suite through the main thread\'s database (test/browser-firefox.test.ts) already takes minutes'
  })
}
