// The primary of the replica example (see README.md in this directory): opens
// the database in <db> with its logs retained for the change feed, serves
// checkpoints and the feed on the Unix socket <socket>, and, with
// --write <n>, writes a workload of <n> numbered batches (resuming after a
// restart at the number saved in the database with each batch).
//
//   node examples/replica/primary.js <db> <socket> [--write <n>]
//
// Prints "ready", "done <sequence>" once the workload is written, and serves
// until it is killed.
'use strict'
const fs = require('node:fs')
const net = require('node:net')
const { Level } = require('../../')
const { encodeBatch, readMessages } = require('./protocol')

const [location, socketPath, flag, count] = process.argv.slice(2)
const total = flag === '--write' ? Number(count) : 0

/** Resolves when the socket drains or closes; the other listener is removed (one left per wait would pile up). */
function drainedOrClosed (socket) {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done)
      socket.off('close', done)
      resolve()
    }
    socket.once('drain', done).once('close', done)
  })
}

async function serveFeed (db, socket, since) {
  let open = true
  socket.on('close', () => { open = false })
  try {
    for await (const batch of db.changes({ since })) {
      if (!open) break
      // Backpressure: wait while the socket's buffer is full. The feed buffers
      // nothing meanwhile: it reads the next batch from the logs when asked.
      if (!socket.write(encodeBatch(batch))) await drainedOrClosed(socket)
    }
  } catch (err) {
    if (open) socket.end(JSON.stringify({ error: err.code, message: err.message }) + '\n')
  }
}

function serve (db) {
  try { fs.unlinkSync(socketPath) } catch {}
  const server = net.createServer((socket) => {
    socket.on('error', () => {})
    readMessages(socket, (msg) => {
      if (msg.checkpoint !== undefined) {
        db.checkpoint(msg.checkpoint).then(
          (made) => socket.write(JSON.stringify({ checkpoint: made.sequence }) + '\n'),
          (err) => socket.end(JSON.stringify({ error: err.code, message: err.message }) + '\n'))
      } else if (msg.follow !== undefined) {
        serveFeed(db, socket, msg.follow)
      }
    })
  })
  return new Promise((resolve) => server.listen(socketPath, resolve))
}

/** Batch i of the workload: a function of i alone, so a restart goes on where the last one stopped. */
function workload (i) {
  const key = (n) => 'k' + String(n % 1000).padStart(4, '0')
  if (i % 97 === 0) return { clear: { gte: key(i), lt: key(i + 20) } }
  const ops = [{ type: 'put', key: key(i * 7919), value: 'v' + i }]
  if (i % 5 === 0) ops.push({ type: 'del', key: key(i * 31) })
  return { ops }
}

async function main () {
  const db = new Level(location, { retainLogBytes: 256 * 1024 * 1024, writeBufferSize: 64 * 1024 })
  await db.open()
  await serve(db)
  console.log('ready')
  let i = Number(await db.get('~progress') ?? 0) + 1
  for (; i <= total; i++) {
    const w = workload(i)
    // A range clear is a batch of its own; the progress key follows it.
    if (w.clear) await db.clear(w.clear)
    await db.batch([...(w.ops ?? []), { type: 'put', key: '~progress', value: String(i) }])
    if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 2))
    if (i % 500 === 0) console.log(`progress ${i}`)
  }
  if (total > 0) console.log(`done ${db.sequence}`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
