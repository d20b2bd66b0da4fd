// The commit pipeline alone (lib/commit-pipeline.ts), over a scripted
// environment: group commit, sequence numbers, the sync policy, log order,
// stalls, slowdowns and stopping after a failure.
import test from 'tape'
import { CommitPipeline, type CommitEnv } from '../lib/commit-pipeline'
import { encodeBatch } from '../lib/wal/batch'
import { getFixed64 } from '../lib/util/coding'
import { KIND_VALUE } from '../lib/keys'
import { levelError, type LevelError } from '../lib/errors'
import { TurnBudget } from '../lib/util/turn'

/** A batch of `n` puts. */
function batch (n = 1): Buffer {
  const ops = []
  for (let i = 0; i < n; i++) ops.push({ kind: KIND_VALUE, key: Buffer.from(`k${i}`), value: Buffer.from('v') })
  return encodeBatch(ops)
}

const tick = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

/** An environment that records what the pipeline asks of it. */
class FakeEnv implements CommitEnv<string> {
  events: string[] = []
  room: 'go' | 'stall' | 'hold' = 'go'
  slowDown = false
  inline = true
  writeError: LevelError | undefined
  syncError: LevelError | undefined
  /** Resolvers of pending async syncs. */
  asyncSyncs: Array<{ resolve: () => void, reject: (e: Error) => void }> = []
  inlineSyncMs = 0
  target = 'mem1'

  shouldSlowDown (): boolean { return this.slowDown }
  makeRoom (): 'go' | 'stall' | 'hold' { return this.room }
  writeToLog (batches: Buffer[]): string {
    if (this.writeError) throw this.writeError
    this.events.push(`write ${batches.map((b) => getFixed64(b, 0)).join(',')}`)
    return this.target
  }

  canSyncInline (): boolean { return this.inline }
  syncLog (): void {
    if (this.syncError) throw this.syncError
    const t0 = performance.now()
    while (performance.now() - t0 < this.inlineSyncMs) { /* a slow disk */ }
    this.events.push('sync')
  }

  async syncLogAsync (): Promise<void> {
    this.events.push('sync-async')
    return await new Promise((resolve, reject) => this.asyncSyncs.push({ resolve, reject }))
  }

  apply (target: string, _batches: Buffer[], firstSeqs: number[]): void {
    this.events.push(`apply ${target} ${firstSeqs.join(',')}`)
  }
}

function pipeline (env: FakeEnv, inlineSync = true): CommitPipeline<string> {
  const p = new CommitPipeline<string>(env, new TurnBudget(1000), { inlineSync })
  p.setLastSequence(10)
  return p
}

test('commit pipeline: writes of one tick share one write(2), in order, with consecutive sequence numbers', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  const done: number[] = []
  const writes = [p.write(batch(1), false), p.write(batch(3), false), p.write(batch(2), false)]
  writes.forEach((w, i) => { void w.then(() => done.push(i)) })
  await Promise.all(writes)
  t.same(env.events, ['write 11,12,15', 'apply mem1 11,12,15'], 'one group: one write, one apply')
  t.same(done, [0, 1, 2], 'resolved in order')
  t.is(p.visibleSeq, 16, 'visible up to the last operation')
  await p.write(batch(1), false)
  t.same(env.events.slice(2), ['write 17', 'apply mem1 17'], 'the next tick: a group of its own')
})

test('commit pipeline: a sync write is applied after its fdatasync; inline while allowed, else off the event loop', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  await p.write(batch(), true)
  t.same(env.events, ['write 11', 'sync', 'apply mem1 11'], 'inline: write, sync, apply')

  env.events = []
  env.inline = false
  let resolved = false
  const w = p.write(batch(), true).then(() => { resolved = true })
  await tick()
  t.same(env.events, ['write 12', 'sync-async'], 'not applied before the sync returns')
  t.is(p.visibleSeq, 11, 'not visible yet')
  t.notOk(resolved, 'not acknowledged yet')
  env.asyncSyncs.shift()!.resolve()
  await w
  t.same(env.events, ['write 12', 'sync-async', 'apply mem1 12'])
  t.is(p.visibleSeq, 12)

  env.events = []
  const q = pipeline(env, false)
  env.inline = true
  const v = q.write(batch(), true)
  await tick()
  t.same(env.events, ['write 11', 'sync-async'], 'inlineSync false: always off the event loop')
  env.asyncSyncs.shift()!.resolve()
  await v
})

test('commit pipeline: one fdatasync covers every group written before it; writes behind a sync write wait for it (log order)', async (t) => {
  const env = new FakeEnv()
  env.inline = false
  const p = pipeline(env)
  const order: string[] = []
  const a = p.write(batch(), true).then(() => order.push('a'))
  await tick()
  const b = p.write(batch(), false).then(() => order.push('b'))
  await tick()
  const c = p.write(batch(), true).then(() => order.push('c'))
  await tick()
  t.same(env.events, ['write 11', 'sync-async', 'write 12', 'write 13'], 'one sync in flight at a time')
  t.same(order, [], 'b, not a sync write, still waits behind a')
  env.asyncSyncs.shift()!.resolve()
  await Promise.all([a, b])
  t.same(order, ['a', 'b'], 'a, then b behind it')
  t.is(env.events[4], 'apply mem1 11')
  t.is(env.events[5], 'apply mem1 12')
  t.is(env.events[6], 'sync-async', 'a second sync for c, written after the first began')
  env.asyncSyncs.shift()!.resolve()
  await c
  t.same(order, ['a', 'b', 'c'])
  t.is(p.visibleSeq, 13)
})

test('commit pipeline: a slow inline fdatasync sends the next 256 syncs off the event loop', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  env.inlineSyncMs = 3
  await p.write(batch(), true)
  env.inlineSyncMs = 0
  t.same(env.events, ['write 11', 'sync', 'apply mem1 11'])
  for (let i = 0; i < 256; i++) {
    env.events = []
    const w = p.write(batch(), true)
    await tick()
    t.ok(env.events.includes('sync-async'), `sync ${i + 1} after the slow one: off the event loop`)
    env.asyncSyncs.shift()!.resolve()
    await w
  }
  env.events = []
  await p.write(batch(), true)
  t.ok(env.events.includes('sync'), 'then inline again')
})

test('commit pipeline: a failed write(2) fails its group and every later write', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  env.writeError = levelError('LEVEL_IO_ERROR', 'disk full')
  const a = p.write(batch(), false)
  const b = p.write(batch(), false)
  for (const [name, w] of [['first', a], ['second', b]] as const) {
    try { await w; t.fail(`${name} write resolved`) } catch (err) { t.is(err, env.writeError, `${name} write of the group fails with the error`) }
  }
  env.writeError = undefined
  try { await p.write(batch(), false); t.fail('later write resolved') } catch (err) { t.is((err as LevelError).message, 'disk full', 'a later write fails with the same error') }
  t.is(p.error?.message, 'disk full')
  t.same(env.events, [], 'nothing applied')
  t.is(p.visibleSeq, 10)
})

test('commit pipeline: a failed fdatasync fails the groups waiting for it and stops the pipeline', async (t) => {
  const env = new FakeEnv()
  env.inline = false
  const p = pipeline(env)
  const a = p.write(batch(), true)
  await tick()
  const b = p.write(batch(), false)
  await tick()
  const err = levelError('LEVEL_IO_ERROR', 'fsync failed')
  env.asyncSyncs.shift()!.reject(err)
  for (const [name, w] of [['sync', a], ['behind it', b]] as const) {
    try { await w; t.fail(`${name} resolved`) } catch (e) { t.is(e, err, `the write ${name} fails`) }
  }
  t.is(p.visibleSeq, 10, 'neither applied')
  try { await p.write(batch(), false); t.fail('resolved') } catch (e) { t.is(e, err, 'later writes fail') }

  const env2 = new FakeEnv()
  const q = pipeline(env2)
  env2.syncError = levelError('LEVEL_IO_ERROR', 'inline fsync failed')
  try { await q.write(batch(), true); t.fail('resolved') } catch (e) { t.is(e, env2.syncError, 'an inline fdatasync failure fails the write') }
  t.is(q.error, env2.syncError)
})

test('commit pipeline: a stall or a hold writes nothing until resume(); stall time is counted', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  env.room = 'stall'
  let done = false
  const w = p.write(batch(), false).then(() => { done = true })
  await tick()
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.same(env.events, [], 'stalled: nothing written')
  t.ok(p.currentStallMs >= 15, `the stall is measured (${p.currentStallMs} ms)`)
  env.room = 'hold'
  p.resume()
  await tick()
  t.same(env.events, [], 'held: nothing written')
  env.room = 'go'
  p.resume()
  await w
  t.ok(done)
  t.same(env.events, ['write 11', 'apply mem1 11'])
  t.ok(p.counters.stallMs >= 15, `stallMs counted (${p.counters.stallMs})`)
  t.is(p.currentStallMs, 0, 'no stall now')
})

test('commit pipeline: the level-0 slowdown delays a group by a millisecond, once', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  env.slowDown = true
  await p.write(batch(), false)
  await p.write(batch(), false)
  t.is(p.counters.slowdowns, 2, 'each group slowed down once')
  t.same(env.events, ['write 11', 'apply mem1 11', 'write 12', 'apply mem1 12'], 'and then written')
})

test('commit pipeline: close() commits what can go, fails what cannot, refuses new writes', async (t) => {
  const env = new FakeEnv()
  const p = pipeline(env)
  const a = p.write(batch(), false)
  await p.close()
  await a
  t.same(env.events, ['write 11', 'apply mem1 11'], 'a queued write is committed at close')
  try { await p.write(batch(), false); t.fail('resolved') } catch (err) { t.is((err as LevelError).code, 'LEVEL_DATABASE_NOT_OPEN', 'closing: new writes refused') }

  const env2 = new FakeEnv()
  const q = pipeline(env2)
  env2.room = 'stall'
  const b = q.write(batch(), false)
  await tick()
  await q.close()
  try { await b; t.fail('resolved') } catch (err) { t.is((err as LevelError).code, 'LEVEL_DATABASE_NOT_OPEN', 'a write in a stall fails at close rather than hang') }
})
