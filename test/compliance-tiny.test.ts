// The abstract-level compliance suite with tiny buffers, so that flushes and
// compactions (and block cache evictions) happen inside the suite's own tests.
import { runCompliance, TINY_OPTIONS } from './util/compliance'

runCompliance('tiny', TINY_OPTIONS)
