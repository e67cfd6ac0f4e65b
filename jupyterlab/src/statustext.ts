/**
 * The one line the status item shows, from the connection, the notebook's kernel as JupyterLab
 * sees it and the last `crane/status` of the server. Pure, so every state has a tested wording.
 */

export type ConnectionState =
  | 'connecting'
  | 'ready'
  | 'no-jupyter-lsp'
  | 'no-server'
  | 'failed'
  | 'closed';

export interface IServerStatus {
  notebookUri?: string | null;
  kernel?: string; // none | attached | busy
  message?: string | null;
  checking?: boolean;
  lastLatencyMs?: number | null;
  predictions?: number;
}

export interface IStatusInput {
  connection: ConnectionState;
  detail?: string;
  notebook: boolean; // a notebook is the current widget
  kernelStatus?: string | null; // JupyterLab's Kernel.Status of that notebook, null without a kernel
  server?: IServerStatus | null;
}

export interface IStatusLine {
  text: string;
  title: string;
  level: 'ok' | 'busy' | 'warn' | 'off';
}

export function statusLine(s: IStatusInput): IStatusLine {
  switch (s.connection) {
    case 'no-jupyter-lsp':
      return warn('crane: jupyter-lsp is not installed', 'pip install "crane-lsp[jupyterlab]" and restart JupyterLab');
    case 'no-server':
      return warn('crane: jupyter-lsp does not offer crane-lsp', s.detail || 'is crane-lsp installed in the Jupyter server environment?');
    case 'failed':
      return warn('crane: the server failed to start', s.detail || 'see the Jupyter server log');
    case 'closed':
      return warn('crane: disconnected, reconnecting…', s.detail || 'the connection to crane-lsp closed');
    case 'connecting':
      return { text: 'crane: starting…', title: 'connecting to crane-lsp through jupyter-lsp', level: 'busy' };
    default:
      break;
  }
  if (!s.notebook) {
    return { text: 'crane: ready', title: 'open a notebook to check its cells', level: 'off' };
  }
  const k = s.kernelStatus;
  if (k === null || k === undefined) {
    return warn('crane: no kernel', 'start the notebook\'s kernel to check cells against its state');
  }
  if (k === 'restarting' || k === 'autorestarting') {
    return { text: 'crane: kernel restarting…', title: 'checks resume when the kernel is back', level: 'busy' };
  }
  if (k === 'dead') {
    return warn('crane: kernel dead', 'restart the kernel to check cells again');
  }
  if (k === 'starting' || k === 'unknown') {
    return { text: 'crane: kernel starting…', title: 'waiting for the kernel', level: 'busy' };
  }
  const srv = s.server;
  if (!srv) {
    return { text: 'crane: starting…', title: 'waiting for the first status of crane-lsp', level: 'busy' };
  }
  if (srv.kernel === 'none' || !srv.kernel) {
    if (srv.checking) {
      return { text: 'crane: checking…', title: 'checking cells (no kernel attached yet)', level: 'busy' };
    }
    return warn('crane: not attached', oneLine(srv.message || 'the kernel is not attached yet'));
  }
  if (srv.checking) {
    return { text: 'crane: ✓ attached · checking…', title: 'checking cells against the kernel', level: 'busy' };
  }
  const latency = typeof srv.lastLatencyMs === 'number' ? ` (last check ${Math.round(srv.lastLatencyMs)} ms)` : '';
  if (srv.kernel === 'busy') {
    return { text: 'crane: kernel busy', title: 'a cell is running; checks use what the kernel held' + latency, level: 'busy' };
  }
  return { text: 'crane: ✓ attached', title: 'crane reads this notebook\'s kernel' + latency, level: 'ok' };
}

function warn(text: string, title: string): IStatusLine {
  return { text, title, level: 'warn' };
}

function oneLine(text: string): string {
  const line = text.split(/\s+/).join(' ').trim();
  return line.length > 160 ? line.slice(0, 159) + '…' : line;
}
