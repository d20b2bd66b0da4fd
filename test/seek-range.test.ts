// seek() and range options, as abstract-level documents them: "If range options
// like gt were passed to db.iterator() and target does not fall within that
// range, the iterator will reach its natural end." The compliance suite's test
// of this ("seek() respects range") asserts nothing: it pushes functions into
// its promise list instead of calling them. Here every range, direction,
// iterator kind and target (present and absent keys, before, inside and after
// the range) is checked against a model, with and without a snapshot; the
// same cases run on memory-level, the reference implementation, to show the
// model is the documented behaviour.
import test from 'tape'
import { MemoryLevel } from 'memory-level'
import type { AbstractSnapshot } from 'abstract-level'
import { LsmLevel } from '../index'
import { tempDir } from './util/temp'

type Db = LsmLevel<string, string> | MemoryLevel<string, string>

/** Keys 00, 02, ..., 18 are present; odd keys are absent. */
const KEYS = Array.from({ length: 10 }, (_, i) => String(2 * i).padStart(2, '0'))
const TARGETS = ['', ...Array.from({ length: 21 }, (_, i) => String(i).padStart(2, '0')), '99']
const RANGES: Array<Record<string, string>> = [
  {}, { gte: '06' }, { gt: '06' }, { gte: '05' }, { gt: '05' }, { lte: '12' }, { lt: '12' }, { lte: '13' }, { lt: '13' },
  { gte: '06', lte: '12' }, { gt: '06', lt: '12' }, { gt: '05', lte: '13' }, { gte: '07', lt: '08' }
]

interface Range { gt?: string, gte?: string, lt?: string, lte?: string, reverse: boolean }

function inRange (k: string, r: Range): boolean {
  if (r.gte !== undefined ? k < r.gte : r.gt !== undefined && k <= r.gt) return false
  if (r.lte !== undefined ? k > r.lte : r.lt !== undefined && k >= r.lt) return false
  return true
}

/** The first three keys after seek(target): nothing if the target is outside the range. */
function expected (keys: string[], r: Range, target: string): string[] {
  if (!inRange(target, { ...r, ...(r.reverse ? { gt: undefined, gte: undefined } : { lt: undefined, lte: undefined }) })) return []
  const within = keys.filter((k) => inRange(k, r))
  const after = r.reverse ? within.filter((k) => k <= target).reverse() : within.filter((k) => k >= target)
  return after.slice(0, 3)
}

async function firstThree (db: Db, kind: 'entries' | 'keys' | 'values', r: Range, target: string, snapshot?: AbstractSnapshot): Promise<string[]> {
  const options = { ...r, ...(snapshot ? { snapshot } : {}) }
  // One type for both engines' iterator methods (their overloads do not unite).
  const d = db as unknown as LsmLevel<string, string>
  const it = kind === 'entries' ? d.iterator(options) : kind === 'keys' ? d.keys(options) : d.values(options)
  it.seek(target)
  const out: string[] = []
  for (let i = 0; i < 3; i++) {
    const item = await it.next()
    if (item === undefined) break
    out.push(kind === 'entries' ? (item as [string, string]).join('=') : String(item))
  }
  await it.close()
  return out
}

/** Runs every case; returns the mismatches (at most a few, to keep the output readable). */
async function check (db: Db, values: (k: string) => string, snapshot?: AbstractSnapshot): Promise<{ cases: number, failures: string[] }> {
  const failures: string[] = []
  let cases = 0
  for (const base of RANGES) {
    for (const reverse of [false, true]) {
      const r: Range = { ...base, reverse }
      for (const target of TARGETS) {
        const keys = expected(KEYS, r, target)
        const want = { entries: keys.map((k) => `${k}=${values(k)}`), keys, values: keys.map(values) }
        for (const kind of ['entries', 'keys', 'values'] as const) {
          cases++
          const got = await firstThree(db, kind, r, target, snapshot)
          if (got.join() !== want[kind].join()) failures.push(`${kind} ${JSON.stringify(r)} seek('${target}'): got [${got.join()}], expected [${want[kind].join()}]`)
        }
      }
    }
  }
  return { cases, failures }
}

async function fill (db: Db): Promise<void> {
  await db.batch(KEYS.map((k) => ({ type: 'put' as const, key: k, value: `a${k}` })))
}

for (const [name, make] of [
  ['memory-level (reference)', () => new MemoryLevel<string, string>()],
  ['lsm-level', () => new LsmLevel<string, string>(tempDir())]
] as const) {
  test(`seek() outside the range ends the iterator: ${name}`, async (t) => {
    const db = make() as Db
    await db.open()
    await fill(db)
    const now = await check(db, (k) => `a${k}`)
    t.same(now.failures.slice(0, 5), [], `${now.cases} cases, latest state`)

    // A snapshot keeps the old values while every key is overwritten and one deleted.
    const snapshot = db.snapshot()
    await db.batch(KEYS.map((k) => ({ type: 'put' as const, key: k, value: `b${k}` })))
    await db.del('18')
    const old = await check(db, (k) => `a${k}`, snapshot)
    t.same(old.failures.slice(0, 5), [], `${old.cases} cases at a snapshot taken before the overwrites`)
    await snapshot.close()
    if (db instanceof LsmLevel) {
      // The same on tables, after a flush and a full compaction.
      await db.put('18', 'b18')
      await db.compactRange()
      const compacted = await check(db, (k) => `b${k}`)
      t.same(compacted.failures.slice(0, 5), [], `${compacted.cases} cases read from tables`)
    }
    await db.close()
  })
}
