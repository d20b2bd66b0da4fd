// Node's modules that only some paths need, loaded at their first use, so
// that require() of the package does not pay for them: node:crypto (hashing
// for backups, a stale LOCK's judgement, the owner socket's name), node:net
// (multiProcess). node:crypto alone was 6 ms of the package's 60.
import type * as Crypto from 'node:crypto'
import type * as Net from 'node:net'

/* eslint-disable @typescript-eslint/no-require-imports */
export function nodeCrypto (): typeof Crypto {
  return require('node:crypto') as typeof Crypto
}

export function nodeNet (): typeof Net {
  return require('node:net') as typeof Net
}
/* eslint-enable @typescript-eslint/no-require-imports */
