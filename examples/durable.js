// Durable writes: { sync: true } resolves only after an fdatasync covering
// the write returned, so the write survives a power loss. Writes issued
// together share one fdatasync (group commit).
// Run after `npm run build`: node examples/durable.js
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Level } = require('../')

async function main () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-level-durable-'))
  try {
    let db = new Level(dir)
    await db.put('order:1', 'paid', { sync: true })
    await db.batch([
      { type: 'put', key: 'order:2', value: 'paid' },
      { type: 'put', key: 'order:3', value: 'paid' }
    ], { sync: true })
    await db.del('order:3', { sync: true })

    // 100 sync writers at once: they wait on shared fsyncs, not one each.
    const t0 = process.hrtime.bigint()
    await Promise.all(Array.from({ length: 100 }, (_, i) => db.put('event:' + i, 'e', { sync: true })))
    const ms = Number(process.hrtime.bigint() - t0) / 1e6
    console.log('100 concurrent sync puts done in', ms < 1 ? '<1' : Math.round(ms), 'ms')
    await db.close()

    // Reopen: everything acknowledged is there (replayed from the write-ahead log).
    db = new Level(dir)
    console.log('order:1 =', await db.get('order:1'))
    console.log('order:2 =', await db.get('order:2'))
    console.log('order:3 =', await db.get('order:3'))
    console.log('events:', (await db.keys({ gte: 'event:', lt: 'event;' }).all()).length)
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
