// node:crypto's SHA-256 for lib/util/sha256.ts, installed on import: by the
// Node platform on the main thread and by the job threads, which read and
// hash the tables a backup puts. Native and fed piece by piece (64 MiB in
// about 40 ms on the development machine, against 225 ms of CPU for Web
// Crypto's digest, most of it copying its input on the calling thread).
import { nodeCrypto } from './lazy-modules'
import { useSha256 } from '../../lib/util/sha256'

useSha256(() => {
  const hash = nodeCrypto().createHash('sha256')
  return {
    update: (data) => { hash.update(data) },
    digest: () => hash.digest()
  }
})
