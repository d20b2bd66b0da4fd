// Version edits: round trips of random edits, every truncation and bad fields
// are LEVEL_CORRUPTION, and a manifest (log-format file of edits) round trip.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import {
  MANIFEST_FORMAT_VERSION, TAG_END, TAG_LOG_NUMBER, TAG_NEW_FILE, type VersionEdit, decodeVersionEdit, encodeVersionEdit
} from '../lib/manifest/version-edit'
import type { InternalKey } from '../lib/keys'
import { Version } from '../lib/manifest/version'
import type { FileMeta } from '../lib/manifest/file-meta'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ, encodeInternalKey } from '../lib/keys'
import { isLevelError } from '../lib/errors'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { LogWriter } from '../lib/wal/log-writer'
import { LogReader } from '../lib/wal/log-reader'
import { ByteWriter, compareBytes } from '../lib/util/coding'
import { Random, seedFromEnv } from './util/random'

const seed = seedFromEnv()
const NAME = 'MANIFEST-000003'

function randomNumber (rnd: Random): number {
  switch (rnd.int(4)) {
    case 0: return rnd.int(128)
    case 1: return rnd.int(1 << 20)
    case 2: return rnd.int(2 ** 40)
    default: return rnd.int(Number.MAX_SAFE_INTEGER) + 1
  }
}

function randomKey (rnd: Random): InternalKey {
  return {
    userKey: rnd.bytes(rnd.int(rnd.int(8) === 0 ? 200 : 16)),
    seq: rnd.int(4) === 0 ? MAX_SEQ : rnd.int(2 ** 48),
    kind: rnd.int(2) === 0 ? KIND_VALUE : KIND_DELETE
  }
}

function randomEdit (rnd: Random): VersionEdit {
  const edit: VersionEdit = {}
  if (rnd.int(2) === 0) edit.formatVersion = MANIFEST_FORMAT_VERSION
  if (rnd.int(2) === 0) edit.logNumber = randomNumber(rnd)
  if (rnd.int(2) === 0) edit.nextFileNumber = randomNumber(rnd)
  if (rnd.int(2) === 0) edit.lastSequence = rnd.int(4) === 0 ? MAX_SEQ : rnd.int(2 ** 48)
  if (rnd.int(4) === 0) {
    const logs = []
    for (let n = rnd.int(4), number = rnd.int(1000); n > 0; n--, number += 1 + rnd.int(5)) logs.push({ number, size: randomNumber(rnd) })
    edit.logsAtClose = { lastSequence: rnd.int(2 ** 48), logs }
  }
  if (rnd.int(2) === 0) {
    edit.compactPointers = []
    for (let n = rnd.int(4) + 1; n > 0; n--) edit.compactPointers.push({ level: rnd.int(7), key: randomKey(rnd) })
  }
  if (rnd.int(2) === 0) {
    edit.deletedFiles = []
    for (let n = rnd.int(6) + 1; n > 0; n--) edit.deletedFiles.push({ level: rnd.int(7), number: randomNumber(rnd) })
  }
  if (rnd.int(2) === 0) {
    edit.newFiles = []
    for (let n = rnd.int(6) + 1; n > 0; n--) {
      let a = randomKey(rnd)
      let b = randomKey(rnd)
      const c = compareBytes(a.userKey, b.userKey)
      if (c > 0 || (c === 0 && a.seq < b.seq)) [a, b] = [b, a]
      edit.newFiles.push({
        level: rnd.int(7),
        meta: { number: randomNumber(rnd), size: randomNumber(rnd), entries: randomNumber(rnd), smallest: a, largest: b }
      })
    }
  }
  return edit
}

function expectCorruption (t: test.Test, buf: Buffer, what: string): boolean {
  try {
    decodeVersionEdit(buf, NAME)
  } catch (err) {
    if (isLevelError(err, 'LEVEL_CORRUPTION') && (err as { file?: string }).file === NAME) return true
    t.fail(`${what}: wrong error ${(err as Error).stack}`)
    return false
  }
  t.fail(`${what}: decoded without error`)
  return false
}

test('round-trip random version edits', (t) => {
  const rnd = new Random(seed)
  let bad = 0
  for (let i = 0; i < 3000; i++) {
    const edit = randomEdit(rnd)
    const back = decodeVersionEdit(encodeVersionEdit(edit), NAME)
    if (!isDeepStrictEqual(back, edit)) {
      bad++
      if (bad < 3) t.deepEqual(back, edit, `edit ${i}`)
    }
  }
  t.equal(bad, 0, '3000 edits round-trip')
  t.deepEqual(decodeVersionEdit(encodeVersionEdit({}), NAME), {}, 'empty edit')
  t.end()
})

test('every truncation of an encoded edit is LEVEL_CORRUPTION', (t) => {
  const rnd = new Random(seed + 1)
  let n = 0
  let ok = 0
  for (let i = 0; i < 300; i++) {
    const buf = encodeVersionEdit(randomEdit(rnd))
    for (let cut = 0; cut < buf.length; cut++) {
      n++
      if (expectCorruption(t, buf.subarray(0, cut), `cut ${cut} of ${buf.length}`)) ok++
    }
  }
  t.equal(ok, n, `${n} truncations`)
  t.end()
})

test('malformed fields are LEVEL_CORRUPTION, never a RangeError', (t) => {
  const w = (fn: (w: ByteWriter) => void): Buffer => {
    const bw = new ByteWriter()
    fn(bw)
    return bw.toBuffer()
  }
  expectCorruption(t, w((b) => { b.varint(99); b.varint(TAG_END) }), 'unknown tag')
  expectCorruption(t, w((b) => { b.varint(TAG_LOG_NUMBER); b.varint(1); b.varint(TAG_LOG_NUMBER); b.varint(2); b.varint(TAG_END) }), 'duplicate scalar')
  expectCorruption(t, w((b) => { b.varint(TAG_LOG_NUMBER); b.varint(1); b.varint(TAG_END); b.byte(0) }), 'bytes after end tag')
  expectCorruption(t, w((b) => { b.varint(4); b.varint(MAX_SEQ + 1); b.varint(TAG_END) }), 'last sequence > MAX_SEQ')
  expectCorruption(t, w((b) => { b.varint(TAG_LOG_NUMBER); b.bytes(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])); b.varint(TAG_END) }), 'number above 2^53')
  const newFile = (level: number, smallest: Buffer, largest: Buffer): Buffer => w((b) => {
    b.varint(TAG_NEW_FILE); b.varint(level); b.varint(5); b.varint(100); b.varint(3)
    b.lengthPrefixed(smallest); b.lengthPrefixed(largest); b.varint(TAG_END)
  })
  const k = (s: string, seq: number, kind = KIND_VALUE): Buffer => encodeInternalKey(Buffer.from(s), seq, kind)
  t.deepEqual(decodeVersionEdit(newFile(1, k('a', 5), k('b', 9)), NAME).newFiles?.[0].meta.number, 5, 'well-formed new file decodes')
  expectCorruption(t, newFile(1000, k('a', 5), k('b', 9)), 'absurd level')
  expectCorruption(t, newFile(1, k('b', 5), k('a', 9)), 'smallest > largest')
  expectCorruption(t, newFile(1, Buffer.from('short'), k('a', 9)), 'internal key shorter than its trailer')
  const badKind = k('a', 5)
  badKind[1] = 9
  expectCorruption(t, newFile(1, badKind, k('b', 9)), 'unknown key kind')
  const badReserved = k('a', 5)
  badReserved[badReserved.length - 1] = 1
  expectCorruption(t, newFile(1, badReserved, k('b', 9)), 'nonzero reserved byte')
  expectCorruption(t, w((b) => { b.varint(TAG_NEW_FILE); b.varint(1); b.varint(5); b.varint(100); b.varint(3); b.varint(0xffffffff) }), 'key length 4 GiB')

  const rnd = new Random(seed + 2)
  let detected = 0
  let wrongErrors = 0
  for (let i = 0; i < 2000; i++) {
    const buf = Buffer.from(encodeVersionEdit(randomEdit(rnd)))
    buf[rnd.int(buf.length)] = rnd.next() & 0xff
    try {
      decodeVersionEdit(buf, NAME)
    } catch (err) {
      if (!isLevelError(err, 'LEVEL_CORRUPTION')) {
        wrongErrors++
        t.comment(`flip: wrong error ${(err as Error).stack}`)
      }
      detected++
    }
  }
  // A changed byte inside a key or a number can still decode (the record's
  // checksum catches it in a manifest); a changed tag or length mostly cannot.
  t.is(wrongErrors, 0, '2000 damaged edits: none threw anything but LEVEL_CORRUPTION')
  t.ok(detected >= 200, `2000 damaged edits: ${detected} detected by the decoder alone`)
  t.end()
})

test('a manifest is a log of edits', (t) => {
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'lsm-manifest-test-'))
  try {
    const rnd = new Random(seed + 3)
    const file = path.join(dir, NAME)
    const edits: VersionEdit[] = [{ formatVersion: MANIFEST_FORMAT_VERSION, ...randomEdit(rnd) }]
    for (let i = 0; i < 100; i++) edits.push(randomEdit(rnd))
    const w = new LogWriter(nodeFileSystem.openWrite(file))
    for (const e of edits) w.addRecord(encodeVersionEdit(e))
    w.sync()
    w.close()
    const r = new LogReader(nodeFileSystem, file, NAME)
    const back: VersionEdit[] = []
    for (let rec = r.next(); rec !== undefined; rec = r.next()) back.push(decodeVersionEdit(rec, NAME))
    t.deepEqual(back, edits)
    t.equal(r.tail.state, 'clean')
  } finally {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
  t.end()
})

test('Version.applyAll of a run of edits builds the version that applying them one by one builds', (t) => {
  const rnd = new Random(seed + 1)
  // Table n covers user keys [n0, n5]: disjoint ranges, so any placement is a valid version.
  const key = (n: number, last: boolean): InternalKey => ({ userKey: Buffer.from(`${String(n).padStart(6, '0')}${last ? 5 : 0}`), seq: 1, kind: KIND_VALUE })
  const meta = (n: number): FileMeta => ({ number: n, size: 100, entries: 1, smallest: key(n, false), largest: key(n, true) })
  const live = new Map<number, number>() // number -> level
  let next = 1
  const edits: VersionEdit[] = []
  for (let e = 0; e < 300; e++) {
    const edit: VersionEdit = { newFiles: [], deletedFiles: [] }
    const before = [...live]
    for (let k = rnd.int(4); k > 0; k--) {
      const n = next++
      const level = rnd.int(4)
      edit.newFiles!.push({ level, meta: meta(n) })
      live.set(n, level)
    }
    // Tables that existed before this edit are deleted or moved (a table is never added and removed by one edit).
    for (const [n, level] of before) {
      const r = rnd.int(20)
      if (r === 0) { // deleted (a compaction input)
        edit.deletedFiles!.push({ level, number: n })
        live.delete(n)
      } else if (r === 1 && level < 6) { // moved down a level (a trivial move)
        edit.deletedFiles!.push({ level, number: n })
        edit.newFiles!.push({ level: level + 1, meta: meta(n) })
        live.set(n, level + 1)
      }
    }
    edits.push(edit)
  }
  const shape = (v: Version): number[][] => v.levels.map((files) => files.map((f) => f.number))
  let oneByOne = Version.empty()
  for (const edit of edits) oneByOne = oneByOne.apply(edit)
  t.deepEqual(shape(Version.empty().applyAll(edits)), shape(oneByOne), `${edits.length} edits at once`)
  let chunked = Version.empty()
  for (let i = 0; i < edits.length;) {
    const n = 1 + rnd.int(30)
    chunked = chunked.applyAll(edits.slice(i, i + n))
    i += n
  }
  t.deepEqual(shape(chunked), shape(oneByOne), 'in random runs')
  const expected = [0, 1, 2, 3, 4, 5, 6].map((level) => [...live].filter(([, l]) => l === level).length)
  t.deepEqual(oneByOne.levels.map((files) => files.length), expected, 'and it holds the live tables, each at its level')
  t.end()
})
