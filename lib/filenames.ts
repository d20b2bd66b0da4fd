// Names of the files in a database directory.
//
//   CURRENT            names the live manifest (one line: "MANIFEST-000005\n")
//   LOCK               the lock file (the Node host's directory lock)
//   MANIFEST-<n>       log of version edits (lib/manifest/version-edit.ts)
//   <n>.log            write-ahead log of one memtable (lib/wal/log-format.ts)
//   <n>.sst            a table (lib/sstable/format.ts)
//   <n>.tmp            CURRENT being replaced (written, synced, then renamed over it)
//
// <n> is a file number, zero-padded to 6 digits (more digits once it grows).
import type { FileSystem } from './fs/fs'

export type FileType = 'current' | 'lock' | 'manifest' | 'log' | 'table' | 'temp'

function pad (n: number): string {
  return String(n).padStart(6, '0')
}

export const CURRENT = 'CURRENT'
export const LOCK = 'LOCK'

export function tableName (n: number): string {
  return `${pad(n)}.sst`
}

export function logName (n: number): string {
  return `${pad(n)}.log`
}

export function manifestName (n: number): string {
  return `MANIFEST-${pad(n)}`
}

export function tempName (n: number): string {
  return `${pad(n)}.tmp`
}

/**
 * The path of `name` (a file name, or names joined by '/') in the directory
 * `dir`. Directories come resolved (Platform.resolvePath), so joining is all
 * there is to do; '/' is a separator on every platform, Windows included.
 */
export function join (dir: string, name: string): string {
  return dir.endsWith('/') || dir.endsWith('\\') ? dir + name : dir + '/' + name
}

/** The last component of a path. */
export function baseName (path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1)
}

/** The directory of a path: all but its last component. */
export function parentDir (path: string): string {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'))
  return cut <= 0 ? path.slice(0, cut + 1) || '.' : path.slice(0, cut)
}

/** The numbers of the logs in `dir` numbered `from` or above, ascending. */
export function logNumbers (fs: Pick<FileSystem, 'list'>, dir: string, from = 0): number[] {
  const out: number[] = []
  for (const name of fs.list(dir)) {
    const p = parseFileName(name)
    if (p !== undefined && p.type === 'log' && p.number >= from) out.push(p.number)
  }
  return out.sort((a, b) => a - b)
}

/** Parses a directory entry's name; undefined for names that are not ours. */
export function parseFileName (name: string): { type: FileType, number: number } | undefined {
  if (name === CURRENT) return { type: 'current', number: 0 }
  if (name === LOCK) return { type: 'lock', number: 0 }
  let m = /^MANIFEST-(\d+)$/.exec(name)
  if (m) return { type: 'manifest', number: Number(m[1]) }
  m = /^(\d+)\.(log|sst|tmp)$/.exec(name)
  if (m) {
    const type = m[2] === 'log' ? 'log' : m[2] === 'sst' ? 'table' : 'temp'
    return { type, number: Number(m[1]) }
  }
  return undefined
}
