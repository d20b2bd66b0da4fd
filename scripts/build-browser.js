// Bundles the browser entries with esbuild into dist/browser/ (ES modules,
// minified, with a package.json that says "type": "module"):
//   lsm-level.js            browser.ts: the main thread's database (BrowserLevel)
//   lsm-level-worker.js     browser-worker.ts: that database's worker
//   lsm-level-in-worker.js  browser-in-worker.ts: the engine for code in a worker
//   lsm-level-relay.js      browser-relay.ts: the SharedWorker through which the
//                           workers of the tabs sharing a database reach its owner
// `--tests` also bundles the page that test/browser.test.ts loads and the
// worker that page starts for OpfsLevel, and the page of
// test/browser-tabs.test.ts (tabs.js), and the page of the fallback-storage
// tests (storage.js), into dist/browser-test/, and the page
// of the browser benchmark (benchmarks/browser-page.ts, with browser-level)
// and its workers (benchmarks/browser-worker.ts, browser-floor-worker.ts), and the page of the many-tabs
// benchmark (benchmarks/browser-tabs-page.ts), into dist/browser-bench/.
// Node-only modules that adapters/lsm-level.ts imports on demand
// (repair, destroy, importLevelDB) become a stub that fails with
// LEVEL_NOT_SUPPORTED; the build fails if any node: module is left.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const esbuild = require('esbuild')

const root = path.join(__dirname, '..')

const nodeOnly = {
  name: 'node-only',
  setup (build) {
    build.onResolve({ filter: /\/hosts\/node\/tools\/(repair|import-leveldb)\.js$/ }, () => ({ path: path.join(root, 'hosts/browser/node-only.ts') }))
    build.onResolve({ filter: /^node:/ }, (args) => ({ errors: [{ text: `${args.path} in the browser bundle (imported by ${args.importer})` }] }))
  }
}

const common = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
  plugins: [nodeOnly],
  define: { LSM_LEVEL_BUNDLE_URL: 'import.meta.url' }
}

async function main () {
  const out = path.join(root, 'dist/browser')
  // Minified (names kept: error classes and stack traces stay readable); the
  // source maps are written beside them for local debugging, not named in the
  // bundles (the package does not ship them).
  await esbuild.build({ ...common, minify: true, keepNames: true, sourcemap: 'external', entryPoints: { 'lsm-level': path.join(root, 'browser.ts'), 'lsm-level-worker': path.join(root, 'browser-worker.ts'), 'lsm-level-in-worker': path.join(root, 'browser-in-worker.ts'), 'lsm-level-relay': path.join(root, 'browser-relay.ts') }, outdir: out })
  // The bundles are ES modules in a "type": "commonjs" package: this says so
  // to bundlers (webpack 5 parsed them as CommonJS and failed on import.meta).
  fs.writeFileSync(path.join(out, 'package.json'), JSON.stringify({ type: 'module' }, null, 2) + '\n')
  if (process.argv.includes('--tests')) {
    await esbuild.build({
      ...common,
      entryPoints: { page: path.join(root, 'test/browser/page.ts'), worker: path.join(root, 'test/browser/worker-runner.ts'), tabs: path.join(root, 'test/browser/tabs-page.ts'), storage: path.join(root, 'test/browser/storage-page.ts') },
      outdir: path.join(root, 'dist/browser-test'),
      // tape's node-side modules, as browserify would substitute them.
      alias: { stream: 'readable-stream', path: path.join(root, 'test/browser/path-shim.js') },
      inject: [path.join(root, 'test/browser/process-shim.js')],
      define: { ...common.define, __dirname: '"/"' }
    })
    await esbuild.build({ ...common, entryPoints: { page: path.join(root, 'benchmarks/browser-page.ts'), worker: path.join(root, 'benchmarks/browser-worker.ts'), floor: path.join(root, 'benchmarks/browser-floor-worker.ts'), tabs: path.join(root, 'benchmarks/browser-tabs-page.ts') }, outdir: path.join(root, 'dist/browser-bench') })
  }
}

main().catch((err) => {
  console.error(err.message)
  process.exit(1)
})
