// The s3rver emulator (a devDependency) on 127.0.0.1, for the S3 store's tests:
// a fresh bucket in a temporary directory, its S3Store, and a close.
//
// Both s3rver and @aws-sdk/client-s3 are devDependencies: where they are
// installed the S3 tests run, and a failure to load or start them fails the
// test. Only where one of the two packages is not installed at all
// (require.resolve fails with MODULE_NOT_FOUND for that package itself) are
// the S3 tests registered as skipped, with the reason (s3Missing), so that the
// runner lists them among its skips.
import { spawn } from 'node:child_process'
import { S3Store } from '../../hosts/node/object-store/s3-store'
import { tempDir } from './temp'

export interface LocalS3 {
  endpoint: string
  store: (bucket?: string) => Promise<S3Store>
  close: () => Promise<void>
}

export const S3_PACKAGES = ['s3rver', '@aws-sdk/client-s3']

/** Why the S3 tests cannot run here (a package not installed), for tape's `skip`; undefined when they must run. */
export function s3Missing (resolve: (name: string) => string = require.resolve): string | undefined {
  for (const name of S3_PACKAGES) {
    try {
      resolve(name)
    } catch (err) {
      const e = err as { code?: string, message?: string }
      // Only the package itself missing is a reason to skip; a package of its own that it cannot find is a failure.
      if (e.code === 'MODULE_NOT_FOUND' && (e.message ?? '').includes(`'${name}'`)) return `${name} is not installed: the S3 store is not tested`
      throw err
    }
  }
  return undefined
}

/** The emulator's fixed credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

let buckets = 0

// The emulator in a child process with OpenSSL's legacy provider: its continuation tokens (a list past one
// page of 1,000 keys) are DES-encrypted, which Node's OpenSSL 3 has only there (without it, the second page
// of every list fails with InternalError). It ends when its stdin closes (the test process gone).
const SERVER = `
  const S3rver = require(process.argv[1])
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: process.argv[2], configureBuckets: Array.from({ length: 40 }, (_, i) => ({ name: 'b' + i })) })
  server.run().then(({ port }) => process.stdout.write(JSON.stringify({ port }) + '\\n'), (err) => { console.error(err); process.exit(2) })
  process.stdin.resume().on('end', () => server.close().then(() => process.exit(0)))
`

/** Starts the emulator; throws where it cannot be loaded or started (the tests that need it are skipped only where s3Missing() says so). */
export async function startS3 (): Promise<LocalS3> {
  require.resolve('@aws-sdk/client-s3')
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', SERVER, require.resolve('s3rver'), tempDir('lsm-s3rver-')], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d
      const m = /\{"port":(\d+)\}/.exec(out)
      if (m !== null) resolve(Number(m[1]))
    })
    void exited.then((code) => reject(new Error(`the s3rver emulator exited (${String(code)}) before it listened`)))
  })
  const endpoint = `http://127.0.0.1:${port}`
  const stores: S3Store[] = []
  return {
    endpoint,
    store: async (bucket?: string) => {
      const s = await S3Store.create({ bucket: bucket ?? `b${buckets++}`, endpoint, credentials: S3RVER_CREDENTIALS, requestTimeoutMs: 10000 })
      stores.push(s)
      return s
    },
    close: async () => {
      for (const s of stores) s.destroy()
      child.stdin.end()
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(killer)
    }
  }
}
