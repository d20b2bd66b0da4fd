// Wrong uses of lsm-level's types: each line marked ERROR must be a type error.
import { LsmLevel } from 'lsm-level'

export async function bad (dir: string): Promise<void> {
  const db = new LsmLevel<string, string>(dir, {
    compaction: 'sideways' // ERROR: compaction is 'leveled' | 'tiered'
  })
  const db2 = new LsmLevel(dir, { writeBufferSize: '4MB' }) // ERROR: writeBufferSize is a number
  await db.put('a', 'b', { sync: 'yes' }) // ERROR: sync is a boolean
  await db.del('a', { sync: 1 }) // ERROR: sync is a boolean
  await db.batch([{ type: 'put', key: 'a', value: 'b' }], { synch: true }) // ERROR: no such option
  const n: number = db.getProperty('lsm.stats') // ERROR: getProperty returns a string
  const sub = db.sublevel<string, number>('sub', { valueEncoding: 'json' })
  await sub.put('a', 1, { sync: 'yes' }) // ERROR: a sublevel's sync is a boolean
  await sub.put('a', 'one') // ERROR: the sublevel's values are numbers
  await sub.del('a', { sync: 1 }) // ERROR: sync is a boolean
  await sub.batch([{ type: 'put', key: 'a', value: 1 }], { synch: true }) // ERROR: no such option
  await sub.batch().put('a', 1).write({ sync: 'no' }) // ERROR: sync is a boolean
  await sub.sublevel('deeper').put('a', 'b', { sync: 0 }) // ERROR: sync is a boolean at any depth
  void db2, n
}
