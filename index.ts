// lsm-level for Node: the abstract-level database of adapters/lsm-level.ts over node:fs,
// with worker threads for flushes and compactions (hosts/node/platform.ts), and
// multiProcess opens (adapters/multi-process/).
// Bundled for the browser, the package's root loads browser.ts (BrowserLevel) instead:
// package.json's exports, which test/examples.test.ts holds.
import './hosts/node/platform'
import './adapters/multi-process/index'
import { LsmLevel } from './adapters/lsm-level'

export * from './adapters/lsm-level'
export { DirectoryStore, type DirectoryStoreOptions } from './hosts/node/object-store/directory-store'
export { S3Store, type S3StoreOptions } from './hosts/node/object-store/s3-store'
export { ReplicaLevel, type ReplicaOptions } from './adapters/replica-level'
export type { FollowStats } from './lib/backup/follow'
export default LsmLevel
