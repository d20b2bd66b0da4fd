// Table format versions (lib/sstable/format.ts, block-builder.ts): the version 2
// entry layout (user key + varint tag = seq * 2 + kind; kept by version 3)
// pinned byte for byte, round trips across every tag size in all three
// versions (3 with compressed blocks), damaged version 2 entries, the footer and
// properties version checks, and tables of versions 1 (lsm-level <= 0.2) and 2
// (lsm-level 0.3) read through the Table API, through an engine reopen, and from
// databases written by lsm-level 0.2.0 and 0.3.0 themselves (test/fixtures/table-v1-db, table-v2-db).
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { NodeFileSystem } from '../hosts/node/node-fs'
import { KIND_DELETE, KIND_VALUE, MAX_SEQ } from '../lib/keys'
import { currentUserKey } from '../lib/iterators/internal-iterator'
import { Table } from '../lib/sstable/table'
import { BlockCache } from '../lib/sstable/cache'
import { BlockBuilder } from '../lib/sstable/block-builder'
import { BlockIterator, decodeBlock } from '../lib/sstable/decoded-block'
import { parseRawBlock, rawSeekOut } from '../lib/sstable/raw-block'
import { seekRawBlock } from '../lib/sstable/block-reader'
import { FOOTER_SIZE, FORMAT_VERSION } from '../lib/sstable/format'
import { ByteWriter, getFixed32, putFixed32 } from '../lib/util/coding'
import { crc, maskCrc } from '../lib/util/crc'
import { parseFileName } from '../lib/filenames'
import { compareEntries, type Entry } from './util/array-iterator'
import { buildTable, collectEntries, diffEntries, isCorruptionNaming, thrown } from './util/tables'
import { tempDir } from './util/temp'

const nfs = new NodeFileSystem()
const tmp = tempDir('lsm-table-format-test-')

/** Footer version of a table file. */
function fileVersion (p: string): number {
  const buf = nodeFs.readFileSync(p)
  return getFixed32(buf, buf.length - 12)
}

/** Sequence numbers at every tag-size boundary (tag = seq * 2 + kind, 7 bits per varint byte). */
const BOUNDARY_SEQS = [0, 1, 63, 64, 127, 128, 2 ** 13 - 1, 2 ** 13, 2 ** 20 - 1, 2 ** 20, 2 ** 21, 2 ** 27, 2 ** 35, 2 ** 41, 2 ** 48 - 2, MAX_SEQ]

/** Value lengths at the varint length boundaries (one byte up to 127, two up to 16383). */
const VALUE_SIZES = [127, 128, 300, 16383, 16384, 70000]

/**
 * A sorted model with every boundary seq (both kinds), the empty user key,
 * empty values, values whose lengths take 1, 2 and 3 varint bytes, long shared prefixes (longer than 127 and 255 bytes) and keys
 * that are prefixes of each other.
 */
function boundaryModel (): Entry[] {
  const long = Buffer.alloc(300, 0x61)
  const keys: Buffer[] = [
    Buffer.alloc(0), Buffer.from([0]), Buffer.from([0, 0]), Buffer.from('a'), Buffer.from('ab'),
    long, Buffer.concat([long, Buffer.from('x')]), Buffer.concat([long, Buffer.from('y')]),
    Buffer.concat([long, Buffer.from('y'), Buffer.alloc(200, 0xff)]), Buffer.alloc(129, 0xfe), Buffer.from([0xff])
  ]
  const model: Entry[] = []
  let n = 0
  for (const k of keys) {
    for (const seq of BOUNDARY_SEQS) {
      const kind = n % 3 === 0 ? KIND_DELETE : KIND_VALUE
      // Values of every varint length size (1, 2 and 3 bytes), around each boundary.
      const value = kind === KIND_DELETE || n % 4 === 1
        ? Buffer.alloc(0)
        : n % 5 === 2 ? Buffer.alloc(VALUE_SIZES[n % VALUE_SIZES.length], n & 0xff) : Buffer.from(`v${n}-${seq}`)
      model.push({ userKey: k, seq, kind, value })
      n++
    }
  }
  return model.sort(compareEntries)
}

test('v2 entry layout is pinned: shared, unshared, value length, tag (seq * 2 + kind), key delta, value', (t) => {
  t.is(FORMAT_VERSION, 3, 'new tables are written as version 3 (version 2 entries, blocks maybe compressed)')
  const bb = new BlockBuilder(16, 2)
  bb.add(Buffer.from('ab'), 300, KIND_VALUE, Buffer.from('x'))
  bb.add(Buffer.from('ac'), 5, KIND_DELETE, Buffer.alloc(0))
  bb.add(Buffer.from('ac'), 0, KIND_VALUE, Buffer.from('yz'))
  bb.add(Buffer.from('ad'), MAX_SEQ, KIND_VALUE, Buffer.alloc(0))
  const w = bb.finish()
  const got = Buffer.from(w.view()).toString('hex')
  const want = [
    '00', '02', '01', 'd904', '6162', '78', // tag 601 = 300 * 2 + 1
    '01', '01', '00', '0a', '63', // tag 10 = 5 * 2 + 0
    '02', '00', '02', '01', '797a', // tag 1 = 0 * 2 + 1, whole key shared
    '01', '01', '00', 'ffffffffffff7f', '64', // tag 2^49 - 1: 7 bytes
    '00000000', '01000000' // restart 0, one restart
  ].join('')
  t.is(got, want, 'bytes as documented in block-builder.ts')
  const block = decodeBlock('pin.sst', Buffer.from(w.view()), 2)
  t.deepEqual(Array.from({ length: block.length }, (_, i) => [block.userKey(i).toString(), block.seq(i), block.kind(i), block.value(i).toString()]),
    [['ab', 300, 1, 'x'], ['ac', 5, 0, ''], ['ac', 0, 1, 'yz'], ['ad', MAX_SEQ, 1, '']], 'decodes back')
  // The version 1 layout of the first entry: the encoded internal key (user key + 8-byte trailer).
  const v1 = new BlockBuilder(16, 1)
  v1.add(Buffer.from('ab'), 300, KIND_VALUE, Buffer.from('x'))
  t.is(Buffer.from(v1.finish().view()).toString('hex'), '000a01' + '6162' + '01' + '2c0100000000' + '00' + '78' + '00000000' + '01000000', 'v1 layout unchanged')
  t.end()
})

for (const version of [3, 2, 1]) {
  test(`format v${version}: round trips across tag sizes, deletes, empty keys and values, long shared prefixes`, (t) => {
    const model = boundaryModel()
    for (const interval of [1, 2, 16]) {
      // Blocks: decoded, and searched raw.
      const bb = new BlockBuilder(interval, version)
      for (const e of model) bb.add(e.userKey, e.seq, e.kind, e.value)
      const contents = Buffer.from(bb.finish().view())
      if (version !== 1) {
        // The table builder's path (addV2: the caller passes the shared prefix length) writes the same bytes.
        const fast = new BlockBuilder(interval, version)
        let prev: Buffer | undefined
        for (const e of model) {
          let common = 0
          if (prev !== undefined) while (common < prev.length && common < e.userKey.length && prev[common] === e.userKey[common]) common++
          fast.addV2(e.userKey, 0, e.userKey.length, common, e.seq, e.kind, e.value, 0, e.value.length)
          prev = e.userKey
        }
        t.ok(Buffer.from(fast.finish().view()).equals(contents), `interval ${interval}: addV2 writes the same block as add`)
      }
      const block = decodeBlock('rt.sst', contents, version)
      t.is(diffEntries(collectEntries(new BlockIterator(block)), model), null, `interval ${interval}: block decodes to the model`)
      const raw = parseRawBlock('rt.sst', contents, version)
      let wrong = 0
      for (const e of model) {
        if (!seekRawBlock('rt.sst', raw, e.userKey, e.seq) || rawSeekOut.seq !== e.seq || rawSeekOut.kind !== e.kind ||
          !contents.subarray(rawSeekOut.valueStart, rawSeekOut.valueEnd).equals(e.value)) wrong++
      }
      t.is(wrong, 0, `interval ${interval}: every entry found in place at its own seq`)
    }
    for (const blockSize of [64, 4096]) {
      const built = buildTable(tmp, model, { blockSize, blockRestartInterval: 3, bloomBitsPerKey: 10, formatVersion: version })
      t.is(fileVersion(built.path), version, `blockSize ${blockSize}: footer says version ${version}`)
      const table = Table.open(nfs, built.path, built.name, new BlockCache(1 << 20))
      t.is(table.formatVersion, version, 'Table.formatVersion')
      const it = table.iterator()
      t.is(diffEntries(collectEntries(it), model), null, `blockSize ${blockSize}: forward iteration equals the model`)
      t.is(diffEntries(collectEntries(it, true), model.slice().reverse()), null, `blockSize ${blockSize}: backward iteration equals the model`)
      let wrong = 0
      for (let i = 0; i < model.length; i++) {
        const e = model[i]
        // At its own seq: this entry. Just below: the next older version of the key, if any.
        const got = table.get(e.userKey, e.seq)
        if (got === undefined || got.seq !== e.seq || got.kind !== e.kind || !got.value.equals(e.value)) wrong++
        if (e.seq > 0) {
          const older = i + 1 < model.length && model[i + 1].userKey.equals(e.userKey) ? model[i + 1] : undefined
          const below = table.get(e.userKey, e.seq - 1)
          if (older === undefined ? below !== undefined : below?.seq !== older.seq) wrong++
        }
        it.seek(e.userKey, e.seq)
        if (!it.valid() || it.seq() !== e.seq || !currentUserKey(it).equals(e.userKey)) wrong++
      }
      t.is(wrong, 0, `blockSize ${blockSize}: get and seek find every entry, and only older versions below its seq`)
      it.close()
      const newest = table.get(model[0].userKey, MAX_SEQ)
      t.is(newest?.seq, MAX_SEQ, 'get at MAX_SEQ finds the MAX_SEQ version')
      table.unref()
    }
    t.end()
  })
}

test('v2 tables are smaller than v1 tables of the same entries', (t) => {
  const model: Entry[] = []
  for (let i = 0; i < 5000; i++) {
    const k = Buffer.alloc(16)
    k.writeUInt32BE(i, 0)
    k.writeUInt32BE(i * 2654435761 >>> 0, 4)
    model.push({ userKey: k, seq: 1 + i * 37, kind: KIND_VALUE, value: Buffer.alloc(100, i & 0xff) })
  }
  const v1 = nodeFs.statSync(buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10, formatVersion: 1 }).path).size
  const v2 = nodeFs.statSync(buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10, formatVersion: 2 }).path).size
  // Tags of seqs below 2^20 take at most 3 bytes instead of 8.
  t.ok(v1 - v2 >= 5000 * 5 * 0.95, `v1 ${v1} bytes, v2 ${v2} bytes: ~5 bytes saved per entry`)
  t.end()
})

/** A hand-made block: entries of raw bytes, all of them restart points (or only the first). */
function rawBlock (entries: Buffer[], onlyFirstRestart = false): Buffer {
  const w = new ByteWriter()
  const restarts: number[] = []
  for (const e of entries) {
    if (!onlyFirstRestart || w.pos === 0) restarts.push(w.pos)
    w.bytes(e)
  }
  for (const r of restarts) w.fixed32(r)
  w.fixed32(restarts.length)
  return Buffer.from(w.view())
}

const hex = (s: string): Buffer => Buffer.from(s, 'hex')

test('v2 damaged entries are LEVEL_CORRUPTION in the decoder and the in-place search', (t) => {
  const good = hex('000101' + '03' + '61' + '78') // 'a' @1 put 'x'
  const goodB = hex('000101' + '03' + '62' + '79') // 'b' @1 put 'y'
  const cases: Array<[string, Buffer[]]> = [
    ['tag varint running past the entry area', [good, hex('000000' + '8080')]],
    ['tag varint running past the entry area (first entry)', [hex('000000' + 'ff')]],
    ['tag varint longer than 8 bytes', [good, hex('000000' + '8080808080808080' + '01')]],
    ['tag above 2^49 - 1 (seq above MAX_SEQ)', [good, hex('000000' + '8080808080808001')]],
    ['key running past the entry area after the tag', [good, hex('000500' + '03' + '6162')]],
    ['value running past the entry area after the tag', [good, hex('000105' + '03' + '63' + '7a')]],
    ['header cut before the tag', [good, hex('0001')]],
    ['restart entry sharing bytes', [good, hex('010101' + '03' + '63' + '7a')]]
  ]
  for (const [what, entries] of cases) {
    // Every entry a restart point: the in-place search meets the damaged entry
    // in its binary search over restarts; only the first: in its scan.
    for (const onlyFirst of [false, true]) {
      if (onlyFirst && what.startsWith('restart')) continue
      const block = rawBlock(entries, onlyFirst)
      const how = onlyFirst ? 'scan' : 'restart search'
      t.ok(isCorruptionNaming(thrown(() => decodeBlock('dmg.sst', block, 2)), 'dmg.sst'), `decode (${how} layout): ${what}`)
      const err = thrown(() => {
        const raw = parseRawBlock('dmg.sst', block, 2)
        seekRawBlock('dmg.sst', raw, Buffer.from('z'), MAX_SEQ)
      })
      t.ok(isCorruptionNaming(err, 'dmg.sst'), `seek (${how}): ${what}`)
    }
  }
  // A damaged entry after a scan that stops early is not read (like version 1): no error, right answer.
  const early = rawBlock([good, goodB, hex('000000' + 'ff')])
  const raw = parseRawBlock('dmg.sst', early, 2)
  t.ok(seekRawBlock('dmg.sst', raw, Buffer.from('a'), MAX_SEQ) && rawSeekOut.seq === 1, 'entries before the damage are found')
  // The largest valid tag decodes.
  const max = decodeBlock('ok.sst', rawBlock([hex('000100' + 'ffffffffffff7f' + '61')]), 2)
  t.ok(max.seq(0) === MAX_SEQ && max.kind(0) === KIND_VALUE, 'tag 2^49 - 1 is seq MAX_SEQ, kind value')

  // Through a table read with checksums off: a damaged tag in data block 0.
  const model: Entry[] = []
  for (let i = 0; i < 50; i++) model.push({ userKey: Buffer.from(`k${i}`), seq: 1000 + i, kind: KIND_VALUE, value: Buffer.from(`v${i}`) })
  model.sort(compareEntries)
  const built = buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10 })
  const buf = nodeFs.readFileSync(built.path)
  // Entry 0 at offset 0: shared 0, unshared 2, value length 2, tag (2 bytes for seqs ~1000).
  t.is(buf.subarray(0, 3).toString('hex'), '000202', 'data block 0 starts with the first entry header')
  const name = '000999.sst'
  const p = path.join(tmp, name)
  const damaged = Buffer.from(buf)
  damaged.fill(0xff, 3, 12) // the tag never ends
  nodeFs.writeFileSync(p, damaged)
  for (const verifyChecksums of [false, true]) {
    const table = Table.open(nfs, p, name, new BlockCache(1 << 20), { verifyChecksums })
    t.ok(isCorruptionNaming(thrown(() => table.get(model[0].userKey, MAX_SEQ)), name), `checksums ${verifyChecksums ? 'on' : 'off'}: get is LEVEL_CORRUPTION`)
    const it = table.iterator()
    t.ok(isCorruptionNaming(thrown(() => it.seekToFirst()), name), `checksums ${verifyChecksums ? 'on' : 'off'}: iteration is LEVEL_CORRUPTION`)
    it.close()
    table.unref()
  }
  t.end()
})

test('format versions: footer and properties must name a known version, and agree', (t) => {
  const model: Entry[] = [{ userKey: Buffer.from('a'), seq: 1, kind: KIND_VALUE, value: Buffer.from('x') }]
  const v3 = nodeFs.readFileSync(buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10 }).path)
  const v2 = nodeFs.readFileSync(buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10, formatVersion: 2 }).path)
  const v1 = nodeFs.readFileSync(buildTable(tmp, model, { blockSize: 4096, bloomBitsPerKey: 10, formatVersion: 1 }).path)
  const name = '000555.sst'
  const p = path.join(tmp, name)
  const open = (buf: Buffer): unknown => {
    nodeFs.writeFileSync(p, buf)
    return thrown(() => Table.open(nfs, p, name, new BlockCache(0)).unref())
  }
  t.is(open(v3), undefined, 'version 3 opens')
  t.is(open(v2), undefined, 'version 2 opens')
  t.is(open(v1), undefined, 'version 1 opens')
  const withFooterVersion = (buf: Buffer, v: number): Buffer => {
    const b = Buffer.from(buf)
    putFixed32(b, b.length - 12, v)
    return b
  }
  for (const v of [0, 4, 0xffffffff]) {
    const err = open(withFooterVersion(v3, v))
    t.ok(isCorruptionNaming(err, name) && /unsupported table format version/.test((err as Error).message), `footer version ${v}: LEVEL_CORRUPTION, unsupported`)
  }
  // The footer is not checksummed: a footer version flipped to another known
  // one is caught by the properties block (checksummed), which records the version too.
  for (const [buf, was, v] of [[v3, 3, 2], [v2, 2, 3], [v2, 2, 1], [v1, 1, 2]] as const) {
    const err = open(withFooterVersion(buf, v))
    t.ok(isCorruptionNaming(err, name) && /disagrees/.test((err as Error).message), `footer version ${v} on a v${was} table: LEVEL_CORRUPTION`)
  }
  // A properties block claiming a newer version (valid checksum, footer agreeing).
  const props = findProperties(v3)
  const newer = Buffer.from(v3)
  newer[props.offset] = 4 // version varint
  newer.writeUInt32LE(maskCrc(crc(newer.subarray(props.offset, props.offset + props.size + 1))), props.offset + props.size + 1)
  const err = open(withFooterVersion(newer, 4))
  t.ok(isCorruptionNaming(err, name), 'a version 4 table is LEVEL_CORRUPTION')
  const onlyProps = open(newer)
  t.ok(isCorruptionNaming(onlyProps, name) && /unsupported format version 4/.test((onlyProps as Error).message), 'properties version 4: unsupported')
  t.end()
})

/** The properties block handle from a table's footer. */
function findProperties (buf: Buffer): { offset: number, size: number } {
  const f = buf.length - FOOTER_SIZE
  return { offset: buf.readUInt32LE(f + 32), size: buf.readUInt32LE(f + 40) }
}

/** Rewrites every table of a closed database in format `version` (same entries, same file names). */
function rewriteAs (dir: string, version: number): number {
  let n = 0
  for (const file of nodeFs.readdirSync(dir)) {
    if (parseFileName(file)?.type !== 'table') continue
    const p = path.join(dir, file)
    const table = Table.open(nfs, p, file, new BlockCache(0))
    const it = table.iterator()
    const entries = collectEntries(it)
    it.close()
    table.unref()
    const old = buildTable(dir, entries, { blockSize: 4096, bloomBitsPerKey: 10, formatVersion: version }, file + '.old')
    nodeFs.renameSync(old.path, p)
    n++
  }
  return n
}

function tableVersions (dir: string): number[] {
  return nodeFs.readdirSync(dir).filter((f) => parseFileName(f)?.type === 'table').map((f) => fileVersion(path.join(dir, f)))
}

async function expectContents (t: test.Test, db: LsmLevel<string, string>, model: Map<string, string>, what: string): Promise<void> {
  let wrong = 0
  for (const [k, v] of model) if (await db.get(k) !== v) wrong++
  for (const k of ['absent', 'key0000x']) if (await db.get(k) !== undefined) wrong++
  const seen = await db.iterator().all()
  const want = [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  t.is(wrong, 0, `${what}: every get is right`)
  t.deepEqual(seen, want, `${what}: iteration is right`)
}

for (const old of [1, 2]) {
  test(`engine: a database whose tables are version ${old} reopens, reads, and compaction rewrites them as version ${FORMAT_VERSION}`, async (t) => {
    const dir = path.join(tempDir('lsm-table-format-db-'), 'db')
    const model = new Map<string, string>()
    let db = new LsmLevel<string, string>(dir, { writeBufferSize: 16 * 1024 })
    await db.open()
    for (let i = 0; i < 3000; i++) {
      const k = 'key' + String((i * 7919) % 2000).padStart(4, '0')
      if (i % 11 === 0) {
        await db.del(k)
        model.delete(k)
      } else {
        const v = `value-${i}`.repeat(1 + (i % 5))
        await db.put(k, v)
        model.set(k, v)
      }
    }
    await db.flush()
    await db.close()
    const n = rewriteAs(dir, old)
    t.ok(n >= 2, `${n} tables rewritten as version ${old}`)
    t.ok(tableVersions(dir).every((v) => v === old), `every table is version ${old}`)

    db = new LsmLevel<string, string>(dir, { writeBufferSize: 16 * 1024 })
    await db.open()
    await expectContents(t, db, model, `version ${old} tables`)
    for (let i = 0; i < 300; i++) {
      const k = 'key' + String(i * 3).padStart(4, '0')
      await db.put(k, 'new' + i)
      model.set(k, 'new' + i)
    }
    await db.flush()
    await expectContents(t, db, model, `version ${old} and ${FORMAT_VERSION} tables mixed`)
    await db.compactRange()
    await db.close()
    const versions = tableVersions(dir)
    t.ok(versions.length > 0 && versions.every((v) => v === FORMAT_VERSION), `after compaction every table is version ${FORMAT_VERSION} (${versions.length} tables)`)
    db = new LsmLevel<string, string>(dir)
    await db.open()
    await expectContents(t, db, model, 'after compaction and reopen')
    await db.close()
  })
}

// test/fixtures/table-v1-db was written by lsm-level 0.2.0 (table format 1),
// and test/fixtures/table-v2-db by lsm-level 0.3.0 (table format 2), each with:
//
//   const db = new LsmLevel(dir); await db.open()
//   for (let i = 0; i < 300; i++) await db.put(k(i), 'value' + i)   // k(i) = 'key' + 3-digit i
//   await db.put('empty', ''); await db.flush(); await db.compactRange()
//   for (let i = 0; i < 300; i += 5) await db.put(k(i), 'new' + i)
//   for (let i = 0; i < 300; i += 7) await db.del(k(i))
//   await db.flush(); await db.close()
const FIXTURES = path.join(__dirname, '..', '..', 'test', 'fixtures')

function fixtureModel (): Map<string, string> {
  const model = new Map<string, string>()
  const k = (i: number): string => 'key' + String(i).padStart(3, '0')
  for (let i = 0; i < 300; i++) model.set(k(i), 'value' + i)
  model.set('empty', '')
  for (let i = 0; i < 300; i += 5) model.set(k(i), 'new' + i)
  for (let i = 0; i < 300; i += 7) model.delete(k(i))
  return model
}

for (const [version, release] of [[1, '0.2.0'], [2, '0.3.0']] as const) {
  test(`engine: a database written by lsm-level ${release} opens and reads`, async (t) => {
    const dir = path.join(tempDir('lsm-table-format-fixture-'), 'db')
    nodeFs.cpSync(path.join(FIXTURES, `table-v${version}-db`), dir, { recursive: true })
    t.ok(tableVersions(dir).length === 2 && tableVersions(dir).every((v) => v === version), `the fixture holds two version ${version} tables`)
    const model = fixtureModel()
    let db = new LsmLevel<string, string>(dir)
    await db.open()
    await expectContents(t, db, model, `lsm-level ${release} database`)
    await db.compactRange()
    await db.close()
    t.ok(tableVersions(dir).every((v) => v === FORMAT_VERSION), `compaction rewrote it as version ${FORMAT_VERSION}`)
    db = new LsmLevel<string, string>(dir)
    await db.open()
    await expectContents(t, db, model, 'after compaction')
    await db.close()
  })
}
