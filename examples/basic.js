// Put, get and iterate with the json value encoding.
// Run after `npm run build`: node examples/basic.js
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Level } = require('../')

async function main () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-level-basic-'))
  try {
    const db = new Level(dir, { valueEncoding: 'json' })
    await db.put('fruit:apple', { color: 'red', price: 3 })
    await db.put('fruit:banana', { color: 'yellow', price: 1 })
    await db.put('fruit:cherry', { color: 'red', price: 9 })
    await db.put('veg:carrot', { color: 'orange', price: 2 })

    const apple = await db.get('fruit:apple')
    console.log('get fruit:apple ->', JSON.stringify(apple))
    console.log('get fruit:kiwi ->', await db.get('fruit:kiwi'))

    for await (const [key, value] of db.iterator({ gte: 'fruit:', lt: 'fruit;' })) {
      console.log('iterate', key, value.color, value.price)
    }
    const reversed = await db.keys({ reverse: true, limit: 2 }).all()
    console.log('last two keys:', reversed.join(', '))
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
