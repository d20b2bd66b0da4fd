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
  void db2, n
}
