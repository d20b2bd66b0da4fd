// The engine (lib/engine.ts) with the Node platform installed: what Node code
// and the tests import. Code that must run without node: modules (the
// browser worker) imports lib/engine.ts and installs its own platform.
import './platform'

export * from '../../lib/engine'
