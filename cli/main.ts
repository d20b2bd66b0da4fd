// The `lsm-level` command line tool (bin/lsm-level.js runs main()).
//
//   lsm-level <command> <dir> [args]
//
// Database commands open the database (never creating it) through the engine;
// `dump` and `verify` read files directly and never take the database lock nor
// write anything, so they can be run against a live or damaged database.
// `import` only reads its source (a LevelDB directory) and creates a new database;
// `restore` only reads an object store and creates a new database.
//
// Exit codes: 0 success, 1 failure (missing key, damaged data, locked or
// missing database, I/O error), 2 bad usage.
import { CliError, parseArgs, type Parsed } from './args'
import { cmdCheckpoint, cmdCompact, cmdDel, cmdGet, cmdPut, cmdRepair, cmdScan, cmdStats } from './db-commands'
import { cmdDump } from './dump'
import { cmdVerify } from './verify'
import { cmdImport } from './import'
import { cmdBackups, cmdRestore } from './backup'
import { openFailure } from './open'

const USAGE = `Usage: lsm-level <command> <dir> [args]

Commands:
  stats <dir> [--json]          levels, amplification, counters
  get <dir> <key>               print the value of <key> (exit 1 if missing)
  put <dir> <key> <value>       write <key> = <value>
  del <dir> <key>               delete <key>
  scan <dir> [--gte k] [--gt k] [--lte k] [--lt k] [--reverse] [--limit n]
                                print key<TAB>value lines of a range
  dump <file>                   decode one table (*.sst), manifest (MANIFEST-*)
                                or log (*.log) for debugging
  verify <dir>                  check every checksum of every file (read-only,
                                takes no lock); exit 1 if anything is damaged
  checkpoint <dir> <target>     write an openable copy of the database into
                                <target> (tables hard-linked); written by the
                                process that has it open with multiProcess,
                                if any
  compact <dir>                 compact the whole key range
  repair <dir>                  rebuild a damaged database and print the report
  import <source> <dir> [--json]
                                import a LevelDB (classic-level) database at
                                <source>, which must be closed, into a new
                                database at <dir>; the source is only read
  restore <store> <dir> [--prefix p] [--sequence n | --time t] [--generation g] [--json]
                                restore a backup that db.replicate() shipped
                                to <store> (a directory, or s3://bucket/prefix
                                with @aws-sdk/client-s3 installed; --endpoint
                                url for another S3 service) into a new
                                database at <dir>: the newest state, or as of
                                sequence number n or time t (ISO 8601 or ms)
  backups <store> [--prefix p] [--json]
                                list the generations of backups in <store>
  help, --help                  print this text

Keys and values are utf8. Exit codes: 0 ok, 1 failure, 2 bad usage.
`

const COMMANDS: Record<string, (p: Parsed) => Promise<number>> = {
  stats: cmdStats,
  get: cmdGet,
  put: cmdPut,
  del: cmdDel,
  scan: cmdScan,
  dump: cmdDump,
  verify: cmdVerify,
  checkpoint: cmdCheckpoint,
  compact: cmdCompact,
  repair: cmdRepair,
  import: cmdImport,
  restore: cmdRestore,
  backups: cmdBackups
}

/** Runs the command line `args`; returns the exit code (and sets process.exitCode). */
export async function main (args: string[]): Promise<number> {
  const code = await run(args)
  process.exitCode = code
  return code
}

async function run (args: string[]): Promise<number> {
  if (args.length === 0) {
    process.stderr.write(USAGE)
    return 2
  }
  const [command, ...rest] = args
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  const fn = Object.prototype.hasOwnProperty.call(COMMANDS, command) ? COMMANDS[command] : undefined
  if (fn === undefined) {
    process.stderr.write(`lsm-level: unknown command '${command}' (see lsm-level --help)\n`)
    return 2
  }
  try {
    const parsed = parseArgs(rest)
    if (parsed.flags.has('help')) {
      process.stdout.write(USAGE)
      return 0
    }
    return await fn(parsed)
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`lsm-level ${command}: ${err.message}\n`)
      return err.exitCode
    }
    const e = openFailure('', err)
    process.stderr.write(`lsm-level ${command}: ${e.message}\n`)
    return 1
  }
}
