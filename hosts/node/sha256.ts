// node:crypto's SHA-256 for lib/util/sha256.ts, installed on import: by the
// Node platform on the main thread and by the job threads, which read and
// hash the tables a backup puts. Synchronous and native (64 MiB in about
// 40 ms of CPU on the development machine, against 225 ms for Web Crypto's
// digest, most of it copying its input on the calling thread).
import { createHash } from 'node:crypto'
import { useSha256 } from '../../lib/util/sha256'

useSha256((data) => createHash('sha256').update(data).digest())
