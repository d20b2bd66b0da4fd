// Real process kills: a child writes puts, deletes and batches and is SIGKILLed
// at a random moment, round after round on the same directory. After each kill the
// database must open (the dead holder's lock is taken over) and hold exactly the
// state after a prefix of the operation stream that includes every acknowledged
// write: in default mode too, since a killed process's write(2)s are in the OS.
// KILL_ROUNDS=<n> runs more rounds; SEED=<n> replays.
import test from 'tape'
import { fork } from 'node:child_process'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { seedFromEnv, Random } from './util/random'
import { tempDir } from './util/temp'
import { killOp, applyKillOp } from './util/kill-ops'

const seed = seedFromEnv()
const ROUNDS = Number(process.env.KILL_ROUNDS ?? 24)

interface Round { acked: number, exitSignal: string | null }

function runChild (dir: string, start: number, mode: string, killAfterMs: number): Promise<Round> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'fixtures', 'kill-writer.js'), [dir, String(seed), String(start), mode], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
    let acked = start - 1
    let buf = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString()
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        if (line === 'ready') setTimeout(() => child.kill('SIGKILL'), killAfterMs)
        else if (line.startsWith('ack ')) acked = Number(line.slice(4))
      }
    })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code} ${signal}`))
      else resolve({ acked, exitSignal: signal })
    })
  })
}

function same (a: Array<[string, string]>, model: Map<string, string>): boolean {
  if (a.length !== model.size) return false
  for (const [k, v] of a) if (model.get(k) !== v) return false
  return true
}

test(`SIGKILL rounds on one directory (${ROUNDS} rounds, sync / default / mixed)`, async (t) => {
  const dir = tempDir()
  const rnd = new Random(seed)
  const model = new Map<string, string>()
  let next = 0 // first operation not yet in the database
  let okRounds = 0
  let lostAcked = 0
  let totalAcked = 0
  const modes = ['default', 'sync', 'mixed']
  for (let round = 0; round < ROUNDS; round++) {
    const mode = modes[round % modes.length]
    const { acked } = await runChild(dir, next, mode, 20 + rnd.int(250))
    totalAcked += acked - next + 1
    // The state must equal the model after op p, for some p >= acked (one write may be in flight).
    const db = new LsmLevel(dir)
    await db.open()
    const entries = await db.iterator().all()
    await db.close()
    const candidate = new Map(model)
    for (let i = next; i <= acked; i++) applyKillOp(candidate, killOp(seed, i))
    let p = acked
    let matched = same(entries, candidate)
    if (!matched) {
      applyKillOp(candidate, killOp(seed, acked + 1)) // the write in flight when killed
      p = acked + 1
      matched = same(entries, candidate)
    }
    if (matched) {
      okRounds++
      for (let i = next; i <= p; i++) applyKillOp(model, killOp(seed, i))
      next = p + 1
    } else {
      lostAcked++
      t.fail(`round ${round} (${mode}): recovered ${entries.length} entries, not the state after op ${acked} or ${acked + 1}`)
      break
    }
  }
  t.comment(`${okRounds} rounds, ${totalAcked} acknowledged writes, ${next} operations in the database`)
  t.is(okRounds, ROUNDS, 'every round recovered a prefix holding every acknowledged write')
  t.is(lostAcked, 0, 'no acknowledged write lost')
  t.ok(next > ROUNDS, 'the writers made progress')
})
