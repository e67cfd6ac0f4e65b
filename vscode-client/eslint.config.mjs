// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', '*.vsix'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      eqeqeq: 'error',
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'vscode', message: 'Only src/host.ts may import vscode.' },
            { name: 'vscode-languageclient', message: 'Only src/host.ts may import vscode-languageclient.' },
            { name: 'vscode-languageclient/node', message: 'Only src/host.ts may import vscode-languageclient.' },
            { name: '@vscode/python-extension', message: 'Only src/host.ts may import @vscode/python-extension.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/host.ts', 'test/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
);
