// The database directory lock: one open database per directory, across processes
// and within one. Node has no flock(2), so this is a lock FILE whose holder is
// checked for liveness by pid.
//
// LOCK file contents (text, one "key value" pair per line, written with
// FileSystem.createExclusive, i.e. open(O_CREAT|O_EXCL) + write, not synced:
// the bytes matter only while their writer runs, and a power loss, which can
// leave them empty or partial, ends every writer; such a LOCK is judged stale
// as below. The fsync took 2-28 ms of an open's 5-70 ms on a loaded 2-core
// machine):
//
//   +--------------------------------------------+
//   | version 1\n                                |  FORMAT_VERSION
//   | pid <decimal pid>\n                        |  the holder's process.pid
//   | start <ms since epoch, approx.>\n          |  when the holder process started
//   | host <os.hostname()>\n                     |  where the pid is meaningful
//   | token <32 hex digits>\n                    |  random, one per acquisition
//   +--------------------------------------------+
//
// Unknown lines are ignored (room for later additions); `pid` and `token` are
// required.
//
// Acquire:
//   1. A module-level registry of resolved directory paths refuses a second open
//      in this process (LEVEL_LOCKED) without touching the file system.
//   2. createExclusive(LOCK). Success: we hold the lock.
//   3. EEXIST: read the LOCK file and judge its holder:
//      - another host: cannot be checked -> LEVEL_LOCKED (remove LOCK by hand).
//      - our own pid: held if its token belongs to a live handle of this process
//        (the same directory reached through another path, e.g. a symlink) ->
//        LEVEL_LOCKED; otherwise it was written by an earlier process that had
//        our pid -> stale.
//      - another pid: alive if process.kill(pid, 0) succeeds or fails with EPERM
//        -> LEVEL_LOCKED; ESRCH -> stale.
//      - empty or unparseable: usually a crash between create and write or a
//        power loss that kept LOCK's name but not its bytes, but possibly
//        another process between those two steps right now; re-read until it
//        is EMPTY_WAIT_MS old (by its modification time, where the file
//        system gives one; else for EMPTY_WAIT_MS), then treat as stale.
//   4. Stale: take the right to break it (the chain of break files
//      LOCK.break-<hash of its bytes>-<level>, see takeOverStale), re-read LOCK:
//      the bytes judged stale -> remove it; gone -> try again; other bytes ->
//      LEVEL_LOCKED; give the right back; then createExclusive(LOCK) again;
//      losing that race to another process is LEVEL_LOCKED.
// Release: remove LOCK only if it still holds our token; forget the registry
// entry. Idempotent. `restore` (a failed open) releases, then puts back the
// stale LOCK that acquiring took over, byte for byte, so that the directory is
// left as it was found.
//
// What this guarantees: two processes on one host sharing a local file system
// never both hold the lock through acquireLock, except in the gaps below; a
// process killed while holding the lock (SIGKILL, crash) does not block the
// database once the kernel has reaped it.
//
// What it does not guarantee:
// - pid reuse: if the dead holder's pid now belongs to an unrelated live process,
//   we report LEVEL_LOCKED although nobody holds the database. This is the safe
//   direction; the message names the pid so a user can check and remove LOCK.
// - A zombie (killed, not yet reaped by its parent) still counts as alive.
// - Processes in different pid namespaces (containers) that share the directory
//   and a hostname see each other's pids as meaningless: a live holder can look
//   dead and be taken over. Use distinct hostnames or do not share the directory.
// - Network file systems: O_EXCL creation and link(2) are not reliably atomic
//   across clients there, and the pid check is per host anyway; the host line
//   makes a foreign lock LEVEL_LOCKED, but the exclusivity itself is only as good
//   as the file system's.
// - A taker of a stale lock that dies during its takeover (a few file
//   operations) leaves its LOCK.taker-<token> and maybe a LOCK.break-* file
//   behind, for good: they are a few bytes each and do not block a later
//   takeover (the next takers go to the next level of that chain), but they
//   are not removed (a dead taker's break file must stay for the chain's rule
//   to hold). Remove them by hand when no process has the database open.
//   After 8 dead takers of one stale LOCK, takers get LEVEL_LOCKED. A holder
//   that stalls for longer than EMPTY_WAIT_MS between creating LOCK and writing
//   it can be taken over.
// - It is advisory: only processes using this module honour it.
import * as os from 'node:os'
import * as path from 'node:path'
import { nodeCrypto } from './lazy-modules'
import { hardLinkIfSupported, type FileSystem } from '../../lib/fs/fs'
import type { LockHandle } from '../../lib/platform'
import { ioError, levelError } from '../../lib/errors'
import { LOCK, join } from '../../lib/filenames'

/** Version of the LOCK file contents drawn above. */

/**
 * 32 random hex digits, one per acquisition: it tells this acquisition's LOCK
 * from another's, nothing more, so Math.random does (node:crypto would cost
 * every open its load).
 */
function randomToken (): string {
  let out = ''
  for (let i = 0; i < 4; i++) out += Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, '0')
  return out
}

export const FORMAT_VERSION = 1

/** Prefix of the break files that give the right to remove a stale LOCK (see takeOverStale). */
const LOCK_BREAK = `${LOCK}.break`
/** Prefix of a taker's own file, linked as its break file. */
const TAKER = `${LOCK}.taker`
/** Dead takers of one stale LOCK before giving up (each died during its takeover). */
const MAX_BREAK_LEVELS = 8

const EMPTY_WAIT_MS = 100
const EMPTY_POLL_MS = 10

// Resolved directory paths locked by this process.
const lockedDirs = new Set<string>()
// Tokens of the locks this process holds.
const liveTokens = new Set<string>()
// Tokens of this process's takers of a stale LOCK (only inside takeOverStale).
const breakingTokens = new Set<string>()

const processStart = Math.round(Date.now() - process.uptime() * 1000)

interface LockContents {
  pid: number
  token: string
  host?: string
}

function parseLock (text: string): LockContents | undefined {
  const fields = new Map<string, string>()
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ')
    if (sp > 0) fields.set(line.slice(0, sp), line.slice(sp + 1))
  }
  const pidText = fields.get('pid')
  const token = fields.get('token')
  if (pidText === undefined || token === undefined || !/^[1-9][0-9]{0,9}$/.test(pidText) || !/^[0-9a-f]+$/.test(token)) {
    return undefined
  }
  return { pid: Number(pidText), token, host: fields.get('host') }
}

function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH'
  }
}

function sleepSync (ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

function errCode (err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code
}

function locked (dir: string, why: string): Error {
  return levelError('LEVEL_LOCKED', `Database is locked by ${why}: ${dir}`, undefined, LOCK)
}

// Tries to create LOCK; true if created, false if it exists.
function tryCreate (fs: FileSystem, lockPath: string, data: Buffer): boolean {
  try {
    fs.createExclusive(lockPath, data, { sync: false })
    return true
  } catch (err) {
    if (errCode(err) === 'EEXIST') return false
    throw ioError(`Cannot create lock file: ${(err as Error).message}`, err, LOCK)
  }
}

// LOCK's bytes, or undefined if it does not exist.
function readLock (fs: FileSystem, lockPath: string): Buffer | undefined {
  try {
    return fs.readSmallFile(lockPath)
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined
    throw ioError(`Cannot read lock file: ${(err as Error).message}`, err, LOCK)
  }
}

/**
 * Takes the lock on database directory `dir` (which must exist), or throws
 * LEVEL_LOCKED if another process or another open in this process holds it.
 */
export function acquireLock (fs: FileSystem, dir: string): LockHandle {
  const key = path.resolve(dir)
  if (lockedDirs.has(key)) throw locked(dir, 'another open database in this process')

  const token = randomToken()
  const data = Buffer.from(
    `version ${FORMAT_VERSION}\npid ${process.pid}\nstart ${processStart}\nhost ${os.hostname()}\ntoken ${token}\n`
  )
  const lockPath = join(dir, LOCK)

  let replaced: Buffer | undefined
  if (!tryCreate(fs, lockPath, data)) {
    replaced = takeOverStale(fs, dir, lockPath, token, data)
    if (!tryCreate(fs, lockPath, data)) throw locked(dir, 'another process (it took the lock concurrently)')
  }

  lockedDirs.add(key)
  liveTokens.add(token)
  let released = false
  const release = (): void => {
    if (released) return
    released = true
    lockedDirs.delete(key)
    liveTokens.delete(token)
    const current = readLock(fs, lockPath)
    if (current !== undefined && parseLock(current.toString('latin1'))?.token === token) fs.remove(lockPath)
  }
  return {
    dir,
    release,
    restore (): void {
      const putBack = released ? undefined : replaced
      release()
      if (putBack !== undefined) tryCreate(fs, lockPath, putBack)
    }
  }
}

// Judges the existing LOCK; throws LEVEL_LOCKED if its holder may be alive,
// otherwise removes it and returns its bytes (or finds it already gone:
// undefined). Only a process holding the right to break that LOCK removes it,
// and only while LOCK still holds the bytes judged stale; nothing else removes
// a LOCK but its own holder, and nothing creates one over an existing one, so
// a live holder's LOCK is never removed.
//
// The right to break the LOCK whose bytes hash to K is a chain of break files
// LOCK.break-K-0, LOCK.break-K-1, ...: each a hard link of its taker's
// LOCK.taker-<token> (written whole before it gets the name: never seen
// empty), so each is made exclusively and complete. A taker tries level 0; a
// level held by a live taker is LEVEL_LOCKED; one held by a dead taker (died
// during its takeover) stays for good and sends it to the next level. Having
// made level n, the taker checks that levels 0..n-1 still hold the dead takers'
// bytes it judged: a file is made once (its taker's token is unique) and
// removed only by its own taker, so a dead one's cannot have been replaced, and
// a level removed and made again by another taker in the meantime shows. Then
// no other taker holds the right: one below n would have had to make a level
// that a dead taker holds, one at n would have had to make our file, one above
// n would have had to judge us dead. A taker removes only its own files; a
// dead taker's stay (see "does not guarantee" above).
function takeOverStale (fs: FileSystem, dir: string, lockPath: string, token: string, data: Buffer): Buffer | undefined {
  const judged = readJudged(fs, lockPath)
  if (judged === undefined) return undefined // released meanwhile; just try to create again
  refuseLiveHolder(dir, judged.holder)

  const key = nodeCrypto().createHash('sha256').update(judged.seen).digest('hex').slice(0, 16)
  const takerPath = join(dir, `${TAKER}-${token}`)
  breakingTokens.add(token)
  let held: string | undefined
  try {
    tryCreate(fs, takerPath, data)
    const dead: Array<{ file: string, seen: Buffer }> = []
    for (let level = 0; held === undefined; level++) {
      if (level === MAX_BREAK_LEVELS) throw locked(dir, `dead takers of a stale lock (remove LOCK and ${LOCK_BREAK}-* by hand if no process has the database open)`)
      const file = join(dir, `${LOCK_BREAK}-${key}-${level}`)
      if (makeBreakFile(fs, takerPath, file, data)) {
        held = file
      } else {
        const other = readJudged(fs, file)
        if (other === undefined) throw locked(dir, 'another process (it took over the stale lock meanwhile)')
        refuseLiveHolder(dir, other.holder, ' (taking over a stale lock)')
        dead.push({ file, seen: other.seen })
      }
    }
    for (const { file, seen } of dead) {
      if (!(readLock(fs, file)?.equals(seen) ?? false)) throw locked(dir, 'another process (it took over the stale lock meanwhile)')
    }
    const now = readLock(fs, lockPath)
    if (now === undefined) return undefined
    if (!now.equals(judged.seen)) throw locked(dir, 'another process (it took the lock concurrently)')
    fs.remove(lockPath)
    return judged.seen
  } finally {
    breakingTokens.delete(token)
    if (held !== undefined) fs.remove(held)
    fs.remove(takerPath)
  }
}

// Makes break file `file` hold `data`, exclusively: a hard link of the
// taker's file (whole at once), or, where the file system cannot link, an
// exclusive create (then, as for LOCK, a taker stalled between its create and
// write for EMPTY_WAIT_MS can be judged dead). False if `file` exists.
function makeBreakFile (fs: FileSystem, takerPath: string, file: string, data: Buffer): boolean {
  try {
    if (hardLinkIfSupported(fs, takerPath, file)) return true
  } catch (err) {
    if (errCode(err) === 'EEXIST') return false
    throw ioError(`Cannot create lock file: ${(err as Error).message}`, err, LOCK)
  }
  return tryCreate(fs, file, data)
}

// A lock file's bytes and holder (waiting a little for a file created but not
// yet written); undefined if it does not exist.
function readJudged (fs: FileSystem, file: string): { seen: Buffer, holder: LockContents | undefined } | undefined {
  let seen = readLock(fs, file)
  if (seen === undefined) return undefined
  let holder = parseLock(seen.toString('latin1'))
  const wait = holder === undefined ? unwrittenWaitMs(fs, file) : 0
  for (let waited = 0; holder === undefined && waited < wait; waited += EMPTY_POLL_MS) {
    sleepSync(EMPTY_POLL_MS)
    seen = readLock(fs, file)
    if (seen === undefined) return undefined
    holder = parseLock(seen.toString('latin1'))
  }
  return { seen, holder }
}

// How long an unparseable lock file may still be one whose creator is about
// to write it: what is left of EMPTY_WAIT_MS since the file was last changed,
// where the file system tells that; otherwise all of it. A file older than
// that is what a crash left: LOCK is not synced, so after a power loss it is
// often there with its bytes lost, and the first open after one does not wait.
function unwrittenWaitMs (fs: FileSystem, file: string): number {
  let modified: number | undefined
  try {
    modified = fs.modifiedMs?.(file)
  } catch {}
  if (modified === undefined) return EMPTY_WAIT_MS
  return Math.min(EMPTY_WAIT_MS, Math.max(0, modified + EMPTY_WAIT_MS - Date.now()))
}

// Throws LEVEL_LOCKED if the holder may be alive (on another host: cannot be checked).
function refuseLiveHolder (dir: string, holder: LockContents | undefined, doing = ''): void {
  if (holder === undefined) return
  if (holder.host !== undefined && holder.host !== os.hostname()) {
    throw locked(dir, `process ${holder.pid} on host ${holder.host}${doing}`)
  }
  if (holder.pid === process.pid) {
    if (liveTokens.has(holder.token) || breakingTokens.has(holder.token)) throw locked(dir, 'another open database in this process')
  } else if (isAlive(holder.pid)) {
    throw locked(dir, `process ${holder.pid}${doing}`)
  }
}
