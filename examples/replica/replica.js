// The replica of the replica example (see README.md in this directory): keeps
// the database in <dir>/db a copy of the primary's, which serves on <socket>.
//
//   node examples/replica/replica.js <dir> <socket>
//
// The first time (no <dir>/db/CURRENT), it asks the primary for a checkpoint
// written into <dir>/db (same machine here; across machines, ship the
// checkpoint directory). Then it follows the primary's change feed from the
// last sequence number it applied, saved in <dir>/applied after each batch.
// Re-applying batches already applied is harmless (puts, deletes and clears
// set state; applied in order, a repeat ends in the same state), so the number
// is saved after the batch and a kill between the two costs nothing. It
// reconnects when the primary goes away, and starts again from a checkpoint if
// the primary no longer holds the changes it needs.
//
// Prints "applied <seq>" as it goes.
'use strict'
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { Level } = require('../../')
const { readMessages } = require('./protocol')

const [dir, socketPath] = process.argv.slice(2)
const location = path.join(dir, 'db')
const appliedFile = path.join(dir, 'applied')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function saveApplied (seq) {
  fs.writeFileSync(appliedFile + '.tmp', String(seq))
  fs.renameSync(appliedFile + '.tmp', appliedFile)
}

/** One request and its first reply on a new connection (undefined if the primary is not there). */
function connect () {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath)
    socket.once('connect', () => resolve(socket))
    socket.once('error', () => resolve(undefined))
  })
}

/** A checkpoint from the primary into <dir>/db.new, then renamed to <dir>/db once its sequence number is saved. */
async function takeCheckpoint () {
  const fresh = location + '.new'
  fs.rmSync(location, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  for (;;) {
    fs.rmSync(fresh, { recursive: true, force: true })
    const socket = await connect()
    if (socket) {
      const reply = await new Promise((resolve) => {
        readMessages(socket, resolve)
        socket.once('close', () => resolve(undefined))
        socket.write(JSON.stringify({ checkpoint: path.resolve(fresh) }) + '\n')
      })
      socket.destroy()
      if (reply && reply.checkpoint !== undefined) {
        saveApplied(reply.checkpoint)
        fs.renameSync(fresh, location)
        return
      }
    }
    await sleep(100)
  }
}

async function apply (db, batch) {
  const b = (s) => Buffer.from(s, 'base64')
  const writes = []
  for (const [type, key, value] of batch.ops) {
    if (type === 'put') writes.push({ type: 'put', key: b(key), value: b(value) })
    else if (type === 'del') writes.push({ type: 'del', key: b(key) })
    else {
      if (writes.length > 0) await db.batch(writes.splice(0))
      await db.clear(value === null ? { gte: b(key) } : { gte: b(key), lt: b(value) })
    }
  }
  if (writes.length > 0) await db.batch(writes)
}

/** Follows the feed until the connection ends; returns 'restart' if a checkpoint is needed. */
async function follow (db, socket, since) {
  const queue = []
  let wake = () => {}
  let ended = false
  readMessages(socket, (msg) => {
    queue.push(msg)
    if (queue.length > 1000) socket.pause() // bounded: the primary waits (TCP backpressure)
    wake()
  })
  socket.once('close', () => { ended = true; wake() })
  socket.on('error', () => {})
  socket.write(JSON.stringify({ follow: since }) + '\n')
  for (;;) {
    if (queue.length === 0) {
      if (ended) return 'reconnect'
      await new Promise((resolve) => { wake = resolve })
      continue
    }
    const msg = queue.shift()
    if (queue.length < 100) socket.resume()
    if (msg.error === 'LEVEL_CHANGES_NOT_RETAINED') return 'restart'
    if (msg.error) throw new Error(msg.message)
    await apply(db, msg)
    saveApplied(msg.seq)
    console.log(`applied ${msg.seq}`)
  }
}

async function main () {
  for (;;) {
    if (!fs.existsSync(path.join(location, 'CURRENT'))) await takeCheckpoint()
    const db = new Level(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await db.open()
    let outcome = 'reconnect'
    while (outcome === 'reconnect') {
      const socket = await connect()
      if (!socket) { await sleep(100); continue }
      outcome = await follow(db, socket, Number(fs.readFileSync(appliedFile, 'utf8')))
      socket.destroy()
    }
    await db.close()
    fs.rmSync(location, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
