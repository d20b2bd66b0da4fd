// The abstract-level compliance suite under tiered compaction, with tiny buffers
// so that flushes and tiered merges (across level 0 and the levels below) happen
// inside the suite's own tests.
import { runCompliance } from './util/compliance'

runCompliance('tiered', {
  compaction: 'tiered',
  writeBufferSize: 256,
  blockSize: 256,
  targetFileSize: 512,
  cacheSize: 16 * 1024,
  level0CompactionTrigger: 1
})
