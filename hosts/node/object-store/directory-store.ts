// An object store in a directory (lib/backup/object-store.ts): local disk, NFS,
// a bucket mounted as a file system. A key is a relative path ('a/b/c' is the
// file <root>/a/b/c); its segments must be non-empty, not '.' or '..', and not
// start with '.' (names that start with '.' are this store's temporary files).
//
// put writes <dir>/.<name>.<random>.tmp (putFile: a copy of the file there),
// fsyncs it, then renames it over the key (ifAbsent: links it to the key,
// which fails if the key exists, then removes the temporary name) and fsyncs
// the directory: an object is there whole, durably, or not at all. list walks
// the directories under the prefix.
import * as fsp from 'node:fs/promises'
import { constants as fsConstants } from 'node:fs'
import * as path from 'node:path'
import { nodeCrypto } from '../lazy-modules'
import { storeError, type ObjectInfo, type ObjectStore } from '../../../lib/backup/object-store'
import { levelError } from '../../../lib/errors'

export interface DirectoryStoreOptions {
  /** fsync each object and its directory entry before put resolves. Default true. */
  sync?: boolean
}

export class DirectoryStore implements ObjectStore {
  readonly description: string
  readonly conditionalPut = true
  private readonly root: string
  private readonly sync: boolean

  constructor (root: string, options: DirectoryStoreOptions = {}) {
    if (typeof root !== 'string' || root === '') throw levelError('LEVEL_INVALID_OPTION', 'DirectoryStore: the root must be a non-empty path')
    this.root = path.resolve(root)
    this.description = this.root
    this.sync = options.sync ?? true
  }

  private file (key: string): string {
    const parts = key.split('/')
    for (const p of parts) {
      if (p === '' || p === '.' || p === '..' || p.startsWith('.') || p.includes('\\') || p.includes('\0')) {
        throw levelError('LEVEL_INVALID_OPTION', `DirectoryStore: invalid object key '${key}'`)
      }
    }
    return path.join(this.root, ...parts)
  }

  async put (key: string, body: Uint8Array, options: { ifAbsent?: boolean } = {}): Promise<void> {
    await this.putWith(key, async (tmp) => await fsp.writeFile(tmp, body, { flag: 'wx' }), options)
  }

  /** A copy of the file at `source` (copy_file_range or sendfile where the system has them: no copy through this process). */
  async putFile (key: string, source: string): Promise<void> {
    await this.putWith(key, async (tmp) => await fsp.copyFile(source, tmp, fsConstants.COPYFILE_EXCL))
  }

  /** Makes the temporary file (`write`), fsyncs it, moves it to the key, fsyncs the directory. */
  private async putWith (key: string, write: (tmp: string) => Promise<void>, options: { ifAbsent?: boolean } = {}): Promise<void> {
    const file = this.file(key)
    const dir = path.dirname(file)
    await fsp.mkdir(dir, { recursive: true })
    const tmp = path.join(dir, `.${path.basename(file)}.${nodeCrypto().randomBytes(6).toString('hex')}.tmp`)
    try {
      await write(tmp)
      if (this.sync) {
        const handle = await fsp.open(tmp, 'r+')
        try {
          await handle.datasync()
        } finally {
          await handle.close()
        }
      }
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
    try {
      if (options.ifAbsent === true) {
        try {
          await fsp.link(tmp, file)
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw storeError('LEVEL_OBJECT_EXISTS', `Object exists: ${key}`, key)
          throw err
        } finally {
          await fsp.rm(tmp, { force: true })
        }
      } else {
        await fsp.rename(tmp, file)
      }
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
    if (this.sync) await syncDir(dir)
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> {
    const file = this.file(key)
    try {
      if (range === undefined) return await fsp.readFile(file)
      const handle = await fsp.open(file, 'r')
      try {
        const buf = Buffer.allocUnsafe(range.length)
        let done = 0
        while (done < range.length) {
          const { bytesRead } = await handle.read(buf, done, range.length - done, range.offset + done)
          if (bytesRead === 0) break
          done += bytesRead
        }
        return buf.subarray(0, done)
      } finally {
        await handle.close()
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw storeError('LEVEL_NOT_FOUND', `No object ${key} in ${this.description}`, key)
      throw err
    }
  }

  async list (prefix: string, options: { startAfter?: string } = {}): Promise<ObjectInfo[]> {
    // The deepest directory that holds every key under the prefix.
    const slash = prefix.lastIndexOf('/')
    const base = slash < 0 ? '' : prefix.slice(0, slash)
    const out: ObjectInfo[] = []
    await this.walk(base, prefix, out)
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    const after = options.startAfter
    return after === undefined ? out : out.filter((o) => o.key > after)
  }

  private async walk (rel: string, prefix: string, out: ObjectInfo[]): Promise<void> {
    let entries
    try {
      entries = await fsp.readdir(rel === '' ? this.root : this.file(rel), { withFileTypes: true })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return
      throw err
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue
      const key = rel === '' ? e.name : rel + '/' + e.name
      if (e.isDirectory()) {
        // Descend only where keys under the prefix may be.
        if (prefix.startsWith(key + '/') || (key + '/').startsWith(prefix) || key.startsWith(prefix)) await this.walk(key, prefix, out)
      } else if (e.isFile() && key.startsWith(prefix)) {
        try {
          const st = await fsp.stat(this.file(key))
          out.push({ key, size: st.size })
        } catch (err) {
          // Deleted since the directory was read: not listed (a list sees the objects of before it started).
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
        }
      }
    }
  }

  async delete (keys: string[]): Promise<void> {
    for (const key of keys) await fsp.rm(this.file(key), { force: true })
  }
}

async function syncDir (dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r')
  try {
    await handle.sync()
  } catch (err) {
    // Some file systems (and platforms) refuse fsync on a directory.
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM') throw err
  } finally {
    await handle.close()
  }
}
