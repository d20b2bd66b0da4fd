// Bundles the Node entry with esbuild into dist/node/, so that loading the
// package reads three files instead of seventy (`require()` of the package is
// what every short-lived program pays first; see BENCHMARKS.md, "Open and memory"):
//   lsm-level.js         index.ts: the package's `main` (CommonJS)
//   lsm-level-worker.js  hosts/node/job-thread.ts: what the flush and
//                        compaction worker threads run
//   cli.js               cli/main.ts: what bin/lsm-level.js runs
// The dependencies (abstract-level, module-error) stay external: they are
// required from node_modules as usual. Reads the TypeScript sources; `tsc`
// still writes dist/ for the type declarations and the tests.
'use strict'
const path = require('node:path')
const esbuild = require('esbuild')

const root = path.join(__dirname, '..')

async function main () {
  await esbuild.build({
    entryPoints: {
      'lsm-level': path.join(root, 'index.ts'),
      'lsm-level-worker': path.join(root, 'hosts/node/job-thread.ts'),
      cli: path.join(root, 'cli/main.ts')
    },
    outdir: path.join(root, 'dist/node'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
    // hosts/node/job-thread.ts starts its threads from this file, not from itself.
    define: { LSM_LEVEL_WORKER_FILE: '"lsm-level-worker.js"' }
  })
}

main().catch((err) => {
  console.error(err.message)
  process.exit(1)
})
