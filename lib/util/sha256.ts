// SHA-256, for the content names of backed-up tables: the host's synchronous
// hash where it installs one (on Node, hosts/node/sha256.ts installs
// node:crypto's, on the main thread and on the job threads), else Web Crypto's
// digest, else none (a runtime without either).
export type Sha256 = (data: Uint8Array) => Uint8Array

let sha256Sync: Sha256 | undefined

/** Installs a synchronous SHA-256 (it must return the 32-byte digest). */
export function useSha256 (implementation: Sha256): void {
  sha256Sync = implementation
}

/** The SHA-256 of `data`; undefined where the runtime has no SHA-256. */
export async function sha256 (data: Uint8Array): Promise<Uint8Array | undefined> {
  if (sha256Sync !== undefined) return sha256Sync(data)
  const subtle = globalThis.crypto?.subtle
  if (subtle === undefined) return undefined
  return new Uint8Array(await subtle.digest('SHA-256', data))
}
