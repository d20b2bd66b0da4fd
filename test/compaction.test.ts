// Compaction pickers from textual fixtures (they are pure functions of the LSM's
// shape), and the shape of the tree after real workloads under each strategy.
import test from 'tape'
import { pickLeveledCompaction, levelScores } from '../lib/compaction/leveled-picker'
import { pickTieredCompaction, sortedRuns } from '../lib/compaction/tiered-picker'
import { compactionEdit, describeTask, isTrivialMove, manualTask, mergeRuns, movedTables, pickCompaction } from '../lib/compaction/task'
import type { FileMeta } from '../lib/manifest/file-meta'
import { NUM_LEVELS, resolveOptions, maxBytesForLevel } from '../lib/options'
import { LsmLevel } from '../index'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'
import { simulateFlushes } from './util/compaction-sim'

const seed = seedFromEnv()

/**
 * Parses a shape: one line per level, "L<n>: <number>[<smallest>..<largest>]<bytes> ...".
 * Keys are single words compared bytewise.
 */
function shape (text: string): { levels: FileMeta[][], compactPointers: any[] } {
  const levels: FileMeta[][] = Array.from({ length: NUM_LEVELS }, () => [])
  for (const line of text.trim().split('\n')) {
    const m = /^\s*L(\d):(.*)$/.exec(line)
    if (!m) throw new Error('bad fixture line: ' + line)
    for (const f of m[2].trim().split(/\s+/).filter(Boolean)) {
      const p = /^(\d+)\[(\w+)\.\.(\w+)\](\d+)$/.exec(f)
      if (!p) throw new Error('bad fixture file: ' + f)
      levels[Number(m[1])].push({
        number: Number(p[1]),
        size: Number(p[4]),
        entries: 1,
        smallest: { userKey: Buffer.from(p[2]), seq: 1, kind: 1 },
        largest: { userKey: Buffer.from(p[3]), seq: 1, kind: 1 }
      })
    }
  }
  return { levels, compactPointers: new Array(NUM_LEVELS).fill(undefined) }
}

const opts = resolveOptions({ writeBufferSize: 1000, targetFileSize: 500, maxBytesForLevelBase: 2000, level0CompactionTrigger: 4 })
const names = (files: FileMeta[]): number[] => files.map((f) => f.number)

test('leveled picker: fixtures', (t) => {
  t.is(pickLeveledCompaction(shape('L0: 9[a..c]100 8[b..d]100 7[c..e]100\nL1: 1[a..m]1000'), opts), undefined, 'three L0 tables under a trigger of 4: nothing')
  let task = pickLeveledCompaction(shape('L0: 9[a..c]100 8[b..d]100 7[c..e]100 6[x..z]100\nL1: 1[a..b]500 2[c..f]500 3[g..z]500'), opts)!
  t.is(task.level, 0, 'four L0 tables: L0 compaction')
  t.same(names(task.inputs), [9, 8, 7, 6], 'takes every L0 table')
  t.same(names(task.overlaps), [1, 2, 3], 'with the L1 tables they overlap')
  task = pickLeveledCompaction(shape('L1: 1[a..b]900 2[c..d]900 3[e..f]900\nL2: 4[a..a]100 5[c..c]100 6[d..z]100'), opts)!
  t.is(task.level, 1, 'L1 over its 2000-byte limit')
  t.same(names(task.inputs), [1], 'one L1 table (round robin from the start)')
  t.same(names(task.overlaps), [4], 'and what it overlaps in L2')
  const sh = shape('L1: 1[a..b]900 2[c..d]900 3[e..f]900\nL2: 4[a..a]100 5[c..c]100 6[d..z]100')
  sh.compactPointers[1] = sh.levels[1][0].largest
  task = pickLeveledCompaction(sh, opts)!
  t.same(names(task.inputs), [2], 'the compact pointer moves the choice on')
  t.same(names(task.overlaps), [5, 6], 'overlaps follow')
  task = pickLeveledCompaction(shape('L1: 1[a..b]900 2[c..d]900 3[e..f]900\nL2: 6[x..z]100'), opts)!
  t.ok(task.trivialMove, 'nothing under it: a trivial move')
  task = pickLeveledCompaction(shape('L0: 9[g..h]100 8[e..f]100 7[c..d]100 6[a..b]100\nL1: 1[m..n]500'), opts)!
  t.same(names(task.inputs), [9, 8, 7, 6], 'L0 tables of keys written in order: all of them')
  t.ok(task.trivialMove, 'overlapping neither one another nor L1: moved down together')
  task = pickLeveledCompaction(shape('L0: 9[g..h]100 8[e..g]100 7[c..d]100 6[a..b]100\nL1: 1[m..n]500'), opts)!
  t.notOk(task.trivialMove, 'two L0 tables sharing a user key: merged')
  task = pickLeveledCompaction(shape('L0: 9[g..h]100 8[e..f]100 7[c..d]100 6[a..b]100\nL1: 1[b..c]500'), opts)!
  t.notOk(task.trivialMove, 'L0 tables over an L1 table: merged')
  const scores = levelScores(shape('L0: 1[a..b]1 2[a..b]1\nL1: 3[a..b]1000\nL2: 4[a..b]30000'), opts)
  t.same(scores.slice(0, 3), [0.5, 0.5, 1.5], 'scores: L0 count / trigger, level bytes / limit')
  t.end()
})

const tiered = { level0CompactionTrigger: 4, maxSizeAmplificationPercent: 200, sizeRatioPercent: 1 }

test('compaction tasks: the version edit a finished task makes', (t) => {
  const sh = shape('L1: 1[a..b]900 2[c..d]900 3[e..f]900\nL2: 4[a..a]100 5[c..c]100 6[d..z]100')
  sh.compactPointers[1] = sh.levels[1][0].largest
  const leveled = pickLeveledCompaction(sh, opts)!
  const out = shape('L2: 20[c..z]50 21[x..z]50').levels[2]
  const edit = compactionEdit(leveled, out)
  t.same(edit.deletedFiles, [{ level: 1, number: 2 }, { level: 2, number: 5 }, { level: 2, number: 6 }], 'leveled: the input and its overlaps deleted, each from its level')
  t.same(edit.newFiles!.map((f) => [f.level, f.meta.number]), [[2, 20], [2, 21]], 'the outputs at the output level')
  t.same(edit.compactPointers!.map((p) => [p.level, p.key.userKey.toString()]), [[1, 'd']], 'the compact pointer moves past the input')

  const move = pickLeveledCompaction(shape('L1: 1[a..b]900 2[c..d]900 3[e..f]900\nL2: 6[x..z]100'), opts)!
  t.ok(move.trivialMove)
  const moveEdit = compactionEdit(move, [move.inputs[0]])
  t.same(moveEdit.deletedFiles, [{ level: 1, number: 1 }], 'trivial move: the table leaves its level')
  t.same(moveEdit.newFiles!.map((f) => [f.level, f.meta.number]), [[2, 1]], 'and joins the next, unchanged')

  const tieredTask = pickTieredCompaction(shape('L0: 5[a..z]100 4[a..z]100 3[a..z]100\nL5: 2[a..z]5000\nL6: 1[a..z]1000'), tiered)!
  const tieredEdit = compactionEdit(tieredTask, out)
  t.same(tieredEdit.deletedFiles, [{ level: 0, number: 5 }, { level: 0, number: 4 }, { level: 0, number: 3 }, { level: 5, number: 2 }, { level: 6, number: 1 }], 'tiered: every run deleted, across levels')
  t.same(tieredEdit.newFiles!.map((f) => f.level), [6, 6], 'outputs at the output level')
  t.same(tieredEdit.compactPointers, [], 'no compact pointer')
  t.same(mergeRuns(tieredTask).map((r) => r.map((f) => f.number)), [[5], [4], [3], [2], [1]], 'merge runs: each L0 table alone, then each level')
  t.end()
})

test('compaction tasks: manual compaction steps and the strategy switch', (t) => {
  const levels = shape('L0: 9[a..c]100 8[x..z]100\nL1: 1[a..b]500 2[c..f]500 3[g..w]500 4[y..z]500\nL2: 5[a..z]100').levels
  let task = manualTask(levels, 0, 2, Buffer.from('a'), Buffer.from('b'))!
  t.same([task.level, task.outputLevel], [0, 1], 'level 0 into level 1')
  t.same(names(task.inputs), [9, 8], 'every L0 table, though only one overlaps the range')
  t.same(names(task.overlaps), [1, 2, 3, 4], 'and the L1 tables under all of them')
  task = manualTask(levels, 1, 2, Buffer.from('d'), Buffer.from('h'))!
  t.same(names(task.inputs), [2, 3], 'level 1: the tables overlapping [d, h]')
  t.same(names(task.overlaps), [5], 'over the level 2 tables they overlap')
  task = manualTask(levels, 2, 2, undefined, undefined)!
  t.same([task.level, task.outputLevel, task.overlaps.length], [2, 2, 0], 'the bottom level: in place')
  t.same(compactionEdit(task, []).compactPointers!.map((p) => p.level), [2], 'a manual step moves the compact pointer')
  t.is(manualTask(levels, 1, 2, Buffer.from('x'), Buffer.from('x')), undefined, 'nothing in the range at that level: no step')

  const sh = shape('L0: 5[a..z]100 4[a..z]100 3[a..z]100 2[a..z]100\nL6: 1[a..z]10000')
  t.is(pickCompaction(sh, { ...opts, compaction: 'leveled' }, [], 0)?.kind, 'leveled', 'leveled strategy')
  t.is(pickCompaction(sh, { ...opts, ...tiered, compaction: 'tiered' }, [], 0)?.kind, 'tiered', 'tiered strategy')
  const quiet = shape('L1: 1[a..b]100 2[c..d]100')
  const tombstone = { start: Buffer.from('c'), end: Buffer.from('e'), seq: 50 }
  t.is(pickCompaction(quiet, { ...opts, compaction: 'leveled' }, [], 100), undefined, 'nothing to do')
  const cleanup = pickCompaction(quiet, { ...opts, compaction: 'leveled' }, [tombstone], 100)
  t.is(cleanup?.kind, 'range-tombstone', 'nothing else to do: a cleanup under the tombstone')
  t.is(pickCompaction(quiet, { ...opts, compaction: 'leveled' }, [tombstone], 40), undefined, 'not while a snapshot older than the tombstone needs what it hides')
  t.end()
})

test('tiered picker: fixtures', (t) => {
  t.is(pickTieredCompaction(shape('L0: 3[a..z]100 2[a..z]100\nL6: 1[a..z]10000'), tiered), undefined, 'three runs under a trigger of 4: nothing')
  let task = pickTieredCompaction(shape('L0: 5[a..z]100 4[a..z]100 3[a..z]100 2[a..z]100\nL6: 1[a..z]10000'), tiered)!
  t.is(task.reason, 'size-ratio', 'four similar L0 runs: a size-ratio merge')
  t.same(task.runs.map((r) => r.files[0].number), [5, 4, 3, 2], 'merges the similar runs')
  t.is(task.outputLevel, 5, 'into the deepest empty level above the older run')
  task = pickTieredCompaction(shape('L0: 5[a..z]100 4[a..z]100 3[a..z]100\nL5: 2[a..z]5000\nL6: 1[a..z]1000'), tiered)!
  t.is(task.reason, 'space-amplification', 'newer runs 5.3x the oldest: a full merge')
  t.is(task.runs.length, 5, 'every run')
  t.is(task.outputLevel, 6, 'into the oldest run\'s level')
  t.is(pickTieredCompaction(shape('L0: 9[a..z]10 8[a..z]1000\nL5: 2[a..z]100000\nL6: 1[a..z]1000000'), tiered), undefined,
    'four runs, none similar, space amplification 11%: nothing (runs are merged regardless of size only above the trigger)')
  task = pickTieredCompaction(shape('L0: 9[a..z]10 8[a..z]100 7[a..z]1000\nL4: 3[a..z]10000\nL5: 2[a..z]100000\nL6: 1[a..z]1000000'), tiered)!
  t.is(task.reason, 'run-count', 'six runs, none similar: merge the newest to get back to the trigger')
  t.same(task.runs.map((r) => r.files[0].number), [9, 8, 7], 'six runs, trigger 4: the three newest merge into one (4 runs left)')
  t.is(task.outputLevel, 3, 'into the deepest empty level above the next older run')
  task = pickTieredCompaction(shape('L0: 9[a..z]10 8[a..z]1000 7[a..z]100000\nL5: 2[a..z]1000000\nL6: 1[a..z]10000000'), tiered)!
  t.same(task.runs.map((r) => r.files[0].number), [9, 8, 7], 'merging the two newest would leave older L0 table 7 above newer data: the window takes it too')
  t.is(task.outputLevel, 4, 'placed in the deepest empty level above L5')
  task = pickTieredCompaction(shape('L0: 9[a..z]10 8[a..z]100\nL1: 4[a..z]1000\nL5: 2[a..z]100000\nL6: 1[a..z]1000000'), tiered)!
  t.same([task.reason, task.runs.map((r) => r.level)], ['move', [1]], 'five runs: the two newest, but no level is free above L1 for an L0-only window: L1 moves down')
  t.is(task.outputLevel, 4, 'into the deepest empty level above L5')
  task = pickTieredCompaction(shape('L0: 9[a..z]100 8[a..z]100 7[a..z]200 6[a..z]400\nL6: 1[a..z]100000'), tiered)!
  t.is(task.reason, 'size-ratio', 'total-size rule: each next run is compared with the window\'s total so far')
  t.same(task.runs.map((r) => r.files[0].number), [9, 8, 7, 6], '100, 100 (<= 101), 200 (<= 202), 400 (<= 404): all four')
  const mixed = 'L0: 9[a..z]50\nL3: 4[a..z]100\nL4: 3[a..z]101\nL5: 2[a..z]300\nL6: 1[a..z]100000'
  task = pickTieredCompaction(shape(mixed), tiered)!
  t.same(task.runs.map((r) => r.level), [3, 4], '50 then 100 is not similar; from 100: 101 is within 1%, and 300 is over 201 + 1%: the two in the middle')
  t.is(task.outputLevel, 4, 'into the older run\'s level')
  task = pickTieredCompaction(shape(mixed), { ...tiered, sizeRatioPercent: 0 })!
  t.is(task.reason, 'run-count', 'sizeRatioPercent 0: 101 is not within 0% of 100, no similar runs; five runs over a trigger of 4')
  t.same(task.runs.map((r) => r.level), [0, 3], 'the two newest merge')
  t.is(resolveOptions({ compaction: 'tiered' }).level0CompactionTrigger, 8, 'tiered: 8 sorted runs by default')
  t.is(resolveOptions({}).level0CompactionTrigger, 4, 'leveled: 4 level-0 tables by default')
  const runs = sortedRuns(shape('L0: 9[a..z]10 8[a..z]100\nL3: 3[a..m]10 4[n..z]10'))
  t.same(runs.map((r) => [r.level, r.bytes]), [[0, 10], [0, 100], [3, 20]], 'sorted runs: each L0 table, then each level')
  t.end()
})

test('tiered picker: a run of level-0 tables never merges into a larger level-1 run for want of a free level', (t) => {
  // Level 1 holds a run: the level-0 tables have no empty level above the next
  // older run. The old picker merged them into level 1 (every few flushes,
  // rewriting a level-1 run that only grew).
  const eight = { ...tiered, level0CompactionTrigger: 8 }
  let task = pickTieredCompaction(shape('L0: 13[a..z]100 12[a..z]100 11[a..z]100\nL1: 7[a..z]5000\nL2: 6[a..z]6000\nL4: 5[a..z]7000\nL5: 4[a..z]8000\nL6: 3[a..z]90000'), eight)!
  t.is(task.reason, 'move', 'an empty level below: the run above it moves down (no bytes written)')
  t.same([task.runs.map((r) => r.level), task.outputLevel], [[2], 3], 'L2 into the empty L3')
  t.ok(isTrivialMove(task), 'the scheduler runs it as a manifest edit')
  t.same(movedTables(task).map((f) => f.number), [6], 'carrying the run\'s tables')
  task = pickTieredCompaction(shape('L0: 9[a..z]100 8[a..z]100\nL1: 7[a..z]5000\nL2: 6[a..z]6000\nL3: 10[a..z]6500\nL4: 5[a..z]7000\nL5: 4[a..z]8000\nL6: 3[a..z]90000'), eight)!
  t.is(task.reason, 'room', 'every level full: two adjacent deeper runs merge to free one')
  t.same(task.runs.map((r) => r.level), [1, 2], 'the pair with the fewest bytes (5000 + 6000)')
  t.is(task.outputLevel, 2, 'into the older one\'s level: level 1 is free for the level-0 run next')
  t.is(describeTask(task), 'tiered room L1:5000 L2:6000 -> L2', 'its trace line (LSM_TRACE_COMPACTIONS=1)')
  t.end()
})

test('tiered picker: 1,000,000 single puts in 256 KiB flushes write at most 0.6x what leveled writes (simulated)', (t) => {
  // 640 flushes of 180 KB: what 256 KiB memtables of 116-byte entries flush to
  // (the benchmark where tiered once wrote twice what leveled writes: a million
  // single random puts). The old picker wrote 63.7 bytes per byte flushed here.
  const flushes = new Array(640).fill(180_000)
  const leveled = simulateFlushes(flushes, resolveOptions({ compaction: 'leveled', writeBufferSize: 256 * 1024 }))
  const tieredSim = simulateFlushes(flushes, resolveOptions({ compaction: 'tiered', writeBufferSize: 256 * 1024 }))
  t.comment(`write amplification: leveled ${leveled.writeAmplification.toFixed(2)}, tiered ${tieredSim.writeAmplification.toFixed(2)} (${tieredSim.merges} merges, ${tieredSim.moves} moves, at most ${tieredSim.maxRuns} runs)`)
  t.ok(tieredSim.writeAmplification <= 0.6 * leveled.writeAmplification, `tiered ${tieredSim.writeAmplification.toFixed(2)} <= 0.6 x leveled ${leveled.writeAmplification.toFixed(2)}`)
  t.ok(tieredSim.maxRuns < 8, `sorted runs stay under the trigger of 8 once settled (${tieredSim.maxRuns})`)
  t.end()
})

const shapeCases = [
  { strategy: 'leveled' as const },
  { strategy: 'tiered' as const },
  { strategy: 'tiered' as const, level0CompactionTrigger: 4 }
]
for (const { strategy, ...extra } of shapeCases) {
  test(`${strategy} ${JSON.stringify(extra)}: the tree's shape after a random-write workload, and every key reads back`, async (t) => {
    const rnd = new Random(seed)
    const dir = tempDir()
    const options = { compaction: strategy, writeBufferSize: 16 * 1024, blockSize: 1024, targetFileSize: 16 * 1024, maxBytesForLevelBase: 64 * 1024, ...extra }
    const db = new LsmLevel(dir, options)
    await db.open()
    const model = new Map<string, string>()
    const o = resolveOptions(options)
    // Tiered: after each flush, once compaction has settled, the runs must satisfy
    // the picker's rules: at most `level0CompactionTrigger` of them and, when at the
    // trigger, each older run more than (1 + sizeRatioPercent) times the next newer
    // one, and the newer runs within maxSizeAmplificationPercent of the oldest.
    let flushes = db.engine.counters.flushes
    let samples = 0
    let atTrigger = 0
    let maxRuns = 0
    const bad: string[] = []
    for (let i = 0; i < 60_000; i += 200) {
      const ops = []
      for (let j = 0; j < 200; j++) {
        const k = 'k' + String(rnd.int(30_000)).padStart(6, '0')
        if (rnd.int(10) === 0) { ops.push({ type: 'del' as const, key: k }); model.delete(k) } else { const v = 'v' + (i + j); ops.push({ type: 'put' as const, key: k, value: v }); model.set(k, v) }
      }
      await db.batch(ops)
      if (strategy === 'tiered' && db.engine.counters.flushes !== flushes) {
        flushes = db.engine.counters.flushes
        await db.engine.waitForIdle()
        const runs = sortedRuns({ levels: db.engine.tables(), compactPointers: [] })
        const sizes = runs.map((r) => r.bytes)
        samples++
        maxRuns = Math.max(maxRuns, runs.length)
        if (runs.length > o.level0CompactionTrigger) bad.push(`${runs.length} runs: ${sizes.join(' ')}`)
        if (runs.length === o.level0CompactionTrigger) {
          atTrigger++
          const newer = sizes.slice(0, -1).reduce((a, b) => a + b, 0)
          if (newer * 100 > sizes[sizes.length - 1] * o.maxSizeAmplificationPercent) bad.push(`space amplification: ${sizes.join(' ')}`)
          for (let r = 0; r + 1 < sizes.length; r++) {
            if (sizes[r + 1] * 100 <= sizes[r] * (100 + o.sizeRatioPercent)) bad.push(`similar runs left unmerged: ${sizes.join(' ')}`)
          }
        }
      }
    }
    await db.engine.waitForIdle()
    const s = db.stats()
    t.comment(`${strategy}: ${JSON.stringify(s.levels.filter((l) => l.files > 0))}; write amp ${s.writeAmplification.toFixed(2)}, space amp ${s.spaceAmplification.toFixed(2)}, runs ${s.readAmplification}`)
    if (strategy === 'leveled') {
      t.ok(s.levels[0].files < o.level0CompactionTrigger, `L0 under its trigger (${s.levels[0].files})`)
      const deepest = Math.max(...s.levels.filter((l) => l.files > 0).map((l) => l.level))
      for (const l of s.levels) {
        if (l.level >= 1 && l.level < deepest) t.ok(l.bytes <= maxBytesForLevel(o, l.level), `L${l.level} ${l.bytes} B within its limit ${maxBytesForLevel(o, l.level)}`)
      }
      const tables = db.engine.tables()
      t.ok(tables.slice(1).every((files) => files.every((f, i) => i === 0 || Buffer.compare(files[i - 1].largest.userKey, f.smallest.userKey) < 0)), 'levels 1+ do not overlap')
    } else {
      t.comment(`tiered: ${samples} samples after flushes, ${atTrigger} at the trigger of ${o.level0CompactionTrigger} runs, at most ${maxRuns} runs`)
      t.same(bad, [], 'settled after every flush: runs bounded by the trigger; at the trigger, sizes growing with age and space amplification bounded')
      if (o.level0CompactionTrigger <= 4) {
        t.ok(atTrigger >= 5, `the workload settled at the trigger ${atTrigger} times, so the size checks ran`)
      } else {
        // Runs are left to accumulate up to the trigger (that is the trade for less rewriting).
        t.ok(maxRuns >= o.level0CompactionTrigger - 2, `runs accumulate rather than being merged eagerly (at most ${maxRuns})`)
      }
      const runs = s.levels[0].files + s.levels.slice(1).filter((l) => l.files > 0).length
      t.ok(runs <= o.level0CompactionTrigger, `sorted runs at the end within the trigger (${runs})`)
    }
    let wrong = 0
    for (const [k, v] of model) if (await db.get(k) !== v) wrong++
    t.is(wrong, 0, `every live key reads back (${model.size})`)
    t.is((await db.keys().all()).length, model.size, 'iteration sees exactly the live keys')
    await db.close()
  })
}

test('single awaited puts with a small write buffer: tiered writes at most 0.7x what leveled writes, and every key reads back', async (t) => {
  // The shape of that benchmark (a million single puts) scaled down: 40,000
  // puts of random keys over 40,000 keys in 16 KiB memtables (384 flushes,
  // with overwrites). Measured:
  // 0.56-0.60x with this picker (0.5x at the benchmark's 1,000,000 puts), 0.84x
  // with the old one. The bound leaves room for timing (merges run while flushes
  // go on); the simulation above holds the picker to 0.6x.
  const wa: Record<string, number> = {}
  for (const compaction of ['leveled', 'tiered'] as const) {
    const rnd = new Random(seed)
    // Uncompressed: these values compress ~10x, and level-0 tables are written
    // uncompressed, so with compression the bytes written would weigh level 0
    // against the rest rather than count what each picker rewrites.
    const db = new LsmLevel(tempDir(), { compaction, writeBufferSize: 16 * 1024, compression: false })
    await db.open()
    const model = new Map<string, string>()
    for (let i = 0; i < 40_000; i++) {
      const k = String(rnd.int(40_000)).padStart(16, '0')
      const v = 'v'.repeat(90) + i
      await db.put(k, v)
      model.set(k, v)
    }
    await db.engine.waitForIdle()
    const s = db.stats()
    wa[compaction] = s.writeAmplification
    t.comment(`${compaction}: write amp ${s.writeAmplification.toFixed(2)}, ${s.flushes} flushes, ${s.compactions.done} compactions (+${s.compactions.trivialMoves} moves), runs ${s.readAmplification}`)
    let wrong = 0
    for (const [k, v] of model) if (await db.get(k) !== v) wrong++
    t.is(wrong, 0, `${compaction}: every key reads back (${model.size})`)
    await db.close()
  }
  t.ok(wa.tiered <= 0.7 * wa.leveled, `tiered ${wa.tiered.toFixed(2)} <= 0.7 x leveled ${wa.leveled.toFixed(2)}`)
})

test('flow control: writes slow down, then wait, so level 0 and the memtables stay bounded', async (t) => {
  const options = {
    writeBufferSize: 4 * 1024,
    blockSize: 512,
    targetFileSize: 4 * 1024,
    maxBytesForLevelBase: 16 * 1024,
    level0CompactionTrigger: 2,
    level0SlowdownWritesTrigger: 3,
    level0StopWritesTrigger: 4,
    maxImmutableMemtables: 1
  }
  const db = new LsmLevel(tempDir(), options)
  await db.open()
  let maxL0 = 0
  let maxMem = 0
  const value = 'x'.repeat(100)
  // Many writers in flight at once, never waiting for one another.
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = 0; i < 400; i++) {
      await db.put(`w${w}-${i}`, value)
      const s = db.stats()
      maxL0 = Math.max(maxL0, s.levels[0].files)
      maxMem = Math.max(maxMem, s.memtableBytes)
    }
  }))
  await db.engine.waitForIdle()
  const s = db.stats()
  t.comment(`max L0 ${maxL0}, max memtable bytes ${maxMem}, stalls ${s.stallMs} ms, ${s.slowdowns} slowdowns`)
  t.ok(maxL0 <= options.level0StopWritesTrigger + 1, `level 0 stayed bounded (max ${maxL0})`)
  t.ok(maxMem <= options.writeBufferSize * (options.maxImmutableMemtables + 1) + 16 * 200 * 2, `memtables stayed bounded (max ${maxMem} B)`)
  t.is((await db.keys().all()).length, 16 * 400, 'every write landed')
  await db.close()
})

// Subcompactions (option subcompactions, lib/compaction/scheduler.ts): a large
// compaction runs as two halves at once, one on each worker thread; the result
// is the same database.
test('subcompactions: large compactions split in two on the worker threads, with the same result', async (t) => {
  const rnd = new Random(seed + 77)
  const entries: Array<[string, string]> = []
  for (let i = 0; i < 30_000; i++) entries.push([`k${String(rnd.int(1e9)).padStart(9, '0')}`, `v${i}-${'x'.repeat(rnd.int(60))}`])
  const want = new Map<string, string>()
  for (const [k, v] of entries) want.set(k, v)
  const contents: Array<Map<string, string>> = []
  const configs = [
    { name: 'worker threads', options: { compactionWorker: true, subcompactions: true } },
    { name: 'worker threads, subcompactions: false (the default)', options: { compactionWorker: true } },
    { name: 'event loop', options: { compactionWorker: false, subcompactions: true } }
  ]
  for (const { name, options } of configs) {
    const db = new LsmLevel<string, string>(tempDir(), { ...options, writeBufferSize: 64 * 1024, targetFileSize: 16 * 1024 })
    await db.open()
    for (let i = 0; i < entries.length; i += 500) await db.batch(entries.slice(i, i + 500).map(([key, value]) => ({ type: 'put' as const, key, value })))
    await db.compactRange()
    const s = db.stats()
    if (name === 'worker threads') t.ok(s.compactions.split > 0, `${name}: ${s.compactions.split} of ${s.compactions.done} compactions split in two`)
    else t.is(s.compactions.split, 0, `${name}: none split`)
    const levels = db.engine.tables()
    let ordered = true
    for (let level = 1; level < levels.length; level++) {
      for (let i = 1; i < levels[level].length; i++) {
        if (Buffer.compare(levels[level][i - 1].largest.userKey, levels[level][i].smallest.userKey) >= 0) ordered = false
      }
    }
    t.ok(ordered, `${name}: the tables of each level are disjoint and in order`)
    contents.push(new Map(await db.iterator().all()))
    await db.close()
  }
  for (const [i, { name }] of configs.entries()) t.deepEqual(contents[i], want, `${name}: every entry reads back`)
})
