// The FileSystem interface over node:fs. The only module that imports node:fs
// for engine I/O.
import * as fs from 'node:fs'
import type { FileSystem, RandomAccessFile, WritableFile } from './fs'

class NodeRandomAccessFile implements RandomAccessFile {
  private fd: number
  private readonly length: number

  constructor (path: string) {
    this.fd = fs.openSync(path, 'r')
    this.length = fs.fstatSync(this.fd).size
  }

  read (buf: Uint8Array, offset: number, length: number, position: number): number {
    let done = 0
    while (done < length) {
      const n = fs.readSync(this.fd, buf, offset + done, length - done, position + done)
      if (n === 0) break
      done += n
    }
    return done
  }

  size (): number {
    return this.length
  }

  close (): void {
    if (this.fd >= 0) {
      fs.closeSync(this.fd)
      this.fd = -1
    }
  }
}

class NodeWritableFile implements WritableFile {
  private fd: number
  private length: number

  constructor (path: string, flags: 'w' | 'a') {
    this.fd = fs.openSync(path, flags)
    this.length = flags === 'a' ? fs.fstatSync(this.fd).size : 0
  }

  append (data: Uint8Array): void {
    let done = 0
    while (done < data.length) {
      done += fs.writeSync(this.fd, data, done, data.length - done)
    }
    this.length += data.length
  }

  sync (): void {
    fs.fdatasyncSync(this.fd)
  }

  syncAsync (): Promise<void> {
    return new Promise((resolve, reject) => {
      fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve()))
    })
  }

  size (): number {
    return this.length
  }

  close (): void {
    if (this.fd >= 0) {
      fs.closeSync(this.fd)
      this.fd = -1
    }
  }
}

export class NodeFileSystem implements FileSystem {
  openRead (path: string): RandomAccessFile {
    return new NodeRandomAccessFile(path)
  }

  openWrite (path: string): WritableFile {
    return new NodeWritableFile(path, 'w')
  }

  openAppend (path: string): WritableFile {
    return new NodeWritableFile(path, 'a')
  }

  readSmallFile (path: string): Buffer {
    return fs.readFileSync(path)
  }

  createExclusive (path: string, data: Uint8Array): void {
    const fd = fs.openSync(path, 'wx')
    try {
      fs.writeSync(fd, data)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  }

  exists (path: string): boolean {
    return fs.existsSync(path)
  }

  list (dir: string): string[] {
    return fs.readdirSync(dir)
  }

  rename (from: string, to: string): void {
    fs.renameSync(from, to)
  }

  remove (path: string): void {
    fs.rmSync(path, { force: true })
  }

  async removeAsync (path: string): Promise<void> {
    try {
      await fs.promises.unlink(path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }

  removeDirIfEmpty (path: string): boolean {
    try {
      fs.rmdirSync(path)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST') return false
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true
      throw err
    }
  }

  mkdirp (path: string): void {
    fs.mkdirSync(path, { recursive: true })
  }

  syncDir (path: string): void {
    const fd = fs.openSync(path, 'r')
    try {
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  }

  async syncDirAsync (path: string): Promise<void> {
    const handle = await fs.promises.open(path, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }

  truncate (path: string, length: number): void {
    fs.truncateSync(path, length)
  }
}

export const nodeFileSystem = new NodeFileSystem()
