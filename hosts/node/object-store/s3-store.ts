// An object store on S3 or any service that speaks its API
// (lib/backup/object-store.ts), through the AWS SDK v3 client
// (`@aws-sdk/client-s3`, an optional peer dependency: loaded when a store is
// created, so that the package needs it only where S3 is used).
//
// The S3 features relied on:
//   PutObject                 an object appears whole or not at all
//   PutObject If-None-Match: *  the conditional put (AWS S3 since August 2024;
//                             many S3-compatible services, and the s3rver
//                             emulator, do not have it: conditionalPut false)
//   GetObject Range           a byte range (an offset past the end: empty)
//   ListObjectsV2 Prefix, StartAfter  the keys under a prefix (after a key),
//                             ascending (UTF-8 byte order), 1000 a page,
//                             followed by its token
//   DeleteObjects             up to 1000 keys a request
//   strong read-after-write and list-after-write consistency (AWS S3 since
//   December 2020): a point is listed once its put returned
//
// Every request has a timeout (requestTimeoutMs): a store that does not
// answer fails the request, which the callers retry with backoff
// (withRetries), never a hang.
import { storeError, type ObjectInfo, type ObjectStore } from '../../../lib/backup/object-store'
import { levelError } from '../../../lib/errors'

export interface S3StoreOptions {
  bucket: string
  /** An S3-compatible service's URL (path-style addressing is used then). Default: AWS S3. */
  endpoint?: string
  /** Default: the AWS SDK's (AWS_REGION, the config files), else us-east-1. */
  region?: string
  /** Default: the AWS SDK's credential chain. */
  credentials?: { accessKeyId: string, secretAccessKey: string, sessionToken?: string }
  /** The service has PutObject If-None-Match (AWS S3 has). Default: true without an endpoint, false with one. */
  conditionalPut?: boolean
  /** One request's time limit (ms). Default 30000. */
  requestTimeoutMs?: number
  /** Anything else for the S3Client constructor. */
  clientConfig?: Record<string, unknown>
}

type S3Module = typeof import('@aws-sdk/client-s3')

async function loadSdk (): Promise<S3Module> {
  try {
    return await import('@aws-sdk/client-s3')
  } catch (err) {
    throw levelError('LEVEL_NOT_SUPPORTED', 'The S3 object store needs the package @aws-sdk/client-s3 (an optional peer dependency of lsm-level): npm install @aws-sdk/client-s3', err)
  }
}

interface S3ErrorShape { name?: string, Code?: string, $metadata?: { httpStatusCode?: number } }

function status (err: unknown): number | undefined {
  return (err as S3ErrorShape).$metadata?.httpStatusCode
}

export class S3Store implements ObjectStore {
  readonly description: string
  readonly conditionalPut: boolean

  private constructor (private readonly sdk: S3Module, private readonly client: InstanceType<S3Module['S3Client']>, private readonly bucket: string, options: S3StoreOptions) {
    this.description = `s3://${bucket}` + (options.endpoint !== undefined ? ` at ${options.endpoint}` : '')
    this.conditionalPut = options.conditionalPut ?? options.endpoint === undefined
  }

  static async create (options: S3StoreOptions): Promise<S3Store> {
    if (typeof options?.bucket !== 'string' || options.bucket === '') throw levelError('LEVEL_INVALID_OPTION', 'S3Store: a bucket is required')
    const sdk = await loadSdk()
    const timeout = options.requestTimeoutMs ?? 30000
    const client = new sdk.S3Client({
      region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
      ...(options.endpoint !== undefined ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
      ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
      // The callers retry (lib/backup/object-store.ts withRetries), with backoff.
      maxAttempts: 1,
      requestHandler: { requestTimeout: timeout, connectionTimeout: timeout, throwOnRequestTimeout: true },
      ...options.clientConfig
    })
    return new S3Store(sdk, client, options.bucket, options)
  }

  async put (key: string, body: Uint8Array, options: { ifAbsent?: boolean } = {}): Promise<void> {
    if (options.ifAbsent === true && !this.conditionalPut) throw storeError('LEVEL_NOT_SUPPORTED', `${this.description} has no conditional put`, key)
    try {
      await this.client.send(new this.sdk.PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentLength: body.length,
        ...(options.ifAbsent === true ? { IfNoneMatch: '*' } : {})
      }))
    } catch (err) {
      if (status(err) === 412 || (err as S3ErrorShape).name === 'PreconditionFailed') throw storeError('LEVEL_OBJECT_EXISTS', `Object exists: ${key}`, key, err)
      throw err
    }
  }

  async get (key: string, range?: { offset: number, length: number }): Promise<Buffer> {
    if (range !== undefined && range.length <= 0) {
      await this.get(key, { offset: 0, length: 1 })
      return Buffer.alloc(0)
    }
    try {
      const res = await this.client.send(new this.sdk.GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ...(range !== undefined ? { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` } : {})
      }))
      if (res.Body === undefined) return Buffer.alloc(0)
      const bytes = await res.Body.transformToByteArray()
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    } catch (err) {
      const name = (err as S3ErrorShape).name
      if (name === 'NoSuchKey' || (status(err) === 404 && name !== 'NoSuchBucket')) throw storeError('LEVEL_NOT_FOUND', `No object ${key} in ${this.description}`, key, err)
      // A range that starts at or past the end of the object.
      if (status(err) === 416 || name === 'InvalidRange') return Buffer.alloc(0)
      throw err
    }
  }

  async list (prefix: string, options: { startAfter?: string } = {}): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = []
    let token: string | undefined
    do {
      const res = await this.client.send(new this.sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, ...(token === undefined && options.startAfter !== undefined ? { StartAfter: options.startAfter } : {}) }))
      for (const o of res.Contents ?? []) if (o.Key !== undefined) out.push({ key: o.Key, size: o.Size ?? 0 })
      token = res.IsTruncated === true ? res.NextContinuationToken : undefined
    } while (token !== undefined)
    // ListObjectsV2 sorts by UTF-8 bytes; the keys of lib/backup/layout.ts are ASCII, where that is string order too.
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    return out
  }

  async delete (keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const chunk = keys.slice(i, i + 1000)
      const res = await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }))
      const failed = (res.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey')
      if (failed.length > 0) throw new Error(`${this.description}: could not delete ${failed.length} objects, e.g. ${failed[0].Key ?? '?'}: ${failed[0].Code ?? ''} ${failed[0].Message ?? ''}`)
    }
  }

  /** Closes the client's connections. */
  destroy (): void {
    this.client.destroy()
  }
}
