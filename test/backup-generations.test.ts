// Backups across generations (lib/backup/shipper.ts, lib/backup/lease.ts): a
// writer restarted puts again no table the store holds (same size and
// SHA-256: named, not put), and the bytes it puts stay within 1.2x of what
// the engine wrote; retention by count keeps the newest retainPoints points
// and retainGenerations generations, and a restore to every retained point
// still gives exactly the writes up to it (nothing a kept point needs is
// deleted, the tables of a deleted generation that a kept one names
// included); through the S3 emulator, which has no conditional put, a second
// live writer still fails with LEVEL_LOCKED; a backup of layout 1 is still
// restored. SEED=<n> replays.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { crc } from '../lib/util/crc'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import type { ObjectStore } from '../lib/backup/object-store'
import { Random, seedFromEnv } from './util/random'
import { contents, History, OPTIONS, sameMap, sleep } from './util/backup-history'
import { s3Missing, startS3 } from './util/s3-server'
import { tempDir } from './util/temp'

const seed = seedFromEnv()

/** Puts of new keys in ascending order (tables that compactions move down whole, and that outlive a restart), each noted in `history`. */
async function writeNewKeys (db: LsmLevel<string, string>, rnd: Random, history: History, until: () => boolean): Promise<void> {
  while (!until()) {
    const key = 'n' + String(history.batches.length).padStart(8, '0')
    const value = rnd.bytes(50 + rnd.int(100)).toString('hex')
    await db.put(key, value)
    history.batches.push({ last: db.sequence, ops: [{ type: 'put', key, value }], ackMs: Date.now() })
  }
}

async function session (dir: string, store: ObjectStore, rnd: Random, history: History, puts: number): Promise<{ uploaded: number, reused: number, engine: number, tablesReused: number, generation: string }> {
  const db = new LsmLevel<string, string>(dir, OPTIONS)
  await db.open()
  const { generation } = await db.replicate(store, { intervalMs: 20 })
  const end = history.batches.length + puts
  await writeNewKeys(db, rnd, history, () => history.batches.length >= end)
  const engine = db.engine
  await db.close()
  // The engine's counters after the close: the last round (run by close) counted.
  const s = engine.stats()
  return { uploaded: s.replication!.bytesUploaded, reused: s.replication!.bytesReused, engine: s.bytes.wal + s.bytes.flushed + s.bytes.compacted, tablesReused: s.replication!.tablesReused, generation }
}

test('a writer restarted puts no table again: the same bytes are named, and what it puts is at most 1.2x what the engine wrote', async (t) => {
  const rnd = new Random(seed ^ 0x4e05e)
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const dir = tempDir()
  const history = new History()
  const first = await session(dir, store, rnd, history, 3000)
  const second = await session(dir, store, rnd, history, 1000)
  t.ok(second.tablesReused > 0, `the restarted writer named ${second.tablesReused} tables (${second.reused} bytes) the first one had put`)
  const withoutReuse = second.uploaded + second.reused
  t.comment(`first run: put ${first.uploaded} bytes for ${first.engine} written; restart: put ${second.uploaded} bytes for ${second.engine} written (${withoutReuse} without reuse)`)
  const ratio = (first.uploaded + second.uploaded) / (first.engine + second.engine)
  t.ok(ratio <= 1.2, `both runs: ${(ratio).toFixed(2)}x the bytes the engine wrote (without reuse: ${((first.uploaded + withoutReuse) / (first.engine + second.engine)).toFixed(2)}x)`)
  const to = tempDir()
  const r = await LsmLevel.restore(store, to)
  t.equal(r.generation, second.generation, 'the restart is the newest generation')
  t.equal(r.sequence, history.batches[history.batches.length - 1].last, 'restored to the end')
  t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), 'every write, through tables the first generation put')
})

test('retention by count: the newest retainPoints points and retainGenerations generations are kept, and a restore to each kept point is exactly the writes up to it', async (t) => {
  const rnd = new Random(seed ^ 0xc0de)
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const dir = tempDir()
  const history = new History()
  // New keys in ascending order, before and after the restart: the first generation's tables stay in the version (no flush after the restart overlaps them but the newest).
  const a = await session(dir, store, rnd, history, 3000)
  // Restarted: its first point names the first generation's tables; that generation is then deleted by count.
  const db = new LsmLevel<string, string>(dir, OPTIONS)
  await db.open()
  const retainPoints = 2
  const { generation } = await db.replicate(store, { intervalMs: 20, retainMs: 0, retainPoints, retainGenerations: 1, retentionIntervalMs: 20, pointLogBytes: 0 })
  const enough = (): boolean => {
    const s = db.stats().replication!
    return s.pointsDeleted >= 2 && s.generationsDeleted >= 1
  }
  // Until the retention deleted points and the older generation, at most 20000 puts.
  const puts = history.batches.length + 20000
  await writeNewKeys(db, rnd, history, () => history.batches.length >= puts || enough())
  // The version settles (flushes, compactions), the retention runs after the rounds (bounded: a slow machine gets fewer).
  const stopAt = Date.now() + 60000
  while (!enough() && Date.now() < stopAt) await sleep(20)
  await sleep(100)
  const s = db.stats().replication!
  t.ok(s.tablesReused > 0, `the restart named ${s.tablesReused} tables of generation ${a.generation}`)
  t.ok(s.pointsDeleted >= 2 && s.generationsDeleted >= 1, `deleted ${s.pointsDeleted} points, ${s.generationsDeleted} generation, ${s.objectsDeleted} objects in all`)
  const keys = (await store.list('')).map((o) => o.key)
  const points = keys.filter((k) => k.includes('/points/'))
  t.ok(points.length <= retainPoints + 1, `${points.length} points kept (at most ${retainPoints}, and the one of a round since the retention last ran)`)
  t.ok(points.every((k) => k.startsWith(generation + '/')), 'all of the live generation')
  t.notOk(keys.some((k) => k.startsWith(`${a.generation}/GENERATION`) || k.startsWith(`${a.generation}/points/`) || k.startsWith(`${a.generation}/logs/`)), 'the older generation is deleted')
  const keptTables = keys.filter((k) => k.startsWith(`${a.generation}/tables/`))
  t.ok(keptTables.length > 0, `${keptTables.length} of its tables kept: the live generation's points name them`)
  // Every kept point restores, exactly; so does the newest state.
  const last = db.sequence
  await db.close()
  for (const k of (await store.list('')).map((o) => o.key).filter((x) => x.includes('/points/'))) {
    const seq = Number(/points\/(\d{16})/.exec(k)![1])
    const to = tempDir()
    const r = await LsmLevel.restore(store, to, { sequence: seq })
    t.equal(r.pointSequence, seq, `restored from the point at ${seq}`)
    t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), `the writes up to ${r.sequence}, exactly`)
  }
  const to = tempDir()
  const r = await LsmLevel.restore(store, to)
  t.equal(r.sequence, last, 'the newest state')
  t.ok(sameMap(await contents(to), history.stateAt(last)), 'every write')
})

test('replicate refuses bad counts and leases', async (t) => {
  const store = new DirectoryStore(tempDir('lsm-store-'))
  const db = new LsmLevel<string, string>(tempDir())
  await db.open()
  for (const options of [{ retainPoints: 0 }, { retainPoints: 1.5 }, { retainGenerations: 0 }, { leaseMs: 1 }]) {
    try {
      await db.replicate(store, options)
      t.fail('accepted ' + JSON.stringify(options))
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_INVALID_OPTION', 'refused ' + JSON.stringify(options))
    }
  }
  await db.close()
})

test('through the S3 emulator (no conditional put): a second live writer fails with LEVEL_LOCKED; after a clean close it takes over', { skip: s3Missing() ?? false }, async (t) => {
  const s3 = await startS3()
  try {
    const store = await s3.store()
    t.notOk(store.conditionalPut, 'the emulator has no conditional put')
    const a = new LsmLevel<string, string>(tempDir(), OPTIONS)
    const b = new LsmLevel<string, string>(tempDir(), OPTIONS)
    await a.open()
    await b.open()
    // A renewal every second: the second writer, watching the lease for 3 s, sees one even on a loaded machine.
    await a.replicate(store, { prefix: 'p', intervalMs: 50, leaseMs: 3000 })
    await a.put('a', '1')
    try {
      await b.replicate(store, { prefix: 'p', intervalMs: 50, leaseMs: 3000 })
      t.fail('a second live writer started')
    } catch (err) {
      t.equal((err as { code?: string }).code, 'LEVEL_LOCKED', `LEVEL_LOCKED: ${(err as Error).message}`)
    }
    await a.close()
    await b.replicate(store, { prefix: 'p', intervalMs: 50, leaseMs: 3000 })
    t.ok(b.stats().replication!.leaseHeld, 'taken over after the clean close')
    await b.close()
  } finally {
    await s3.close()
  }
})

test('a backup of layout 1 (tables named by number, points without table keys) is still restored', async (t) => {
  const rnd = new Random(seed ^ 0x1a1)
  const root = tempDir('lsm-store-')
  const store = new DirectoryStore(root)
  const history = new History()
  await session(tempDir(), store, rnd, history, 2000)
  // Rewritten as layout 1 wrote it: each table at <gen>/tables/<number>.sst, each point's JSON without keys, layout 1.
  for (const { key } of await store.list('')) {
    const table = /^(.*\/tables\/\d{10})-[0-9a-f]{32}\.sst$/.exec(key)
    if (table !== null) {
      fs.renameSync(path.join(root, key), path.join(root, table[1] + '.sst'))
      continue
    }
    if (!key.endsWith('.pt')) continue
    const buf = fs.readFileSync(path.join(root, key))
    const jlen = buf.readUInt32LE(8)
    const json = JSON.parse(buf.toString('utf8', 12, 12 + jlen)) as { layout: number, tables: unknown[][] }
    json.layout = 1
    json.tables = json.tables.map((x) => x.slice(0, 3))
    const j = Buffer.from(JSON.stringify(json))
    const rest = buf.subarray(12 + jlen, buf.length - 4)
    const head = Buffer.alloc(12)
    buf.copy(head, 0, 0, 8)
    head.writeUInt32LE(j.length, 8)
    const body = Buffer.concat([head, j, rest])
    const out = Buffer.concat([body, Buffer.alloc(4)])
    out.writeUInt32LE(crc(body) >>> 0, body.length)
    fs.writeFileSync(path.join(root, key), out)
  }
  const keys = (await store.list('')).map((o) => o.key)
  t.ok(keys.some((k) => /\/tables\/\d{10}\.sst$/.test(k)) && !keys.some((k) => /-[0-9a-f]{32}\.sst$/.test(k)), 'the tables are named as in layout 1')
  const to = tempDir()
  const r = await LsmLevel.restore(store, to)
  t.equal(r.sequence, history.batches[history.batches.length - 1].last, 'restored to the end')
  t.ok(sameMap(await contents(to), history.stateAt(r.sequence)), 'every write')
})
