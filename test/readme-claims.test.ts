// The README's claims that a program can check: the bundle sizes it states
// against the built bundles (npm test builds them first; this file builds
// nothing), its table of error codes against the codes the source uses, and
// every relative link and #anchor of README.md, BENCHMARKS.md and docs/*.md
// against the files and headings there.
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'
import * as zlib from 'node:zlib'
import { anchors, relativeLinks, slug } from './util/markdown'

const root = path.join(__dirname, '..', '..')
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8')
const README = read('README.md')

/** A stated figure may differ from the measured one by this fraction (bundles change a little with every commit). */
const TOLERANCE = 0.05
/** The bundles of the package's browser entries (package.json's exports). */
const BUNDLES = ['lsm-level.js', 'lsm-level-worker.js', 'lsm-level-in-worker.js']

test('readme: the bundle sizes it states are the built bundles\' (bytes and gzip -9, within 5%)', (t) => {
  const rows = new Map<string, { bytes: number, gzip: number }>()
  for (const m of README.matchAll(/^\s*\|\s*`([\w.-]+\.js)`[^|\n]*\|\s*([\d,]+)\s*\|\s*([\d,]+)\s*\|\s*$/gm)) {
    rows.set(m[1], { bytes: Number(m[2].replace(/,/g, '')), gzip: Number(m[3].replace(/,/g, '')) })
  }
  t.deepEqual([...rows.keys()].sort(), BUNDLES.slice().sort(), 'the table names each browser bundle')
  for (const [file, stated] of rows) {
    const bundle = path.join(root, 'dist', 'browser', file)
    if (!fs.existsSync(bundle)) {
      t.fail(`dist/browser/${file} is not built (npm run build)`)
      continue
    }
    const bytes = fs.readFileSync(bundle)
    const gzip = zlib.gzipSync(bytes, { level: 9 }).length
    const within = (said: number, is: number): boolean => Math.abs(said - is) <= is * TOLERANCE
    t.ok(within(stated.bytes, bytes.length), `${file}: README says ${stated.bytes} bytes, built ${bytes.length}`)
    t.ok(within(stated.gzip, gzip), `${file}: README says ${stated.gzip} bytes gzipped, built ${gzip}`)
  }
  t.end()
})

/** The TypeScript and JavaScript files of a directory, recursively. */
function sources (dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|js|mjs)$/.test(e.name))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
}

/** Source text without its comments: a code named only in a comment is not one the code uses. */
const withoutComments = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1')

test('readme: its table of errors lists every LEVEL_* code the source uses, and only those', (t) => {
  const section = /^### Errors\n([\s\S]*?)^#/m.exec(README)?.[1] ?? ''
  const listed = new Set([...section.matchAll(/^\|\s*`(LEVEL_[A-Z_]+)`\s*\|/gm)].map((m) => m[1]))
  t.ok(listed.size >= 10, `the table lists codes (${listed.size})`)
  const roots = fs.readdirSync(root).filter((f) => /\.(ts|mts|mjs)$/.test(f))
  const files = [...roots, ...['lib', 'adapters', 'hosts', 'cli'].flatMap(sources)]
  const used = new Map<string, string>()
  for (const file of files) {
    for (const m of withoutComments(read(file)).matchAll(/\bLEVEL_[A-Z][A-Z_]*\b/g)) if (!used.has(m[0])) used.set(m[0], file)
  }
  t.ok(used.size >= 10, `the source uses codes (${used.size}, in ${files.length} files)`)
  t.deepEqual([...used.keys()].filter((c) => !listed.has(c)).sort().map((c) => `${c} (${used.get(c) ?? ''})`), [], 'every code the source uses is in the table')
  t.deepEqual([...listed].filter((c) => !used.has(c)).sort(), [], 'every code in the table is used in the source')
  t.end()
})

test('readme: GitHub\'s anchors for headings', (t) => {
  t.is(slug('Many processes: `multiProcess`'), 'many-processes-multiprocess', 'punctuation and code marks dropped')
  t.is(slug('In the browser (`BENCH_MARKDOWN=BENCHMARKS.md npm run bench:browser`)'), 'in-the-browser-bench_markdownbenchmarksmd-npm-run-benchbrowser', 'underscores kept')
  t.is(slug('#### `db = new LsmLevel(location[, options])`'.replace(/^#+ /, '')), 'db--new-lsmlevellocation-options', 'a removed character between spaces leaves two hyphens')
  t.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n## B: [link](x.md)\n')], ['a', 'a-1', 'b-link'], 'a repeated heading numbered; none in a code block; a link as its text')
  t.end()
})

test('readme: every relative link and #anchor of README.md, BENCHMARKS.md and docs/*.md resolves', (t) => {
  const docs = ['README.md', 'BENCHMARKS.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
  const anchorsOf = new Map<string, Set<string>>()
  const broken: string[] = []
  let checked = 0
  for (const doc of docs) {
    for (const { target, line } of relativeLinks(read(doc))) {
      checked++
      const hash = target.indexOf('#')
      const file = hash < 0 ? target : target.slice(0, hash)
      const anchor = hash < 0 ? '' : decodeURIComponent(target.slice(hash + 1))
      const resolved = file === '' ? doc : path.normalize(path.join(path.dirname(doc), decodeURIComponent(file.replace(/\?.*$/, ''))))
      const where = `${doc}:${line}: ${target}`
      if (resolved.startsWith('..') || !fs.existsSync(path.join(root, resolved))) {
        broken.push(`${where} (no ${resolved})`)
        continue
      }
      if (anchor === '') continue
      if (!resolved.endsWith('.md')) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) broken.push(`${where} (an anchor in a file that has no headings)`)
        continue
      }
      if (!anchorsOf.has(resolved)) anchorsOf.set(resolved, anchors(read(resolved)))
      if (!anchorsOf.get(resolved)!.has(anchor)) broken.push(`${where} (no heading #${anchor} in ${resolved})`)
    }
  }
  t.ok(checked >= 50, `links checked: ${checked}`)
  t.deepEqual(broken, [], 'every link resolves')
  t.end()
})
