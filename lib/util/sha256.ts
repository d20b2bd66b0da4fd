// SHA-256, for the content names of backed-up tables: the host's hash where it
// installs one (on Node, hosts/node/sha256.ts installs node:crypto's, on the
// main thread and on the job threads), fed piece by piece; else Web Crypto's
// digest of the whole input, else none (a runtime without either).

/** A SHA-256 fed piece by piece. */
export interface Sha256Hasher {
  update (data: Uint8Array): void
  /** The 32-byte digest of everything fed. */
  digest (): Uint8Array
}

let newHasher: (() => Sha256Hasher) | undefined

/** Installs the host's SHA-256. */
export function useSha256 (factory: () => Sha256Hasher): void {
  newHasher = factory
}

/** A new hasher where the host installed one; undefined: only sha256() below. */
export function sha256Hasher (): Sha256Hasher | undefined {
  return newHasher?.()
}

/** The SHA-256 of `data`; undefined where the runtime has no SHA-256. */
export async function sha256 (data: Uint8Array): Promise<Uint8Array | undefined> {
  if (newHasher !== undefined) {
    const h = newHasher()
    h.update(data)
    return h.digest()
  }
  const subtle = globalThis.crypto?.subtle
  if (subtle === undefined) return undefined
  return new Uint8Array(await subtle.digest('SHA-256', data))
}
