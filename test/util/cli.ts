// The lsm-level command line tool (bin/lsm-level.js) run as a child process
// from the package root, its output collected.
import * as path from 'node:path'
import { spawn } from 'node:child_process'

const ROOT = path.join(__dirname, '..', '..', '..')
const BIN = path.join(ROOT, 'bin', 'lsm-level.js')

export interface CliRun { code: number | null, stdout: string, stderr: string }

export function cli (...args: string[]): Promise<CliRun> {
  return cliWithEnv({}, ...args)
}

/** As cli(), with these variables added to the environment. */
export function cliWithEnv (env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}
