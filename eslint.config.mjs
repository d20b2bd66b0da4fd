// ESLint: typescript-eslint's recommended rules and a layout close to `standard`
// (the Level packages' style: 2-space indent, no semicolons, single quotes, a space
// before a function's parentheses, no trailing commas). `npm run lint` runs it and
// `npm test` runs that first. The toolchain lives in tools/lint (see its package.json).
import { js, stylistic, globals, tseslint, noImportCycles } from 'lsm-level-lint'

// The entries at the repository's root, as relative imports from the folders below it.
const ENTRIES = ['index', 'browser', 'browser-worker', 'browser-in-worker', 'browser-relay'].flatMap((e) => ['../' + e, '../../' + e, '../../../' + e])

export default tseslint.config(
  {
    // test/types/negative holds code that must not compile (test/types.test.ts).
    ignores: ['dist/', 'node_modules/', 'tools/lint/node_modules/', 'test/types/negative/']
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' }
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  stylistic.configs.customize({
    indent: 2,
    quotes: 'single',
    semi: false,
    commaDangle: 'never',
    braceStyle: '1tbs',
    arrowParens: true,
    jsx: false
  }),
  {
    // As `standard` sets them.
    rules: {
      '@stylistic/space-before-function-paren': ['error', 'always'],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/operator-linebreak': ['error', 'after', { overrides: { '?': 'before', ':': 'before', '|>': 'before', '|': 'before', '&': 'before' } }],
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true, vars: 'all' }],
      // `import X = require('x')` is how TypeScript imports a CommonJS `export =`.
      '@typescript-eslint/no-require-imports': ['error', { allowAsImport: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      'no-new': 'error'
    }
  },
  {
    // Stylistic rules that `standard` does not have and that the code does not
    // follow by choice: one-line blocks such as `{ a(); b() }` and `try { ... } catch {}`,
    // argument lists wrapped where they get long, a continued condition aligned
    // under the first, parentheses around a lone arrow parameter or not, quoted
    // keys where some need quotes, and `f<T> (x)`, which a space before a function's
    // parentheses implies for a generic signature.
    rules: {
      '@stylistic/max-statements-per-line': 'off',
      '@stylistic/list-style': 'off',
      '@stylistic/indent-binary-ops': 'off',
      '@stylistic/arrow-parens': 'off',
      '@stylistic/quote-props': 'off',
      '@stylistic/type-generic-spacing': 'off'
    }
  },
  {
    // Tests reach into private state and build malformed inputs on purpose; the
    // benchmarks drive lsm-level, classic-level and memory-level through one handle.
    files: ['test/**', 'benchmarks/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off'
    }
  },
  {
    // No import cycles between our modules, type-only imports included
    // (tools/lint/rules/no-import-cycles.mjs; test/lint-rules.test.ts plants one).
    files: ['**/*.ts'],
    plugins: { lsm: { rules: { 'no-import-cycles': noImportCycles } } },
    rules: { 'lsm/no-import-cycles': 'error' }
  },
  {
    // The layers (docs/ARCHITECTURE.md): imports only go down. The engine (lib/)
    // never imports an adapter, a host or an entry, and imports no node: module
    // (a host installs what it needs: lib/platform.ts); a type from node: is
    // allowed where the engine names what a host hands it.
    files: ['lib/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*'], allowTypeImports: true, message: 'The engine imports no node: module: a host provides the service (lib/platform.ts).' },
          { group: ['**/adapters/**', '**/hosts/**', ...ENTRIES], message: 'The engine never imports an adapter, a host or an entry.' }
        ]
      }]
    }
  },
  {
    // The adapters are built on the engine and the hosts; the entries on the adapters.
    files: ['adapters/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ group: ENTRIES, message: 'An adapter never imports an entry.' }]
      }]
    }
  },
  {
    // A host serves the engine; the adapters are built on the engine and a host.
    files: ['hosts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ group: ['**/adapters/**', ...ENTRIES], message: 'A host never imports an adapter or an entry.' }]
      }]
    }
  },
  {
    // Node.js code throughout: CommonJS .js/.cjs (bin, examples, test helpers)
    // and ES modules (.mjs).
    languageOptions: { globals: globals.node }
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: {
      '@typescript-eslint/no-require-imports': 'off'
    }
  }
)
