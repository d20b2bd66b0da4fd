// Snapshots, statistics and compactRange().
// Run after `npm run build`: node examples/snapshots-stats.js
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { LsmLevel } = require('../')

async function main () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-level-snapshots-'))
  try {
    // A small write buffer so that the memtable is flushed to tables often.
    const db = new LsmLevel(dir, { writeBufferSize: 64 * 1024 })
    await db.put('counter', '1')

    const snapshot = db.snapshot()
    await db.put('counter', '2')
    console.log('now:', await db.get('counter'), 'snapshot:', await db.get('counter', { snapshot }))
    await snapshot.close()

    // Overwrite 2,000 keys five times: obsolete versions pile up in the tables.
    const value = 'x'.repeat(100)
    for (let round = 0; round < 5; round++) {
      const ops = []
      for (let i = 0; i < 2000; i++) ops.push({ type: 'put', key: 'key' + String(i).padStart(5, '0'), value: value + round })
      await db.batch(ops)
    }
    await db.flush()
    console.log('flushes > 0:', db.stats().flushes > 0)

    await db.compactRange()
    const stats = db.stats()
    const levels = stats.levels.filter((l) => l.files > 0).map((l) => `L${l.level}:${l.files}`).join(' ')
    console.log('after compactRange:', levels)
    console.log('write amplification:', stats.writeAmplification.toFixed(2))
    console.log('tables at level 0:', db.getProperty('lsm.num-files-at-level0'))
    const size = await db.approximateSize('key00000', 'key99999')
    console.log('approximate size > 0:', size > 0)
    console.log('key01234 =', (await db.get('key01234')).slice(-1))
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
