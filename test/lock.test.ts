// The directory lock: within one process, across processes (a forked child
// holds it), and stale locks left by dead processes.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'
import { acquireLock } from '../hosts/node/lock'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { isLevelError } from '../lib/errors'
import { LOCK } from '../lib/filenames'
import { Random, seedFromEnv } from './util/random'

const tmpRoot = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-lock-test-'))
let dirCounter = 0
test.onFinish(() => nodeFs.rmSync(tmpRoot, { recursive: true, force: true }))

function freshDir (): string {
  const dir = path.join(tmpRoot, `db${++dirCounter}`)
  nodeFs.mkdirSync(dir)
  return dir
}

function expectLocked (t: test.Test, fn: () => unknown, what: string, pattern?: RegExp): void {
  try {
    const h = fn() as { release?: () => void }
    t.fail(`${what}: acquired`)
    h.release?.()
  } catch (err) {
    t.ok(isLevelError(err, 'LEVEL_LOCKED'), `${what}: LEVEL_LOCKED (${(err as Error).message})`)
    if (pattern !== undefined) t.match((err as Error).message, pattern, `${what}: message`)
  }
}

function lockText (pid: number, token: string, host = os.hostname()): string {
  return `version 1\npid ${pid}\nstart 0\nhost ${host}\ntoken ${token}\n`
}

const HOLDER = path.join(__dirname, 'fixtures', 'lock-holder.js')

function startHolder (dir: string): Promise<{ child: ChildProcess, msg: Record<string, unknown> }> {
  const child = fork(HOLDER, [dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    child.once('message', (msg) => resolve({ child, msg: msg as Record<string, unknown> }))
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`holder exited early with ${code}`)))
  })
}

function exited (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

// SIGKILLs the child and resolves once it has been reaped (its 'exit' event): a
// zombie still counts as alive to the lock. The listener goes on before the
// kill, and exited() is no use after it: Deno sets signalCode as soon as kill()
// is called, while the child may still be running or a zombie.
function killAndReap (child: ChildProcess): Promise<void> {
  const reaped = exited(child)
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  return reaped
}

test('same process: a second acquire is LEVEL_LOCKED; release then acquire works', (t) => {
  const dir = freshDir()
  const a = acquireLock(nodeFileSystem, dir)
  const text = nodeFs.readFileSync(path.join(dir, LOCK), 'utf8')
  t.match(text, new RegExp(`^version 1\\npid ${process.pid}\\nstart \\d+\\nhost .+\\ntoken [0-9a-f]{32}\\n$`), 'LOCK contents')
  expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'same path', /in this process/)
  expectLocked(t, () => acquireLock(nodeFileSystem, dir + path.sep + '.'), 'same path spelled differently')
  const link = path.join(tmpRoot, `link${dirCounter}`)
  nodeFs.symlinkSync(dir, link)
  expectLocked(t, () => acquireLock(nodeFileSystem, link), 'through a symlink (token check)', /in this process/)
  t.ok(nodeFs.existsSync(path.join(dir, LOCK)), 'the failed attempts left the LOCK file alone')
  a.release()
  t.notOk(nodeFs.existsSync(path.join(dir, LOCK)), 'release removed LOCK')
  a.release()
  const b = acquireLock(nodeFileSystem, dir)
  t.pass('re-acquired after release')
  b.release()
  const c = acquireLock(nodeFileSystem, link)
  t.pass('acquired through the symlink once free')
  c.release()
  t.deepEqual(nodeFs.readdirSync(dir), [], 'nothing left behind')
  t.end()
})

test('release leaves a LOCK that is no longer ours', (t) => {
  const dir = freshDir()
  const a = acquireLock(nodeFileSystem, dir)
  const other = lockText(1, 'ab'.repeat(16))
  nodeFs.writeFileSync(path.join(dir, LOCK), other)
  a.release()
  t.equal(nodeFs.readFileSync(path.join(dir, LOCK), 'utf8'), other, 'foreign LOCK untouched')
  t.end()
})

test('a live holder (pid 1) and a foreign host are LEVEL_LOCKED', (t) => {
  const dir = freshDir()
  nodeFs.writeFileSync(path.join(dir, LOCK), lockText(1, 'cd'.repeat(16)))
  expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'pid 1', /process 1:/)
  nodeFs.writeFileSync(path.join(dir, LOCK), lockText(process.pid, 'cd'.repeat(16), 'some-other-host.example'))
  expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'other host', /some-other-host/)
  t.end()
})

test('stale locks are taken over: our pid with a foreign token, a dead pid, garbage, empty', (t) => {
  const dir = freshDir()
  const lockPath = path.join(dir, LOCK)
  const takeOver = (what: string): void => {
    const h = acquireLock(nodeFileSystem, dir)
    t.match(nodeFs.readFileSync(lockPath, 'utf8'), new RegExp(`pid ${process.pid}\\n`), `${what}: taken over`)
    h.release()
    t.deepEqual(nodeFs.readdirSync(dir), [], `${what}: nothing left behind`)
  }

  nodeFs.writeFileSync(lockPath, lockText(process.pid, 'ef'.repeat(16)))
  takeOver('our pid, not our token')

  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  dead.once('exit', () => {
    nodeFs.writeFileSync(lockPath, lockText(dead.pid as number, '01'.repeat(16)))
    takeOver(`dead pid ${dead.pid}`)

    nodeFs.writeFileSync(lockPath, 'garbage\x00\xff')
    takeOver('garbage')
    nodeFs.writeFileSync(lockPath, '')
    takeOver('empty')
    nodeFs.writeFileSync(lockPath, lockText(0, '01'.repeat(16)))
    takeOver('pid 0 (never passed to kill)')
    t.end()
  })
})

test('an unwritten LOCK is waited on while it may be being written; one older than that, as a power loss leaves it, is stale at once', (t) => {
  const dir = freshDir()
  const lockPath = path.join(dir, LOCK)
  // The lock sleeps between its re-reads with Atomics.wait: counted here, and
  // `onSleep` runs as another process would meanwhile.
  let sleeps = 0
  let onSleep = (): void => {}
  const atomicsWait = Atomics.wait
  Atomics.wait = ((...args: [Int32Array, number, number, number?]) => { sleeps++; onSleep(); return atomicsWait(...args) }) as typeof Atomics.wait
  try {
    const aged = (content: string): void => {
      nodeFs.writeFileSync(lockPath, content)
      const then = new Date(Date.now() - 10_000)
      nodeFs.utimesSync(lockPath, then, then)
    }
    for (const [what, content] of [['empty', ''], ['zero-filled', '\0'.repeat(90)], ['cut short', lockText(process.pid, 'ab'.repeat(16)).slice(0, 20)]]) {
      aged(content)
      sleeps = 0
      const h = acquireLock(nodeFileSystem, dir)
      t.is(sleeps, 0, `${what}, last changed 10 s ago: taken over without waiting`)
      t.match(nodeFs.readFileSync(lockPath, 'utf8'), new RegExp(`pid ${process.pid}\\n`), `${what}: ours now`)
      h.release()
    }

    nodeFs.writeFileSync(lockPath, '')
    sleeps = 0
    const h = acquireLock(nodeFileSystem, dir)
    t.ok(sleeps > 0, `empty, just created: re-read while its creator may write it (${sleeps} waits), then taken over`)
    h.release()

    nodeFs.writeFileSync(lockPath, '')
    onSleep = () => { nodeFs.writeFileSync(lockPath, lockText(1, 'cd'.repeat(16))) }
    expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'empty, just created, then written by a live holder (pid 1) during the wait', /process 1:/)
  } finally {
    Atomics.wait = atomicsWait
  }
  t.end()
})

test('another process holds the lock: LEVEL_LOCKED; after SIGKILL the stale lock is taken over', async (t) => {
  const dir = freshDir()
  const { child, msg } = await startHolder(dir)
  try {
    t.equal(msg.locked, child.pid, 'child holds the lock')
    expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'held by the child', new RegExp(`process ${child.pid}:`))
    await killAndReap(child) // reaped: a zombie would still count as alive
    t.equal(child.signalCode, 'SIGKILL', 'child killed')
    const h = acquireLock(nodeFileSystem, dir)
    t.pass('acquired after the holder died')
    t.deepEqual(nodeFs.readdirSync(dir), [LOCK], 'the stale LOCK was replaced, nothing else left')

    // Now we hold it: a child cannot take it.
    const second = await startHolder(dir)
    t.equal(second.msg.error, 'LEVEL_LOCKED', `child sees LEVEL_LOCKED (${String(second.msg.message)})`)
    await exited(second.child)
    h.release()
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
})

test('a child that releases gracefully frees the lock', async (t) => {
  const dir = freshDir()
  const { child } = await startHolder(dir)
  try {
    expectLocked(t, () => acquireLock(nodeFileSystem, dir), 'held by the child')
    const released = new Promise((resolve) => child.once('message', resolve))
    child.send('release')
    await released
    t.notOk(nodeFs.existsSync(path.join(dir, LOCK)), 'LOCK removed by the child')
    const h = acquireLock(nodeFileSystem, dir)
    t.pass('acquired')
    h.release()
  } finally {
    await killAndReap(child)
  }
})

test('three takers of one stale lock, interleaved: one holds it, never two', (t) => {
  // Taker A judges the stale LOCK; B takes it over whole right after A's read;
  // C tries right after A's next change to the directory. All in this process,
  // each through its own path to the directory (the registry is by path; a
  // lock with this pid and a live token is held, as another process's would be).
  const dir = freshDir()
  const lockPath = path.join(dir, LOCK)
  const links = [1, 2].map((i) => {
    const link = path.join(tmpRoot, `link${dirCounter}-${i}`)
    nodeFs.symlinkSync(dir, link)
    return link
  })
  const results: Record<string, string> = {}
  const handles: Array<{ release: () => void }> = []
  const take = (name: string, at: string, fs = nodeFileSystem): void => {
    try {
      handles.push(acquireLock(fs, at))
      results[name] = 'holds'
    } catch (err) {
      results[name] = isLevelError(err) && err.code === 'LEVEL_LOCKED' ? 'LEVEL_LOCKED' : String(err)
    }
  }
  // A's file system: after its first read of LOCK, B runs; after its first change after that, C runs.
  let phase = 0
  const changes = ['rename', 'remove', 'createExclusive'] as const
  const hooked = new Proxy(nodeFileSystem, {
    get (target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const out = value.apply(target, args)
        if (phase === 0 && prop === 'readSmallFile' && args[0] === lockPath) {
          phase = 1
          take('B', links[0])
        } else if (phase === 1 && (changes as readonly PropertyKey[]).includes(prop)) {
          phase = 2
          take('C', links[1])
        }
        return out
      }
    }
  })
  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  dead.once('exit', () => {
    nodeFs.writeFileSync(lockPath, lockText(dead.pid as number, '02'.repeat(16)))
    take('A', dir, hooked)
    const holders = Object.entries(results).filter(([, r]) => r === 'holds').map(([n]) => n)
    t.equal(phase, 2, 'B ran after A read the stale lock, C after A\'s next change')
    t.equal(holders.length, 1, `one taker holds the lock (${JSON.stringify(results)})`)
    t.deepEqual(Object.values(results).filter((r) => r !== 'holds' && r !== 'LEVEL_LOCKED'), [], 'the others are LEVEL_LOCKED')
    for (const h of handles) h.release()
    t.deepEqual(nodeFs.readdirSync(dir), [], 'nothing left behind')
    for (const link of links) nodeFs.unlinkSync(link)
    t.end()
  })
})

const STEPPER = path.join(__dirname, 'fixtures', 'lock-stepper.js')
const STEP_TIMEOUT_MS = 60_000

/** A test/fixtures/lock-stepper.ts child: a taker of the lock whose file operations run one at a time when told. */
class Stepper {
  readonly child: ChildProcess
  /** Its last line: "op <method> <file>" (waiting), "result ..." or "released". */
  last = ''
  private readonly lines: string[] = []
  private wake: (() => void) | undefined

  constructor () {
    this.child = spawn(process.execPath, [STEPPER], { stdio: ['pipe', 'pipe', 'inherit'] })
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line)
      this.wake?.()
    })
    this.child.once('exit', () => this.wake?.())
  }

  /** Its next line; fails after STEP_TIMEOUT_MS of silence (a taker that never answers fails the test, not hangs it). */
  private async next (): Promise<string> {
    const until = Date.now() + STEP_TIMEOUT_MS
    while (this.lines.length === 0) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return (this.last = 'exited')
      if (Date.now() > until) throw new Error(`lock-stepper ${this.child.pid}: no answer within ${STEP_TIMEOUT_MS} ms after "${this.last}"`)
      let timer: ReturnType<typeof setTimeout> | undefined
      await new Promise<void>((resolve) => { this.wake = resolve; timer = setTimeout(resolve, 1000) })
      clearTimeout(timer)
      this.wake = undefined
    }
    return (this.last = this.lines.shift()!)
  }

  /** Sends a command and resolves with its next line. */
  async send (command: string): Promise<string> {
    this.child.stdin!.write(command + '\n')
    return await this.next()
  }

  get waiting (): boolean {
    return this.last.startsWith('op ')
  }

  async kill (): Promise<void> {
    await killAndReap(this.child)
  }
}

/** The name of a stale LOCK's break file at `level` (hosts/node/lock.ts: takeOverStale). */
function breakFile (lockBytes: string, level: number): string {
  return `${LOCK}.break-${createHash('sha256').update(lockBytes).digest('hex').slice(0, 16)}-${level}`
}

async function deadPid (): Promise<number> {
  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await exited(dead)
  return dead.pid as number
}

test('takers SIGKILLed while they hold their break file: the next open takes the stale lock over', async (t) => {
  const dir = freshDir()
  const stale = lockText(await deadPid(), '03'.repeat(16))
  nodeFs.writeFileSync(path.join(dir, LOCK), stale)
  for (const level of [0, 1]) {
    const taker = new Stepper()
    try {
      // Step it until it has made its break file, then kill it at its next file operation.
      let line = await taker.send(`acquire ${dir}`)
      while (line.startsWith('op ') && !line.endsWith(breakFile(stale, level))) line = await taker.send('go')
      t.match(line, new RegExp(`^op hardLink ${LOCK}\\.taker-[0-9a-f]+ ${breakFile(stale, level)}$`), `taker ${level + 1} makes its break file at level ${level}`)
      line = await taker.send('go')
      t.ok(line.startsWith('op '), `taker ${level + 1} holds it, not done (${line})`)
      await taker.send('die')
      t.equal(taker.child.signalCode, 'SIGKILL', `taker ${level + 1} killed while holding it`)
      t.ok(nodeFs.existsSync(path.join(dir, breakFile(stale, level))), `its break file at level ${level} stays`)
    } finally {
      await taker.kill()
    }
  }
  const h = acquireLock(nodeFileSystem, dir)
  t.match(nodeFs.readFileSync(path.join(dir, LOCK), 'utf8'), new RegExp(`pid ${process.pid}\\n`), 'the next open holds the lock')
  h.release()
  const left = nodeFs.readdirSync(dir).sort()
  t.deepEqual(left.filter((f) => !f.startsWith(`${LOCK}.taker-`)), [breakFile(stale, 0), breakFile(stale, 1)], 'left: the dead takers\' break files')
  t.equal(left.filter((f) => f.startsWith(`${LOCK}.taker-`)).length, 2, 'and their own files')
})

test('three takers stepped one file operation at a time in seeded random orders, after a dead taker: never two holders', async (t) => {
  const seed = seedFromEnv()
  const rnd = new Random(seed)
  const ROUNDS = Number(process.env.LSM_LOCK_SCHEDULES ?? 20)
  const pid = await deadPid()
  const takers = [new Stepper(), new Stepper(), new Stepper()]
  const twoHolders: string[] = []
  const others: string[] = []
  const stuck: string[] = []
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const dir = freshDir()
      const stale = lockText(pid, '04'.repeat(16))
      nodeFs.writeFileSync(path.join(dir, LOCK), stale)
      // A taker that died holding its break file (both this version's name and the former LOCK.break).
      const deadTaker = lockText(pid, '05'.repeat(16))
      nodeFs.writeFileSync(path.join(dir, breakFile(stale, 0)), deadTaker)
      nodeFs.writeFileSync(path.join(dir, `${LOCK}.break`), deadTaker)
      for (const taker of takers) await taker.send(`acquire ${dir}`)
      const ops: string[] = []
      // Runs of one taker's operations (it keeps going with probability 3/4), so that a taker can get far between two of another's.
      let taker = takers[0]
      for (let waiting = takers.filter((s) => s.waiting); waiting.length > 0; waiting = takers.filter((s) => s.waiting)) {
        if (!taker.waiting || rnd.int(4) === 0) taker = rnd.pick(waiting)
        ops.push(`${takers.indexOf(taker)}:${taker.last.slice(3)}`)
        await taker.send('go')
      }
      const results = takers.map((s) => s.last)
      const where = `round ${round} (seed ${seed}): ${JSON.stringify(results)} after ${ops.join(', ')}`
      if (results.filter((r) => r === 'result holds').length > 1) twoHolders.push(where)
      if (results.some((r) => r !== 'result holds' && r !== 'result LEVEL_LOCKED')) others.push(where)
      for (const taker of takers) await taker.send('release')
      try {
        acquireLock(nodeFileSystem, dir).release()
      } catch (err) {
        stuck.push(`${where}: then ${(err as Error).message}`)
      }
    }
  } finally {
    for (const taker of takers) await taker.kill()
  }
  t.same(twoHolders.slice(0, 3), [], `never two holders over ${ROUNDS} schedules`)
  t.same(others.slice(0, 3), [], 'the others are LEVEL_LOCKED')
  t.same(stuck.slice(0, 3), [], 'an open after each schedule takes the lock')
})
