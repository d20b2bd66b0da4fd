// The same package imported from an ES module (index.mjs at run time).
import LsmLevelDefault, { Level, LsmLevel } from 'lsm-level'

export async function esmConsumer (dir: string): Promise<string | undefined> {
  const db: LsmLevel = new Level(dir, { compaction: 'leveled' })
  const same: typeof LsmLevel = LsmLevelDefault
  void same
  await db.put('k', 'v', { sync: true })
  await db.del('k', { sync: true })
  await db.batch([{ type: 'put', key: 'k', value: 'v' }], { sync: true })
  const v = await db.get('k')
  await db.close()
  return v
}
