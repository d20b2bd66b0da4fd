// The abstract-level compliance suite with default options.
import { runCompliance } from './util/compliance'

runCompliance('default', {})
