import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiKeyEnvName, buildServerEnv, redact, secretId } from '../src/apiKey';

describe('API key environment', () => {
  it('picks the variable by provider, or the configured name', () => {
    assert.equal(apiKeyEnvName('openai', undefined), 'OPENAI_API_KEY');
    assert.equal(apiKeyEnvName('openai-compatible', undefined), 'OPENAI_API_KEY');
    assert.equal(apiKeyEnvName('gemini', undefined), 'GEMINI_API_KEY');
    assert.equal(apiKeyEnvName('none', undefined), undefined);
    assert.equal(apiKeyEnvName(undefined, undefined), undefined);
    assert.equal(apiKeyEnvName('openai-compatible', 'VLLM_KEY'), 'VLLM_KEY');
    assert.equal(apiKeyEnvName('gemini', 'not a name'), 'GEMINI_API_KEY');
  });

  it('stores keys per variable name', () => {
    assert.equal(secretId('OPENAI_API_KEY'), 'crane.apiKey.OPENAI_API_KEY');
  });

  it('puts the stored key in the named variable without touching the editor environment', () => {
    const base = { PATH: '/usr/bin', OPENAI_API_KEY: 'inherited' };
    const { env, fromSecrets } = buildServerEnv(base, 'OPENAI_API_KEY', 'sk-stored');
    assert.equal(env.OPENAI_API_KEY, 'sk-stored');
    assert.equal(env.PATH, '/usr/bin');
    assert.equal(env.PYTHONUNBUFFERED, '1');
    assert.deepEqual(fromSecrets, ['OPENAI_API_KEY']);
    assert.equal(base.OPENAI_API_KEY, 'inherited');
  });

  it('keeps an inherited key when none is stored', () => {
    const { env, fromSecrets } = buildServerEnv({ GEMINI_API_KEY: 'from-shell' }, 'GEMINI_API_KEY', undefined);
    assert.equal(env.GEMINI_API_KEY, 'from-shell');
    assert.deepEqual(fromSecrets, []);
  });

  it('sets no key when the provider needs none', () => {
    const { env, fromSecrets } = buildServerEnv({}, undefined, 'sk-stored');
    assert.deepEqual(fromSecrets, []);
    assert.ok(!Object.values(env).includes('sk-stored'));
  });

  it('redacts secrets from log lines', () => {
    assert.equal(redact('error: bad key sk-12345 for sk-12345', ['sk-12345']), 'error: bad key *** for ***');
    assert.equal(redact('nothing here', [undefined, '']), 'nothing here');
  });
});
