// The version set alone (lib/manifest/version-set.ts), over the in-memory file
// system: a new manifest and its edits recovered as they were written; edits
// applied in call order, each installed only once durable; a failed manifest
// write failing every later edit; the manifest rolled over past its size
// limit, and at a clean close past 64 KiB; a manifest of a newer format refused; damaged CURRENT and manifests as
// corruption naming the file; the clean-close record trusted only as the last
// edit; obsolete tables reported once no version uses them; orphan files.
import test from 'tape'
import { VersionSet } from '../lib/manifest/version-set'
import { encodeVersionEdit, MANIFEST_FORMAT_VERSION, type VersionEdit } from '../lib/manifest/version-edit'
import type { FileMeta } from '../lib/manifest/file-meta'
import { LogWriter } from '../lib/wal/log-writer'
import { CURRENT, join, logName, manifestName, tableName, tempName } from '../lib/filenames'
import { KIND_VALUE } from '../lib/keys'
import { isLevelError, type LevelError } from '../lib/errors'
import { MemFileSystem } from './fs/mem-fs'
import { powerLossImage } from './fs/crash-images'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()
const DIR = '/db'

/** Table `number` over user keys [lo, hi], its (empty) file created in `fs`. */
function table (fs: MemFileSystem, number: number, lo: string, hi: string): FileMeta {
  fs.openWrite(join(DIR, tableName(number))).close()
  return { number, size: 100, smallest: { userKey: Buffer.from(lo), seq: 1, kind: KIND_VALUE }, largest: { userKey: Buffer.from(hi), seq: 1, kind: KIND_VALUE }, entries: 1 }
}

function freshFs (): MemFileSystem {
  const fs = new MemFileSystem()
  fs.mkdirp(DIR)
  return fs
}

/** A version set over `fs` with a new manifest, as a new database's open makes it. */
function created (fs: MemFileSystem, logNumber = 1): VersionSet {
  const vs = new VersionSet(fs, DIR)
  vs.writeNewManifest({ logNumber, lastSequence: 0 })
  return vs
}

function recovered (fs: MemFileSystem): VersionSet {
  const vs = new VersionSet(fs, DIR)
  vs.recover()
  return vs
}

/** The tables of each level, as "level:number" strings. */
const shape = (vs: VersionSet): string[] => vs.current.levels.flatMap((files, level) => files.map((f) => `${level}:${f.number}`))

function expectError (t: test.Test, fn: () => void, code: string, file: string | undefined, what: string): void {
  try {
    fn()
    t.fail(`${what}: no error`)
  } catch (err) {
    const e = err as LevelError
    t.ok(isLevelError(e, code as LevelError['code']) && (file === undefined || e.file === file), `${what}: ${e.code ?? ''} naming ${e.file ?? '-'} (${e.message})`)
  }
}

test('version set: a new manifest and its edits are recovered as written', async (t) => {
  const fs = freshFs()
  const vs = created(fs, 3)
  t.is(fs.readSmallFile(join(DIR, CURRENT)).toString(), `${manifestName(vs.manifestNumber)}\n`, 'CURRENT names the new manifest')
  const a = table(fs, vs.newFileNumber(), 'a', 'c')
  const b = table(fs, vs.newFileNumber(), 'd', 'f')
  const c = table(fs, vs.newFileNumber(), 'b', 'e')
  await vs.logAndApply({ newFiles: [{ level: 1, meta: a }, { level: 1, meta: b }], logNumber: 4, lastSequence: 50 })
  await vs.logAndApply({ newFiles: [{ level: 0, meta: c }], lastSequence: 60, compactPointers: [{ level: 1, key: a.largest }] })
  await vs.logAndApply({ deletedFiles: [{ level: 1, number: a.number }], logNumber: 5 })
  const next = vs.nextFileNumber
  vs.close()
  const back = recovered(fs)
  t.same(shape(back), shape(vs), `the tables (${shape(vs).join(' ')})`)
  t.same(shape(back), [`0:${c.number}`, `1:${b.number}`], 'level 0 and level 1 as edited')
  t.same([back.logNumber, back.lastSequence], [5, 60], 'log number and last sequence')
  t.ok(back.nextFileNumber >= next, 'file numbers are not reused')
  t.same(back.compactPointers[1]?.userKey.toString(), 'c', 'the compact pointer')
  t.is(back.logsAtClose, undefined, 'no clean-close record')
  back.writeNewManifest()
  t.notOk(fs.exists(join(DIR, manifestName(vs.manifestNumber))), 'the next open\'s manifest replaces the old one')
  t.same(shape(recovered(fs)), shape(vs), 'and holds the same state')
})

test('version set: edits apply in call order, each installed only once its record is durable', async (t) => {
  const rnd = new Random(seed)
  const fs = freshFs()
  const vs = created(fs)
  const metas = [table(fs, vs.newFileNumber(), 'a', 'b'), table(fs, vs.newFileNumber(), 'c', 'd'), table(fs, vs.newFileNumber(), 'e', 'f')]
  fs.syncDir(DIR)
  const order: string[] = []
  const before = vs.current
  const runs = metas.map(async (meta, i) => {
    await vs.logAndApply({ newFiles: [{ level: 1, meta }], lastSequence: 10 * (i + 1) })
    order.push(`edit ${i}`)
    // A power loss now keeps this edit and the ones before it.
    const image = powerLossImage(fs, rnd, 'drop')
    t.same(shape(recovered(image)), metas.slice(0, i + 1).map((m) => `1:${m.number}`), `edit ${i}: durable with those before it when it resolves`)
    t.same(shape(vs), metas.slice(0, i + 1).map((m) => `1:${m.number}`), `edit ${i}: installed when it resolves`)
  })
  t.is(vs.current, before, 'nothing installed before the manifest\'s fsync')
  await Promise.all(runs)
  t.same(order, ['edit 0', 'edit 1', 'edit 2'], 'resolved in call order')
  t.is(vs.lastSequence, 30, 'last sequence of the last edit')
})

test('version set: a failed manifest write fails that edit and every later one; nothing is installed', async (t) => {
  const fs = freshFs()
  const vs = created(fs)
  const meta = table(fs, vs.newFileNumber(), 'a', 'b')
  const name = manifestName(vs.manifestNumber)
  fs.faults.inject({ op: 'syncAsync', path: name })
  const before = shape(vs)
  const first = vs.logAndApply({ newFiles: [{ level: 1, meta }] })
  const second = vs.logAndApply({ newFiles: [{ level: 2, meta: table(fs, vs.newFileNumber(), 'x', 'y') }] })
  await first.then(() => t.fail('the edit must fail'), (err) => t.is(err.code, 'EIO', 'the edit whose fsync failed rejects'))
  await second.then(() => t.fail('a later edit must fail'), (err) => t.is(err.code, 'EIO', 'an edit queued behind it rejects with the same failure'))
  fs.faults.clear()
  await vs.logAndApply({ newFiles: [{ level: 3, meta: table(fs, vs.newFileNumber(), 'p', 'q') }] }).then(() => t.fail('must fail'), (err) => t.is(err.code, 'EIO', 'an edit after the fault is gone still fails: the manifest\'s tail is unknown'))
  await vs.recordClose({ lastSequence: 0, logs: [] }).then(() => t.fail('must fail'), (err) => t.is(err.code, 'EIO', 'so does the clean-close record'))
  t.same(shape(vs), before, 'nothing installed')
})

test('version set: the manifest rolls over to a fresh snapshot past 4 MiB', async (t) => {
  const fs = freshFs()
  const vs = created(fs)
  const meta = table(fs, vs.newFileNumber(), 'a', 'b')
  await vs.logAndApply({ newFiles: [{ level: 1, meta }] })
  const first = vs.manifestNumber
  // Edits of ~100 KiB each (a long compact pointer key).
  let edits = 0
  while (vs.manifestNumber === first && edits < 100) {
    await vs.logAndApply({ compactPointers: [{ level: 2, key: { userKey: Buffer.alloc(100 * 1024, edits), seq: 1, kind: KIND_VALUE } }] })
    edits++
  }
  t.ok(vs.manifestNumber > first, `rolled over after ${edits} edits`)
  t.ok(edits >= 40 && edits <= 42, 'at about 4 MiB')
  t.is(fs.readSmallFile(join(DIR, CURRENT)).toString(), `${manifestName(vs.manifestNumber)}\n`, 'CURRENT names the new manifest')
  t.notOk(fs.exists(join(DIR, manifestName(first))), 'the old manifest is removed')
  t.ok(fs.readSmallFile(join(DIR, manifestName(vs.manifestNumber))).length < 200 * 1024, 'the new one holds one snapshot')
  await vs.logAndApply({ lastSequence: 99 })
  vs.close()
  const back = recovered(fs)
  t.same(shape(back), [`1:${meta.number}`], 'recovered: the tables')
  t.is(back.lastSequence, 99, 'and an edit after the roll-over')
  t.is(back.compactPointers[2]?.userKey[0], edits - 1, 'and the last compact pointer')
})

/** Writes a manifest of `edits` by hand and points CURRENT at it. */
function writeManifest (fs: MemFileSystem, number: number, edits: VersionEdit[]): void {
  const w = new LogWriter(fs.openWrite(join(DIR, manifestName(number))))
  for (const e of edits) w.addRecord(encodeVersionEdit(e))
  w.close()
  fs.createExclusive(join(DIR, CURRENT), Buffer.from(`${manifestName(number)}\n`))
}

test('version set: a manifest of a newer format is LEVEL_NOT_SUPPORTED', (t) => {
  const fs = freshFs()
  writeManifest(fs, 2, [{ formatVersion: MANIFEST_FORMAT_VERSION + 1, logNumber: 1, nextFileNumber: 3, lastSequence: 0 }])
  expectError(t, () => recovered(fs), 'LEVEL_NOT_SUPPORTED', undefined, `format ${MANIFEST_FORMAT_VERSION + 1}`)
  const ok = freshFs()
  writeManifest(ok, 2, [{ formatVersion: MANIFEST_FORMAT_VERSION, logNumber: 1, nextFileNumber: 3, lastSequence: 0 }])
  t.doesNotThrow(() => recovered(ok), `format ${MANIFEST_FORMAT_VERSION} is read`)
  t.end()
})

test('version set: a damaged CURRENT or manifest is LEVEL_CORRUPTION naming the file', (t) => {
  const state: VersionEdit = { formatVersion: MANIFEST_FORMAT_VERSION, logNumber: 1, nextFileNumber: 3, lastSequence: 0 }
  const replaceCurrent = (fs: MemFileSystem, text: string): void => {
    fs.remove(join(DIR, CURRENT))
    fs.createExclusive(join(DIR, CURRENT), Buffer.from(text))
  }

  let fs = freshFs()
  writeManifest(fs, 2, [state])
  replaceCurrent(fs, 'garbage')
  expectError(t, () => recovered(fs), 'LEVEL_CORRUPTION', CURRENT, 'CURRENT not naming a manifest')
  replaceCurrent(fs, 'MANIFEST-000009\n')
  expectError(t, () => recovered(fs), 'LEVEL_CORRUPTION', CURRENT, 'CURRENT naming a missing manifest')

  fs = freshFs()
  writeManifest(fs, 2, [state, { lastSequence: 5 }, { lastSequence: 6 }])
  const path = join(DIR, manifestName(2))
  const bytes = fs.readSmallFile(path)
  // Inside the second record's payload (past the first record and the second's 7-byte header): a valid state, then damage, then a valid record.
  bytes[7 + encodeVersionEdit(state).length + 7] ^= 0x40
  fs.remove(path)
  fs.createExclusive(path, bytes)
  expectError(t, () => recovered(fs), 'LEVEL_CORRUPTION', manifestName(2), 'a damaged record between valid ones')

  fs = freshFs()
  writeManifest(fs, 2, [{ lastSequence: 5 }])
  expectError(t, () => recovered(fs), 'LEVEL_CORRUPTION', manifestName(2), 'no complete state record')

  fs = freshFs()
  const meta = table(fs, 5, 'a', 'b')
  writeManifest(fs, 2, [{ ...state, nextFileNumber: 6, newFiles: [{ level: 1, meta }] }])
  fs.remove(join(DIR, tableName(5)))
  expectError(t, () => recovered(fs), 'LEVEL_CORRUPTION', tableName(5), 'a table the manifest names is missing')
  t.end()
})

test('version set: logsAtClose is kept only while the clean-close record is the last edit', async (t) => {
  const fs = freshFs()
  const vs = created(fs, 4)
  const close = { lastSequence: 42, logs: [{ number: 4, size: 1234 }] }
  await vs.recordClose(close)
  vs.close()
  let back = recovered(fs)
  t.same(back.logsAtClose, close, 'the last edit is the close record: kept')
  const editedFs = freshFs()
  const edited = created(editedFs, 4)
  await edited.recordClose(close)
  await edited.logAndApply({ lastSequence: 50 })
  edited.close()
  back = recovered(editedFs)
  t.is(back.logsAtClose, undefined, 'an edit after the close record: dropped')
  const queuedFs = freshFs()
  const queuedVs = created(queuedFs, 4)
  // Two edits queued: the second waits for the first one's fsync.
  const queued = [queuedVs.logAndApply({ lastSequence: 6 }), queuedVs.logAndApply({ lastSequence: 7 })]
  const closed = queuedVs.recordClose(close)
  await Promise.all([...queued, closed])
  queuedVs.close()
  back = recovered(queuedFs)
  t.same(back.logsAtClose, close, 'recordClose goes after the edits queued before it')
  t.is(back.lastSequence, 7, 'which are in the manifest too')
  back.writeNewManifest()
  t.is(recovered(queuedFs).logsAtClose, undefined, 'a new manifest (the next open\'s) starts without it')
})

test('version set: a clean close past 64 KiB of manifest writes a fresh snapshot first, which the next open appends to', async (t) => {
  const fs = freshFs()
  const vs = created(fs, 4)
  const meta = table(fs, vs.newFileNumber(), 'a', 'b')
  await vs.logAndApply({ newFiles: [{ level: 1, meta }] })
  // Edits of ~1 KiB each (a compact pointer key), to past 64 KiB.
  for (let i = 0; i < 70; i++) {
    await vs.logAndApply({ compactPointers: [{ level: 2, key: { userKey: Buffer.alloc(1024, i), seq: 1, kind: KIND_VALUE } }], lastSequence: 10 + i })
  }
  const grown = vs.manifestNumber
  t.ok(fs.readSmallFile(join(DIR, manifestName(grown))).length > 64 * 1024, 'the manifest is past 64 KiB')
  const close = { lastSequence: 79, logs: [{ number: 4, size: 0 }] }
  await vs.recordClose(close)
  vs.close()
  t.ok(vs.manifestNumber > grown, 'the close wrote a new manifest')
  t.notOk(fs.exists(join(DIR, manifestName(grown))), 'the old one is removed')
  t.is(fs.readSmallFile(join(DIR, CURRENT)).toString(), `${manifestName(vs.manifestNumber)}\n`, 'CURRENT names it')
  t.ok(fs.readSmallFile(join(DIR, manifestName(vs.manifestNumber))).length < 4 * 1024, 'it holds a snapshot and the close record')
  const back = recovered(fs)
  t.same(back.logsAtClose, close, 'the close record is its last edit')
  t.same(shape(back), [`1:${meta.number}`], 'the tables')
  t.is(back.lastSequence, 79, 'the newest sequence number')
  t.is(back.compactPointers[2]?.userKey[0], 69, 'the last compact pointer')
  // The next open (nothing replayed) owes its edit, and appends it at the first write.
  const number = back.manifestNumber
  back.deferResume({ logNumber: 4, lastSequence: 79 })
  back.ensureResumed()
  back.close()
  t.is(recovered(fs).manifestNumber, number, 'the next open appended to it')
  t.is(recovered(fs).logsAtClose, undefined, 'its edit ended the close record')
})

test('version set: an obsolete table is reported once no live version uses it', async (t) => {
  const fs = freshFs()
  const vs = created(fs)
  const obsolete: number[] = []
  vs.onObsoleteTable = (n) => obsolete.push(n)
  const a = table(fs, vs.newFileNumber(), 'a', 'b')
  const b = table(fs, vs.newFileNumber(), 'c', 'd')
  await vs.logAndApply({ newFiles: [{ level: 1, meta: a }, { level: 1, meta: b }] })
  const pinned = vs.current
  pinned.ref()
  await vs.logAndApply({ deletedFiles: [{ level: 1, number: a.number }] })
  t.same(obsolete, [], 'a reader\'s version still uses it')
  t.ok(vs.isLiveTable(a.number), 'live')
  pinned.unref()
  t.same(obsolete, [a.number], 'reported once the reader lets go')
  t.notOk(vs.isLiveTable(a.number), 'no longer live')
  t.ok(vs.isLiveTable(b.number), 'the other table is')
})

test('version set: orphanFiles lists what no state refers to', async (t) => {
  const fs = freshFs()
  const vs = created(fs, 7)
  const live = table(fs, vs.newFileNumber(), 'a', 'b')
  await vs.logAndApply({ newFiles: [{ level: 1, meta: live }] })
  const dead = table(fs, 90, 'x', 'y')
  for (const n of [logName(6), logName(7), logName(8), manifestName(1), tempName(91), 'LOCK', 'notes.txt']) fs.openWrite(join(DIR, n)).close()
  const orphans = vs.orphanFiles(new Set([7, 8])).sort()
  t.same(orphans, [tableName(dead.number), logName(6), manifestName(1), tempName(91)].sort(), 'a dead table, an old log, an old manifest, a temp file')
  t.notOk(orphans.includes(manifestName(vs.manifestNumber)), 'never the current manifest')
  t.notOk(orphans.includes(CURRENT) || orphans.includes('LOCK'), 'nor CURRENT or LOCK')
})
