/**
 * Loaded with `node --require`: resolves `vscode`, `vscode-languageclient/node` and
 * `@vscode/python-extension` to the mocks in test/mocks (VS Code itself cannot run here).
 */
import * as path from 'node:path';
import Module from 'node:module';

const aliases: Record<string, string> = {
  vscode: path.join(__dirname, 'mocks', 'vscode.js'),
  'vscode-languageclient/node': path.join(__dirname, 'mocks', 'languageclient.js'),
  '@vscode/python-extension': path.join(__dirname, 'mocks', 'pythonExtension.js'),
};

type Resolve = (request: string, ...rest: unknown[]) => string;
const moduleWithResolve = Module as unknown as { _resolveFilename: Resolve };
const original = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  const alias = aliases[request];
  return alias ?? original.call(this, request, ...rest);
};
