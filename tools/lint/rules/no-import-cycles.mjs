// ESLint rule: no cycle among the repository's own modules. Every relative
// import counts, `import type` and `export ... from` included: a type-only
// cycle still ties two modules into one unit that neither can be read or
// tested without. A file is reported when a chain of its imports leads back to
// it, with the shortest such chain.
//
// The rule reads the files an import names from disk (ESLint shows a rule one
// file at a time), finding their imports with a scan of the source that skips
// comments; the graph is kept for the run.
import * as fs from 'node:fs'
import * as path from 'node:path'

/** Static imports and re-exports: `import ... from './x'`, `import './x'`, `export ... from './x'`. */
const STATIC = /(?:^|[\s;}])(?:import|export)\s+(?:[^'"`;]*?\sfrom\s*)?['"](\.{1,2}\/[^'"]+)['"]/g
/** `import('./x')`, `require('./x')`, `import x = require('./x')`. */
const CALL = /(?:\bimport|\brequire)\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g
const EXTENSIONS = ['.ts', '.mts', '.cts']

/** The source without its comments (strings are kept: a specifier is one). */
function stripComments (source) {
  return source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')
}

/** The file a relative specifier names, or undefined where it is not a TypeScript file of ours. */
function resolve (from, specifier) {
  const base = path.resolve(path.dirname(from), specifier)
  const stem = base.replace(/\.(?:js|mjs|cjs)$/, '')
  const candidates = [base, ...EXTENSIONS.map((e) => stem + e), ...EXTENSIONS.map((e) => path.join(base, 'index' + e))]
  return candidates.find((c) => EXTENSIONS.includes(path.extname(c)) && fs.existsSync(c) && fs.statSync(c).isFile())
}

/** file -> the files it imports, for the run. */
const edges = new Map()

function importsOf (file, source) {
  let out = edges.get(file)
  if (out !== undefined) return out
  if (source === undefined) {
    try { source = fs.readFileSync(file, 'utf8') } catch { source = '' }
  }
  const text = stripComments(source)
  out = new Set()
  for (const re of [STATIC, CALL]) {
    re.lastIndex = 0
    for (const m of text.matchAll(re)) {
      const target = resolve(file, m[1])
      if (target !== undefined && target !== file) out.add(target)
    }
  }
  edges.set(file, out)
  return out
}

/** The modules on the shortest chain of imports from `start` back to it (start excluded), or undefined. */
function cycleThrough (start, source) {
  const parent = new Map()
  const queue = [...importsOf(start, source)]
  for (const f of queue) parent.set(f, start)
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i]
    if (file === start) {
      const chain = []
      for (let f = parent.get(start); f !== start; f = parent.get(f)) chain.unshift(f)
      return chain
    }
    for (const next of importsOf(file)) {
      if (!parent.has(next)) {
        parent.set(next, file)
        queue.push(next)
      }
    }
  }
  return undefined
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid import cycles between the repository\'s modules, type-only imports included' },
    schema: [],
    messages: { cycle: 'Import cycle: {{chain}}' }
  },
  create (context) {
    const file = context.filename ?? context.getFilename()
    return {
      Program (node) {
        edges.delete(file)
        const chain = cycleThrough(file, context.sourceCode.getText())
        if (chain === undefined) return
        const root = context.cwd ?? process.cwd()
        const names = [file, ...chain, file].map((f) => path.relative(root, f))
        context.report({ node, messageId: 'cycle', data: { chain: names.join(' -> ') } })
      }
    }
  }
}
