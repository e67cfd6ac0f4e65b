/**
 * The extension's `crane.*` settings, mapped to the server's initialization options.
 *
 * Pure: reads through a getter so that it can be tested without VS Code.
 * The keys are exactly the server's camelCase aliases (crane_lsp/settings.py).
 */

export const PROVIDERS = ['none', 'openai', 'openai-compatible', 'gemini'] as const;
export type Provider = (typeof PROVIDERS)[number];
export const DRY_RUN_MODES = ['off', 'safe', 'on'] as const;
export type DryRunMode = (typeof DRY_RUN_MODES)[number];

export interface CraneOptions {
  provider?: Provider;
  model?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  votes?: number;
  temperature?: number;
  debounce?: number;
  runtimeInfo?: boolean;
  privacy?: boolean;
  maxColumns?: number;
  dryRun?: DryRunMode;
  dryRunBudget?: number;
  /** Undo the last cell (docs/undo.md): the kernel holds a copy of its state while each cell runs. */
  undo?: boolean;
  /** MiB of free memory a held copy always leaves. */
  undoReserve?: number;
  /** Seconds a copy is held at most. */
  undoHold?: number;
  /** A kernel's connection file, used for every notebook that has no kernel attached by the editor. */
  connectionFile?: string;
}

type Kind =
  | { type: 'enum'; values: readonly string[] }
  | { type: 'string' }
  | { type: 'int'; min: number; max: number }
  | { type: 'number'; min: number; max: number; exclusiveMin?: boolean }
  | { type: 'bool' };

/** Every server setting the extension forwards, with the same bounds as the server's pydantic model. */
export const SETTINGS: Readonly<Record<keyof CraneOptions, Kind>> = {
  provider: { type: 'enum', values: PROVIDERS },
  model: { type: 'string' },
  baseUrl: { type: 'string' },
  apiKeyEnv: { type: 'string' },
  votes: { type: 'int', min: 1, max: 15 },
  temperature: { type: 'number', min: 0, max: 2 },
  debounce: { type: 'int', min: 0, max: 10_000 },
  runtimeInfo: { type: 'bool' },
  privacy: { type: 'bool' },
  maxColumns: { type: 'int', min: 1, max: 5000 },
  dryRun: { type: 'enum', values: DRY_RUN_MODES },
  dryRunBudget: { type: 'number', min: 0, max: 120, exclusiveMin: true },
  undo: { type: 'bool' },
  undoReserve: { type: 'int', min: 0, max: 1_048_576 },
  undoHold: { type: 'number', min: 0, max: 86_400, exclusiveMin: true },
  connectionFile: { type: 'string' },
};

export const SETTING_KEYS = Object.keys(SETTINGS) as (keyof CraneOptions)[];

/** `crane.*` settings the extension keeps to itself (besides `crane.server.*`): never sent to the server. */
export const CLIENT_SETTINGS = ['runGuard'] as const;

/** Reads one key of the `crane` configuration section (without the `crane.` prefix). */
export type ConfigGetter = (key: string) => unknown;

export interface ReadResult {
  options: CraneOptions;
  /** Human-readable reasons why a value was not forwarded (the server then uses its default). */
  problems: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function check(key: keyof CraneOptions, kind: Kind, value: unknown): { ok: true; value: unknown } | { ok: false; why: string } {
  switch (kind.type) {
    case 'enum':
      return typeof value === 'string' && kind.values.includes(value)
        ? { ok: true, value }
        : { ok: false, why: `must be one of ${kind.values.join(', ')}` };
    case 'string': {
      if (typeof value !== 'string') return { ok: false, why: 'must be a string' };
      const trimmed = value.trim();
      if (key === 'apiKeyEnv' && trimmed !== '' && !ENV_NAME.test(trimmed)) {
        return { ok: false, why: 'must be the NAME of an environment variable, not a key' };
      }
      return { ok: true, value: trimmed };
    }
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) && value >= kind.min && value <= kind.max
        ? { ok: true, value }
        : { ok: false, why: `must be an integer from ${kind.min} to ${kind.max}` };
    case 'number': {
      const above = kind.exclusiveMin ? (v: number) => v > kind.min : (v: number) => v >= kind.min;
      return typeof value === 'number' && Number.isFinite(value) && above(value) && value <= kind.max
        ? { ok: true, value }
        : { ok: false, why: `must be a number ${kind.exclusiveMin ? 'above' : 'from'} ${kind.min} ${kind.exclusiveMin ? 'up ' : ''}to ${kind.max}` };
    }
    case 'bool':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, why: 'must be true or false' };
  }
}

/**
 * Builds the options sent as `initializationOptions` and in `workspace/didChangeConfiguration`.
 * Unset values and empty strings are left out (the server's default applies); invalid values are
 * left out and reported.
 */
export function readCraneOptions(get: ConfigGetter): ReadResult {
  const options: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const key of SETTING_KEYS) {
    const raw = get(key);
    if (raw === undefined || raw === null) continue;
    const result = check(key, SETTINGS[key], raw);
    if (!result.ok) {
      problems.push(`crane.${key} ${result.why} (got ${JSON.stringify(raw)}); using the server's default`);
      continue;
    }
    if (result.value === '') continue;
    options[key] = result.value;
  }
  return { options: options as CraneOptions, problems };
}

/** The payload of `workspace/didChangeConfiguration`, shaped as `synchronize.configurationSection: "crane"` would send it. */
export function didChangeConfigurationParams(options: CraneOptions): { settings: { crane: CraneOptions } } {
  return { settings: { crane: options } };
}

/** The answer to a `workspace/configuration` item: the cleaned options for `crane`, the raw value otherwise. */
export function configurationFor(section: string | undefined, options: CraneOptions, fallback: () => unknown): unknown {
  if (section === 'crane') return options;
  if (section?.startsWith('crane.')) {
    const key = section.slice('crane.'.length) as keyof CraneOptions;
    return SETTING_KEYS.includes(key) ? (options[key] ?? null) : fallback();
  }
  return fallback();
}
