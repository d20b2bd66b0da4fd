// `lsm-level restore` and `lsm-level backups` (cli/backup.ts), run as a child
// process against a backup shipped by db.replicate() to a directory store, and
// to the S3 emulator (an s3:// URL with --endpoint).
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'

import { LsmLevel } from '../index'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { tempDir } from './util/temp'
import { cli, cliWithEnv } from './util/cli'
import { S3RVER_CREDENTIALS, s3Missing, startS3 } from './util/s3-server'

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

test('lsm-level restore and backups from an S3 URL (s3://bucket/prefix --endpoint, the credentials from the environment), against s3rver', { skip: s3Missing() ?? false }, async (t) => {
  const s3 = await startS3()
  try {
    const store = await s3.store('b39')
    const db = new LsmLevel(tempDir(), { writeBufferSize: 4096 })
    await db.open()
    await db.replicate(store, { prefix: 'x/y', intervalMs: 10 })
    for (let i = 0; i < 300; i++) await db.put(`k${String(i).padStart(3, '0')}`, 'v'.repeat(40) + i)
    await db.close()
    const env = { AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey, AWS_REGION: 'us-east-1' }

    const list = await cliWithEnv(env, 'backups', 's3://b39/x/y', '--endpoint', s3.endpoint)
    t.equal(list.code, 0, `backups: exit 0 ${list.code === 0 ? '' : list.stderr}`)
    t.ok(/points, \d+ log segments, sequence numbers 0\.\.300/.test(list.stdout), list.stdout.trim())

    const out = path.join(tempDir(), 'restored')
    const r = await cliWithEnv(env, 'restore', 's3://b39/x/y', out, '--endpoint', s3.endpoint)
    t.equal(r.code, 0, `restore: exit 0 ${r.code === 0 ? '' : r.stderr}`)
    t.ok(r.stdout.includes('s3://b39') && r.stdout.includes('sequence number 300'), r.stdout.split('\n').slice(0, 2).join(' / '))
    t.same((await all(out)).map(([k]) => k), Array.from({ length: 300 }, (_, i) => `k${String(i).padStart(3, '0')}`), 'every key')

    // The prefix from --prefix, the bucket alone in the URL; a sequence number.
    const out2 = path.join(tempDir(), 'restored')
    const j = await cliWithEnv(env, 'restore', 's3://b39', out2, '--prefix', 'x/y', '--sequence', '100', '--json', '--endpoint', s3.endpoint)
    t.equal(j.code, 0, `--prefix, --sequence: exit 0 ${j.code === 0 ? '' : j.stderr}`)
    t.equal(JSON.parse(j.stdout).sequence, 100, '--json: the result')
    t.equal((await all(out2)).length, 100, 'the first 100 writes')

    const none = await cliWithEnv(env, 'restore', 's3://b39/nothing/here', path.join(tempDir(), 'r'), '--endpoint', s3.endpoint)
    t.equal(none.code, 1, `a prefix with no backup: exit 1 (${none.stderr.trim().split('\n').pop() ?? ''})`)
  } finally {
    await s3.close()
  }
})
