import { redactTokens } from './kernelUrl';

/**
 * The status bar: what the server says in `crane/status`, plus what the client knows itself
 * (server state, how kernels are attached). Unknown or missing fields are tolerated.
 */

export type KernelState = 'attached' | 'none' | 'busy' | 'unknown';

export interface ServerStatus {
  kernel: KernelState;
  checking: boolean;
  lastLatencyMs: number | null;
  message?: string;
  /** Where the attached kernel is, as the server says it: relayed through the editor, a URL (no token), a file. */
  where?: string;
}

export const INITIAL_STATUS: ServerStatus = { kernel: 'unknown', checking: false, lastLatencyMs: null };

const KERNEL_STATES: readonly string[] = ['attached', 'none', 'busy'];

/** Normalises a `crane/status` payload; keeps the previous value of a field the server left out. */
export function parseStatus(params: unknown, previous: ServerStatus = INITIAL_STATUS): ServerStatus {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return previous;
  const p = params as Record<string, unknown>;
  let kernel = previous.kernel;
  if ('kernel' in p) {
    kernel = typeof p.kernel === 'string' && KERNEL_STATES.includes(p.kernel) ? (p.kernel as KernelState) : 'unknown';
  }
  const checking = typeof p.checking === 'boolean' ? p.checking : previous.checking;
  let lastLatencyMs = previous.lastLatencyMs;
  if ('lastLatencyMs' in p) {
    lastLatencyMs = typeof p.lastLatencyMs === 'number' && Number.isFinite(p.lastLatencyMs) && p.lastLatencyMs >= 0
      ? p.lastLatencyMs
      : null;
  }
  const message = typeof p.message === 'string' && p.message.trim() !== '' ? p.message.trim() : undefined;
  let where = previous.where;
  if ('relayed' in p || 'kernelUrl' in p || 'connectionFile' in p) {
    if (p.relayed === true) where = "the editor's kernel connection (relayed through the Jupyter extension)";
    else if (typeof p.kernelUrl === 'string' && p.kernelUrl !== '') where = redactTokens(p.kernelUrl);
    else if (typeof p.connectionFile === 'string' && p.connectionFile !== '') where = p.connectionFile;
    else where = undefined;
  }
  return {
    kernel,
    checking,
    lastLatencyMs,
    ...(message !== undefined ? { message } : {}),
    ...(where !== undefined ? { where } : {}),
  };
}

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing' | 'error';

/** How kernels reach the server: through the Jupyter extension, or the server's own discovery (and why). */
export type AttachMode = 'jupyter' | 'noJupyter' | 'declined';

export interface ClientState {
  server: ServerState;
  status: ServerStatus;
  attachMode: AttachMode;
  detail?: string;
  /** crane.connectionFile: the kernel for notebooks the editor gives none (instead of discovery). */
  connectionFile?: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  severity: 'ok' | 'warning' | 'error';
  /** Command run when the item is clicked. */
  command: string;
}

const FALLBACK_NOTE: Readonly<Record<AttachMode, string | undefined>> = {
  jupyter: undefined,
  noJupyter: 'Jupyter extension not available: the server discovers kernels itself.',
  declined: 'Kernel access declined: the server discovers kernels itself (run "crane: Attach kernel" to allow).',
};

export function formatLatency(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function renderStatus(state: ClientState): StatusView {
  const fallback = FALLBACK_NOTE[state.attachMode] && state.connectionFile
    ? `Kernel from crane.connectionFile: ${state.connectionFile}`
    : FALLBACK_NOTE[state.attachMode];
  const discovery = fallback && !state.connectionFile ? ' (discovery)' : '';
  const lines: string[] = [];
  if (state.detail) lines.push(state.detail);
  switch (state.server) {
    case 'starting':
      return { text: '$(loading~spin) crane', tooltip: 'crane: starting the server', severity: 'ok', command: 'crane.showLog' };
    case 'missing':
      return {
        text: '$(error) crane: not installed',
        tooltip: [state.detail ?? 'crane-lsp is not installed in the server interpreter', 'Click to restart after installing.'].join('\n'),
        severity: 'error',
        command: 'crane.restartServer',
      };
    case 'error':
    case 'stopped':
      return {
        text: `$(error) crane: ${state.server === 'error' ? 'server error' : 'stopped'}`,
        tooltip: [...lines, 'Click to restart the server.'].join('\n'),
        severity: 'error',
        command: 'crane.restartServer',
      };
    case 'running':
      break;
  }
  const s = state.status;
  let text: string;
  let severity: StatusView['severity'] = 'ok';
  if (s.checking) {
    text = '$(sync~spin) crane: checking';
  } else if (s.kernel === 'attached') {
    text = '$(check) crane';
  } else if (s.kernel === 'busy') {
    text = '$(watch) crane: kernel busy';
  } else if (s.kernel === 'none') {
    text = '$(debug-disconnect) crane: no kernel';
    severity = 'warning';
  } else {
    text = '$(circle-outline) crane';
  }
  if (s.lastLatencyMs !== null && !s.checking) text += ` ${formatLatency(s.lastLatencyMs)}`;
  text += discovery;
  const kernelLine = {
    attached: 'Kernel attached.',
    busy: 'Kernel busy: checks resume when it is idle.',
    none: 'No kernel attached: only checks that need no runtime state run.',
    unknown: 'Kernel state not reported yet.',
  }[s.kernel];
  lines.push(s.where && s.kernel !== 'none' ? `${kernelLine} Kernel: ${s.where}.` : kernelLine);
  if (s.lastLatencyMs !== null) lines.push(`Last check: ${formatLatency(s.lastLatencyMs)}.`);
  if (s.message) lines.push(s.message);
  if (fallback) lines.push(fallback);
  return { text, tooltip: lines.join('\n'), severity, command: 'crane.attachKernel' };
}
