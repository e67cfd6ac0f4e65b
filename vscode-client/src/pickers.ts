/**
 * The two flows that start from a file picker: attaching a kernel by its connection file (a kernel
 * started outside VS Code: a terminal `jupyter console`, a remote kernel, another tool's kernel) and
 * choosing another interpreter for the server when the current one lacks crane-lsp.
 * Pure: the picker, the settings and the server call are injected.
 */
import * as path from 'node:path';
import type { Env } from './apiKey';
import { parseKernelUrl, redactTokens } from './kernelUrl';

export interface PickFileOptions {
  title: string;
  /** Folder (or file) the dialog opens at; it may not exist. */
  defaultPath?: string;
  /** Dialog filters, e.g. `{ 'Kernel connection file': ['json'] }`. */
  filters?: Record<string, string[]>;
}

/** Where Jupyter writes kernel connection files (jupyter_core.paths.jupyter_runtime_dir). */
export function jupyterRuntimeDir(env: Env, platform: NodeJS.Platform, home: string): string {
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  if (env.JUPYTER_RUNTIME_DIR) return env.JUPYTER_RUNTIME_DIR;
  if (env.JUPYTER_DATA_DIR) return join(env.JUPYTER_DATA_DIR, 'runtime');
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'jupyter', 'runtime');
  if (platform === 'darwin') return join(home, 'Library', 'Jupyter', 'runtime');
  return join(env.XDG_DATA_HOME || join(home, '.local', 'share'), 'jupyter', 'runtime');
}

export const CONNECTION_FILE_FILTERS = { 'Kernel connection file': ['json'], 'All files': ['*'] };

export interface AttachFromFileDeps {
  /** The notebook, or the `# %%` file, the kernel is for. */
  targetUri(): string | undefined;
  pickFile(options: PickFileOptions): Promise<string | undefined>;
  runtimeDir(): string;
  /** Runs the server's `crane.attachKernel {notebookUri, connectionFile}`; undefined when no server runs. */
  attach(notebookUri: string, connectionFile: string): Promise<unknown>;
  /** Keeps the choice: re-sent after a server restart, not replaced by the Jupyter extension's kernel. */
  pin(notebookUri: string, connectionFile: string): void;
  showInfo(message: string): void;
  showWarning(message: string): void;
}

export type AttachFromFileOutcome =
  | { kind: 'attached'; notebookUri: string; connectionFile: string }
  | { kind: 'noTarget' }
  | { kind: 'cancelled' }
  | { kind: 'notRunning' }
  | { kind: 'failed'; reason: string };

/** "crane: Attach kernel from connection file…": pick the file, tell the server, say what happened. */
export async function attachFromFile(deps: AttachFromFileDeps): Promise<AttachFromFileOutcome> {
  const notebookUri = deps.targetUri();
  if (!notebookUri) {
    deps.showInfo('crane: open a notebook or a `# %%` Python file first, or set crane.connectionFile for all of them.');
    return { kind: 'noTarget' };
  }
  const connectionFile = await deps.pickFile({
    title: 'Kernel connection file (kernel-*.json)',
    defaultPath: deps.runtimeDir(),
    filters: CONNECTION_FILE_FILTERS,
  });
  if (!connectionFile) return { kind: 'cancelled' };
  const result = await deps.attach(notebookUri, connectionFile);
  if (result === undefined) {
    deps.showWarning('crane: the server is not running.');
    return { kind: 'notRunning' };
  }
  const answer = (result ?? {}) as { attached?: unknown; error?: unknown };
  if (answer.attached === true) {
    deps.pin(notebookUri, connectionFile);
    deps.showInfo(`crane: kernel attached (${connectionFile}).`);
    return { kind: 'attached', notebookUri, connectionFile };
  }
  const reason = typeof answer.error === 'string' && answer.error !== '' ? answer.error : 'the server did not attach it';
  deps.showWarning(`crane: could not attach ${connectionFile}: ${reason}`);
  return { kind: 'failed', reason };
}

export interface InputOptions {
  prompt: string;
  placeHolder?: string;
  /** An error message for the text as typed, or undefined when it is acceptable. */
  validate?(text: string): string | undefined;
}

export interface AttachFromUrlDeps {
  targetUri(): string | undefined;
  inputText(options: InputOptions): Promise<string | undefined>;
  /** A token came inside the typed URL: keep it in the secret store (may restart the server). */
  keepToken(token: string, notebookUri: string, kernelUrl: string): Promise<void>;
  /** Runs the server's `crane.attachKernel {notebookUri, kernelUrl}`; undefined when no server runs. */
  attach(notebookUri: string, kernelUrl: string): Promise<unknown>;
  pin(notebookUri: string, kernelUrl: string): void;
  unpin(notebookUri: string): void;
  showInfo(message: string): void;
  showWarning(message: string): void;
}

export type AttachFromUrlOutcome =
  | { kind: 'attached'; notebookUri: string; kernelUrl: string }
  | { kind: 'noTarget' }
  | { kind: 'cancelled' }
  | { kind: 'notRunning' }
  | { kind: 'failed'; reason: string };

export const KERNEL_URL_PLACEHOLDER = 'http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID';

/**
 * "crane: Attach kernel by URL…": type a kernel's URL on a Jupyter server, tell the server. The
 * URL is sent and kept without its token; a token in it goes to the secret store.
 */
export async function attachFromUrl(deps: AttachFromUrlDeps): Promise<AttachFromUrlOutcome> {
  const notebookUri = deps.targetUri();
  if (!notebookUri) {
    deps.showInfo('crane: open a notebook or a `# %%` Python file first, or set crane.connectionFile (a path or a URL) for all of them.');
    return { kind: 'noTarget' };
  }
  const typed = await deps.inputText({
    prompt: 'Kernel URL on a Jupyter server (the token: "crane: Set Jupyter server token", or ?token=… here, kept in the secret store)',
    placeHolder: KERNEL_URL_PLACEHOLDER,
    validate: (text) => {
      if (text.trim() === '') return undefined;
      const parsed = parseKernelUrl(text);
      return parsed.ok ? undefined : parsed.error;
    },
  });
  if (typed === undefined || typed.trim() === '') return { kind: 'cancelled' };
  const parsed = parseKernelUrl(typed);
  if (!parsed.ok) {
    deps.showWarning(`crane: ${parsed.error}`);
    return { kind: 'failed', reason: parsed.error };
  }
  if (parsed.token) await deps.keepToken(parsed.token, notebookUri, parsed.url);
  const result = await deps.attach(notebookUri, parsed.url);
  if (result === undefined) {
    deps.showWarning('crane: the server is not running.');
    return { kind: 'notRunning' };
  }
  const answer = (result ?? {}) as { attached?: unknown; error?: unknown };
  if (answer.attached === true) {
    deps.pin(notebookUri, parsed.url);
    deps.showInfo(`crane: kernel attached (${parsed.url}).`);
    return { kind: 'attached', notebookUri, kernelUrl: parsed.url };
  }
  deps.unpin(notebookUri);
  const reason = typeof answer.error === 'string' && answer.error !== '' ? answer.error : 'the server did not attach it';
  deps.showWarning(redactTokens(`crane: could not attach ${parsed.url}: ${reason}`));
  return { kind: 'failed', reason };
}

export interface PickInterpreterDeps {
  /** Where the current interpreter came from (serverCommand.ts LaunchSource). */
  source: string | undefined;
  /** The interpreter that lacks crane-lsp, to open the dialog next to it. */
  current: readonly string[] | undefined;
  hasPythonExtension: boolean;
  /** Runs a VS Code command (`python.setInterpreter`). */
  executeCommand(id: string): Promise<unknown>;
  pickFile(options: PickFileOptions): Promise<string | undefined>;
  /** Writes `crane.server.pythonPath` in the user settings (which restarts the server). */
  setPythonPath(value: string): Promise<void>;
}

export type PickInterpreterOutcome = 'pythonExtension' | 'setting' | 'cancelled';

/**
 * With the Python extension supplying the interpreter, its own picker (the server restarts when the
 * selection changes); otherwise, or when crane.server.pythonPath pins it, a file dialog that writes
 * that setting.
 */
export async function pickInterpreter(deps: PickInterpreterDeps): Promise<PickInterpreterOutcome> {
  if (deps.hasPythonExtension && deps.source !== 'crane.server.pythonPath') {
    await deps.executeCommand('python.setInterpreter');
    return 'pythonExtension';
  }
  const current = deps.current?.[0];
  const picked = await deps.pickFile({
    title: 'Python interpreter with crane-lsp installed',
    defaultPath: current && path.isAbsolute(current) ? path.dirname(current) : undefined,
  });
  if (!picked) return 'cancelled';
  await deps.setPythonPath(picked);
  return 'setting';
}
