// A backup's table reads (lib/backup/table-content.ts) run on the compaction
// thread where the engine has one (JobRunner.readTable): the event loop neither
// reads nor hashes the tables it ships, and a store that copies a file itself
// (the directory store's putFile) gets the table's path, not its bytes. The
// thread's read gives what a read on this thread gives (bytes, CRC-32,
// SHA-256; without the bytes, the same checksums a MiB at a time), fails with
// LEVEL_CORRUPTION naming a table shorter than the manifest says, and the
// shipper routes every table it puts through it.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { createHash } from 'node:crypto'
import { Engine, encodeBatch } from '../hosts/node/index'
import { JobThread } from '../hosts/node/job-thread'
import { nodeFileSystem } from '../hosts/node/node-fs'
import { DirectoryStore } from '../hosts/node/object-store/directory-store'
import { readTableContent } from '../lib/backup/table-content'
import { crc } from '../lib/util/crc'
import { KIND_VALUE } from '../lib/keys'
import { tempDir } from './util/temp'

async function fill (engine: Engine, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 100) {
    const ops = []
    for (let j = i; j < i + 100; j++) ops.push({ kind: KIND_VALUE, key: Buffer.from(`${prefix}${String(j).padStart(6, '0')}`), value: Buffer.alloc(200, j % 251) })
    await engine.write(encodeBatch(ops), false)
  }
  await engine.flushMemTable()
  await engine.waitForIdle()
}

const tables = (dir: string): string[] => nodeFs.readdirSync(dir).filter((f) => f.endsWith('.sst')).map((f) => path.join(dir, f))

test('a table read on the job thread: the same bytes, CRC-32 and SHA-256 as on this thread; a short table is LEVEL_CORRUPTION naming it', async (t) => {
  const dir = tempDir()
  const thread = JobThread.thread(0, 300)
  const engine = await Engine.open(dir, {}, nodeFileSystem, { flush: JobThread.thread(0, 300), compaction: JobThread.thread(0, 300) })
  try {
    await fill(engine, 'k', 3000)
    const [file] = tables(dir)
    t.ok(file !== undefined, 'the flush wrote a table')
    const size = nodeFs.statSync(file).size
    const onThread = await thread.readTable(file, size, true)
    const here = await readTableContent(nodeFileSystem, file, size)
    const disk = nodeFs.readFileSync(file)
    t.ok(Buffer.isBuffer(onThread.bytes) && onThread.bytes.equals(disk), `the thread's bytes are the file's (${size} bytes)`)
    t.equal(onThread.bytes?.buffer.byteLength, size, 'in a buffer of their own')
    t.equal(onThread.crc, crc(disk) >>> 0, 'its CRC-32 is the file\'s')
    t.equal(onThread.sha, createHash('sha256').update(disk).digest('hex').slice(0, 32), 'its SHA-256 is the file\'s')
    t.deepEqual({ crc: here.crc, sha: here.sha }, { crc: onThread.crc, sha: onThread.sha }, 'a read on this thread gives the same')
    // Without the bytes: read a MiB at a time, checksummed piece by piece.
    const big = path.join(dir, 'big')
    const bigBytes = Buffer.concat([disk, disk, disk, Buffer.alloc(3 * 1024 * 1024 + 77, 7)])
    nodeFs.writeFileSync(big, bigBytes)
    for (const [where, r] of [['the thread', await thread.readTable(big, bigBytes.length, false)], ['this thread', await readTableContent(nodeFileSystem, big, bigBytes.length, false)]] as const) {
      t.equal(r.bytes, undefined, `${where}, without the bytes (${bigBytes.length} bytes): none returned`)
      t.deepEqual({ crc: r.crc, sha: r.sha }, { crc: crc(bigBytes) >>> 0, sha: createHash('sha256').update(bigBytes).digest('hex').slice(0, 32) }, `${where}, without the bytes: the same CRC-32 and SHA-256`)
    }
    try {
      await thread.readTable(file, size + 10, false)
      t.fail('a table shorter than its size was read')
    } catch (err) {
      const e = err as Error & { code?: string }
      t.equal(e.code, 'LEVEL_CORRUPTION', `a table shorter than the manifest says: ${e.message}`)
      t.ok(e.message.includes(path.basename(file)), 'the error names the table')
    }
  } finally {
    await engine.close()
    nodeFs.rmSync(dir, { recursive: true, force: true })
  }
})

test('replicate() reads every table it puts on the compaction thread', async (t) => {
  const dir = tempDir()
  const storeDir = tempDir('lsm-store-')
  const compaction = JobThread.thread(0, 300)
  const reads: string[] = []
  const read = compaction.readTable.bind(compaction)
  compaction.readTable = async (file, size, keepBytes) => {
    reads.push(path.basename(file) + (keepBytes ? ' with its bytes' : ''))
    return await read(file, size, keepBytes)
  }
  const engine = await Engine.open(dir, {}, nodeFileSystem, { flush: JobThread.thread(0, 300), compaction })
  try {
    await fill(engine, 'a', 2000)
    await fill(engine, 'b', 2000)
    const onDisk = tables(dir).map((f) => path.basename(f)).sort()
    const store = new DirectoryStore(storeDir)
    const copied: string[] = []
    const putFile = store.putFile.bind(store)
    store.putFile = async (key, source) => {
      copied.push(path.basename(source))
      await putFile(key, source)
    }
    const shipper = await engine.replicate(store, { intervalMs: 50 })
    for (let i = 0; i < 200 && shipper.stats().tablesUploaded < onDisk.length; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    const stats = shipper.stats()
    t.equal(stats.tablesUploaded, onDisk.length, `the shipper put the ${onDisk.length} tables`)
    t.deepEqual([...reads].sort(), onDisk, 'each of them read (to be hashed) on the compaction thread, once, without its bytes')
    t.deepEqual([...copied].sort(), onDisk, 'and copied by the directory store from its file')
    const objects = await store.list('')
    const sizes = objects.filter((o) => o.key.includes('/tables/')).map((o) => o.size).sort((a, b) => a - b)
    t.deepEqual(sizes, onDisk.map((f) => nodeFs.statSync(path.join(dir, f)).size).sort((a, b) => a - b), 'the table objects are the tables\' sizes')
  } finally {
    await engine.close()
    nodeFs.rmSync(dir, { recursive: true, force: true })
    nodeFs.rmSync(storeDir, { recursive: true, force: true })
  }
})
