// The linter's toolchain, for eslint.config.mjs at the repository root: the
// packages are installed here (see package.json) so that typescript-eslint finds
// the TypeScript 6.0 it supports rather than the root's TypeScript 7.
export { default as js } from '@eslint/js'
export { default as stylistic } from '@stylistic/eslint-plugin'
export { default as globals } from 'globals'
export { default as tseslint } from 'typescript-eslint'
export { default as noImportCycles } from './rules/no-import-cycles.mjs'
