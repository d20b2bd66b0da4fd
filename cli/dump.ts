// `lsm-level dump <file>`: one table, manifest or log as text (hosts/node/tools/dump.ts
// decodes it). Exit 1 if a record cannot be decoded or the log's tail is
// corrupt, or the file cannot be read.
import * as nodeFs from 'node:fs'
import * as path from 'node:path'
import { parseFileName } from '../lib/filenames'
import { KIND_VALUE } from '../lib/keys'
import { OP_RANGE_DELETE } from '../lib/wal/batch'
import { describeTail, dumpLog, dumpManifest, dumpTable } from '../hosts/node/tools/dump'
import { CliError, checkFlags, needArgs, type Parsed } from './args'
import { editToJson, errMessage, formatKey, kindName, printable } from './format'
import { Out } from './terminal'

export async function cmdDump (p: Parsed): Promise<number> {
  checkFlags(p, 'dump', [])
  const [file] = needArgs(p, 'dump', ['file'])
  let st: nodeFs.Stats
  try {
    st = nodeFs.statSync(file)
  } catch {
    throw new CliError(`no such file: ${file}`)
  }
  if (!st.isFile()) throw new CliError(`not a file: ${file}`)
  const name = path.basename(file)
  const type = parseFileName(name)?.type
  const out = new Out()
  let ok = true
  try {
    if (type === 'table') await printTable(file, out)
    else if (type === 'manifest') ok = await printManifest(file, out)
    else if (type === 'log') ok = await printLog(file, out)
    else if (type === 'current') await out.line(`CURRENT -> ${nodeFs.readFileSync(file, 'utf8').trim()}`)
    else throw new CliError(`cannot dump ${name}: not a table (*.sst), manifest (MANIFEST-*) or log (*.log)`)
  } catch (err) {
    await out.flush()
    if (err instanceof CliError) throw err
    throw new CliError(`${name}: ${errMessage(err)}`)
  }
  await out.flush()
  return ok ? 0 : 1
}

async function printTable (file: string, out: Out): Promise<void> {
  const table = dumpTable(file)
  try {
    const pr = table.properties
    await out.line(`table ${table.name}`)
    await out.line(`  file size ${table.fileSize}, format version ${pr.formatVersion}`)
    await out.line(`  entries ${pr.entries}, data blocks ${pr.dataBlocks}, raw key bytes ${pr.rawKeyBytes}, raw value bytes ${pr.rawValueBytes}`)
    if (pr.entries > 0) {
      await out.line(`  smallest ${formatKey(pr.smallest)}`)
      await out.line(`  largest  ${formatKey(pr.largest)}`)
    }
    await out.line('entries:')
    let n = 0
    for (const e of table.entries()) {
      const v = e.value !== undefined ? ' ' + printable(e.value) : ''
      await out.line(`${printable(e.userKey)} @${e.seq} ${kindName(e.kind)}${v}`)
      n++
    }
    await out.line(`(${n} entries)`)
  } finally {
    table.close()
  }
}

/** Prints every edit; false if one could not be decoded or the tail is corrupt. */
async function printManifest (file: string, out: Out): Promise<boolean> {
  const manifest = dumpManifest(file)
  let n = 0
  let ok = true
  try {
    await out.line(`manifest ${manifest.name}`)
    for (const r of manifest.records()) {
      let line: string
      if ('error' in r) {
        line = `undecodable edit (${r.bytes} bytes): ${r.error.message}`
        ok = false
      } else {
        line = JSON.stringify(editToJson(r.decoded))
      }
      await out.line(`edit ${n++}: ${line}`)
    }
    await out.line(`(${n} edits) ${describeTail(manifest.tail)}`)
    return ok && manifest.tail.state !== 'corrupt'
  } finally {
    manifest.close()
  }
}

/** Prints every batch and its operations; false if one could not be decoded or the tail is corrupt. */
async function printLog (file: string, out: Out): Promise<boolean> {
  const log = dumpLog(file)
  let n = 0
  let ok = true
  try {
    await out.line(`log ${log.name}`)
    for (const r of log.records()) {
      if ('error' in r) {
        await out.line(`batch ${n}: undecodable (${r.bytes} bytes): ${r.error.message}`)
        ok = false
      } else {
        const b = r.decoded
        await out.line(`batch ${n}: first seq ${b.firstSeq}, ${b.ops.length} ops`)
        for (let i = 0; i < b.ops.length; i++) {
          const op = b.ops[i]
          const v = op.kind === KIND_VALUE && op.value !== undefined
            ? ' ' + printable(op.value)
            : op.kind === OP_RANGE_DELETE ? ' to ' + (op.end === undefined ? '(end)' : printable(op.end)) : ''
          await out.line(`  ${printable(op.key)} @${b.firstSeq + i} ${kindName(op.kind)}${v}`)
        }
      }
      n++
    }
    await out.line(`(${n} batches) ${describeTail(log.tail)}`)
    return ok && log.tail.state !== 'corrupt'
  } finally {
    log.close()
  }
}
