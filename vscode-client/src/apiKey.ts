/**
 * API keys: stored in VS Code's SecretStorage under the name of the environment variable they
 * travel in, and handed to the server process only through its environment.
 */
import type { Provider } from './settings';

export const DEFAULT_KEY_ENV: Readonly<Record<Provider, string | undefined>> = {
  none: undefined,
  openai: 'OPENAI_API_KEY',
  'openai-compatible': 'OPENAI_API_KEY',
  gemini: 'GEMINI_API_KEY',
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variable that carries the key: `crane.apiKeyEnv` when valid, else the provider's default. */
export function apiKeyEnvName(provider: Provider | undefined, apiKeyEnv: string | undefined): string | undefined {
  if (apiKeyEnv && ENV_NAME.test(apiKeyEnv)) return apiKeyEnv;
  return DEFAULT_KEY_ENV[provider ?? 'none'];
}

/** The SecretStorage id under which the key for one variable is kept. */
export function secretId(envName: string): string {
  return `crane.apiKey.${envName}`;
}

export type Env = Record<string, string | undefined>;

export interface ServerEnv {
  env: Env;
  /** Names (never values) of the variables set from the secret store, for the log. */
  fromSecrets: string[];
}

/**
 * The server process's environment: the editor's own environment plus the stored key in the
 * variable the settings name. A stored key wins over one inherited from the environment; with no
 * stored key the inherited one is kept. Unbuffered stdio keeps the LSP stream prompt.
 */
export function buildServerEnv(base: Env, envName: string | undefined, key: string | undefined): ServerEnv {
  const env: Env = { ...base, PYTHONUNBUFFERED: '1' };
  const fromSecrets: string[] = [];
  if (envName && key !== undefined && key !== '') {
    env[envName] = key;
    fromSecrets.push(envName);
  }
  return { env, fromSecrets };
}

/** Replaces every occurrence of a secret in a text (for anything that could reach a log). */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}
