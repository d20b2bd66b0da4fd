// The parent's handle on a test/fixtures/mp-peer.ts child: a process with one
// multiProcess open of a database, driven over IPC.
import { fork, type ChildProcess } from 'node:child_process'
import * as path from 'node:path'

export interface PeerError extends Error { code?: string }

export class Peer {
  role: string | undefined
  /** Keys of its write stream, acknowledged (the put resolved). */
  readonly acked: string[] = []
  /** Keys of its write stream whose put failed, with the error code. */
  readonly failed: Array<[string, string]> = []
  /** Its write stream's counter keys: the versions acknowledged. */
  readonly counted: Array<[string, number]> = []
  /** Its write stream's counter keys: the versions whose put failed, with the error code. */
  readonly countFailed: Array<[string, number, string]> = []
  /** Called with each acknowledgement report, as it arrives. */
  onAcked: (keys: string[], counted: Array<[string, number]>) => void = () => {}
  exited = false
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>()
  private readonly roleWaiters: Array<() => void> = []

  private constructor (readonly child: ChildProcess) {
    child.on('message', (msg: Record<string, any>) => {
      if (msg.role !== undefined || 'role' in msg) {
        this.role = msg.role
        for (const w of this.roleWaiters.splice(0)) w()
      }
      if (msg.acked !== undefined) this.acked.push(...msg.acked)
      if (msg.failed !== undefined) this.failed.push(...msg.failed)
      if (msg.counted !== undefined) this.counted.push(...msg.counted)
      if (msg.countFailed !== undefined) this.countFailed.push(...msg.countFailed)
      if (msg.acked !== undefined || msg.counted !== undefined) this.onAcked(msg.acked ?? [], msg.counted ?? [])
      if (msg.id === undefined) return
      const w = this.waiting.get(msg.id)
      this.waiting.delete(msg.id)
      if (msg.error !== undefined) w?.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }))
      else w?.resolve(msg.result)
    })
    child.on('exit', () => {
      this.exited = true
      for (const w of this.waiting.values()) w.reject(new Error('peer exited'))
      this.waiting.clear()
      for (const w of this.roleWaiters.splice(0)) w()
    })
  }

  /** Starts a peer on `dir` (not yet open). */
  static async start (dir: string, options: Record<string, unknown> = {}): Promise<Peer> {
    const child = fork(path.join(__dirname, '..', 'fixtures', 'mp-peer.js'), [dir, JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const peer = new Peer(child)
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve())
      child.once('error', reject)
    })
    return peer
  }

  /** Starts a peer and opens the database; resolves to the peer. */
  static async open (dir: string, options: Record<string, unknown> = {}): Promise<Peer> {
    const peer = await Peer.start(dir, options)
    peer.role = await peer.request('open') as string
    return peer
  }

  get pid (): number {
    return this.child.pid!
  }

  request (op: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      this.child.send({ id, op, ...args })
    })
  }

  /** Resolves once the peer reports `role` (or exits). */
  async until (role: string): Promise<void> {
    while (this.role !== role && !this.exited) await new Promise<void>((resolve) => this.roleWaiters.push(resolve))
  }

  async kill (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exited) return
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.kill(signal)
    await exited
  }

  /** Signals without waiting for an exit (SIGSTOP, SIGCONT). */
  signal (signal: NodeJS.Signals): void {
    this.child.kill(signal)
  }
}
