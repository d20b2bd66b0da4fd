// The abstract-level compliance suite with tiny buffers, so that flushes and
// compactions (and block cache evictions) happen inside the suite's own tests.
import { runCompliance } from './util/compliance'

runCompliance('tiny', {
  writeBufferSize: 1024,
  blockSize: 256,
  targetFileSize: 1024,
  maxBytesForLevelBase: 4096,
  cacheSize: 16 * 1024,
  level0CompactionTrigger: 1
})
