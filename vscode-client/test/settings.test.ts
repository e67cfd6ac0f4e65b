import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  CLIENT_SETTINGS,
  SETTING_KEYS,
  configurationFor,
  didChangeConfigurationParams,
  readCraneOptions,
} from '../src/settings';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, { default?: unknown; enum?: string[] }> } };
};
const properties = manifest.contributes.configuration.properties;

function getter(values: Record<string, unknown>) {
  return (key: string) => values[key];
}

describe('settings mapping', () => {
  it('forwards every server setting contributed in package.json, and nothing else', () => {
    const contributed = Object.keys(properties)
      .filter((key) => !key.startsWith('crane.server.'))
      .map((key) => key.slice('crane.'.length))
      .filter((key) => !(CLIENT_SETTINGS as readonly string[]).includes(key))
      .sort();
    assert.deepEqual([...SETTING_KEYS].sort(), contributed);
  });

  it('maps the package.json defaults to initialization options with the server camelCase names', () => {
    const defaults = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k.slice('crane.'.length), v.default]));
    const { options, problems } = readCraneOptions(getter(defaults));
    assert.deepEqual(problems, []);
    assert.deepEqual(options, {
      provider: 'none',
      votes: 1,
      temperature: 0.01,
      debounce: 500,
      runtimeInfo: true,
      privacy: false,
      maxColumns: 20,
      dryRun: 'safe',
      dryRunBudget: 3,
      undo: false,
      undoReserve: 1024,
      undoHold: 600,
    });
  });

  it('passes set values through exactly', () => {
    const { options, problems } = readCraneOptions(
      getter({
        provider: 'openai-compatible',
        model: ' qwen2.5-coder ',
        baseUrl: 'http://localhost:8000/v1',
        apiKeyEnv: 'MY_LLM_KEY',
        votes: 5,
        temperature: 0.7,
        debounce: 250,
        runtimeInfo: false,
        privacy: true,
        maxColumns: 100,
        dryRun: 'off',
        dryRunBudget: 0.5,
      }),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(options, {
      provider: 'openai-compatible',
      model: 'qwen2.5-coder',
      baseUrl: 'http://localhost:8000/v1',
      apiKeyEnv: 'MY_LLM_KEY',
      votes: 5,
      temperature: 0.7,
      debounce: 250,
      runtimeInfo: false,
      privacy: true,
      maxColumns: 100,
      dryRun: 'off',
      dryRunBudget: 0.5,
    });
  });

  it('leaves out empty strings so that the server default applies', () => {
    const { options } = readCraneOptions(getter({ provider: 'openai', model: '', baseUrl: '  ', apiKeyEnv: '' }));
    assert.deepEqual(options, { provider: 'openai' });
  });

  it('drops and reports invalid values, keeping the valid ones', () => {
    const { options, problems } = readCraneOptions(
      getter({ provider: 'anthropic', votes: 0, temperature: 3, debounce: 1.5, privacy: 'yes', dryRun: 'maybe', dryRunBudget: 0, maxColumns: 10 }),
    );
    assert.deepEqual(options, { maxColumns: 10 });
    assert.equal(problems.length, 7);
    assert.match(problems.join('\n'), /crane\.provider must be one of none, openai, openai-compatible, gemini/);
    assert.match(problems.join('\n'), /crane\.votes must be an integer from 1 to 15/);
    assert.match(problems.join('\n'), /crane\.dryRunBudget must be a number above 0/);
  });

  it('refuses a key pasted into crane.apiKeyEnv and does not echo it', () => {
    const { options, problems } = readCraneOptions(getter({ apiKeyEnv: 'sk-proj-abc123' }));
    assert.equal(options.apiKeyEnv, undefined);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /NAME of an environment variable/);
  });

  it('shapes didChangeConfiguration like synchronize.configurationSection "crane"', () => {
    assert.deepEqual(didChangeConfigurationParams({ votes: 3 }), { settings: { crane: { votes: 3 } } });
  });

  it('answers workspace/configuration for crane with the cleaned options', () => {
    const options = { provider: 'gemini' as const, votes: 3 };
    assert.deepEqual(configurationFor('crane', options, () => 'raw'), options);
    assert.equal(configurationFor('crane.votes', options, () => 'raw'), 3);
    assert.equal(configurationFor('crane.model', options, () => 'raw'), null);
    assert.equal(configurationFor('python', options, () => 'raw'), 'raw');
  });
});
