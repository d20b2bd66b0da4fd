// The replica example (examples/replica) as real processes: a primary writing a
// workload of puts, deletes, batches and range clears while serving its change
// feed on a Unix socket, a replica starting from a checkpoint and applying the
// feed. Each side is SIGKILLed and restarted at random moments; in the end the
// replica holds exactly the primary's state. SEED=<n> replays the timings.
import test from 'tape'
import { spawn, type ChildProcess } from 'node:child_process'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const root = path.resolve(__dirname, '..', '..')
const TOTAL = 12000

interface Child { proc: ChildProcess, lines: string[], exited: Promise<void> }
/** What the examples wrote to stderr, all of them (also passed on to this process's). */
const stderr: string[] = []

function start (script: string, args: string[], onLine: (line: string) => void): Child {
  const proc = spawn(process.execPath, [path.join(root, 'examples', 'replica', script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr.push(chunk.toString())
    process.stderr.write(chunk)
  })
  const lines: string[] = []
  let buf = ''
  proc.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString()
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      lines.push(line)
      onLine(line)
    }
  })
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()))
  return { proc, lines, exited }
}

async function kill (c: Child): Promise<void> {
  c.proc.kill('SIGKILL')
  await c.exited
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

async function until (what: string, cond: () => boolean, ms = 90_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

async function entries (location: string): Promise<Array<[string, string]>> {
  const db = new LsmLevel<Buffer, Buffer>(location, { keyEncoding: 'buffer', valueEncoding: 'buffer', createIfMissing: false })
  await db.open()
  const all = await db.iterator().all()
  await db.close()
  return all.map(([k, v]) => [k.toString('hex'), v.toString('hex')])
}

test('a replica killed and restarted, and a primary killed and restarted, converge to the primary\'s state', async (t) => {
  const rnd = new Random(seed)
  const dir = tempDir()
  const primaryDir = path.join(dir, 'primary')
  const replicaDir = path.join(dir, 'replica')
  const socket = path.join(dir, 'feed.sock')
  let done = -1
  let applied = -1
  let ready = false
  let writing = false
  const startPrimary = (): Child => {
    ready = false
    writing = false
    return start('primary.js', [primaryDir, socket, '--write', String(TOTAL)], (line) => {
      if (line === 'ready') ready = true
      else if (line.startsWith('progress ')) writing = true
      else if (line.startsWith('done ')) done = Number(line.slice(5))
    })
  }
  const startReplica = (): Child => start('replica.js', [replicaDir, socket], (line) => {
    if (line.startsWith('applied ')) applied = Number(line.slice(8))
  })
  let primary = startPrimary()
  await until('the primary', () => ready)
  let replica = startReplica()
  const kills = { replica: 0, primary: 0 }
  let primaryKilledMidWorkload = 0
  for (const who of ['replica', 'primary', 'replica', 'primary', 'replica']) {
    if (who === 'replica') {
      await sleep(200 + rnd.int(600))
      await kill(replica)
      replica = startReplica()
    } else {
      // Killed while it writes: as soon as it reports progress since its start
      // (a fixed delay can outlast the whole workload on a fast machine).
      await until('the primary to write', () => writing || done >= 0)
      await kill(primary)
      if (done < 0) primaryKilledMidWorkload++
      primary = startPrimary()
      await until('the primary', () => ready)
    }
    kills[who as 'replica' | 'primary']++
  }
  await until('the primary\'s workload', () => done >= 0)
  await until(`the replica to apply sequence ${done}`, () => applied === done)
  await kill(replica)
  await kill(primary)
  const want = await entries(primaryDir)
  const got = await entries(path.join(replicaDir, 'db'))
  t.ok(primaryKilledMidWorkload > 0, `the primary was killed ${primaryKilledMidWorkload} times while writing`)
  t.ok(want.length > 100, `the primary holds ${want.length} entries at sequence ${done}`)
  t.same(got, want, `the replica equals the primary after ${kills.replica} replica and ${kills.primary} primary kills`)
  const warnings = stderr.join('').split('\n').filter((l) => l.includes('Warning'))
  t.same(warnings, [], 'no warning from the examples (a listener added per backpressure wait and never removed was one)')
})
