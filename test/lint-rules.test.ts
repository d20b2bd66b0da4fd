// The repository's own lint rule against import cycles
// (tools/lint/rules/no-import-cycles.mjs), run through ESLint on modules
// planted in a temporary directory: a cycle of type-only imports, a cycle
// through a re-export and a dynamic import, and an acyclic chain (no report).
// The repository itself is checked by `npm run lint`, which `npm test` runs.
import test from 'tape'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'

// The toolchain is ES modules; this file is compiled to CommonJS, whose
// `import()` TypeScript would turn into require().
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<any>

/** Lints `files` (name -> source) written to a new directory; returns "file: message" lines of the rule's reports. */
async function lintPlanted (files: Record<string, string>): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsm-lint-'))
  for (const [name, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true })
    fs.writeFileSync(path.join(dir, name), source)
  }
  const { Linter } = await importModule('eslint')
  const { tseslint, noImportCycles } = await importModule('lsm-level-lint')
  const linter = new Linter({ configType: 'flat', cwd: dir })
  const config = [{
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { lsm: { rules: { 'no-import-cycles': noImportCycles } } },
    rules: { 'lsm/no-import-cycles': 'error' }
  }]
  const out: string[] = []
  for (const name of Object.keys(files).sort()) {
    const file = path.join(dir, name)
    for (const m of linter.verify(fs.readFileSync(file, 'utf8'), config, { filename: file })) out.push(`${name}: ${m.message}`)
  }
  fs.rmSync(dir, { recursive: true, force: true })
  return out
}

test('lint: a cycle of type-only imports is reported in each of its files, with the chain', async (t) => {
  const out = await lintPlanted({
    'a.ts': "import type { B } from './b'\nexport interface A { b?: B }\n",
    'b.ts': "import type { C } from './sub/c'\nexport interface B { c?: C }\n",
    'sub/c.ts': "// import { nothing } from '../z' (a comment: not an import)\nimport type { A } from '../a'\nexport interface C { a?: A }\n"
  })
  t.same(out, [
    'a.ts: Import cycle: a.ts -> b.ts -> sub/c.ts -> a.ts',
    'b.ts: Import cycle: b.ts -> sub/c.ts -> a.ts -> b.ts',
    'sub/c.ts: Import cycle: sub/c.ts -> a.ts -> b.ts -> sub/c.ts'
  ])
})

test('lint: cycles through a re-export and through a dynamic import or require', async (t) => {
  const out = await lintPlanted({
    'a.ts': "export { b } from './b.js'\nexport const a = 1\n",
    'b.ts': "export const b = async () => (await import('./a')).a\n",
    'c.ts': "import d = require('./d')\nexport const c = d\n",
    'd/index.ts': "export { c } from '../c'\n"
  })
  t.same(out, [
    'a.ts: Import cycle: a.ts -> b.ts -> a.ts',
    'b.ts: Import cycle: b.ts -> a.ts -> b.ts',
    'c.ts: Import cycle: c.ts -> d/index.ts -> c.ts',
    'd/index.ts: Import cycle: d/index.ts -> c.ts -> d/index.ts'
  ])
})

test('lint: a chain without a cycle, and imports of packages, are not reported', async (t) => {
  const out = await lintPlanted({
    'a.ts': "import type { B } from './b'\nimport * as fs from 'node:fs'\nexport type A = B | typeof fs\n",
    'b.ts': "import { c } from './c'\nexport type B = typeof c\n",
    'c.ts': "import test from 'tape'\nexport const c = test\n"
  })
  t.same(out, [])
})
