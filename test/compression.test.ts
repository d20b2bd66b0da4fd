// Block compression in tables (format 3, lib/sstable/format.ts): which blocks are
// stored compressed (only where that saves 1/8), damaged compressed blocks whose
// checksum passes (LEVEL_CORRUPTION naming the file, never a wrong answer), and
// the engine's `compression` option: on by default, off on request, validated,
// and databases written either way read back under the other. Replay with SEED=<n>.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { LsmLevel } from '../index'
import { NodeFileSystem } from '../hosts/node/node-fs'
import { KIND_VALUE, MAX_SEQ } from '../lib/keys'
import { parseFileName, tableName } from '../lib/filenames'
import { Table } from '../lib/sstable/table'
import { BlockCache } from '../lib/sstable/cache'
import { BLOCK_TYPE_SNAPPY, BLOCK_TYPE_UNCOMPRESSED } from '../lib/sstable/format'
import { crc, maskCrc } from '../lib/util/crc'
import { snappyCompress, snappyUncompressedLength } from '../lib/compression/snappy'
import { compareEntries, type Entry } from './util/array-iterator'
import { buildTable, collectEntries, dataBlocks, diffEntries, isCorruptionNaming, thrown, type StoredBlock } from './util/tables'
import { Random, seedFromEnv } from './util/random'
import { tempDir } from './util/temp'

const seed = seedFromEnv()
const nfs = new NodeFileSystem()
const tmp = tempDir('lsm-compression-test-')

const STATUS = ['open', 'paid', 'shipped', 'closed']

/** A JSON-ish document: compresses about 2x in a block. */
function doc (rnd: Random, i: number): Buffer {
  return Buffer.from(JSON.stringify({ id: `ord_${String(i).padStart(8, '0')}`, status: rnd.pick(STATUS), total: rnd.int(100000) / 100, at: new Date(1.7e12 + rnd.int(1e10)).toISOString() }))
}

/**
 * Whether every data block of the table at `p` was written compressed: stored
 * compressed, or as is where compressing it would not save 1/8 (a block of one
 * short entry).
 */
function compressedWherePays (p: string): boolean {
  const file = nodeFs.readFileSync(p)
  return dataBlocks(p).every((b) => b.type === BLOCK_TYPE_SNAPPY || (b.type === BLOCK_TYPE_UNCOMPRESSED && snappyCompress(file.subarray(b.offset, b.offset + b.size)).length > b.size * 7 / 8))
}

function model (n: number, value: (i: number) => Buffer): Entry[] {
  const out: Entry[] = []
  for (let i = 0; i < n; i++) out.push({ userKey: Buffer.from(`key${String(i).padStart(6, '0')}`), seq: 1 + i, kind: KIND_VALUE, value: value(i) })
  return out.sort(compareEntries)
}

test('compression: compressible blocks are stored compressed, incompressible ones as they are', (t) => {
  const rnd = new Random(seed)
  const docs = model(3000, (i) => doc(rnd, i))
  const compressed = buildTable(tmp, docs, { blockSize: 4096, bloomBitsPerKey: 10 })
  const plain = buildTable(tmp, docs, { blockSize: 4096, bloomBitsPerKey: 10, compression: false })
  const types = dataBlocks(compressed.path).map((b) => b.type)
  t.ok(types.length > 10 && types.every((type) => type === BLOCK_TYPE_SNAPPY), `all ${types.length} data blocks of documents are compressed`)
  t.ok(dataBlocks(plain.path).every((b) => b.type === BLOCK_TYPE_UNCOMPRESSED), 'compression: false stores every block as is')
  t.ok(compressed.size < plain.size * 0.7, `documents: ${compressed.size} bytes compressed, ${plain.size} not`)

  const random = model(3000, () => rnd.bytes(100))
  const r = buildTable(tmp, random, { blockSize: 4096, bloomBitsPerKey: 10 })
  t.ok(dataBlocks(r.path).every((b) => b.type === BLOCK_TYPE_UNCOMPRESSED), 'blocks of random values are stored as is (compression would save under 1/8)')

  for (const [what, built, m] of [['compressed', compressed, docs], ['random', r, random]] as const) {
    const table = Table.open(nfs, built.path, built.name, new BlockCache(1 << 20))
    const it = table.iterator()
    t.is(diffEntries(collectEntries(it), m), null, `${what}: iteration equals the model`)
    t.is(diffEntries(collectEntries(it, true), m.slice().reverse()), null, `${what}: backward too`)
    it.close()
    let wrong = 0
    for (const e of m) if (!(table.get(e.userKey, MAX_SEQ)?.value.equals(e.value) ?? false)) wrong++
    t.is(wrong, 0, `${what}: every get finds its value`)
    table.unref()
  }
  t.end()
})

/** `file` with block `b`'s stored bytes changed by `damage`, and its checksum made valid again. */
function withValidChecksum (file: Buffer, b: StoredBlock, damage: (stored: Buffer) => void): Buffer {
  const out = Buffer.from(file)
  damage(out.subarray(b.offset, b.offset + b.size))
  out.writeUInt32LE(maskCrc(crc(out.subarray(b.offset, b.offset + b.size + 1))), b.offset + b.size + 1)
  return out
}

/** Bytes of the Snappy length header at the start of `stored`. */
function headerBytes (stored: Buffer): number {
  let n = 1
  while ((stored[n - 1] & 0x80) !== 0) n++
  return n
}

test('compression: a compressed block whose checksum passes but that does not decompress is LEVEL_CORRUPTION naming the file', (t) => {
  const rnd = new Random(seed + 1)
  const docs = model(2000, (i) => doc(rnd, i))
  const built = buildTable(tmp, docs, { blockSize: 4096, bloomBitsPerKey: 10 })
  const file = nodeFs.readFileSync(built.path)
  const blocks = dataBlocks(built.path)
  const victim = blocks[1 + rnd.int(blocks.length - 1)]
  t.is(victim.type, BLOCK_TYPE_SNAPPY, 'the damaged block is stored compressed')
  const cases: Array<[string, (stored: Buffer) => void]> = [
    // The first element copies from before the start of the output.
    ['an invalid copy', (s) => { s[headerBytes(s)] = 0x01; s[headerBytes(s) + 1] = 0x05 }],
    // The header's length, one more or one less than the elements produce (same varint size).
    ['a recorded length one too large', (s) => { s[0] = (s[0] & 0x7f) === 0x7f ? s[0] - 1 : s[0] + 1 }],
    ['a recorded length one too small', (s) => { s[0] = (s[0] & 0x7f) === 0 ? s[0] + 1 : s[0] - 1 }]
  ]
  const name = '000777.sst'
  const p = path.join(tmp, name)
  for (const [what, damage] of cases) {
    const damaged = withValidChecksum(file, victim, damage)
    nodeFs.writeFileSync(p, damaged)
    const stored = damaged.subarray(victim.offset, victim.offset + victim.size)
    t.ok(snappyUncompressedLength(stored) > 0, `${what}: the header still parses`)
    for (const verifyChecksums of [true, false]) {
      const table = Table.open(nfs, p, name, new BlockCache(1 << 20), { verifyChecksums })
      const it = table.iterator()
      const forward = thrown(() => collectEntries(it))
      it.close()
      const gets = docs.map((e) => thrown(() => table.get(e.userKey, MAX_SEQ))).filter((err) => err !== undefined)
      table.unref()
      const how = `checksums ${verifyChecksums ? 'on' : 'off'}`
      t.ok(isCorruptionNaming(forward, name) && /does not decompress/.test((forward as Error).message), `${what}, ${how}: iteration is LEVEL_CORRUPTION naming the file: ${(forward as Error)?.message}`)
      t.ok(gets.length > 0 && gets.every((err) => isCorruptionNaming(err, name)), `${what}, ${how}: gets in the block are LEVEL_CORRUPTION (${gets.length})`)
    }
  }
  t.end()
})

function tableFiles (dir: string): string[] {
  return nodeFs.readdirSync(dir).filter((f) => parseFileName(f)?.type === 'table').map((f) => path.join(dir, f))
}

async function fill (db: LsmLevel<string, string>, rnd: Random, from: number, n: number, want: Map<string, string>): Promise<void> {
  for (let i = from; i < from + n; i += 100) {
    const ops = []
    for (let j = i; j < i + 100; j++) {
      const value = doc(rnd, j).toString()
      want.set(`doc${String(j).padStart(6, '0')}`, value)
      ops.push({ type: 'put' as const, key: `doc${String(j).padStart(6, '0')}`, value })
    }
    await db.batch(ops)
  }
}

async function contents (db: LsmLevel<string, string>): Promise<Map<string, string>> {
  return new Map(await db.iterator().all())
}

test('compression option: on by default, off on request, and either database reads under the other setting', async (t) => {
  const rnd = new Random(seed + 2)
  const sizes: Record<string, number> = {}
  for (const compression of [undefined, false]) {
    const dir = path.join(tmp, `db-${String(compression)}`)
    const want = new Map<string, string>()
    const db = new LsmLevel<string, string>(dir, compression === undefined ? {} : { compression })
    await db.open()
    await fill(db, rnd, 0, 5000, want)
    await db.compactRange()
    await db.close()
    const blocks = tableFiles(dir).flatMap((f) => dataBlocks(f))
    const snappy = blocks.filter((b) => b.type === BLOCK_TYPE_SNAPPY).length
    if (compression === undefined) t.ok(snappy === blocks.length && snappy > 0, `default: all ${blocks.length} data blocks compressed`)
    else t.is(snappy, 0, `compression: false: none of ${blocks.length} data blocks compressed`)
    sizes[String(compression)] = tableFiles(dir).reduce((s, f) => s + nodeFs.statSync(f).size, 0)
    // Reopened with the other setting: everything reads, with more written under it.
    const other = new LsmLevel<string, string>(dir, { compression: compression === false })
    await other.open()
    await fill(other, rnd, 5000, 500, want)
    await other.flush()
    t.deepEqual(await contents(other), want, `written with compression ${compression === false ? 'off' : 'on'}, read with it ${compression === false ? 'on' : 'off'}`)
    await other.close()
  }
  t.ok(sizes.undefined < sizes.false * 0.7, `tables: ${sizes.undefined} bytes compressed, ${sizes.false} not`)
})

test('compression option: anything but a boolean is LEVEL_INVALID_OPTION naming it', (t) => {
  for (const value of ['snappy', 1, null]) {
    const err = thrown(() => new LsmLevel(path.join(tmp, 'never'), { compression: value as unknown as boolean })) as { code?: string, message?: string }
    t.is(err?.code, 'LEVEL_INVALID_OPTION', `${JSON.stringify(value)}: LEVEL_INVALID_OPTION`)
    t.ok(err?.message?.includes('compression'), `message names the option: ${err?.message}`)
  }
  t.end()
})

// Compaction reserves its outputs' file numbers from its inputs' sizes, which
// compression makes far smaller than the bytes outputs are cut by when the
// target size is below the block size: it ran out of numbers.
test('compression: compactions of highly compressible data with a target size below the block size', async (t) => {
  for (const worker of [false, true]) {
    const db = new LsmLevel(path.join(tempDir('lsm-compress-tiny-'), 'db'), { writeBufferSize: 4096, compactionWorker: worker })
    await db.open()
    for (let i = 0; i < 3000; i++) await db.put('k' + String(i).padStart(5, '0'), 'v'.repeat(40))
    await db.flush()
    await db.compactRange()
    let n = 0
    for await (const [, v] of db.iterator()) if (v === 'v'.repeat(40)) n++
    t.is(n, 3000, `${worker ? 'worker' : 'event loop'}: every entry reads back after flushes and compactions`)
    t.is(db.engine.backgroundError, undefined, 'no background error')
    await db.close()
  }
})

// Flushes write level-0 tables uncompressed: they sit on the write path (a
// fill waits for them), and compaction soon rewrites them compressed.
test('compression: flushes write level-0 tables uncompressed, compactions write compressed ones', async (t) => {
  const rnd = new Random(seed + 7)
  const dir = path.join(tempDir('lsm-compress-l0-'), 'db')
  const db = new LsmLevel(dir, { compactionWorker: false })
  await db.open()
  for (let i = 0; i < 2000; i++) await db.put('k' + String(i).padStart(5, '0'), doc(rnd, i).toString())
  await db.flush()
  const tables = (): string[] => nodeFs.readdirSync(dir).filter((n) => parseFileName(n)?.type === 'table').map((n) => path.join(dir, n))
  const flushed = tables()
  t.ok(flushed.length > 0 && flushed.every((f) => dataBlocks(f).every((b) => b.type === BLOCK_TYPE_UNCOMPRESSED)), `the ${flushed.length} flushed table(s): every block stored as is`)
  await db.compactRange()
  const compacted = tables()
  t.ok(compacted.length > 0 && compacted.every((f) => !flushed.includes(f) && dataBlocks(f).every((b) => b.type === BLOCK_TYPE_SNAPPY)), `after compaction, ${compacted.length} table(s) with every block compressed`)
  await db.close()
})

// Leveled: a merge into level 1 writes uncompressed tables while a deeper
// level holds tables (level 1 is soon merged into level 2: compressing it
// would cost its writer a Snappy pass and that merge a decode); level 2, and
// level 1 while it is the deepest, are compressed. Keys in a random order, so
// that level 1's tables are merges, not moved down as they are.
test('compression: merges into level 1 uncompressed once a deeper level holds tables, level 2 compressed', async (t) => {
  const rnd = new Random(seed + 9)
  const dir = path.join(tempDir('lsm-compress-levels-'), 'db')
  const db = new LsmLevel<string, string>(dir, { compactionWorker: false, writeBufferSize: 16 * 1024 })
  await db.open()
  const levels = (): Array<Array<{ number: number }>> => (db.engine as unknown as { versions: { current: { levels: Array<Array<{ number: number }>> } } }).versions.current.levels
  const file = (n: number): string => path.join(dir, tableName(n))
  const compressed = (n: number): boolean => compressedWherePays(file(n))
  const uncompressed = (n: number): boolean => dataBlocks(file(n)).every((b) => b.type === BLOCK_TYPE_UNCOMPRESSED)
  let i = 0
  const keys = new Set<string>()
  // Flushed tables are uncompressed, and may be moved down as they are.
  const flushed = new Set<number>()
  const put = async (): Promise<void> => {
    const k = 'k' + String(rnd.int(1e9)).padStart(9, '0')
    keys.add(k)
    await db.put(k, doc(rnd, i).toString())
    i++
    for (const f of levels()[0]) flushed.add(f.number)
  }
  while (levels()[2].length === 0 && i < 100_000) await put()
  t.ok(levels()[2].length > 0, `level 2 holds tables after ${i} puts`)
  // Level 1's tables from before level 2 had any were written compressed.
  const before = new Set(levels()[1].map((f) => f.number))
  const start = i
  while (i < start + 3000) await put()
  await db.engine.waitForIdle()
  const newer = levels()[1].filter((f) => !before.has(f.number))
  t.ok(newer.length > 0 && newer.every((f) => uncompressed(f.number)), `the ${newer.length} level-1 table(s) written since: every block stored as is`)
  const merged = levels()[2].filter((f) => !flushed.has(f.number))
  t.ok(merged.length > 0 && merged.every((f) => compressed(f.number)), `the ${merged.length} level-2 table(s) written by merges: every block compressed (where that saves 1/8)`)
  // Merged into level 2 later, never moved down as they are.
  while (i < start + 9000) await put()
  await db.engine.waitForIdle()
  const moved = newer.filter((f) => levels()[2].some((g) => g.number === f.number))
  t.is(moved.length, 0, 'no uncompressed level-1 table of a merge was moved into level 2')
  let n = 0
  for await (const [k] of db.iterator()) if (k.startsWith('k')) n++
  t.is(n, keys.size, `the ${keys.size} keys of ${i} puts read back`)
  await db.close()
})
