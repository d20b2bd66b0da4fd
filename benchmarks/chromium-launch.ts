// Headless Chromium for the browser benchmarks, with its profile in a new
// directory on disk (launchPersistentContext: OPFS and IndexedDB there as in
// a user's browser), removed when it closes.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { findChromium, CHROMIUM_CANDIDATES, type Context, playwrightChromium } from '../test/browser/harness'

/** Chromium, its profile in a new directory named from `prefix`: its version and driver, its context, and how to end it. */
export async function launchChromium (prefix: string): Promise<{ version: string, driver: string, context: Context, close: () => Promise<void> }> {
  const executablePath = findChromium()
  if (executablePath === undefined) throw new Error(`no Chromium found (${CHROMIUM_CANDIDATES.join(', ')}); set CHROMIUM_PATH`)
  const version = execFileSync(executablePath, ['--version'], { encoding: 'utf8' }).trim()
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const context = await playwrightChromium().launchPersistentContext(profile, { executablePath, args: ['--no-sandbox'] })
  return {
    version,
    driver: 'playwright-core',
    context,
    close: async () => {
      await context.close()
      fs.rmSync(profile, { recursive: true, force: true })
    }
  }
}
