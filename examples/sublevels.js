// Sublevels, and one atomic batch across two of them.
// Run after `npm run build`: node examples/sublevels.js
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Level } = require('../')

async function main () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-level-sublevels-'))
  try {
    const db = new Level(dir)
    const users = db.sublevel('users', { valueEncoding: 'json' })
    const emails = db.sublevel('emails')

    // Both writes commit together or not at all.
    await db.batch([
      { type: 'put', sublevel: users, key: 'u1', value: { name: 'Ada', email: 'ada@example.com' } },
      { type: 'put', sublevel: emails, key: 'ada@example.com', value: 'u1' },
      { type: 'put', sublevel: users, key: 'u2', value: { name: 'Linus', email: 'linus@example.com' } },
      { type: 'put', sublevel: emails, key: 'linus@example.com', value: 'u2' }
    ])

    const id = await emails.get('linus@example.com')
    console.log('email linus@example.com -> user', id, (await users.get(id)).name)

    // A chained batch on a sublevel: delete a user and its index entry.
    await users.batch().del('u2').write()
    await emails.del('linus@example.com')

    console.log('users:', (await users.keys().all()).join(', '))
    console.log('emails:', (await emails.keys().all()).join(', '))
    // The parent database sees the sublevels' prefixed keys.
    console.log('all keys:', (await db.keys().all()).join(' '))
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
