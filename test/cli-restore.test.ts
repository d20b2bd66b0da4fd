// `lsm-level restore` and `lsm-level backups` (cli/backup.ts), run as a child
// process against a backup shipped by db.replicate() to a directory store.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'

import { LsmLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { tempDir } from './util/temp'
import { cli } from './util/cli'

async function all (dir: string): Promise<Array<[string, string]>> {
  const db = new LsmLevel(dir)
  await db.open()
  try {
    return await db.iterator().all()
  } finally {
    await db.close()
  }
}

test('lsm-level restore: the newest state, a sequence number, --json; damage and bad usage', async (t) => {
  const storeDir = tempDir('lsm-store-')
  const db = new LsmLevel(tempDir(), { writeBufferSize: 4096 })
  await db.open()
  await db.replicate(new DirectoryStore(storeDir), { prefix: 'x/y', intervalMs: 10 })
  for (let i = 0; i < 300; i++) await db.put(`k${String(i).padStart(3, '0')}`, 'v'.repeat(40) + i)
  const at100 = 100
  await db.close()

  const list = await cli('backups', storeDir, '--prefix', 'x/y')
  t.equal(list.code, 0, 'backups: exit 0')
  t.ok(/points, \d+ log segments, sequence numbers 0\.\.300/.test(list.stdout), list.stdout.trim())

  const out = path.join(tempDir(), 'restored')
  const r = await cli('restore', storeDir, out, '--prefix', 'x/y')
  t.equal(r.code, 0, `restore: exit 0 ${r.stderr}`)
  t.ok(r.stdout.includes('sequence number 300'), r.stdout.split('\n')[1])
  t.equal((await all(out)).length, 300, 'every key')

  const out2 = path.join(tempDir(), 'restored')
  const j = await cli('restore', storeDir, out2, '--prefix', 'x/y', '--sequence', String(at100), '--json')
  t.equal(j.code, 0, 'restore --sequence: exit 0')
  t.equal(JSON.parse(j.stdout).sequence, at100, '--json: the result')
  t.same((await all(out2)).map(([k]) => k), Array.from({ length: 100 }, (_, i) => `k${String(i).padStart(3, '0')}`), 'the first 100 writes')

  const again = await cli('restore', storeDir, out, '--prefix', 'x/y')
  t.equal(again.code, 1, 'a non-empty directory: exit 1')
  t.ok(again.stderr.includes('not empty'), again.stderr.trim())
  const usage = await cli('restore', storeDir)
  t.equal(usage.code, 2, 'a missing argument: exit 2')
  const badSeq = await cli('restore', storeDir, path.join(tempDir(), 'r'), '--sequence', 'x')
  t.equal(badSeq.code, 2, 'a bad --sequence: exit 2')

  // A damaged table.
  const tables: string[] = []
  const walk = (d: string): void => {
    for (const e of nodeFs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name))
      else if (e.name.endsWith('.sst')) tables.push(path.join(d, e.name))
    }
  }
  walk(storeDir)
  const victim = tables[tables.length - 1]
  const bytes = nodeFs.readFileSync(victim)
  bytes[bytes.length >> 1] ^= 1
  nodeFs.writeFileSync(victim, bytes)
  const target = path.join(tempDir(), 'r')
  const bad = await cli('restore', storeDir, target, '--prefix', 'x/y')
  t.equal(bad.code, 1, 'damaged: exit 1')
  t.ok(bad.stderr.includes('damaged') && bad.stderr.includes(path.basename(victim)), bad.stderr.trim())
  t.ok(!nodeFs.existsSync(target) || nodeFs.readdirSync(target).length === 0, 'nothing written')
})
