/**
 * Asking a Jupyter kernel for its connection file, and reading the answer out of the kernel's output.
 *
 * The code binds no names in the user's namespace and returns None (so no `Out` entry): it leaves
 * no trace beyond the execution itself.
 */

export const CONNECTION_MARKER = 'crane_connection_file';

export const CONNECTION_FILE_CODE =
  `print(__import__("json").dumps({"${CONNECTION_MARKER}": ` +
  `__import__("ipykernel.connect", fromlist=["get_connection_file"]).get_connection_file()}))`;

/** One output item as the Jupyter extension's kernel API yields it. */
export interface KernelOutputItem {
  mime: string;
  data: Uint8Array | string;
}

export interface KernelOutput {
  items: KernelOutputItem[];
  metadata?: Record<string, unknown>;
}

export const MIME_STDOUT = 'application/vnd.code.notebook.stdout';
export const MIME_STDERR = 'application/vnd.code.notebook.stderr';
export const MIME_ERROR = 'application/vnd.code.notebook.error';
export const MIME_TEXT = 'text/plain';

export type Extraction = { connectionFile: string } | { error: string };

const decoder = new TextDecoder('utf-8');

export function decodeItem(item: KernelOutputItem): string {
  return typeof item.data === 'string' ? item.data : decoder.decode(item.data);
}

const FIELD = new RegExp(`"${CONNECTION_MARKER}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`);

/** Finds the marker's value in a text: a JSON line, or that line inside a Python string repr. */
export function findInText(text: string): string | undefined {
  const repr = unescapePythonRepr(text);
  for (const candidate of repr === undefined ? [text] : [repr, text]) {
    const match = FIELD.exec(candidate);
    if (!match) continue;
    try {
      const value: unknown = JSON.parse(match[1]);
      if (typeof value === 'string' && value.trim() !== '') return value.trim();
    } catch {
      // not valid JSON: try the next form
    }
  }
  return undefined;
}

/** `'{"a": "C:\\\\x"}'` (a Python repr, as text/plain shows a returned string) → `{"a": "C:\\x"}`. */
function unescapePythonRepr(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed.length >= 2 && (trimmed[0] === "'" || trimmed[0] === '"') && trimmed.endsWith(trimmed[0])) {
    return trimmed.slice(1, -1).replace(/\\(['"\\])/g, '$1');
  }
  return undefined;
}

function describeError(text: string): string {
  try {
    const parsed = JSON.parse(text) as { name?: unknown; message?: unknown; ename?: unknown; evalue?: unknown };
    const name = parsed.name ?? parsed.ename;
    const message = parsed.message ?? parsed.evalue;
    if (typeof name === 'string' || typeof message === 'string') {
      return [name, message].filter((part) => typeof part === 'string' && part !== '').join(': ');
    }
  } catch {
    // not JSON: fall through
  }
  return text.trim().split('\n').slice(-1)[0] ?? 'unknown error';
}

/**
 * Extracts the connection file from every output of the execution. Stream output may arrive in
 * chunks, so stdout is joined before searching; an error output explains a failure.
 */
export function extractConnectionFile(outputs: readonly KernelOutput[]): Extraction {
  let stdout = '';
  const others: string[] = [];
  const errors: string[] = [];
  let stderr = '';
  for (const output of outputs) {
    for (const item of output.items ?? []) {
      const text = decodeItem(item);
      if (item.mime === MIME_STDOUT) stdout += text;
      else if (item.mime === MIME_STDERR) stderr += text;
      else if (item.mime === MIME_ERROR) errors.push(describeError(text));
      else if (item.mime === MIME_TEXT || item.mime === 'application/json' || item.mime.startsWith('text/')) others.push(text);
    }
  }
  for (const text of [stdout, ...others]) {
    const found = findInText(text);
    if (found) return { connectionFile: found };
  }
  if (errors.length > 0) return { error: `the kernel raised ${errors.join('; ')}` };
  if (stderr.trim() !== '') return { error: `the kernel wrote to stderr: ${stderr.trim().split('\n').slice(-1)[0]}` };
  return { error: 'the kernel answered without a connection file (is it an ipykernel kernel?)' };
}
