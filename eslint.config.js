import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { defineConfig } from 'eslint/config';

/** The service packages: only the composition (standalone), infra, bench and tests may import them. */
const SERVICES = ['@docshare/docs-command', '@docshare/gateway', '@docshare/*-projector', '@docshare/standalone'];

/** node:test's registration calls return promises the runner itself awaits. */
const NODE_TEST_CALLS = { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] };

export default defineConfig(
  { ignores: ['node_modules/**', 'data/**', '**/dist/**'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      // Type-aware: the rules below read the types of tsconfig.json's program (a run takes ~30 s).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Promises: one not awaited, handled or `void`ed can reject with nobody listening, and an
      // unhandled rejection ends a Node process.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [NODE_TEST_CALLS] }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // Passing on an error of unknown type (a catch's or a stream's) is fine; making a non-Error is not.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['tests/**', '**/test/**', 'bench/**', 'infra/**'], rules: { 'no-console': 'off' } },
  // Plain JavaScript files are outside the TypeScript program: no type-aware rules there.
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
  // mongosh scripts (the mongo image's init scripts): mongosh's globals and its CommonJS require.
  {
    files: ['infra/compose/mongo-init/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { db: 'readonly', print: 'readonly', require: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  // Layers: contracts ← libs (ports, adapters, runtime) ← services ← standalone, infra, bench, tests.
  // An import the wrong way is an error.
  {
    files: ['libs/*/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: SERVICES, message: 'libs/ must not depend on a service: move the shared part into a lib.' },
        { group: ['**/services/**'], message: 'libs/ must not import from services/.' },
      ] }],
    },
  },
  {
    files: ['libs/contracts/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@docshare/*', '!@docshare/contracts'], message: 'contracts is the bottom layer: it imports no other docshare package.' },
      ] }],
    },
  },
  {
    // Read-your-writes sits below everything that reads or writes: contracts only.
    files: ['libs/consistency/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@docshare/*', '!@docshare/contracts'], message: 'consistency imports no docshare package but contracts.' },
      ] }],
    },
  },
  {
    // The runtime starts services of both sides: it knows no read model (the projection library builds on it, not the reverse).
    files: ['libs/runtime/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: SERVICES, message: 'libs/ must not depend on a service: move the shared part into a lib.' },
        { group: ['**/services/**'], message: 'libs/ must not import from services/.' },
        { group: ['@docshare/projection', '@docshare/projection/*', '@docshare/read-store', '@docshare/read-store/*', '@docshare/search-index', '@docshare/search-index/*'],
          message: 'the runtime knows no read model: @docshare/projection builds on it.' },
      ] }],
    },
  },
  {
    files: ['services/*/src/**'],
    ignores: ['services/standalone/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: SERVICES, message: 'a service must not import another service (only services/standalone composes them).' },
        { group: ['../../*/src/**', '**/services/*/src/**'], message: 'a service imports other packages by name, never by path.' },
      ] }],
    },
  },
  {
    // One dependency across services, on purpose: with MONGO_URL the gateway answers api-stats
    // from the stats read model itself, through the stats projector's own query app (the same
    // composition as embedded mode; services/gateway/src/local-query.ts, docs/architecture.md).
    files: ['services/gateway/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: [...SERVICES, '!@docshare/stats-projector'], message: 'a service must not import another service (only services/standalone composes them).' },
        { group: ['../../*/src/**', '**/services/*/src/**'], message: 'a service imports other packages by name, never by path.' },
      ] }],
    },
  },
  {
    // Two dependencies across services, on purpose: api-purchases reads the files read model through
    // the files projector's queries (it signs each link; docs/architecture.md), and an account's
    // export (issue 24) holds the user's statistics as api-stats answers them (the stats projector's
    // queries, read-only). The storage quota is the write side's own (libs/storage-ledger).
    files: ['services/docs-command/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: [...SERVICES, '!@docshare/files-projector', '!@docshare/stats-projector'], message: 'a service must not import another service (only services/standalone composes them).' },
        { group: ['../../*/src/**', '**/services/*/src/**'], message: 'a service imports other packages by name, never by path.' },
      ] }],
    },
  },
);
