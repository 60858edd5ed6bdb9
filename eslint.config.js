// Lint rules, including the layer rules of ARCHITECTURE.md: each folder of src/ may import only the
// layers below it, and only src/main and src/preload may import `electron` (the package downloads its
// binary the first time it is required, which fails on our machines and in CI).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

const electron = { name: 'electron', message: 'Only src/main and src/preload may import electron.' };
const nodeBuiltins = { group: ['node:*'], message: 'src/shared runs in the browser too: no Node built-ins.' };
const layer = (folders, why) => ({ group: folders.map((f) => `**/${f}/**`), message: why });

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'out/', 'coverage/', 'test-results/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-imports': ['error', { paths: [electron] }],
    },
  },
  {
    files: ['src/shared/**'],
    languageOptions: { globals: {} },
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electron],
          patterns: [
            nodeBuiltins,
            layer(
              ['core', 'server', 'cli', 'main', 'preload', 'renderer'],
              'src/shared imports nothing of ours.',
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['src/core/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electron],
          patterns: [
            layer(['server', 'cli', 'main', 'preload', 'renderer'], 'src/core imports only src/shared.'),
          ],
        },
      ],
    },
  },
  {
    files: ['src/server/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electron],
          patterns: [
            layer(
              ['cli', 'main', 'preload', 'renderer'],
              'src/server imports src/shared and the shared parts of src/core.',
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electron],
          patterns: [layer(['main', 'preload', 'renderer'], 'src/cli hosts core and server only.')],
        },
      ],
    },
  },
  {
    files: ['src/renderer/**'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electron],
          patterns: [
            nodeBuiltins,
            layer(
              ['core', 'server', 'cli', 'main', 'preload'],
              'The renderer talks to the Engine only through the Bridge.',
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/main/**', 'src/preload/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
  prettier,
);
