// The s3rver emulator (a devDependency) on 127.0.0.1, for the S3 store's tests:
// a fresh bucket in a temporary directory, its S3Store, and a close. Undefined
// where s3rver or @aws-sdk/client-s3 is not installed (the tests say so and skip).
import { S3Store } from '../../hosts/node/object-store/s3-store'
import { tempDir } from './temp'

export interface LocalS3 {
  endpoint: string
  store: (bucket?: string) => Promise<S3Store>
  close: () => Promise<void>
}

let buckets = 0

export async function startS3 (): Promise<LocalS3 | undefined> {
  let S3rver: new (options: object) => { run: () => Promise<{ port: number }>, close: () => Promise<void>, configureBuckets?: unknown }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    S3rver = require('s3rver')
    require.resolve('@aws-sdk/client-s3')
  } catch {
    return undefined
  }
  const names = Array.from({ length: 40 }, (_, i) => ({ name: `b${i}` }))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('lsm-s3rver-'), configureBuckets: names })
  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  const stores: S3Store[] = []
  return {
    endpoint,
    store: async (bucket?: string) => {
      const s = await S3Store.create({ bucket: bucket ?? `b${buckets++}`, endpoint, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, requestTimeoutMs: 10000 })
      stores.push(s)
      return s
    },
    close: async () => {
      for (const s of stores) s.destroy()
      await server.close()
    }
  }
}
