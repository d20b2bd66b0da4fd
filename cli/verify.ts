// `lsm-level verify <dir>`: hosts/node/tools/verify.ts checks every file; this prints
// its report. Exit 1 if anything is damaged.
import { verifyDatabase } from '../hosts/node/tools/verify'
import { checkFlags, needArgs, type Parsed } from './args'
import { requireDatabase } from './open'
import { Out, Progress } from './terminal'

export async function cmdVerify (p: Parsed): Promise<number> {
  checkFlags(p, 'verify', [])
  const [dir] = needArgs(p, 'verify', ['dir'])
  requireDatabase(dir)
  const progress = new Progress()
  let report
  try {
    report = verifyDatabase(dir, {
      onFile: (i, total, name) => progress.set(`verifying ${i + 1}/${total} files (${name})`)
    })
  } finally {
    progress.done()
  }

  const out = new Out()
  for (const n of report.notes) await out.line(`note: ${n.file}: ${n.message}`)
  await out.line(`checked ${report.files.length} files: ${report.tables} tables (${report.entries} entries in intact tables), ${report.logs} logs and manifests (${report.records} records)`)
  const problems = report.problems
  if (problems.length === 0) {
    await out.line('OK: no damage found')
    await out.flush()
    return 0
  }
  await out.line(`DAMAGED: ${problems.length} problem${problems.length === 1 ? '' : 's'}`)
  for (const d of problems) await out.line(`  ${d.file}: ${d.message}`)
  await out.flush()
  return 1
}
