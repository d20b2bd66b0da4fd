'use strict'
// Runtime smoke test: exercises the built library (dist/) under whatever
// JavaScript runtime runs this file (node, bun, deno). Plain CommonJS, no test
// framework, so it needs nothing but the runtime's node: compatibility layer.
//
//   node test/runtime-smoke.cjs
//   npx -y bun test/runtime-smoke.cjs
//   npx -y deno run -A test/runtime-smoke.cjs
//
// Not a *.test.js file: `npm test` does not run it (see scripts/runtimes.sh).
// Prints "runtime-smoke: N checks passed" and exits non-zero on any failure.
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { LsmLevel } = require('../dist/index.js')

let checks = 0
function check (fn, ...args) {
  fn(...args)
  checks++
}

const runtime = typeof globalThis.Bun !== 'undefined'
  ? `bun ${globalThis.Bun.version}`
  : typeof globalThis.Deno !== 'undefined'
    ? `deno ${globalThis.Deno.version.deno}`
    : `node ${process.versions.node}`

function hasWorkerThreads () {
  try {
    const { Worker } = require('node:worker_threads')
    return typeof Worker === 'function'
  } catch {
    return false
  }
}

const key = (i) => 'k' + String(i).padStart(6, '0')
const value = (i, gen) => `v${gen}-${i}-` + 'x'.repeat(i % 50)

/** Entries of the model in key order, optionally restricted and reversed like a Level iterator. */
function expected (model, { gte, lt, reverse } = {}) {
  let keys = [...model.keys()].sort()
  if (gte !== undefined) keys = keys.filter((k) => k >= gte)
  if (lt !== undefined) keys = keys.filter((k) => k < lt)
  if (reverse) keys.reverse()
  return keys.map((k) => [k, model.get(k)])
}

async function compare (db, model, label) {
  const all = await db.iterator().all()
  check(assert.deepStrictEqual, all, expected(model), `${label}: forward scan`)
  const rev = await db.iterator({ reverse: true }).all()
  check(assert.deepStrictEqual, rev, expected(model, { reverse: true }), `${label}: reverse scan`)
  const range = { gte: key(1000), lt: key(2500) }
  check(assert.deepStrictEqual, await db.iterator(range).all(), expected(model, range), `${label}: range scan`)
  check(assert.deepStrictEqual, await db.iterator({ ...range, reverse: true }).all(),
    expected(model, { ...range, reverse: true }), `${label}: reverse range scan`)
  const limited = await db.keys({ gte: key(4000), limit: 10 }).all()
  check(assert.deepStrictEqual, limited, expected(model, { gte: key(4000) }).slice(0, 10).map((e) => e[0]), `${label}: keys + limit`)
  // Point reads: a sample of present and deleted keys.
  for (let i = 0; i < 5200; i += 97) {
    const got = await db.get(key(i))
    check(assert.strictEqual, got, model.get(key(i)), `${label}: get ${key(i)}`)
  }
}

async function workload (db, model) {
  // 5,000 puts, most awaited one by one, the rest concurrently.
  for (let i = 0; i < 3000; i++) {
    await db.put(key(i), value(i, 1))
    model.set(key(i), value(i, 1))
  }
  const pending = []
  for (let i = 3000; i < 5000; i++) {
    pending.push(db.put(key(i), value(i, 1)))
    model.set(key(i), value(i, 1))
  }
  await Promise.all(pending)
  // Deletes: every 7th key, plus one that never existed.
  for (let i = 0; i < 5000; i += 7) {
    await db.del(key(i))
    model.delete(key(i))
  }
  await db.del('no-such-key')
  // Overwrites.
  for (let i = 1; i < 5000; i += 13) {
    await db.put(key(i), value(i, 2))
    model.set(key(i), value(i, 2))
  }
  // An array batch and a chained batch (puts and deletes, new and existing keys).
  const ops = []
  for (let i = 5000; i < 5200; i++) {
    ops.push({ type: 'put', key: key(i), value: value(i, 3) })
    model.set(key(i), value(i, 3))
  }
  for (let i = 2; i < 500; i += 11) {
    ops.push({ type: 'del', key: key(i) })
    model.delete(key(i))
  }
  await db.batch(ops)
  const chained = db.batch()
  for (let i = 3; i < 300; i += 5) {
    chained.put(key(i), value(i, 4))
    model.set(key(i), value(i, 4))
  }
  chained.del(key(5100))
  model.delete(key(5100))
  await chained.write()
}

async function roundTrip (options, label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-smoke-'))
  try {
    const model = new Map()
    let db = new LsmLevel(dir, options)
    await db.open()
    await workload(db, model)
    await compare(db, model, `${label} (before flush)`)
    await db.flush()
    await compare(db, model, `${label} (after flush)`)
    await db.compactRange()
    await compare(db, model, `${label} (after compactRange)`)
    await db.close()

    db = new LsmLevel(dir, options)
    await db.open()
    await compare(db, model, `${label} (after reopen)`)
    // Write more after reopen and compact again, to exercise tables + log together.
    for (let i = 0; i < 5200; i += 3) {
      await db.put(key(i), value(i, 5))
      model.set(key(i), value(i, 5))
    }
    await db.compactRange()
    await compare(db, model, `${label} (after second compaction)`)
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function crashRecovery (options, label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-smoke-crash-'))
  const copy = dir + '-copy'
  let db
  try {
    const model = new Map()
    db = new LsmLevel(dir, options)
    await db.open()
    // Default durability (no sync): acknowledged writes have reached the OS.
    for (let i = 0; i < 4000; i++) {
      await db.put(key(i), value(i, 6))
      model.set(key(i), value(i, 6))
    }
    for (let i = 0; i < 4000; i += 9) {
      await db.del(key(i))
      model.delete(key(i))
    }
    await db.batch([{ type: 'put', key: 'batch-a', value: 'A' }, { type: 'put', key: 'batch-b', value: 'B' }])
    model.set('batch-a', 'A')
    model.set('batch-b', 'B')
    // Not closed: copy the directory as a killed process would have left it.
    // The copied LOCK file names this (live) process and one of its live
    // handles, so it would be judged held (LEVEL_LOCKED); after a real kill its
    // holder is dead and the lock stale. Stale-lock handling is covered by
    // lock.test.js, so the copy simply drops LOCK.
    fs.cpSync(dir, copy, { recursive: true })
    fs.rmSync(path.join(copy, 'LOCK'), { force: true })
    const recovered = new LsmLevel(copy, options)
    await recovered.open()
    await compare(recovered, model, `${label} (crash copy)`)
    await recovered.close()
  } finally {
    if (db) await db.close().catch(() => {})
    fs.rmSync(dir, { recursive: true, force: true })
    fs.rmSync(copy, { recursive: true, force: true })
  }
}

async function main () {
  const small = { writeBufferSize: 4096, blockSize: 512, compactionWorker: false }
  await roundTrip(small, 'small, no worker')
  await crashRecovery(small, 'small, no worker')
  if (hasWorkerThreads()) {
    const withWorker = { writeBufferSize: 4096, blockSize: 512 } // compactionWorker: default (true)
    await roundTrip(withWorker, 'small, default worker')
    await crashRecovery(withWorker, 'small, default worker')
  } else {
    console.log('runtime-smoke: node:worker_threads unavailable, skipped the worker variant')
  }
  await roundTrip({}, 'default options')
  console.log(`runtime-smoke: ${checks} checks passed (${runtime})`)
}

main().then(() => {
  process.exit(0)
}, (err) => {
  console.error(`runtime-smoke: FAILED after ${checks} checks (${runtime})`)
  console.error(err && err.stack ? err.stack : err)
  if (err && err.cause) console.error('cause:', err.cause && err.cause.stack ? err.cause.stack : err.cause)
  process.exit(1)
})
