/**
 * Kernel URLs (`http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID`, a kernel on a Jupyter Server,
 * JupyterHub single-user server or Enterprise Gateway) and keeping the server's token out of sight.
 *
 * The token never travels inside a URL crane stores or sends: a URL typed with `?token=...` is
 * split into the URL without it and the token (for the secret store). Pure.
 */

/** Where the Jupyter server's token is kept in VS Code's SecretStorage. */
export const JUPYTER_TOKEN_SECRET = 'crane.jupyterToken';
/** The variable that carries it to the server process (what `jupyter` clients read). */
export const JUPYTER_TOKEN_ENV = 'JUPYTER_TOKEN';

export interface KernelUrl {
  /** The kernel URL without query, fragment or credentials: what crane stores and sends. */
  url: string;
  /** `http(s)://HOST:PORT[/BASE]`: the server's base URL. */
  baseUrl: string;
  kernelId: string;
}

export type ParsedKernelUrl =
  | ({ ok: true; token?: string } & KernelUrl)
  | { ok: false; error: string };

const KERNELS_PATH = /^(.*?)\/api\/kernels\/([^/]+)\/?(?:channels\/?)?$/;

/** True when the text looks like a URL (and so is not a connection file path). */
export function looksLikeUrl(text: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim());
}

/**
 * Parses a kernel URL. A `token` query parameter (or `user:token@` credentials) is returned
 * separately and left out of `url`; `ws(s)://` and a trailing `/channels` are accepted too.
 */
export function parseKernelUrl(text: string): ParsedKernelUrl {
  const trimmed = text.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    return { ok: false, error: 'not a URL (expected http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID)' };
  }
  const scheme = { 'http:': 'http:', 'https:': 'https:', 'ws:': 'http:', 'wss:': 'https:' }[parsed.protocol];
  if (!scheme) return { ok: false, error: `a kernel URL starts with http:// or https:// (got ${parsed.protocol}//)` };
  const match = KERNELS_PATH.exec(parsed.pathname);
  if (!match) {
    return { ok: false, error: 'the URL does not name a kernel (expected …/api/kernels/KERNEL_ID)' };
  }
  let kernelId: string;
  try {
    kernelId = decodeURIComponent(match[2]);
  } catch {
    return { ok: false, error: 'the kernel id in the URL is not valid' };
  }
  if (!/^[A-Za-z0-9_.-]+$/.test(kernelId)) return { ok: false, error: `"${kernelId}" is not a kernel id` };
  const token = parsed.searchParams.get('token') || (parsed.password ? decodeURIComponent(parsed.password) : '') || undefined;
  const base = `${scheme}//${parsed.host}${match[1].replace(/\/+$/, '')}`;
  return { ok: true, url: `${base}/api/kernels/${kernelId}`, baseUrl: base, kernelId, ...(token ? { token } : {}) };
}

const TOKEN_PATTERNS: readonly RegExp[] = [
  /([?&#](?:token|access_token|_xsrf)=)[^&#\s"']+/gi,
  /(\bauthorization["']?\s*[:=]\s*["']?(?:token|bearer)\s+)[^\s"',}]+/gi,
  /(\b(?:https?|wss?):\/\/[^/\s:@]*:)[^@\s/]+(?=@)/gi,
];

/**
 * Removes what looks like a Jupyter token from a text (a `token=` query parameter, an
 * `Authorization: token ...` header, URL credentials) besides the secrets crane knows.
 */
export function redactTokens(text: string): string {
  let out = text;
  for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, '$1***');
  return out;
}
