/**
 * JSON-RPC to crane-lsp over jupyter-lsp's websocket (`/lsp/ws/crane-lsp`): jupyter-lsp frames the
 * text messages for the server's stdio and broadcasts the server's messages to every socket, so ids
 * are prefixed to tell our replies from another client's (jupyterlab-lsp may share the process).
 * Never throws into JupyterLab: failures become a connection state the status item shows.
 */

import type { ConnectionState } from './statustext';

export interface IRpcOptions {
  url: string;
  initialize: () => any;
  onNotification: (method: string, params: any) => void;
  onRequest: (method: string, params: any) => any;
  onState: (state: ConnectionState, detail?: string) => void;
  onReady: () => void;
}

interface IPending {
  resolve: (value: any) => void;
  reject: (reason: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

const PREFIX = 'crane-jl-';
const RETRY_MS = [1000, 2000, 5000, 10000, 30000];
const INITIALIZE_TIMEOUT_MS = 30000;

export class RpcClient {
  state: ConnectionState = 'connecting';
  private socket: WebSocket | null = null;
  private nextId = 1;
  private pending = new Map<string, IPending>();
  private ready = false;
  private failures = 0;
  private disposed = false;
  private openedAt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(private options: IRpcOptions) {}

  get isReady(): boolean {
    return this.ready;
  }

  connect(): void {
    if (this.disposed) {
      return;
    }
    this.setState('connecting');
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.options.url);
    } catch (err) {
      this.scheduleRetry(String(err));
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      this.openedAt = Date.now();
      void this.handshake();
    };
    socket.onmessage = event => this.receive(event.data);
    socket.onerror = () => undefined; // onclose follows and says what to do
    socket.onclose = event => {
      if (this.socket !== socket) {
        return;
      }
      this.socket = null;
      this.ready = false;
      this.rejectAll('connection closed');
      if (this.disposed) {
        return;
      }
      const quick = this.openedAt && Date.now() - this.openedAt < 3000;
      this.scheduleRetry(
        quick || !this.openedAt
          ? `crane-lsp closed the connection (code ${event.code})`
          : 'the connection to crane-lsp closed'
      );
    };
  }

  dispose(): void {
    this.disposed = true;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
    }
    this.rejectAll('disposed');
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      try {
        socket.close();
      } catch {
        // already closed
      }
    }
  }

  notify(method: string, params: any): void {
    if (!this.ready && method !== 'initialized') {
      return;
    }
    this.send({ jsonrpc: '2.0', method, params });
  }

  request<T = any>(method: string, params: any, timeoutMs = 30000): Promise<T> {
    if (!this.socket || (!this.ready && method !== 'initialize')) {
      return Promise.reject(new Error('crane-lsp is not connected'));
    }
    const id = PREFIX + this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} timed out`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  private async handshake(): Promise<void> {
    try {
      await this.request('initialize', this.options.initialize(), INITIALIZE_TIMEOUT_MS);
    } catch (err) {
      if (!this.socket) {
        return;
      }
      if (String(err).includes('timed out')) {
        // jupyter-lsp accepted the socket but the process never answered: it did not start
        this.failures += 1;
        this.setState('failed', 'crane-lsp did not answer (see the Jupyter server log)');
        const socket = this.socket;
        this.socket = null;
        try {
          socket.close();
        } catch {
          // already closed
        }
        this.retryTimer = setTimeout(() => this.connect(), RETRY_MS[RETRY_MS.length - 1]);
        return;
      }
      // an error reply: a second client of a server another client initialised; the session works
    }
    this.ready = true;
    this.failures = 0;
    this.send({ jsonrpc: '2.0', method: 'initialized', params: {} });
    this.setState('ready');
    try {
      this.options.onReady();
    } catch (err) {
      console.warn('crane: reopening notebooks failed', err);
    }
  }

  private scheduleRetry(detail: string): void {
    const delay = RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)];
    this.failures += 1;
    this.setState(this.failures >= 3 && !this.openedAt ? 'failed' : 'closed', detail);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  private setState(state: ConnectionState, detail?: string): void {
    this.state = state;
    this.options.onState(state, detail);
  }

  private send(message: any): void {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      return;
    }
    try {
      socket.send(JSON.stringify(message));
    } catch {
      // the close handler reconnects
    }
  }

  private receive(raw: any): void {
    let message: any;
    try {
      message = JSON.parse(String(raw));
    } catch {
      return;
    }
    if (!message || typeof message !== 'object') {
      return;
    }
    const hasId = message.id !== undefined && message.id !== null;
    if (hasId && typeof message.method !== 'string') {
      const waiting = this.pending.get(String(message.id));
      if (!waiting) {
        return; // another client's reply
      }
      this.pending.delete(String(message.id));
      clearTimeout(waiting.timer);
      if (message.error) {
        waiting.reject(new Error(message.error.message || 'request failed'));
      } else {
        waiting.resolve(message.result);
      }
      return;
    }
    if (hasId) {
      let result: any = null;
      let error: any = undefined;
      try {
        result = this.options.onRequest(message.method, message.params);
      } catch (err) {
        error = { code: -32601, message: String(err) };
      }
      this.send(error ? { jsonrpc: '2.0', id: message.id, error } : { jsonrpc: '2.0', id: message.id, result });
      return;
    }
    try {
      this.options.onNotification(message.method, message.params);
    } catch (err) {
      console.warn('crane: handling', message.method, 'failed', err);
    }
  }

  private rejectAll(why: string): void {
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(why));
    }
    this.pending.clear();
  }
}
