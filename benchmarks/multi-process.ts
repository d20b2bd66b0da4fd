// multiProcess benchmark (`npm run bench:multi`): what a client process pays
// for going through the owner, beside the owner's own figures and
// classic-level in-process, as ratios; and the failover time.
//
//   codec      the socket channel's frame codec (hosts/node/frame-codec.ts)
//              against v8.serialize (the structured clone) and JSON with
//              base64 bytes, for a put and a get request and their replies
//              (compact messages), and a nextv(64) reply (tagged): encode +
//              decode per second
//   put / get  awaited single operations, one at a time (16-byte keys, 100-byte
//              values, 10,000 keys stored): a client over the socket (the
//              owner in a child process), the owner itself (multiProcess on,
//              no client busy), LsmLevel without multiProcess, classic-level
//   get x64    gets with 64 in flight
//   floor      awaited round trips to an echo server in another process (bare;
//              with a 140-byte file write before the answer, as a put's log
//              append; and that with the socket channel's framing on both
//              sides), in rounds alternating with rounds of a client's
//              awaited puts: each round's rates and ratios to the bare echo
//   failover   the owner (a child process) holding a full write buffer (the
//              default 4 MiB, 99% full, never flushed: puts of 100-byte values,
//              a 3 MB log, and of 1,000-byte values, a 4 MB log, alternately)
//              SIGKILLed; the time from the kill to the first successful put
//              on a client (this process), which takes over: the lock, the
//              log replay (the part of the logs its reads had not tailed), the
//              socket (its reads, from its own files, go on meanwhile); p50
//              and p99 over the rounds of each fill
//
//   npm run bench:multi
//   MP_OPS=20000 MP_ROUNDS=20 ...      operations per workload, failover rounds
//   MP_TP_ROUNDS=3 ...                 rounds of the put/get workloads (the best kept)
//   MP_PARTS=failover ...              only these parts (codec, throughput, floor, failover)
//   BENCH_MARKDOWN=BENCHMARKS.md ...   also write the section "multi-process" of that file (all parts)
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import * as v8 from 'node:v8'
import * as net from 'node:net'
import { fork } from 'node:child_process'
import { decodeMessage, encodeMessage } from '../hosts/node/frame-codec'
import { encodeFrame, FrameReader } from '../hosts/node/socket-channel'
import { ClassicLevel } from 'classic-level'
import { LsmLevel } from '../index'
import { DEFAULT_WRITE_BUFFER_SIZE } from '../lib/options'
import { ENTRY_OVERHEAD } from '../lib/memtable/memtable'
import { Peer } from '../test/util/mp-peer'
import { Random } from '../test/util/random'
import { commandLine, dateLine, describeMachine, gitCommit, int, loadNote, machine, ratio, writeSection } from './report'

const OPS = Number(process.env.MP_OPS ?? 20_000)
const ROUNDS = Number(process.env.MP_ROUNDS ?? 20)
const TP_ROUNDS = Number(process.env.MP_TP_ROUNDS ?? 4)
const KEYS = 10_000
const PARTS = new Set((process.env.MP_PARTS ?? 'codec,throughput,floor,failover').split(','))
const BUF = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const
const root = process.argv[2] === 'echo' ? '' : fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-bench-mp-'))

function buffers (n: number, size: number, seed: number): Buffer[] {
  const rnd = new Random(seed)
  return Array.from({ length: n }, () => {
    const b = Buffer.allocUnsafe(size)
    for (let j = 0; j < size; j += 4) b.writeUInt32LE(rnd.next(), j)
    return b
  })
}

const keys = buffers(KEYS, 16, 1)
const values = buffers(KEYS, 100, 2)

function perSecond (count: number, ms: number): number {
  return count / (ms / 1000)
}

async function timed (count: number, fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return perSecond(count, performance.now() - t0)
}

function codec (): Array<[string, number, number, number]> {
  const key = keys[0]
  const value = values[0]
  const messages: Array<[string, unknown]> = [
    ['put request', [{ id: 1, op: 'put', key, value, sync: false }]],
    ['put reply', [{ id: 1, result: undefined }]],
    ['get request', [{ id: 1, op: 'get', key }]],
    ['get reply', [{ id: 1, result: value }]],
    ['nextv(64) reply', [{ id: 1, result: Array.from({ length: 64 }, (_, i) => [keys[i], values[i]]) }]]
  ]
  const b64 = (x: unknown): unknown => x instanceof Uint8Array ? { $b: Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64') } : Array.isArray(x) ? x.map(b64) : x !== null && typeof x === 'object' ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, b64(v)])) : x
  const unb64 = (x: unknown): unknown => x !== null && typeof x === 'object' && '$b' in (x as object) ? Buffer.from((x as { $b: string }).$b, 'base64') : Array.isArray(x) ? x.map(unb64) : x !== null && typeof x === 'object' ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, unb64(v)])) : x
  const n = 50_000
  return messages.map(([name, m]) => {
    let t0 = performance.now()
    for (let i = 0; i < n; i++) v8.deserialize(v8.serialize(m))
    const viaV8 = perSecond(n, performance.now() - t0)
    t0 = performance.now()
    for (let i = 0; i < n; i++) unb64(JSON.parse(JSON.stringify(b64(m))))
    const viaJson = perSecond(n, performance.now() - t0)
    t0 = performance.now()
    for (let i = 0; i < n; i++) decodeMessage(encodeMessage(m, 0))
    const viaTags = perSecond(n, performance.now() - t0)
    return [name, viaTags, viaV8, viaJson]
  })
}

/** Operations per second; `first`: ms of the first get after the puts (a client's includes catching up with them). */
interface Figures { put: number, first: number, get: number, get64: number }

async function workloads (db: any): Promise<Figures> {
  const put = await timed(OPS, async () => {
    for (let i = 0; i < OPS; i++) await db.put(keys[i % KEYS], values[i % KEYS])
  })
  const t0 = performance.now()
  await db.get(keys[0])
  const first = performance.now() - t0
  const get = await timed(OPS, async () => {
    for (let i = 0; i < OPS; i++) await db.get(keys[(i * 7919) % KEYS])
  })
  const get64 = await timed(OPS, async () => {
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < OPS) await db.get(keys[(next++ * 7919) % KEYS])
    }
    await Promise.all(Array.from({ length: 64 }, lane))
  })
  return { put, first, get, get64 }
}

async function fill (db: any): Promise<void> {
  for (let i = 0; i < KEYS; i += 1000) await db.batch(keys.slice(i, i + 1000).map((k, j) => ({ type: 'put', key: k, value: values[i + j] })))
}

/** A full collection between measurements, when node runs with --expose-gc (npm run bench:multi does). */
function collectGarbage (): void {
  (globalThis as { gc?: () => void }).gc?.()
}

function best (a: Figures | undefined, b: Figures): Figures {
  if (a === undefined) return b
  return { put: Math.max(a.put, b.put), first: Math.min(a.first, b.first), get: Math.max(a.get, b.get), get64: Math.max(a.get64, b.get64) }
}

const OPENERS: Array<[string, (d: string) => any]> = [
  ['owner (multiProcess, direct)', (d) => new LsmLevel<Buffer, Buffer>(d, { ...BUF, multiProcess: true })],
  ['LsmLevel (no multiProcess)', (d) => new LsmLevel<Buffer, Buffer>(d, BUF)],
  ['classic-level', (d) => new ClassicLevel<Buffer, Buffer>(d, BUF)]
]

/** Each opener's best of TP_ROUNDS rounds, the openers interleaved; the first round of each also warms it up. */
async function throughput (): Promise<Map<string, Figures>> {
  const out = new Map<string, Figures>()
  // A client of an owner in another process.
  const dir = path.join(root, 'client')
  const owner = await Peer.open(dir)
  const client = new LsmLevel<Buffer, Buffer>(dir, { ...BUF, multiProcess: true })
  await client.open()
  if (client.processRole !== 'client') throw new Error('expected a client')
  await fill(client)
  const local = await Promise.all(OPENERS.map(async ([name, make]) => {
    const db = make(path.join(root, name.replace(/\W+/g, '-')))
    await db.open()
    await fill(db)
    return db
  }))
  // The order rotates each round: an opener measured right after another pays
  // for the garbage that one left (the client's most), measured as up to 3x.
  const all: Array<[string, any]> = [['client (over the socket)', client], ...OPENERS.map(([name], i): [string, any] => [name, local[i]])]
  for (let round = 0; round < TP_ROUNDS; round++) {
    for (let i = 0; i < all.length; i++) {
      const [name, db] = all[(i + round) % all.length]
      collectGarbage()
      out.set(name, best(out.get(name), await workloads(db)))
    }
  }
  await client.close()
  await owner.kill()
  for (const db of local) await db.close()
  return out
}

/** What an echo server in another process does with each message before it answers (the floor's variants). */
type EchoMode = 'bare' | 'write' | 'framed'

/** Bytes of a client put's log record (a 16-byte key, a 100-byte value): the owner's write(2) per put. */
const LOG_RECORD_BYTES = 140

/**
 * The floor: awaited round trips over a Unix socket to an echo server in
 * another Node process (this script run with 'echo'): 'bare' echoes one byte;
 * 'write' also makes a synchronous 140-byte write to a file before it answers
 * (a put's log append: the write reaches the OS before the ack); 'framed'
 * does that with the socket channel's framing on both sides (a put request
 * and its reply as the remote protocol's messages, encoded and decoded by
 * frame-codec.ts), without the remote protocol's layers or the engine.
 */
class Echo {
  private nextId = 1
  private constructor (private readonly child: ReturnType<typeof fork>, private readonly socket: net.Socket, readonly mode: EchoMode) {}

  static async start (mode: EchoMode): Promise<Echo> {
    const address = path.join(root, `echo-${mode}.sock`)
    const child = fork(__filename, ['echo', address, mode, path.join(root, `echo-${mode}.log`)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    await new Promise((resolve) => child.once('message', resolve))
    const socket = net.createConnection(address)
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.setNoDelay(true)
    return new Echo(child, socket, mode)
  }

  /** The server's CPU time so far, µs. */
  async cpu (): Promise<number> {
    const answer = new Promise<number>((resolve) => this.child.once('message', (m) => resolve(m as number)))
    this.child.send('cpu')
    return await answer
  }

  /** Round trips per second over OPS round trips, and each side's CPU time per round trip. */
  async round (): Promise<Measured> {
    return await measured(async () => await this.trips(), async () => await this.cpu())
  }

  private async trips (): Promise<void> {
    if (this.mode === 'framed') return await this.framedRound()
    for (let i = 0; i < OPS; i++) {
      const echoed = new Promise((resolve) => this.socket.once('data', resolve))
      this.socket.write('x')
      await echoed
    }
  }

  /** Each round trip a framed put request out and its framed reply back, decoded. */
  private async framedRound (): Promise<void> {
    const reader = new FrameReader()
    let settle: (() => void) | undefined
    const onData = (chunk: Buffer): void => {
      for (const m of reader.push(chunk) as Array<Array<{ id: number }>>) if (m[0].id > 0) settle?.()
    }
    this.socket.on('data', onData)
    for (let i = 0; i < OPS; i++) {
      const echoed = new Promise<void>((resolve) => { settle = resolve })
      this.socket.write(encodeFrame([{ id: this.nextId++, op: 'put', key: keys[i % KEYS], value: values[i % KEYS], sync: false }]))
      await echoed
    }
    this.socket.off('data', onData)
  }

  stop (): void {
    this.socket.destroy()
    this.child.kill()
  }
}

/** The echo server (this script run with 'echo <address> <mode> <file>'). */
function echoServer (address: string, mode: EchoMode, file: string): void {
  const fd = fs.openSync(file, 'w')
  const record = Buffer.alloc(LOG_RECORD_BYTES, 1)
  let at = 0
  const append = (bytes: Buffer): void => {
    at += fs.writeSync(fd, bytes, 0, bytes.length, at)
    if (at > 64 * 1024 * 1024) at = 0
  }
  net.createServer((socket) => {
    socket.setNoDelay(true)
    if (mode !== 'framed') {
      socket.on('data', (d) => {
        if (mode === 'write') append(record)
        socket.write(d)
      })
      return
    }
    const reader = new FrameReader()
    socket.on('data', (chunk) => {
      for (const m of reader.push(chunk) as Array<Array<{ id: number, key: Buffer, value: Buffer }>>) {
        const req = m[0]
        // The record as a log holds it: a header, the key and the value.
        const rec = Buffer.allocUnsafe(LOG_RECORD_BYTES)
        rec.fill(0, 0, LOG_RECORD_BYTES - req.key.length - req.value.length)
        req.key.copy(rec, LOG_RECORD_BYTES - req.key.length - req.value.length)
        req.value.copy(rec, LOG_RECORD_BYTES - req.value.length)
        append(rec)
        socket.write(encodeFrame([{ id: req.id, result: undefined }]))
      }
    })
  }).listen(address, () => process.send!('ready'))
  process.on('message', () => {
    const { user, system } = process.cpuUsage()
    process.send!(user + system)
  })
}

/** OPS operations' rate (per second) and CPU time per operation (µs) in this process and the other. */
interface Measured { rate: number, here: number, there: number }

async function measured (run: () => Promise<void>, otherCpu: () => Promise<number>): Promise<Measured> {
  const there0 = await otherCpu()
  const here0 = process.cpuUsage()
  const t0 = performance.now()
  await run()
  const ms = performance.now() - t0
  const here = process.cpuUsage(here0)
  const there = await otherCpu()
  return { rate: perSecond(OPS, ms), here: (here.user + here.system) / OPS, there: (there - there0) / OPS }
}

/** One round of each: the echo variants and a client's awaited puts. */
interface FloorRound { bare: Measured, write: Measured, framed: Measured, put: Measured }

/**
 * A client's awaited puts against the floor at the same moment: rounds of
 * OPS round trips of each echo variant and of OPS puts, alternating; each
 * round's rates (the machine's load changes from minute to minute: ratios of
 * one moment are steadier than rates of different ones).
 */
async function putsAgainstFloor (): Promise<FloorRound[]> {
  const echoes = [await Echo.start('bare'), await Echo.start('write'), await Echo.start('framed')]
  const dir = path.join(root, 'floor')
  const owner = await Peer.open(dir)
  const client = new LsmLevel<Buffer, Buffer>(dir, { ...BUF, multiProcess: true })
  await client.open()
  const rounds: FloorRound[] = []
  for (let round = 0; round < TP_ROUNDS + 1; round++) {
    collectGarbage()
    const [bare, write, framed] = [await echoes[0].round(), await echoes[1].round(), await echoes[2].round()]
    collectGarbage()
    const put = await measured(async () => {
      for (let i = 0; i < OPS; i++) await client.put(keys[i % KEYS], values[i % KEYS])
    }, async () => await owner.request('cpu') as number)
    if (round > 0) rounds.push({ bare, write, framed, put }) // round 0 warms up
  }
  await client.close()
  await owner.kill()
  for (const e of echoes) e.stop()
  return rounds
}

/** The puts of `valueBytes`-byte values (keys f<8 digits>) that fill 99% of the default write buffer, in whole batches of 100. */
function fullBuffer (valueBytes: number): number {
  return Math.floor(0.99 * DEFAULT_WRITE_BUFFER_SIZE / (9 + valueBytes + ENTRY_OVERHEAD) / 100) * 100
}

interface Failover { ms: number, logBytes: number, replayed: number, adopted: number }

/** One failover: ms from the owner's SIGKILL to the first write acknowledged on this process (which takes over), the log's size, and the records its open replayed and adopted. */
async function failover (round: number, valueBytes: number): Promise<Failover> {
  const dir = path.join(root, `failover-${round}`)
  const owner = await Peer.open(dir)
  const count = fullBuffer(valueBytes)
  await owner.request('fill', { count, valueBytes })
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  if (db.processRole !== 'client') throw new Error('expected a client')
  const logBytes = fs.readdirSync(dir).filter((f) => f.endsWith('.log')).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)
  // Preallocation aside, the log holds every put: none was flushed.
  if (logBytes < count * valueBytes) throw new Error(`the log holds ${logBytes} bytes: the fill was flushed`)
  await db.get('f00000000')
  const t0 = performance.now()
  owner.signal('SIGKILL')
  // A client's reads need no owner: the first write after the kill waits for
  // the takeover (one sent before the client saw the kill fails, outcome unknown).
  for (;;) {
    try {
      await db.put('f00000000', 'after')
      break
    } catch (err) {
      if ((err as { code?: string }).code !== 'LEVEL_OUTCOME_UNKNOWN') throw err
    }
  }
  const ms = performance.now() - t0
  if ((db.processRole as string) !== 'owner') throw new Error('expected the client to take over')
  const { recordsReplayed, recordsAdopted } = db.stats().recovery
  await db.close()
  await owner.kill()
  fs.rmSync(dir, { recursive: true, force: true })
  return { ms, logBytes, replayed: recordsReplayed, adopted: recordsAdopted }
}

function pct (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

async function main (): Promise<void> {
  const started = new Date()
  const startLoad = loadNote()
  const lines: string[] = []
  const say = (s: string): void => { console.log(s); lines.push(s) }

  if (PARTS.has('codec')) {
    say('Frame codec, encode + decode per second (frame-codec.ts: puts, gets and their replies as compact messages, the nextv reply tagged):')
    say('')
    say('| message | frame-codec.ts | v8.serialize | JSON + base64 | frame-codec vs v8 | frame-codec vs JSON |')
    say('|---|---:|---:|---:|---:|---:|')
    for (const [name, a, b, c] of codec()) say(`| ${name} | ${int(a)} | ${int(b)} | ${int(c)} | ${ratio(a / b)} | ${ratio(a / c)} |`)
    say('')
  }

  if (PARTS.has('throughput')) {
    const figures = await throughput()
    const owner = figures.get('owner (multiProcess, direct)')!
    const classic = figures.get('classic-level')!
    say(`Awaited single operations, ${int(OPS)} each (16-byte keys, 100-byte values, ${int(KEYS)} keys; the best of ${TP_ROUNDS} rounds, openers interleaved, their order rotated, a full GC before each):`)
    say('')
    say(`The first get after an opener's ${int(OPS)} puts is timed on its own (a client's catches up with them: its own read-only open replays the owner's log), then the ${int(OPS)} gets.`)
    say('')
    say('| opener | put /s | first get after the puts | get /s | get x64 in flight /s | put vs owner | get vs owner | get x64 vs owner | put vs classic-level | get vs classic-level |')
    say('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (const [name, f] of figures) {
      say(`| ${name} | ${int(f.put)} | ${f.first.toFixed(1)} ms | ${int(f.get)} | ${int(f.get64)} | ${ratio(f.put / owner.put)} | ${ratio(f.get / owner.get)} | ${ratio(f.get64 / owner.get64)} | ${ratio(f.put / classic.put)} | ${ratio(f.get / classic.get)} |`)
    }
    say('')
  }
  if (PARTS.has('floor')) {
    const rounds = await putsAgainstFloor()
    say(`The floor: awaited round trips over a Unix socket to an echo server in another Node process, in rounds of ${int(OPS)} alternating with rounds of a client's ${int(OPS)} awaited puts (each rate, then its time per operation over the bare echo's):`)
    say('- bare echo: one byte each way;')
    say(`- echo + write: the server also writes ${LOG_RECORD_BYTES} bytes to a file (\`writeSync\`, as a put's log append) before it answers;`)
    say('- echo + write, framed: a put request and its reply as the socket channel\'s frames (the remote protocol\'s messages, frame-codec.ts), encoded and decoded on both sides, the same write; no remote protocol layers, no engine.')
    say('')
    say('| round | bare echo /s | echo + write /s | framed echo + write /s | client put /s | echo + write vs bare | framed vs bare | put vs bare |')
    say('|---|---:|---:|---:|---:|---:|---:|---:|')
    const x = (bare: Measured, m: Measured): string => `${(bare.rate / m.rate).toFixed(2)}x`
    rounds.forEach((r, i) => say(`| ${i + 1} | ${int(r.bare.rate)} | ${int(r.write.rate)} | ${int(r.framed.rate)} | ${int(r.put.rate)} | ${x(r.bare, r.write)} | ${x(r.bare, r.framed)} | ${x(r.bare, r.put)} |`))
    say('')
    say('CPU time per operation (`process.cpuUsage`, whole processes), µs, client / server (the owner, for a put), each round:')
    say('')
    say('| round | bare echo | echo + write | framed echo + write | client put |')
    say('|---|---:|---:|---:|---:|')
    const us = (m: Measured): string => `${m.here.toFixed(1)} / ${m.there.toFixed(1)}`
    rounds.forEach((r, i) => say(`| ${i + 1} | ${us(r.bare)} | ${us(r.write)} | ${us(r.framed)} | ${us(r.put)} |`))
    say('')
  }

  if (PARTS.has('failover')) {
    say(`Failover with a full write buffer (${DEFAULT_WRITE_BUFFER_SIZE / 1024 / 1024} MiB, 99% full), the kill to the first acknowledged write, over ${ROUNDS} rounds of each fill (alternating):`)
    say('')
    say('| fill | log | records replayed / adopted by the takeover | p50 | p99 | min | max |')
    say('|---|---:|---:|---:|---:|---:|---:|')
    const fills = [100, 1000]
    const runs = new Map<number, Failover[]>(fills.map((v) => [v, []]))
    for (let r = 0; r < ROUNDS; r++) {
      for (const v of fills) runs.get(v)!.push(await failover(r, v))
    }
    for (const v of fills) {
      const all = runs.get(v)!
      const times = all.map((f) => f.ms).sort((a, b) => a - b)
      const ms = (x: number): string => `${x.toFixed(0)} ms`
      say(`| ${int(fullBuffer(v))} puts of ${int(v)} bytes | ${(all[0].logBytes / 1e6).toFixed(1)} MB | ${all[0].replayed} / ${all[0].adopted} | ${ms(pct(times, 0.5))} | ${ms(pct(times, 0.99))} | ${ms(times[0])} | ${ms(times[times.length - 1])} |`)
    }
  }

  const m = machine()
  const header = [
    '## Many processes (multiProcess)',
    '',
    `- Command: \`${commandLine(['MP_OPS', 'MP_ROUNDS', 'MP_TP_ROUNDS'])}\``,
    dateLine(started, startLoad),
    `- Machine: ${describeMachine(m)}`,
    `- Commit: ${gitCommit()}`,
    ''
  ]
  console.log(`load average at the end: ${loadNote()}`)
  if (process.env.BENCH_MARKDOWN !== undefined && PARTS.size === 4) writeSection(process.env.BENCH_MARKDOWN, 'multi-process', [...header, ...lines].join('\n'))
  fs.rmSync(root, { recursive: true, force: true })
}

if (process.argv[2] === 'echo') {
  echoServer(process.argv[3], process.argv[4] as EchoMode, process.argv[5])
} else {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
