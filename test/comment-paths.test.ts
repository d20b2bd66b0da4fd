// Every repository path a comment names exists. Comments that name other
// files rot when files move (a review found 7 wrong in a sample of 25, every
// one naming another file); this test reads the comments of the project's
// TypeScript and JavaScript sources and fails for each path that names no
// file or folder. A path is a word with a slash whose first part is one of the
// repository's top-level folders (lib/wal/log-format.ts, test/fs/, docs/...),
// or a ./ or ../ path to a file (with an extension) relative to the file. A path under dist/ or node_modules/
// is not checked (built or installed, not in the repository).
import test from 'tape'
import * as fs from 'node:fs'
import * as path from 'node:path'

const root = path.join(__dirname, '..', '..')
const TOP = fs.readdirSync(root).filter((n) => !n.startsWith('.') && n !== 'node_modules' && n !== 'dist' && fs.statSync(path.join(root, n)).isDirectory())
const SOURCE = /\.(ts|mts|js|mjs|cjs)$/

function sources (dir: string, out: string[] = []): string[] {
  for (const name of fs.readdirSync(path.join(root, dir))) {
    if (name.startsWith('.') || name === 'node_modules' || name === 'dist' || name === 'fixtures') continue
    const rel = dir === '' ? name : `${dir}/${name}`
    const stat = fs.statSync(path.join(root, rel))
    if (stat.isDirectory()) sources(rel, out)
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(rel)
  }
  return out
}

/** The comment text of each line: after `//`, or inside a block comment. */
export function commentLines (text: string): Array<{ line: number, text: string }> {
  const out: Array<{ line: number, text: string }> = []
  let inBlock = false
  text.split('\n').forEach((line, i) => {
    if (inBlock) {
      out.push({ line: i + 1, text: line })
      if (line.includes('*/')) inBlock = false
      return
    }
    const block = line.indexOf('/*')
    const slashes = line.search(/(^|[^:'"`\\])\/\//)
    if (slashes >= 0 && (block < 0 || slashes < block)) {
      out.push({ line: i + 1, text: line.slice(slashes) })
    } else if (block >= 0) {
      out.push({ line: i + 1, text: line.slice(block) })
      inBlock = !line.slice(block).includes('*/')
    }
  })
  return out
}

/** The paths a comment names (see the top of this file). */
export function namedPaths (comment: string, topFolders: string[]): string[] {
  const out: string[] = []
  for (const m of comment.matchAll(/(?<![\w@./-])((?:\.\.?\/)+[\w.-][\w./*-]*|[\w-]+\/[\w./*-]*)/g)) {
    let p = m[1].replace(/[.,;:)]+$/, '')
    if (p.includes('*') || p.includes('<')) continue
    const first = p.split('/')[0]
    if (first === 'dist' || first === 'node_modules') continue
    if (!p.startsWith('.') && !topFolders.includes(first)) continue
    // A relative path without an extension is an example ('./db'), not a file of ours.
    if (p.startsWith('.') && !/\.\w+$/.test(p)) continue
    p = p.replace(/\/$/, '')
    out.push(p)
  }
  return out
}

test('every repository path named in a comment exists', (t) => {
  // This file's own examples, and the lint rule's planted modules, are strings that look like comments.
  const files = sources('').filter((f) => f !== 'test/comment-paths.test.ts' && f !== 'test/lint-rules.test.ts')
  let checked = 0
  const missing: string[] = []
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8')
    for (const { line, text: comment } of commentLines(text)) {
      for (const p of namedPaths(comment, TOP)) {
        checked++
        const resolved = p.startsWith('.') ? path.join(root, path.dirname(file), p) : path.join(root, p)
        if (!fs.existsSync(resolved)) missing.push(`${file}:${line}: ${p}`)
      }
    }
  }
  t.ok(checked > 100, `${checked} paths named in the comments of ${files.length} files`)
  t.deepEqual(missing, [], 'every one exists')
  t.end()
})

test('the path finder finds what comments name, and nothing else', (t) => {
  t.deepEqual(namedPaths('// see lib/wal/log-format.ts, and test/fs/ (in-memory)', ['lib', 'test']), ['lib/wal/log-format.ts', 'test/fs'])
  t.deepEqual(namedPaths('// ../../index.ts translates; dist/node/lsm-level.js is built', ['lib']), ['../../index.ts'])
  t.deepEqual(namedPaths('// read/write and and/or, 4 KiB/s, @types/node, lib/**/*.d.ts', ['lib']), [])
  t.deepEqual(commentLines('const a = "http://x" // lib/a.ts\n/* b\n lib/c.ts */ code // d').map((c) => c.line), [1, 2, 3])
  t.end()
})
