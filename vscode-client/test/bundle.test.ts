/** The esbuild bundle (dist/extension.js) loads with only `vscode` external and exports the entry points. */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import { describe, it } from 'node:test';

/** A `vscode` stand-in that accepts any use at module load: every member is a constructible, callable proxy. */
function permissive(): unknown {
  const target = function () {} as unknown as Record<string | symbol, unknown>;
  return new Proxy(target, {
    get: (t, property) => (property === 'prototype' ? t.prototype : property === Symbol.toPrimitive ? () => '' : permissive()),
    construct: () => ({}),
    apply: () => permissive(),
  });
}

describe('bundle', () => {
  const bundle = path.join(__dirname, '..', '..', 'dist', 'extension.js');

  it('requires nothing but vscode and Node built-ins', () => {
    const source = readFileSync(bundle, 'utf8');
    const required = new Set([...source.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]));
    const builtins = new Set(Module.builtinModules.flatMap((name) => [name, `node:${name}`]));
    const foreign = [...required].filter((name) => name !== 'vscode' && !builtins.has(name));
    assert.deepEqual(foreign, []);
    assert.ok(required.has('vscode'));
  });

  it('loads and exports activate and deactivate', () => {
    const moduleWithLoad = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
    const original = moduleWithLoad._load;
    const fake = permissive();
    moduleWithLoad._load = function (this: unknown, request: string, ...rest: unknown[]) {
      return request === 'vscode' ? fake : original.call(this, request, ...rest);
    };
    try {
      delete require.cache[bundle];
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const extension = require(bundle) as Record<string, unknown>;
      assert.equal(typeof extension.activate, 'function');
      assert.equal(typeof extension.deactivate, 'function');
    } finally {
      moduleWithLoad._load = original;
    }
  });
});
