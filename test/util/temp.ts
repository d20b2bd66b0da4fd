// Temporary directories for tests, removed when the test process finishes.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'

const roots: string[] = []

export function tempDir (prefix = 'lsm-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  roots.push(dir)
  return dir
}

process.on('exit', () => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true })
})
