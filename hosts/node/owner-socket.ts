// Where the owner of a database (the process that holds its LOCK and runs its
// engine, for multiProcess opens) listens, and how the other openers reach it.
//
// The socket's address, from the database directory's real path (symlinks
// resolved, so every spelling of the directory finds the same owner):
// - Unix: `<dir>/OWNER.sock` when that path fits the ~107 bytes of sun_path
//   (104 on macOS): beside the database, it is found by every process that
//   can open the database, whatever its temp directory (containers, systemd's
//   PrivateTmp) and with the directory's permissions. A longer path falls
//   back to `<os temp dir>/lsm-level-<hash>.sock`, the hash of the real path
//   (processes with different temp directories then do not meet: keep
//   database paths short, or TMPDIR the same).
// - Windows: the named pipe `\\.\pipe\lsm-level-<hash>` (untested here).
//
// A socket file is removed only by a process holding the LOCK: the owner
// before it listens (a crashed owner's file is stale then) and when it closes.
import * as fs from 'node:fs'
import type * as net from 'node:net'
import * as os from 'node:os'
import * as path from 'node:path'
import { nodeCrypto, nodeNet } from './lazy-modules'
import type { ReadFeed } from './socket-channel'

/** The owner's socket file in the database directory. */
export const OWNER_SOCKET = 'OWNER.sock'

/** sun_path's size less its terminating NUL: 108 bytes on Linux, 104 on macOS and the BSDs. */
const SUN_PATH_MAX_BYTES = process.platform === 'linux' ? 107 : 103

/** The address the owner of the database in `dir` listens on (see above). */
export function ownerSocketPath (dir: string): string {
  const real = realDir(dir)
  const hash = nodeCrypto().createHash('sha256').update(real).digest('hex').slice(0, 24)
  if (process.platform === 'win32') return `\\\\.\\pipe\\lsm-level-${hash}`
  const beside = path.join(real, OWNER_SOCKET)
  if (Buffer.byteLength(beside) <= SUN_PATH_MAX_BYTES) return beside
  return path.join(os.tmpdir(), `lsm-level-${hash}.sock`)
}

function realDir (dir: string): string {
  try {
    return fs.realpathSync(dir)
  } catch {
    return path.resolve(dir)
  }
}

/**
 * Listens on `address` for the openers that come later. REQUIRES: the caller
 * holds the database's LOCK, so that a socket file there is a dead owner's
 * and is removed first.
 */
export async function listenAsOwner (address: string, onConnection: (socket: net.Socket) => void): Promise<net.Server> {
  if (process.platform !== 'win32') {
    try {
      fs.unlinkSync(address)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
  const server = nodeNet().createServer(onConnection)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(address, () => {
      server.off('error', reject)
      resolve()
    })
  })
  // The server is no reason to keep the process alive; its open database is not either.
  server.unref()
  return server
}

/**
 * Stops listening and removes the socket file. REQUIRES: the caller still
 * holds the LOCK (the file is not a later owner's).
 */
export async function stopListening (server: net.Server, address: string): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (process.platform !== 'win32') {
    try {
      fs.unlinkSync(address)
    } catch {}
  }
}

/**
 * Connects to the owner at `address`; rejects with the socket's error when
 * nobody listens (ENOENT, ECONNREFUSED: no owner yet, or a dead one's file)
 * or after `timeoutMs`. With `feed`, the socket's reads go to it
 * (socket-channel.ts, ReadFeed), not to 'data' events.
 */
export async function connectToOwner (address: string, timeoutMs: number, feed?: ReadFeed): Promise<net.Socket> {
  return await new Promise((resolve, reject) => {
    const socket = nodeNet().createConnection(feed === undefined ? { path: address } : { path: address, onread: feed.onread() })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(Object.assign(new Error(`No answer from ${address} within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }))
    }, timeoutMs)
    socket.once('connect', () => {
      clearTimeout(timer)
      socket.removeAllListeners('error')
      resolve(socket)
    })
    socket.once('error', (err) => {
      clearTimeout(timer)
      socket.destroy()
      reject(err)
    })
  })
}
