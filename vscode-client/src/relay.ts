/**
 * The kernel relay: when the notebook's kernel has no connection file on this machine (a remote
 * Jupyter server, JupyterHub, Colab), the server reads the kernel through the editor. It sends
 * `crane/kernelRelay/execute {notebookUri, code, startTimeoutMs, timeoutMs}`; the extension runs the
 * code with the Jupyter extension's `kernel.executeCode` (the access the user already allowed) and
 * answers with what came out, decoded: stdout, stderr, the error, display data as text per mime.
 *
 * Why it is trace-free: `executeCode` sends `execute_request` with `store_history: false` (no
 * execution count, no `In`/history entry); the code crane sends is one `exec(...)` call in a private
 * namespace returning None (no `Out`/`_`), catching every exception itself (no `sys.last_value`).
 *
 * Two rules the Jupyter extension's behaviour dictates:
 * - a started `executeCode` is never cancelled: cancelling one interrupts the kernel, and on a shared
 *   remote kernel the interrupt could reach another client's cell. A late answer is dropped instead;
 * - a request that produces no output within `startTimeoutMs` waits behind a running cell (the
 *   code's first act is to print a start line): the answer is `busy` at once, and the queued code
 *   still runs, harmlessly, when the cell ends.
 * Pure: the Jupyter API and the consent are injected.
 */
import { decodeItem, MIME_ERROR, MIME_STDERR, MIME_STDOUT, type KernelOutput } from './connectionFile';
import type { Consent, JupyterLike, KernelLike } from './kernelAttach';

export const RELAY_REQUEST = 'crane/kernelRelay/execute';
/** The kernel's status as the Jupyter extension knows it; runs nothing in the kernel. */
export const RELAY_STATUS_REQUEST = 'crane/kernelRelay/status';

export interface RelayStatusResult {
  /** The Jupyter extension's KernelStatus (idle, busy, starting, ..., dead), or why there is none. */
  status: string;
  message?: string;
}

export interface RelayParams {
  notebookUri: string;
  code: string;
  /** No output at all within this time: the kernel is busy with something else. */
  startTimeoutMs?: number;
  /** The whole execution's limit. */
  timeoutMs?: number;
}

export type RelayStatus = 'ok' | 'busy' | 'timeout' | 'noKernel' | 'denied' | 'failed';

export interface RelayResult {
  status: RelayStatus;
  stdout: string;
  stderr: string;
  /** An error output (`application/vnd.code.notebook.error`) or a thrown error. */
  error?: { ename: string; evalue: string };
  /** Other outputs (display data, results), text mimes only, each as {mime: text}. */
  outputs: Record<string, string>[];
  /** Why, for a status other than ok. */
  message?: string;
}

export const DEFAULT_START_TIMEOUT_MS = 2_000;
/** A `busy` shorter than this is another client's quick request (a variable explorer), not a cell. */
export const BUSY_SETTLE_MS = 400;
export const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 600_000;

/** VS Code's stream mimes, and the spelling the Jupyter API's documentation uses. */
const STDOUT = new Set([MIME_STDOUT, 'application/x.notebook.stream.stdout']);
const STDERR = new Set([MIME_STDERR, 'application/x.notebook.stream.stderr']);

function isText(mime: string): boolean {
  return mime.startsWith('text/') || mime === 'application/json' || mime.endsWith('+json') || mime.endsWith('+xml');
}

function errorOf(text: string): { ename: string; evalue: string } {
  try {
    const parsed = JSON.parse(text) as { name?: unknown; message?: unknown; ename?: unknown; evalue?: unknown };
    const ename = parsed.name ?? parsed.ename;
    const evalue = parsed.message ?? parsed.evalue;
    return { ename: typeof ename === 'string' ? ename : 'Error', evalue: typeof evalue === 'string' ? evalue : '' };
  } catch {
    return { ename: 'Error', evalue: text.trim() };
  }
}

/** The outputs of one execution, decoded into a relay answer (status ok). */
export function collectOutputs(outputs: readonly KernelOutput[]): RelayResult {
  const result: RelayResult = { status: 'ok', stdout: '', stderr: '', outputs: [] };
  for (const output of outputs) {
    const bundle: Record<string, string> = {};
    for (const item of output.items ?? []) {
      if (STDOUT.has(item.mime)) result.stdout += decodeItem(item);
      else if (STDERR.has(item.mime)) result.stderr += decodeItem(item);
      else if (item.mime === MIME_ERROR) result.error ??= errorOf(decodeItem(item));
      else if (isText(item.mime)) bundle[item.mime] = decodeItem(item);
    }
    if (Object.keys(bundle).length > 0) result.outputs.push(bundle);
  }
  return result;
}

function bounded(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(value, MAX_TIMEOUT_MS) : fallback;
}

/** The parameters as the server sent them, or why they are unusable. */
export function parseRelayParams(params: unknown): RelayParams | string {
  if (!params || typeof params !== 'object') return `${RELAY_REQUEST} needs {notebookUri, code}`;
  const p = params as Record<string, unknown>;
  if (typeof p.notebookUri !== 'string' || p.notebookUri === '' || typeof p.code !== 'string') {
    return `${RELAY_REQUEST} needs {notebookUri, code}`;
  }
  return {
    notebookUri: p.notebookUri,
    code: p.code,
    startTimeoutMs: bounded(p.startTimeoutMs, DEFAULT_START_TIMEOUT_MS),
    timeoutMs: bounded(p.timeoutMs, DEFAULT_TIMEOUT_MS),
  };
}

export interface RelayDeps {
  jupyter(): Promise<JupyterLike | undefined>;
  getConsent(): Consent | undefined;
  /** A cancellation token for `executeCode`; never cancelled (see the module's comment). */
  token(): unknown;
  log(message: string): void;
  now?(): number;
  sleep?(ms: number): Promise<void>;
}

const GONE = new Set(['dead', 'terminating', 'restarting', 'autorestarting', 'starting']);

function refused(status: RelayStatus, message: string): RelayResult {
  return { status, stdout: '', stderr: '', outputs: [], message };
}

/** Answers `crane/kernelRelay/execute`. */
export class KernelRelay {
  /** Per notebook, when our last execution ended: right after it the kernel may still say `busy`. */
  private readonly lastEnd = new Map<string, number>();

  constructor(private readonly deps: RelayDeps) {}

  /** Answers `crane/kernelRelay/status`: cheap (the server polls it while a cell runs). */
  async status(raw: unknown): Promise<RelayStatusResult> {
    const notebookUri = raw && typeof raw === 'object' ? (raw as { notebookUri?: unknown }).notebookUri : undefined;
    if (typeof notebookUri !== 'string' || notebookUri === '') return { status: 'failed', message: `${RELAY_STATUS_REQUEST} needs {notebookUri}` };
    if (this.deps.getConsent() !== 'allow') return { status: 'denied', message: 'kernel access is not allowed in this workspace' };
    const jupyter = await this.deps.jupyter();
    if (!jupyter) return { status: 'noKernel', message: 'the Jupyter extension is not available' };
    const kernel = await jupyter.getKernel(notebookUri);
    if (!kernel) return { status: 'noKernel', message: `no running kernel for ${notebookUri}` };
    return { status: kernel.status ?? 'unknown' };
  }

  async execute(raw: unknown): Promise<RelayResult> {
    const params = parseRelayParams(raw);
    if (typeof params === 'string') return refused('failed', params);
    if (this.deps.getConsent() !== 'allow') {
      return refused('denied', 'kernel access is not allowed in this workspace (crane: Attach kernel asks again)');
    }
    const jupyter = await this.deps.jupyter();
    if (!jupyter) return refused('noKernel', 'the Jupyter extension is not available');
    const kernel = await jupyter.getKernel(params.notebookUri);
    if (!kernel) return refused('noKernel', `no running kernel for ${params.notebookUri}`);
    const now = this.deps.now ?? Date.now;
    if (kernel.status !== undefined && GONE.has(kernel.status)) {
      return refused('noKernel', `the kernel is ${kernel.status}`);
    }
    const last = this.lastEnd.get(params.notebookUri) ?? -Infinity;
    if (kernel.status === 'busy' && now() - last > 1_000 && !(await this.settles(kernel))) {
      return refused('busy', 'the kernel is busy running a cell');
    }
    const result = await this.run(kernel, params);
    // right after our own execution the kernel may still say busy; a request that never started did not end
    if (result.status !== 'busy') this.lastEnd.set(params.notebookUri, now());
    return result;
  }

  /** Whether a `busy` kernel turns idle within BUSY_SETTLE_MS. */
  private async settles(kernel: KernelLike): Promise<boolean> {
    const sleep = this.deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    for (let waited = 0; waited < BUSY_SETTLE_MS; waited += 50) {
      await sleep(50);
      if (kernel.status !== 'busy') return true;
    }
    return false;
  }

  private run(kernel: KernelLike, params: RelayParams): Promise<RelayResult> {
    const outputs: KernelOutput[] = [];
    let settled = false;
    return new Promise<RelayResult>((resolve) => {
      const finish = (result: RelayResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(startTimer);
        clearTimeout(endTimer);
        resolve(result);
      };
      const startTimer = setTimeout(() => {
        if (outputs.length === 0) finish(refused('busy', `the kernel did not start on crane's request within ${params.startTimeoutMs} ms (a cell is running)`));
      }, params.startTimeoutMs);
      const endTimer = setTimeout(
        () => finish({ ...collectOutputs(outputs), status: 'timeout', message: `no complete answer within ${params.timeoutMs} ms` }),
        params.timeoutMs,
      );
      // read to the end even after an answer was given: the execution finishes on its own and its
      // late outputs are dropped (nothing is cancelled)
      void (async () => {
        try {
          for await (const output of kernel.executeCode(params.code, this.deps.token() as never)) {
            if (!settled) outputs.push(output);
          }
          finish(collectOutputs(outputs));
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          const name = error instanceof Error ? error.name : 'Error';
          if (!settled) this.deps.log(`Relay: the kernel's executeCode failed: ${message}`);
          finish({ ...collectOutputs(outputs), status: 'failed', error: { ename: name, evalue: message }, message });
        }
      })();
    });
  }
}
