// The lsm-level command line tool (cli/, bin/lsm-level.js), run as a
// child process against databases built with the library.
import test from 'tape'
import * as nodeFs from 'node:fs'
import * as path from 'node:path'

import { LsmLevel } from '../index'
import { tempDir } from './util/temp'
import { cli } from './util/cli'
import { parseFileName } from '../lib/filenames'

/** A database with flushed tables (two of them) and writes still in its log. */
async function makeDb (): Promise<string> {
  const dir = path.join(tempDir('lsm-cli-test-'), 'db')
  // The last writes stay in the log at close (the commands read logs too).
  const db = new LsmLevel(dir, { flushOnClose: false })
  await db.open()
  for (let i = 0; i < 50; i++) await db.put(`key${String(i).padStart(3, '0')}`, `value${i}`)
  await db.flush()
  for (let i = 50; i < 100; i++) await db.put(`key${String(i).padStart(3, '0')}`, `value${i}`)
  await db.del('key010')
  await db.flush()
  await db.put('inlog', 'logged')
  await db.put('bin', Buffer.from([0, 1, 2, 255]) as any, { valueEncoding: 'buffer' })
  await db.close()
  return dir
}

function filesOf (dir: string, type: string): string[] {
  return nodeFs.readdirSync(dir).filter((n) => parseFileName(n)?.type === type).sort()
}

let dir = ''

test('setup', async (t) => {
  dir = await makeDb()
  t.ok(filesOf(dir, 'table').length >= 1, 'tables written')
})

test('help, usage and unknown commands', async (t) => {
  const help = await cli('--help')
  t.is(help.code, 0, '--help exits 0')
  t.match(help.stdout, /Usage: lsm-level/, '--help prints usage')
  const help2 = await cli('help')
  t.is(help2.code, 0, 'help exits 0')
  const none = await cli()
  t.is(none.code, 2, 'no args exits 2')
  t.match(none.stderr, /Usage: lsm-level/, 'no args: usage on stderr')
  t.is(none.stdout, '', 'no args: nothing on stdout')
  const unknown = await cli('frobnicate', dir)
  t.is(unknown.code, 2, 'unknown command exits 2')
  t.match(unknown.stderr, /unknown command 'frobnicate'/, 'unknown command message')
  const badOpt = await cli('scan', dir, '--bogus')
  t.is(badOpt.code, 2, 'unknown option exits 2')
  const missingArg = await cli('get', dir)
  t.is(missingArg.code, 2, 'missing argument exits 2')
})

test('missing database', async (t) => {
  const missing = path.join(path.dirname(dir), 'nope')
  for (const args of [['get', missing, 'k'], ['stats', missing], ['verify', missing], ['put', missing, 'k', 'v']]) {
    const r = await cli(...args)
    t.is(r.code, 1, `${args[0]}: exit 1`)
    t.match(r.stderr, /no database at /, `${args[0]}: message`)
  }
  t.notOk(nodeFs.existsSync(missing), 'nothing was created')
})

test('stats', async (t) => {
  const r = await cli('stats', dir)
  t.is(r.code, 0, 'exit 0')
  t.match(r.stdout, /write amplification/, 'readable text')
  t.match(r.stdout, /Level\s+Files/, 'level table')
  const j = await cli('stats', dir, '--json')
  t.is(j.code, 0, '--json exit 0')
  const stats = JSON.parse(j.stdout)
  t.ok(Array.isArray(stats.levels), 'levels array')
  t.is(typeof stats.writeAmplification, 'number', 'writeAmplification')
  t.ok(stats.levels.reduce((n: number, l: { files: number }) => n + l.files, 0) >= 1, 'files counted')
})

test('put, get, del', async (t) => {
  let r = await cli('get', dir, 'key005')
  t.is(r.code, 0, 'get existing: exit 0')
  t.is(r.stdout, 'value5\n', 'get existing: value')
  r = await cli('get', dir, 'key010')
  t.is(r.code, 1, 'get deleted key: exit 1')
  t.match(r.stderr, /not found/, 'get deleted key: message on stderr')
  r = await cli('put', dir, 'héllo', 'wörld value')
  t.is(r.code, 0, 'put: exit 0')
  r = await cli('get', dir, 'héllo')
  t.is(r.stdout, 'wörld value\n', 'get after put (utf8)')
  r = await cli('del', dir, 'héllo')
  t.is(r.code, 0, 'del: exit 0')
  r = await cli('get', dir, 'héllo')
  t.is(r.code, 1, 'get after del: exit 1')
  r = await cli('get', dir, 'inlog')
  t.is(r.stdout, 'logged\n', 'value from the log')
})

test('scan', async (t) => {
  let r = await cli('scan', dir, '--gte', 'key008', '--lt', 'key013')
  t.is(r.code, 0, 'exit 0')
  t.is(r.stdout, 'key008\tvalue8\nkey009\tvalue9\nkey011\tvalue11\nkey012\tvalue12\n', 'range (deleted key skipped)')
  r = await cli('scan', dir, '--gt', 'key095', '--lte', 'key098', '--reverse')
  t.is(r.stdout, 'key098\tvalue98\nkey097\tvalue97\nkey096\tvalue96\n', 'reverse, gt/lte')
  r = await cli('scan', dir, '--gte', 'key', '--limit', '3')
  t.is(r.stdout, 'key000\tvalue0\nkey001\tvalue1\nkey002\tvalue2\n', 'limit')
  r = await cli('scan', dir, '--limit', 'x')
  t.is(r.code, 2, 'bad limit: exit 2')
  r = await cli('scan', dir)
  t.is(r.stdout.trim().split('\n').length, 99 + 2, 'full scan')
})

test('dump', async (t) => {
  const dir = await makeDb() // fresh: the other commands' opens replay the log into tables
  const table = filesOf(dir, 'table')[0]
  let r = await cli('dump', path.join(dir, table))
  t.is(r.code, 0, 'table: exit 0')
  t.match(r.stdout, /entries \d+, data blocks \d+/, 'table: properties')
  t.match(r.stdout, /^key000 @\d+ put value0$/m, 'table: entries as key @seq kind value')
  t.match(r.stdout, /format version 3$/m, 'table: new tables are format 3')
  // A format 1 table, written by lsm-level 0.2.0 (test/fixtures/table-v1-db, see table-format.test.ts).
  const v1dir = path.join(__dirname, '..', '..', 'test', 'fixtures', 'table-v1-db')
  for (const v1 of filesOf(v1dir, 'table')) {
    r = await cli('dump', path.join(v1dir, v1))
    t.is(r.code, 0, `format 1 table ${v1}: exit 0`)
    t.match(r.stdout, /format version 1$/m, `format 1 table ${v1}: version shown`)
    t.match(r.stdout, /^\((\d+) entries\)$/m, `format 1 table ${v1}: entries listed`)
  }
  r = await cli('dump', path.join(v1dir, filesOf(v1dir, 'table')[0]))
  t.match(r.stdout, /^key001 @\d+ put value1$/m, 'format 1 table: entries as key @seq kind value')
  const manifest = filesOf(dir, 'manifest').pop() as string
  r = await cli('dump', path.join(dir, manifest))
  t.is(r.code, 0, 'manifest: exit 0')
  t.match(r.stdout, /^edit 0: \{.*\}$/m, 'manifest: edits as JSON lines')
  t.match(r.stdout, /"newFiles"/, 'manifest: new files listed')
  t.match(r.stdout, /tail: clean/, 'manifest: tail state')
  const log = filesOf(dir, 'log').pop() as string
  r = await cli('dump', path.join(dir, log))
  t.is(r.code, 0, 'log: exit 0')
  t.match(r.stdout, /^batch 0: first seq \d+, 1 ops$/m, 'log: batches')
  t.match(r.stdout, /inlog @\d+ put logged/, 'log: ops')
  t.match(r.stdout, /bin @\d+ put 0x000102ff/, 'log: binary value as hex')
  t.match(r.stdout, /tail: clean/, 'log: tail state')
  r = await cli('dump', path.join(dir, 'CURRENT.nope'))
  t.is(r.code, 1, 'missing file: exit 1')
})

test('verify, damage, repair', async (t) => {
  let r = await cli('verify', dir)
  t.is(r.code, 0, 'clean db: exit 0')
  t.match(r.stdout, /OK/, 'clean db: OK')
  t.notOk(/\r/.test(r.stdout), 'no progress output when piped')

  const table = filesOf(dir, 'table')[0]
  const file = path.join(dir, table)
  const bytes = nodeFs.readFileSync(file)
  const before = nodeFs.readdirSync(dir).sort()
  bytes[Math.floor(bytes.length / 4)] ^= 0xff // inside the data blocks
  nodeFs.writeFileSync(file, bytes)
  r = await cli('verify', dir)
  t.is(r.code, 1, 'damaged table: exit 1')
  t.match(r.stdout, new RegExp(`${table.replace('.', '\\.')}: .*`), 'names the damaged file')
  t.deepEqual(nodeFs.readdirSync(dir).sort(), before, 'verify changed no files')

  r = await cli('repair', dir)
  t.is(r.code, 0, 'repair: exit 0')
  t.match(r.stdout, /salvaged|dropped/, 'repair report')
  t.match(r.stdout, new RegExp(table.replace('.', '\\.')), 'repair report names the damaged table')

  const db = new LsmLevel(dir)
  await db.open({ createIfMissing: false })
  t.is(await db.get('key099'), 'value99', 'db opens after repair, intact data kept')
  await db.close()
  r = await cli('verify', dir)
  t.is(r.code, 0, 'verify after repair: exit 0')
})

test('compact', async (t) => {
  const r = await cli('compact', dir)
  t.is(r.code, 0, 'exit 0')
  t.match(r.stdout, /compacted/, 'report')
  const g = await cli('get', dir, 'key099')
  t.is(g.stdout, 'value99\n', 'data intact after compaction')
})

test('checkpoint', async (t) => {
  const target = path.join(tempDir('lsm-cli-test-'), 'cp')
  const r = await cli('checkpoint', dir, target)
  t.is(r.code, 0, 'exit 0')
  t.match(r.stdout, /at sequence \d+ .* tables linked/, 'report')
  const g = await cli('get', target, 'key099')
  t.is(g.stdout, 'value99\n', 'the checkpoint opens and holds the data')
  const again = await cli('checkpoint', dir, target)
  t.is(again.code, 1, 'a non-empty target: exit 1')
})

test('locked database', async (t) => {
  const db = new LsmLevel(dir)
  await db.open()
  try {
    const r = await cli('get', dir, 'key001')
    t.is(r.code, 1, 'exit 1')
    t.match(r.stderr, /database is locked by another process/, 'locked message')
    const v = await cli('verify', dir)
    t.is(v.code, 0, 'verify takes no lock: runs on an open database')
  } finally {
    await db.close()
  }
})

test('corruption on open', async (t) => {
  const d = await makeDb()
  const manifest = filesOf(d, 'manifest').pop() as string
  nodeFs.writeFileSync(path.join(d, 'CURRENT'), 'MANIFEST-999999\n')
  const r = await cli('get', d, 'key001')
  t.is(r.code, 1, 'exit 1')
  t.ok(r.stderr.length > 0, `message: ${r.stderr.trim()}`)
  const v = await cli('verify', d)
  t.is(v.code, 1, 'verify: CURRENT naming a missing manifest is damage')
  t.match(v.stdout, /CURRENT/, 'verify names CURRENT')
  nodeFs.writeFileSync(path.join(d, 'CURRENT'), manifest + '\n')
})
