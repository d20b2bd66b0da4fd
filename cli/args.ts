// The command line's words: `<command> <positional...> [--flag [value]]`, and
// the error that carries a message for the user and an exit code.

/** A failure with a message for the user and an exit code (1 failure, 2 bad usage). */
export class CliError extends Error {
  constructor (message: string, readonly exitCode: number = 1) {
    super(message)
  }
}

export interface Parsed {
  positional: string[]
  flags: Map<string, string | true>
}

const VALUE_FLAGS = new Set(['gte', 'gt', 'lte', 'lt', 'limit', 'prefix', 'sequence', 'time', 'generation', 'endpoint'])
const BOOL_FLAGS = new Set(['json', 'reverse', 'help'])

/** Splits a command's arguments into positional ones and flags (`--name value`, `--name=value`, `--`, `-h`). */
export function parseArgs (args: string[]): Parsed {
  const positional: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--') {
      positional.push(...args.slice(i + 1))
      break
    }
    if (a.startsWith('--') && a.length > 2) {
      let name = a.slice(2)
      let value: string | undefined
      const eq = name.indexOf('=')
      if (eq >= 0) {
        value = name.slice(eq + 1)
        name = name.slice(0, eq)
      }
      if (VALUE_FLAGS.has(name)) {
        if (value === undefined) {
          if (i + 1 >= args.length) throw new CliError(`option --${name} needs a value`, 2)
          value = args[++i]
        }
        flags.set(name, value)
      } else if (BOOL_FLAGS.has(name) && value === undefined) {
        flags.set(name, true)
      } else {
        throw new CliError(`unknown option: ${a}`, 2)
      }
      continue
    }
    if (a === '-h') {
      flags.set('help', true)
      continue
    }
    positional.push(a)
  }
  return { positional, flags }
}

/** Refuses a flag that `command` does not take. */
export function checkFlags (p: Parsed, command: string, allowed: string[]): void {
  for (const name of p.flags.keys()) {
    if (!allowed.includes(name)) throw new CliError(`option --${name} does not apply to '${command}'`, 2)
  }
}

/** The positional arguments, if there are exactly as many as `names`. */
export function needArgs (p: Parsed, command: string, names: string[]): string[] {
  if (p.positional.length !== names.length) {
    throw new CliError(`usage: lsm-level ${command} ${names.map((n) => `<${n}>`).join(' ')}`, 2)
  }
  return p.positional
}
