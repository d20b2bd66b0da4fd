// A multiProcess client's local reads (adapters/multi-process/local-reads.ts)
// against a model, with the owner in a child process (test/fixtures/mp-peer.ts,
// a 16 KiB write buffer: flushes throughout) compacting away, round after
// round, the tables the client's snapshots and iterators read: every read
// checked. Fresh reads (get, getSync, getMany, iterators) must hold every write
// acknowledged before they began, the client's own and the owner's (learned by
// a message from its process); a snapshot and an iterator made before a
// compaction read their point in time after it. Seeded: SEED=<n> replays.
import test from 'tape'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'
import { Peer } from './util/mp-peer'
import { Random } from './util/random'

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 32))
const ROUNDS = Number(process.env.LSM_READS_ROUNDS ?? 25)
console.log(`# SEED=${SEED}`)

const keyOf = (n: number): string => 'k' + String(n).padStart(4, '0')

test('multiProcess reads: the owner compacts away the tables a client reads; every read checked against the model', async (t) => {
  const rnd = new Random(SEED)
  const dir = tempDir()
  const owner = await Peer.open(dir, { writeBufferSize: 16 * 1024 })
  const db = new LsmLevel<string, string>(dir, { multiProcess: true })
  await db.open()
  t.is(db.processRole, 'client', 'this process is a client')
  const model = new Map<string, string>()
  const wrong: string[] = []
  const check = (what: string, got: unknown, want: unknown): void => {
    if (got !== want && wrong.length < 10) wrong.push(`${what}: got ${String(got)}, want ${String(want)} (seed ${SEED})`)
  }
  let reads = 0
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // The client's writes, through the owner.
      const ops = Array.from({ length: 50 + rnd.int(150) }, () => ({ type: 'put' as const, key: keyOf(rnd.int(600)), value: `${round}-${rnd.next().toString(36)}-${'x'.repeat(rnd.int(200))}` }))
      await db.batch(ops)
      for (const op of ops) model.set(op.key, op.value)
      // The owner's own write, acknowledged to its process, which tells this one.
      const ownKey = keyOf(rnd.int(600))
      const ownValue = `owner-${round}`
      await owner.request('put', { key: ownKey, value: ownValue })
      model.set(ownKey, ownValue)
      check(`round ${round}: the owner's write, read at once`, await db.get(ownKey), ownValue)
      reads++

      // Handles on the state now, then the owner rewrites every table under them.
      const before = new Map(model)
      const snapshot = db.snapshot()
      const it = db.iterator()
      const first = await it.next()
      const sorted = [...before.keys()].sort()
      check(`round ${round}: an iterator's first entry`, first?.[0], sorted[0])
      const overwrite = Array.from({ length: 100 }, () => ({ type: 'put' as const, key: keyOf(rnd.int(600)), value: `after-${round}-${rnd.next().toString(36)}` }))
      await db.batch(overwrite)
      for (const op of overwrite) model.set(op.key, op.value)
      if (rnd.int(3) === 0) await db.flush()
      await db.compactRange()

      // Fresh reads: the latest state.
      for (let i = 0; i < 40; i++) {
        const k = keyOf(rnd.int(600))
        check(`round ${round}: get ${k}`, await db.get(k), model.get(k))
        check(`round ${round}: getSync ${k}`, db.getSync(k), model.get(k))
        reads += 2
      }
      const some = Array.from({ length: 20 }, () => keyOf(rnd.int(600)))
      const many = await db.getMany(some)
      some.forEach((k, i) => check(`round ${round}: getMany ${k}`, many[i], model.get(k)))
      reads += some.length
      // The snapshot and the iterator: their point in time, from tables the owner deleted.
      for (let i = 0; i < 40; i++) {
        const k = keyOf(rnd.int(600))
        check(`round ${round}: at the snapshot, ${k}`, await db.get(k, { snapshot }), before.get(k))
        reads++
      }
      const rest = await it.all()
      check(`round ${round}: the iterator's entries`, JSON.stringify(rest), JSON.stringify(sorted.slice(1).map((k) => [k, before.get(k)])))
      reads += rest.length
      await snapshot.close()
    }
    const all = await db.iterator().all()
    check('the whole database at the end', JSON.stringify(all), JSON.stringify([...model.keys()].sort().map((k) => [k, model.get(k)])))
    t.same(wrong, [], `${reads} reads over ${ROUNDS} rounds, every one as the model says`)
    t.is(db.processRole, 'client', 'still a client: every read was served here')
  } finally {
    await db.close()
    await owner.kill()
  }
})
