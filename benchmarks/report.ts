// Shared by the benchmark scripts: the machine and commit a run was made on, the
// command that reproduces it, directory sizes, number formatting, and writing a
// generated section into a Markdown file (BENCHMARKS.md) between markers, so
// that hand-written text around the sections survives regeneration.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'

export interface Machine {
  cpu: string
  cores: number
  ramGiB: number
  os: string
  node: string
  fileSystem: string
}

function osName (): string {
  try {
    const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(fs.readFileSync('/etc/os-release', 'utf8'))
    if (m) return `${m[1]} (${os.type()} ${os.release()})`
  } catch {}
  return `${os.type()} ${os.release()}`
}

/** The file system type of the directory (Linux: from /proc/mounts, longest matching mount point). */
function fileSystemOf (dir: string): string {
  try {
    let best = ''
    let type = 'unknown'
    for (const line of fs.readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mount, fsType] = line.split(' ')
      if (mount === undefined || fsType === undefined) continue
      if ((dir === mount || dir.startsWith(mount.endsWith('/') ? mount : mount + '/')) && mount.length >= best.length) {
        best = mount
        type = fsType
      }
    }
    return type
  } catch {
    return 'unknown'
  }
}

export function machine (): Machine {
  return {
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.cpus().length,
    ramGiB: Math.round(os.totalmem() / 2 ** 30),
    os: osName(),
    node: process.version,
    fileSystem: fileSystemOf(fs.realpathSync(os.tmpdir()))
  }
}

export function describeMachine (m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.ramGiB} GiB RAM, ${m.os}, Node ${m.node}, databases on ${m.fileSystem}`
}

/** The 1-minute load average (other processes competing for the cores). */
export function loadNote (): string {
  return os.loadavg()[0].toFixed(1)
}

/** The date line of a report: when, and how busy the machine was at the start and at the end. */
export function dateLine (started: Date, startLoad: string): string {
  return `- Date: ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC (1-minute load average on the ${os.cpus().length} cores: ${startLoad} at the start, ${loadNote()} at the end)`
}

/** The commit a run was built from (this checkout's, or another's), with "+ uncommitted changes" if the code (not the docs) differs from it. */
export function gitCommit (checkout = path.join(__dirname, '..', '..')): string {
  try {
    const opts = { cwd: checkout, encoding: 'utf8' as const, stdio: ['ignore', 'pipe', 'ignore'] as Array<'ignore' | 'pipe'> }
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], opts).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', 'index.ts', 'lib', 'adapters', 'hosts', 'benchmarks', 'test', 'package.json', 'tsconfig.json'], opts).trim() !== ''
    return dirty ? `${head} + uncommitted changes` : head
  } catch {
    return 'unknown'
  }
}

/** The command that reproduces the run: the npm script if run through npm, else node with the script, plus the given env settings. */
export function commandLine (envNames: string[]): string {
  const env = envNames.filter((n) => process.env[n] !== undefined).map((n) => `${n}=${process.env[n]}`)
  const event = process.env.npm_lifecycle_event
  const cmd = event !== undefined ? `npm run ${event}` : `node ${path.relative(process.cwd(), process.argv[1])}`
  return [...env, cmd].join(' ')
}

/** Total size in bytes of the files under a directory (their lengths, not allocated blocks). */
export function dirSize (dir: string): number {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    total += entry.isDirectory() ? dirSize(p) : fs.statSync(p).size
  }
  return total
}

export const int = (x: number): string => Math.round(x).toLocaleString('en-US')
export const mb = (bytes: number): string => (bytes / 1e6).toFixed(1) + ' MB'
export const ratio = (x: number): string => (x >= 10 ? x.toFixed(1) : x.toFixed(2)) + 'x'
export const micros = (x: number): string => x >= 100 ? x.toFixed(0) : x.toFixed(1)

/**
 * Replaces the section `id` of a Markdown file (between `<!-- begin:id -->` and
 * `<!-- end:id -->`) with `body`; appends it if the file lacks it; creates the file if needed.
 */
export function writeSection (file: string, id: string, body: string): void {
  const begin = `<!-- begin:${id} (generated: edit the script, not this section) -->`
  const end = `<!-- end:${id} -->`
  const block = `${begin}\n${body.trim()}\n${end}`
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
  const start = old.indexOf(`<!-- begin:${id} `)
  const stop = old.indexOf(end)
  let text: string
  if (start >= 0 && stop > start) text = old.slice(0, start) + block + old.slice(stop + end.length)
  else text = (old === '' ? '' : old.trimEnd() + '\n\n') + block + '\n'
  fs.writeFileSync(file, text)
}
