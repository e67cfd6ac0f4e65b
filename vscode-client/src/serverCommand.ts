/**
 * Which command starts `crane-lsp serve`, and whether the crane_lsp package is installed there.
 * Pure apart from the injected process runner.
 */
import { execFile } from 'node:child_process';

export const SERVER_MODULE_ARGS = ['-m', 'crane_lsp.cli', 'serve'] as const;
export const PACKAGE_NAME = 'crane-lsp';

export type LaunchSource = 'crane.server.command' | 'crane.server.pythonPath' | 'Python extension' | 'PATH';

export interface ServerLaunch {
  command: string;
  args: string[];
  source: LaunchSource;
  /** The interpreter (command and leading args) when the server runs as a Python module. */
  python?: string[];
}

export interface LaunchInputs {
  /** `crane.server.command`: a full command line (array, or a string split on whitespace). */
  command?: unknown;
  /** `crane.server.pythonPath`. */
  pythonPath?: unknown;
  /** The active environment's interpreter from the Python extension (execCommand or executable). */
  interpreter?: readonly string[];
  platform?: NodeJS.Platform;
}

function nonEmptyStrings(value: unknown): string[] | undefined {
  if (typeof value === 'string') {
    const parts = value.trim().split(/\s+/).filter((p) => p !== '');
    return parts.length > 0 ? parts : undefined;
  }
  if (Array.isArray(value)) {
    const parts = value.filter((p): p is string => typeof p === 'string' && p.trim() !== '');
    return parts.length > 0 ? parts : undefined;
  }
  return undefined;
}

/** Settings first (command, then pythonPath), then the Python extension, then `python3` on PATH. */
export function resolveServerLaunch(inputs: LaunchInputs): ServerLaunch {
  const command = nonEmptyStrings(inputs.command);
  if (command) {
    return { command: command[0], args: command.slice(1), source: 'crane.server.command' };
  }
  let python: string[] | undefined;
  let source: LaunchSource;
  if (typeof inputs.pythonPath === 'string' && inputs.pythonPath.trim() !== '') {
    python = [inputs.pythonPath.trim()];
    source = 'crane.server.pythonPath';
  } else if (inputs.interpreter && inputs.interpreter.length > 0 && inputs.interpreter[0] !== '') {
    python = [...inputs.interpreter];
    source = 'Python extension';
  } else {
    python = [(inputs.platform ?? process.platform) === 'win32' ? 'python' : 'python3'];
    source = 'PATH';
  }
  return { command: python[0], args: [...python.slice(1), ...SERVER_MODULE_ARGS], source, python };
}

export interface RunResult {
  /** Exit code; null when the process could not start or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the process could not be started at all (e.g. ENOENT). */
  spawnError?: string;
}

export type Runner = (command: string, args: string[], timeoutMs: number) => Promise<RunResult>;

/** Runs a process without a shell; a process that cannot start yields `spawnError` (e.g. "ENOENT"). */
export const runProcess: Runner = (command, args, timeoutMs) =>
  new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      const code: unknown = (error as NodeJS.ErrnoException | null)?.code;
      if (typeof code === 'string') {
        resolve({ code: null, stdout: String(stdout), stderr: String(stderr), spawnError: code });
        return;
      }
      resolve({ code: error ? (typeof code === 'number' ? code : null) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });

export type ServerCheck =
  | { status: 'ok'; version: string }
  | { status: 'unchecked' }
  | { status: 'missing'; message: string; installCommand: string }
  | { status: 'noInterpreter'; message: string }
  | { status: 'failed'; message: string };

export const CHECK_CODE = 'import crane_lsp, sys; sys.stdout.write(crane_lsp.__version__)';

function quote(arg: string): string {
  return /^[A-Za-z0-9_\-./:=@\\]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, '\\$1')}"`;
}

export function installCommand(python: readonly string[]): string {
  return [...python, '-m', 'pip', 'install', PACKAGE_NAME].map(quote).join(' ');
}

/** Runs `python -c "import crane_lsp"` in the server's interpreter; a custom command is not checked. */
export async function checkServer(launch: ServerLaunch, run: Runner, timeoutMs = 20_000): Promise<ServerCheck> {
  if (!launch.python) return { status: 'unchecked' };
  const python = launch.python;
  const shown = python.join(' ');
  const result = await run(python[0], [...python.slice(1), '-c', CHECK_CODE], timeoutMs);
  if (result.spawnError !== undefined) {
    return {
      status: 'noInterpreter',
      message:
        `crane: cannot run the Python interpreter "${shown}" (from ${launch.source}): ${result.spawnError}. ` +
        'Select an interpreter ("Python: Select Interpreter") or set crane.server.pythonPath.',
    };
  }
  if (result.code === 0) return { status: 'ok', version: result.stdout.trim() };
  if (/ModuleNotFoundError|No module named/.test(result.stderr)) {
    const install = installCommand(python);
    return {
      status: 'missing',
      message: `crane: the crane-lsp package is not installed in ${shown} (from ${launch.source}). Install it with: ${install}`,
      installCommand: install,
    };
  }
  const lastLine = result.stderr.trim().split('\n').slice(-1)[0] ?? '';
  return {
    status: 'failed',
    message: `crane: "${shown} -c 'import crane_lsp'" failed (exit ${String(result.code)}): ${lastLine}`,
  };
}

export function describeLaunch(launch: ServerLaunch): string {
  return `${[launch.command, ...launch.args].map(quote).join(' ')} (from ${launch.source})`;
}
