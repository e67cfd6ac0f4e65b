import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIME_STDOUT } from '../src/connectionFile';
import {
  ALLOW,
  CONSENT_KEY,
  Controller,
  DOCUMENT_SELECTOR,
  INSTALL,
  PICK_INTERPRETER,
  expandHome,
  promptMarkdown,
  type ActiveCell,
  type ClientSpec,
  type Host,
  type LspClient,
} from '../src/controller';
import type { JupyterLike, KernelLike } from '../src/kernelAttach';
import { RELAY_REQUEST, RELAY_STATUS_REQUEST } from '../src/relay';
import type { InputOptions, PickFileOptions } from '../src/pickers';
import type { RunResult } from '../src/serverCommand';
import type { StatusView } from '../src/status';

class FakeClient implements LspClient {
  running = false;
  stopped = 0;
  notifications: { method: string; params: unknown }[] = [];
  requests: { method: string; params: unknown }[] = [];
  handlers = new Map<string, (params: unknown) => void>();
  requestResult: unknown = null;
  commands = ['crane.recheckCell', 'crane.attachKernel', 'crane.showPrompt', 'crane.ignoreFinding', 'crane.undoLastCell', 'crane.previewCell'];
  constructor(
    readonly spec: ClientSpec,
    private readonly failStart = false,
  ) {}
  async start() {
    if (this.failStart) throw new Error('spawn crane-lsp ENOENT');
    this.running = true;
  }
  async stop() {
    this.running = false;
    this.stopped += 1;
  }
  isRunning() {
    return this.running;
  }
  async sendNotification(method: string, params: unknown) {
    this.notifications.push({ method, params });
  }
  async sendRequest(method: string, params: unknown) {
    this.requests.push({ method, params });
    return this.requestResult;
  }
  onNotification(method: string, handler: (params: unknown) => void) {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }
  requestHandlers = new Map<string, (params: unknown) => Promise<unknown>>();
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
  serverCommands() {
    return this.commands;
  }
  /** What vscode-languageclient's registered command does: middleware, then workspace/executeCommand. */
  invoke(command: string, args: unknown[]) {
    return this.spec.executeCommand(command, args, (c, a) => this.sendRequest('workspace/executeCommand', { command: c, arguments: a }));
  }
}

class FakeHost implements Host {
  configValues: Record<string, unknown> = {};
  secrets = new Map<string, string>();
  state = new Map<string, unknown>();
  clients: FakeClient[] = [];
  statuses: StatusView[] = [];
  logs: string[] = [];
  messages: { level: string; text: string; actions: string[] }[] = [];
  answers: (string | undefined)[] = [];
  terminal: string[] = [];
  markdown: string[] = [];
  runs: string[][] = [];
  runResult: RunResult = { code: 0, stdout: '0.1.0', stderr: '' };
  env: Record<string, string | undefined> = { PATH: '/usr/bin' };
  interpreterPath: string[] | undefined = ['/venv/bin/python'];
  cell: ActiveCell | undefined = { uri: 'vscode-notebook-cell:/nb.ipynb#W1sZmlsZQ%3D%3D' };
  fallbacks = new Map<string, (args: unknown[]) => Promise<unknown>>();
  notebookUri: string | undefined = 'file:///nb.ipynb';
  notebooks: string[] = [];
  jupyterApi: JupyterLike | undefined = undefined;
  failStart = false;
  serverCommandList: string[] | undefined;
  documentUri: string | undefined = 'file:///nb.ipynb';
  picks: (string | undefined)[] = [];
  dialogs: PickFileOptions[] = [];
  updates: [string, unknown][] = [];
  executed: string[] = [];
  pythonExtension = false;

  activeDocumentUri() {
    return this.documentUri;
  }
  async pickFile(options: PickFileOptions) {
    this.dialogs.push(options);
    return this.picks.shift();
  }
  async updateConfig(key: string, value: unknown) {
    this.updates.push([key, value]);
    this.configValues[key] = value;
  }
  async executeCommand(id: string) {
    this.executed.push(id);
  }
  hasPythonExtension() {
    return this.pythonExtension;
  }
  platform(): NodeJS.Platform {
    return 'linux';
  }
  homeDir() {
    return '/home/ada';
  }

  config(key: string) {
    return this.configValues[key];
  }
  async interpreter() {
    return this.interpreterPath;
  }
  run = async (command: string, args: string[]) => {
    this.runs.push([command, ...args]);
    return this.runResult;
  };
  processEnv() {
    return { ...this.env };
  }
  async getSecret(id: string) {
    return this.secrets.get(id);
  }
  async storeSecret(id: string, value: string) {
    this.secrets.set(id, value);
  }
  async deleteSecret(id: string) {
    this.secrets.delete(id);
  }
  getState(key: string) {
    return this.state.get(key);
  }
  async setState(key: string, value: unknown) {
    this.state.set(key, value);
  }
  /** What every new client's server answers to requests. */
  clientResult: unknown = null;
  createClient(spec: ClientSpec) {
    const client = new FakeClient(spec, this.failStart);
    client.requestResult = this.clientResult;
    if (this.serverCommandList) client.commands = this.serverCommandList;
    this.clients.push(client);
    return client;
  }
  setStatus(view: StatusView) {
    this.statuses.push(view);
  }
  log(line: string) {
    this.logs.push(line);
  }
  private message(level: string) {
    return async (text: string, ...actions: string[]) => {
      this.messages.push({ level, text, actions });
      return this.answers.shift();
    };
  }
  showError = this.message('error');
  showWarning = this.message('warning');
  showInfo = this.message('info');
  async inputSecret() {
    return this.answers.shift();
  }
  inputs: InputOptions[] = [];
  typed: (string | undefined)[] = [];
  async inputText(options: InputOptions) {
    this.inputs.push(options);
    return this.typed.shift();
  }
  /** Connection files that are not on this machine (a remote Jupyter server's kernels). */
  missing = new Set<string>();
  async fileExists(file: string) {
    return !this.missing.has(file);
  }
  runInTerminal(command: string) {
    this.terminal.push(command);
  }
  async copyToClipboard() {}
  async openMarkdown(text: string) {
    this.markdown.push(text);
  }
  activeCell() {
    return this.cell;
  }
  setFallbackCommands(ids: readonly string[], run: (command: string, args: unknown[]) => Promise<unknown>) {
    this.fallbacks = new Map(ids.map((id) => [id, (args: unknown[]) => run(id, args)]));
  }
  /** Runs a palette command the way VS Code would: the server's registration if present, else the stand-in. */
  invoke(id: string, ...args: unknown[]) {
    const client = this.clients.at(-1);
    if (client?.running && client.commands.includes(id)) {
      assert.equal(this.fallbacks.has(id), false, `${id} registered twice`);
      return client.invoke(id, args);
    }
    const fallback = this.fallbacks.get(id);
    assert.ok(fallback, `command ${id} not registered`);
    return fallback(args);
  }
  activeNotebookUri() {
    return this.notebookUri;
  }
  openNotebookUris() {
    return this.notebooks;
  }
  async jupyter() {
    return this.jupyterApi;
  }
  createCancel() {
    return { token: {}, cancel: () => undefined, dispose: () => undefined };
  }
  get lastStatus() {
    return this.statuses.at(-1) as StatusView;
  }
  get client() {
    return this.clients.at(-1) as FakeClient;
  }
}

const tick = () => new Promise((r) => setTimeout(r, 10));

function kernelFor(file: string): KernelLike {
  return {
    status: 'idle',
    async *executeCode() {
      yield { items: [{ mime: MIME_STDOUT, data: `{"crane_connection_file": "${file}"}\n` }] };
    },
  };
}

describe('controller: starting the server', () => {
  it('starts the server from the active interpreter with the settings as initializationOptions', async () => {
    const host = new FakeHost();
    host.configValues = { provider: 'none', votes: 3, model: '', debounce: 200 };
    assert.equal(await new Controller(host).start(), true);
    assert.deepEqual(host.runs[0].slice(0, 2), ['/venv/bin/python', '-c']);
    const spec = host.client.spec;
    assert.equal(spec.command, '/venv/bin/python');
    assert.deepEqual(spec.args, ['-m', 'crane_lsp.cli', 'serve']);
    assert.deepEqual(spec.initializationOptions, { provider: 'none', votes: 3, debounce: 200 });
    assert.equal(spec.documentSelector, DOCUMENT_SELECTOR);
    assert.deepEqual(spec.configuration('crane'), { provider: 'none', votes: 3, debounce: 200 });
    assert.equal(host.lastStatus.text, '$(circle-outline) crane');
  });

  it('never starts silently without the package: says so and offers the install command', async () => {
    const host = new FakeHost();
    host.runResult = { code: 1, stdout: '', stderr: "ModuleNotFoundError: No module named 'crane_lsp'" };
    host.answers = [INSTALL];
    assert.equal(await new Controller(host).start(), false);
    await tick();
    assert.equal(host.clients.length, 0);
    assert.equal(host.messages[0].level, 'error');
    assert.match(host.messages[0].text, /not installed in \/venv\/bin\/python/);
    assert.deepEqual(host.messages[0].actions, [INSTALL, 'Copy command', PICK_INTERPRETER]);
    assert.deepEqual(host.terminal, ['/venv/bin/python -m pip install crane-lsp']);
    assert.equal(host.lastStatus.text, '$(error) crane: not installed');
  });

  it('"Pick another interpreter…" writes crane.server.pythonPath without the Python extension, and restarts on it', async () => {
    const host = new FakeHost();
    host.interpreterPath = undefined;
    host.runResult = { code: 1, stdout: '', stderr: "ModuleNotFoundError: No module named 'crane_lsp'" };
    host.answers = [PICK_INTERPRETER];
    host.picks = ['/opt/envs/ds/bin/python'];
    const controller = new Controller(host);
    assert.equal(await controller.start(), false);
    await tick();
    assert.match(host.messages[0].text, /not installed in python3 \(from PATH\)\. Install it with: python3 -m pip install crane-lsp/);
    assert.equal(host.dialogs[0].defaultPath, undefined, 'a bare command has no folder to open');
    assert.deepEqual(host.updates, [['server.pythonPath', '/opt/envs/ds/bin/python']]);
    host.runResult = { code: 0, stdout: '0.1.0', stderr: '' };
    await controller.onConfigurationChanged((section) => ['crane', 'crane.server', 'crane.server.pythonPath'].includes(section));
    assert.equal(host.client.spec.command, '/opt/envs/ds/bin/python');
  });

  it("uses the Python extension's picker when the interpreter came from it, and offers a pick for a broken one", async () => {
    const host = new FakeHost();
    host.pythonExtension = true;
    host.runResult = { code: 1, stdout: '', stderr: "ModuleNotFoundError: No module named 'crane_lsp'" };
    host.answers = [PICK_INTERPRETER];
    const controller = new Controller(host);
    await controller.start();
    await tick();
    assert.deepEqual(host.executed, ['python.setInterpreter']);
    assert.ok(controller.usesInterpreterFromPythonExtension());

    const pinned = new FakeHost();
    pinned.pythonExtension = true;
    pinned.configValues = { 'server.pythonPath': '/opt/old/bin/python' };
    pinned.runResult = { code: null, stdout: '', stderr: '', spawnError: 'ENOENT' };
    pinned.answers = [PICK_INTERPRETER];
    await new Controller(pinned).start();
    await tick();
    assert.deepEqual(pinned.messages[0].actions, [PICK_INTERPRETER, 'Show log']);
    assert.deepEqual(pinned.executed, [], 'the Python extension cannot override the setting');
    assert.equal(pinned.dialogs[0].defaultPath, '/opt/old/bin');
  });

  it('expands ~ in crane.connectionFile', () => {
    assert.equal(expandHome('~/k.json', '/home/ada'), '/home/ada/k.json');
    assert.equal(expandHome('/abs/~k.json', '/home/ada'), '/abs/~k.json');
    assert.equal(expandHome('~other/k.json', '/home/ada'), '~other/k.json');
  });

  it('reports a server that fails to start', async () => {
    const host = new FakeHost();
    host.configValues = { 'server.command': ['crane-lsp', 'serve'] };
    host.failStart = true;
    assert.equal(await new Controller(host).start(), false);
    assert.deepEqual(host.runs, [], 'a custom command is not import-checked');
    assert.match(host.messages[0].text, /did not start: spawn crane-lsp ENOENT/);
    assert.equal(host.lastStatus.severity, 'error');
  });

  it('hands the stored API key over in the environment only, never in options or logs', async () => {
    const host = new FakeHost();
    host.configValues = { provider: 'openai-compatible', apiKeyEnv: 'LOCAL_LLM_KEY', baseUrl: 'http://localhost:8000/v1' };
    host.secrets.set('crane.apiKey.LOCAL_LLM_KEY', 'sk-very-secret');
    await new Controller(host).start();
    const spec = host.client.spec;
    assert.equal(spec.env.LOCAL_LLM_KEY, 'sk-very-secret');
    assert.equal(spec.env.PATH, '/usr/bin');
    assert.doesNotMatch(JSON.stringify(spec.initializationOptions), /sk-very-secret/);
    assert.doesNotMatch(host.logs.join('\n'), /sk-very-secret/);
    assert.match(host.logs.join('\n'), /API key passed in LOCAL_LLM_KEY/);
  });

  it('"Set API key" stores the key in the secret store and restarts the server with it', async () => {
    const host = new FakeHost();
    host.configValues = { provider: 'gemini' };
    const controller = new Controller(host);
    await controller.start();
    assert.equal(host.client.spec.env.GEMINI_API_KEY, undefined);
    host.answers = ['  AIza-new-key '];
    await controller.setApiKey();
    assert.equal(host.secrets.get('crane.apiKey.GEMINI_API_KEY'), 'AIza-new-key');
    assert.equal(host.clients.length, 2);
    assert.equal(host.clients[0].stopped, 1);
    assert.equal(host.client.spec.env.GEMINI_API_KEY, 'AIza-new-key');
    host.answers = [''];
    await controller.setApiKey();
    assert.equal(host.secrets.has('crane.apiKey.GEMINI_API_KEY'), false);
  });
});

describe('controller: settings changes', () => {
  it('forwards ordinary changes as workspace/didChangeConfiguration', async () => {
    const host = new FakeHost();
    host.configValues = { votes: 1 };
    const controller = new Controller(host);
    await controller.start();
    host.configValues = { votes: 5, privacy: true };
    await controller.onConfigurationChanged((s) => s === 'crane' || s === 'crane.votes' || s === 'crane.privacy');
    assert.deepEqual(host.client.notifications, [
      { method: 'workspace/didChangeConfiguration', params: { settings: { crane: { votes: 5, privacy: true } } } },
    ]);
    assert.equal(host.clients.length, 1);
  });

  it('restarts the server when the server command, provider or key variable changes', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    await controller.start();
    host.configValues = { 'server.pythonPath': '/other/python' };
    await controller.onConfigurationChanged((s) => s === 'crane' || s.startsWith('crane.server'));
    assert.equal(host.clients.length, 2);
    assert.equal(host.client.spec.command, '/other/python');
    await controller.onConfigurationChanged((s) => s === 'python');
    assert.equal(host.clients.length, 2, 'other sections are ignored');
  });

  it('warns about invalid settings', async () => {
    const host = new FakeHost();
    host.configValues = { votes: 100 };
    await new Controller(host).start();
    assert.ok(host.messages.some((m) => m.level === 'warning' && /crane\.votes must be an integer/.test(m.text)));
    assert.deepEqual(host.client.spec.initializationOptions, {});
  });
});

describe('controller: status and commands', () => {
  it('shows crane/status in the status bar', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    const handler = host.client.handlers.get('crane/status');
    assert.ok(handler);
    handler({ kernel: 'attached', checking: false, lastLatencyMs: 48 });
    assert.equal(host.lastStatus.text, '$(check) crane 48 ms');
    handler({ checking: true });
    assert.equal(host.lastStatus.text, '$(sync~spin) crane: checking');
    handler({ kernel: 'none', checking: false, lastLatencyMs: null, message: 'kernel died' });
    assert.match(host.lastStatus.tooltip, /kernel died/);
  });

  it('marks the status bar when the server process stops by itself', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    host.client.spec.onStopped();
    assert.equal(host.lastStatus.text, '$(error) crane: server error');
  });

  it('re-checks the active cell through workspace/executeCommand', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    await host.invoke('crane.recheckCell');
    assert.deepEqual(host.client.requests, [
      { method: 'workspace/executeCommand', params: { command: 'crane.recheckCell', arguments: [host.cell?.uri] } },
    ]);
  });

  it('asks the server for a cell\'s verdict on the editor\'s current text (none while it is stopped)', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    assert.equal(await controller.cellVerdict('vscode-notebook-cell:/nb.ipynb#c2', 'x = 1'), undefined);
    await controller.start();
    host.client.requestResult = { found: true, blockRun: false };
    assert.deepEqual(await controller.cellVerdict('vscode-notebook-cell:/nb.ipynb#c2', 'x = 1'), { found: true, blockRun: false });
    const cell = 'vscode-notebook-cell:/nb.ipynb#c2';
    assert.deepEqual(host.client.requests, [
      { method: 'workspace/executeCommand', params: { command: 'crane.cellVerdict', arguments: [{ uri: cell, cell, text: 'x = 1' }] } },
    ]);
  });

  it('says when the server could not re-check the cell', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    host.client.requestResult = { checked: false, error: 'no such cell' };
    const result = await host.invoke('crane.recheckCell');
    assert.deepEqual(result, { checked: false, error: 'no such cell' });
    assert.equal(host.messages.at(-1)?.text, 'crane: could not re-check the cell: no such cell');
  });

  it('passes the cursor line for a `# %%` file, and a code action\'s own arguments unchanged', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    host.cell = { uri: 'file:///analysis.py', line: 14 };
    await host.invoke('crane.recheckCell');
    await host.invoke('crane.recheckCell', 'vscode-notebook-cell:/nb.ipynb#c3', 'cell-key-3');
    assert.deepEqual(
      host.client.requests.map((r) => (r.params as { arguments: unknown[] }).arguments),
      [[{ uri: 'file:///analysis.py', line: 14 }], ['vscode-notebook-cell:/nb.ipynb#c3', 'cell-key-3']],
    );
  });

  it('shows the last prompt in a markdown document', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    host.client.requestResult = { prompt: 'Will this cell crash?', answer: { crash: true, line: 3 } };
    await host.invoke('crane.showPrompt', 'vscode-notebook-cell:/nb.ipynb#cell2');
    assert.deepEqual(host.client.requests[0].params, { command: 'crane.showPrompt', arguments: ['vscode-notebook-cell:/nb.ipynb#cell2'] });
    assert.match(host.markdown[0], /## Prompt\n\n````text\nWill this cell crash\?/);
    assert.match(host.markdown[0], /"crash": true/);
  });

  it('registers stand-ins only while no server provides the commands', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    await controller.start();
    assert.deepEqual([...host.fallbacks.keys()], []);
    host.serverCommandList = ['crane.recheckCell'];
    await controller.restart();
    assert.deepEqual([...host.fallbacks.keys()].sort(), ['crane.attachKernel', 'crane.previewCell', 'crane.showPrompt', 'crane.undoLastCell']);
    await controller.stop();
    assert.deepEqual([...host.fallbacks.keys()].sort(), ['crane.attachKernel', 'crane.previewCell', 'crane.recheckCell', 'crane.showPrompt', 'crane.undoLastCell']);
  });

  it('passes an explicit {notebookUri, connectionFile} straight to the server', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    await host.invoke('crane.attachKernel', { notebookUri: 'file:///x.ipynb', connectionFile: '/k.json' });
    assert.deepEqual(host.client.requests[0].params, {
      command: 'crane.attachKernel',
      arguments: [{ notebookUri: 'file:///x.ipynb', connectionFile: '/k.json' }],
    });
  });

  it('formats prompt results of every shape', () => {
    assert.match(promptMarkdown(null, 'c'), /No LLM request has been made/);
    assert.equal(promptMarkdown('# already markdown', 'c'), '# already markdown');
    assert.match(promptMarkdown({ other: 1 }, 'c'), /"other": 1/);
  });

  it('attaches open notebooks once the server runs, after asking for consent', async () => {
    const host = new FakeHost();
    host.notebooks = ['file:///nb.ipynb'];
    host.jupyterApi = { getKernel: async () => kernelFor('/run/kernel-5.json') };
    host.answers = [ALLOW];
    await new Controller(host).start();
    await tick();
    assert.equal(host.state.get(CONSENT_KEY), 'allow');
    assert.deepEqual(host.client.notifications, [
      { method: 'crane/attachKernel', params: { notebookUri: 'file:///nb.ipynb', connectionFile: '/run/kernel-5.json' } },
    ]);
  });

  it('resends attachments to a restarted server', async () => {
    const host = new FakeHost();
    host.state.set(CONSENT_KEY, 'allow');
    host.jupyterApi = { getKernel: async () => kernelFor('/run/kernel-5.json') };
    const controller = new Controller(host);
    await controller.start();
    await host.invoke('crane.attachKernel');
    assert.match(host.messages.at(-1)?.text ?? '', /kernel attached \(\/run\/kernel-5\.json\)/);
    await controller.restart();
    assert.deepEqual(host.client.notifications, [
      { method: 'crane/attachKernel', params: { notebookUri: 'file:///nb.ipynb', connectionFile: '/run/kernel-5.json' } },
    ]);
  });

  it('keeps a kernel attached by hand: re-sent after a restart, not replaced by the Jupyter extension', async () => {
    const host = new FakeHost();
    host.state.set(CONSENT_KEY, 'allow');
    host.jupyterApi = { getKernel: async () => kernelFor('/run/kernel-jupyter.json') };
    const controller = new Controller(host);
    await controller.start();
    host.client.requestResult = { attached: true, error: null };
    host.picks = ['/remote/kernel-7.json'];
    const outcome = await controller.attachKernelFromFile();
    assert.deepEqual(outcome, { kind: 'attached', notebookUri: 'file:///nb.ipynb', connectionFile: '/remote/kernel-7.json' });
    assert.equal(host.dialogs[0].defaultPath, '/home/ada/.local/share/jupyter/runtime');
    assert.deepEqual(host.client.requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'crane.attachKernel', arguments: [{ notebookUri: 'file:///nb.ipynb', connectionFile: '/remote/kernel-7.json' }] },
    });
    controller.onCellExecuted('file:///nb.ipynb');
    controller.onNotebookOpened('file:///nb.ipynb');
    await tick();
    assert.deepEqual(host.client.notifications, [], 'the Jupyter kernel did not replace the chosen one');
    await controller.restart();
    assert.deepEqual(host.client.notifications, [
      { method: 'crane/attachKernel', params: { notebookUri: 'file:///nb.ipynb', connectionFile: '/remote/kernel-7.json' } },
    ]);
    await host.invoke('crane.attachKernel');
    assert.deepEqual(host.client.notifications.at(-1), {
      method: 'crane/attachKernel',
      params: { notebookUri: 'file:///nb.ipynb', connectionFile: '/run/kernel-jupyter.json' },
    }, '"Attach kernel" from the palette takes the Jupyter kernel again');
  });

  it('attach from a file: says why when there is no target, no server, or the server refuses', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    host.documentUri = undefined;
    assert.deepEqual(await controller.attachKernelFromFile(), { kind: 'noTarget' });
    assert.match(host.messages.at(-1)?.text ?? '', /open a notebook or a `# %%` Python file first/);
    host.documentUri = 'file:///analysis.py';
    host.picks = [undefined];
    assert.deepEqual(await controller.attachKernelFromFile(), { kind: 'cancelled' });
    host.picks = ['/k.json'];
    assert.deepEqual(await controller.attachKernelFromFile(), { kind: 'notRunning' });
    await controller.start();
    host.client.requestResult = { attached: false, error: 'no kernel answers at /k.json' };
    host.picks = ['/k.json'];
    assert.deepEqual(await controller.attachKernelFromFile(), { kind: 'failed', reason: 'no kernel answers at /k.json' });
    assert.match(host.messages.at(-1)?.text ?? '', /could not attach \/k\.json: no kernel answers/);
  });

  it('says "discovery" in the status bar without the Jupyter extension', async () => {
    const host = new FakeHost();
    await new Controller(host).start();
    await host.invoke('crane.attachKernel');
    assert.match(host.lastStatus.text, /\(discovery\)/);
    assert.match(host.messages.at(-1)?.text ?? '', /Jupyter extension is not available/);
  });

  it('tells the user when a command needs a cell or a running server', async () => {
    const host = new FakeHost();
    host.runResult = { code: 1, stdout: '', stderr: "ModuleNotFoundError: No module named 'crane_lsp'" };
    host.cell = undefined;
    await new Controller(host).start();
    await host.invoke('crane.recheckCell');
    assert.match(host.messages.at(-1)?.text ?? '', /put the cursor in a notebook cell/);
    await host.invoke('crane.showPrompt', 'vscode-notebook-cell:/x#1');
    assert.match(host.messages.at(-1)?.text ?? '', /server is not running/);
    assert.deepEqual(host.markdown, []);
  });
});

describe('controller: Jupyter server token, kernel URLs and the relay', () => {
  const TOKEN = 'f00dfeedcafe1234';

  it('hands the stored Jupyter token to the server in JUPYTER_TOKEN only, and keeps it out of every log line', async () => {
    const host = new FakeHost();
    host.secrets.set('crane.jupyterToken', TOKEN);
    const controller = new Controller(host);
    await controller.start();
    const spec = host.client.spec;
    assert.equal(spec.env.JUPYTER_TOKEN, TOKEN);
    assert.doesNotMatch(JSON.stringify(spec.initializationOptions), new RegExp(TOKEN));
    assert.doesNotMatch(JSON.stringify(spec.configuration('crane')), new RegExp(TOKEN));
    assert.ok(host.logs.some((l) => /Jupyter server token passed in JUPYTER_TOKEN/.test(l)));
    // whatever reaches the log (a server error echoed, a URL): the token is not there
    await host.invoke('crane.attachKernel', { notebookUri: 'file:///nb.ipynb', connectionFile: `/k-${TOKEN}.json` });
    (controller as unknown as { log(line: string): void }).log(`GET http://h:8888/api/kernels?token=${TOKEN} and ${TOKEN}`);
    (controller as unknown as { log(line: string): void }).log('Authorization: token 0ther-t0ken-9');
    assert.doesNotMatch(host.logs.join('\n'), new RegExp(TOKEN));
    assert.doesNotMatch(host.logs.join('\n'), /0ther-t0ken-9/);
  });

  it('"Set Jupyter server token" stores it in the secret store and restarts the server with it; empty removes it', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    await controller.start();
    host.answers = [` ${TOKEN} `];
    await controller.setJupyterToken();
    assert.equal(host.secrets.get('crane.jupyterToken'), TOKEN);
    assert.equal(host.clients.length, 2, 'restarted');
    assert.equal(host.client.spec.env.JUPYTER_TOKEN, TOKEN);
    assert.deepEqual(host.updates, [], 'never written to settings');
    host.answers = [''];
    await controller.setJupyterToken();
    assert.equal(host.secrets.has('crane.jupyterToken'), false);
    assert.equal(host.client.spec.env.JUPYTER_TOKEN, undefined);
    assert.doesNotMatch(host.logs.join('\n'), new RegExp(TOKEN));
  });

  it('takes a kernel URL in crane.connectionFile: sent without its token, never expanded as a path', async () => {
    const host = new FakeHost();
    host.configValues = { connectionFile: 'http://10.0.0.5:8888/api/kernels/abc' };
    await new Controller(host).start();
    assert.equal(host.client.spec.initializationOptions.connectionFile, 'http://10.0.0.5:8888/api/kernels/abc');
    const leaky = new FakeHost();
    leaky.configValues = { connectionFile: `http://10.0.0.5:8888/api/kernels/abc?token=${TOKEN}` };
    await new Controller(leaky).start();
    assert.equal(leaky.client.spec.initializationOptions.connectionFile, 'http://10.0.0.5:8888/api/kernels/abc');
    assert.match(leaky.messages.map((m) => m.text).join('\n'), /holds a token.*Set Jupyter server token/);
    assert.doesNotMatch(JSON.stringify([leaky.logs, leaky.messages, leaky.client.spec.initializationOptions]), new RegExp(TOKEN));
    const wrong = new FakeHost();
    wrong.configValues = { connectionFile: 'http://10.0.0.5:8888/lab' };
    await new Controller(wrong).start();
    assert.equal(wrong.client.spec.initializationOptions.connectionFile, undefined);
    assert.match(wrong.messages.map((m) => m.text).join('\n'), /does not name a kernel/);
  });

  it('warns about a token put in settings (crane.jupyterToken), without using or showing it', async () => {
    const host = new FakeHost();
    host.configValues = { jupyterToken: TOKEN };
    await new Controller(host).start();
    assert.equal(host.client.spec.env.JUPYTER_TOKEN, undefined);
    assert.match(host.messages.map((m) => m.text).join('\n'), /settings files are not secret/);
    assert.doesNotMatch(JSON.stringify([host.logs, host.messages, host.client.spec.initializationOptions]), new RegExp(TOKEN));
  });

  it('"Attach kernel by URL…": the token typed in the URL goes to the secret store, the server gets the URL without it', async () => {
    const host = new FakeHost();
    host.env.JUPYTER_TOKEN = undefined;
    const controller = new Controller(host);
    await controller.start();
    host.typed = [`http://10.0.0.5:8888/api/kernels/abc?token=${TOKEN}`];
    host.clientResult = { attached: true, error: null };
    const outcome = await controller.attachKernelFromUrl();
    const validate = host.inputs[0].validate;
    assert.ok(validate);
    assert.equal(validate('http://h:1/api/kernels/abc'), undefined);
    assert.match(validate('http://h:1/tree') ?? '', /does not name a kernel/);
    assert.deepEqual(outcome, { kind: 'attached', notebookUri: 'file:///nb.ipynb', kernelUrl: 'http://10.0.0.5:8888/api/kernels/abc' });
    assert.equal(host.secrets.get('crane.jupyterToken'), TOKEN);
    assert.equal(host.clients.length, 2, 'restarted for the new token');
    assert.equal(host.client.spec.env.JUPYTER_TOKEN, TOKEN);
    assert.deepEqual(host.client.requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'crane.attachKernel', arguments: [{ notebookUri: 'file:///nb.ipynb', kernelUrl: 'http://10.0.0.5:8888/api/kernels/abc' }] },
    });
    await controller.restart();
    assert.deepEqual(host.client.notifications.at(-1), {
      method: 'crane/attachKernel',
      params: { notebookUri: 'file:///nb.ipynb', kernelUrl: 'http://10.0.0.5:8888/api/kernels/abc' },
    }, 're-sent after a restart');
    const everything = JSON.stringify([host.logs, host.messages, host.clients.map((c) => [c.requests, c.notifications, c.spec.initializationOptions])]);
    assert.doesNotMatch(everything, new RegExp(TOKEN));
  });

  it('"Attach kernel by URL…": a URL without a token attaches at once; a refusal unpins it and says why', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    await controller.start();
    host.client.requestResult = { attached: false, error: 'the Jupyter server at http://10.0.0.5:8888 refused the token (403)' };
    host.typed = ['http://10.0.0.5:8888/api/kernels/abc'];
    const outcome = await controller.attachKernelFromUrl();
    assert.equal(outcome.kind, 'failed');
    assert.equal(host.clients.length, 1, 'no restart without a new token');
    assert.match(host.messages.at(-1)?.text ?? '', /refused the token \(403\)/);
    assert.equal(controller.attacher.targetOf('file:///nb.ipynb'), undefined);
    host.typed = [undefined];
    assert.deepEqual(await controller.attachKernelFromUrl(), { kind: 'cancelled' });
  });

  it('"Attach kernel" without the Jupyter extension offers a URL typed in an input box (or a connection file)', async () => {
    const host = new FakeHost();
    const controller = new Controller(host);
    await controller.start();
    host.clientResult = { attached: true, error: null };
    host.client.requestResult = { attached: true, error: null };
    host.answers = ['Kernel URL…'];
    host.typed = ['https://hub.example.org/user/ada/api/kernels/k-1'];
    await host.invoke('crane.attachKernel');
    await tick();
    assert.deepEqual(host.messages[0].actions, ['Kernel URL…', 'Connection file…']);
    assert.deepEqual(host.client.requests.at(-1)?.params, {
      command: 'crane.attachKernel',
      arguments: [{ notebookUri: 'file:///nb.ipynb', kernelUrl: 'https://hub.example.org/user/ada/api/kernels/k-1' }],
    });
    assert.deepEqual(controller.attacher.targetOf('file:///nb.ipynb'), { kernelUrl: 'https://hub.example.org/user/ada/api/kernels/k-1' });
    // positional (notebookUri, URL), as a keybinding's args would give it: the same, without the token
    await host.invoke('crane.attachKernel', 'file:///nb.ipynb', 'http://h:8888/api/kernels/abc?token=zzzz9999');
    assert.deepEqual(host.client.requests.at(-1)?.params, {
      command: 'crane.attachKernel',
      arguments: [{ notebookUri: 'file:///nb.ipynb', kernelUrl: 'http://h:8888/api/kernels/abc' }],
    });
  });

  it('crane.attachKernel with {notebookUri, kernelUrl} strips the token before the server sees it', async () => {
    const host = new FakeHost();
    host.secrets.set('crane.jupyterToken', TOKEN);
    await new Controller(host).start();
    await host.invoke('crane.attachKernel', { notebookUri: 'file:///nb.ipynb', kernelUrl: `http://h:8888/api/kernels/abc?token=${TOKEN}` });
    assert.deepEqual(host.client.requests.at(-1)?.params, {
      command: 'crane.attachKernel',
      arguments: [{ notebookUri: 'file:///nb.ipynb', kernelUrl: 'http://h:8888/api/kernels/abc' }],
    });
    assert.equal(host.clients.length, 1, 'the same token: no restart');
  });

  it('relays a remote kernel: {notebookUri, relay: true}, then answers the server\'s relay requests with executeCode', async () => {
    const host = new FakeHost();
    host.state.set(CONSENT_KEY, 'allow');
    host.missing.add('/home/jovyan/.local/share/jupyter/runtime/kernel-r.json');
    const executed: string[] = [];
    const kernel: KernelLike = {
      status: 'idle',
      language: 'python',
      async *executeCode(code: string) {
        executed.push(code);
        if (code.startsWith('print(__import__("json")')) {
          yield { items: [{ mime: MIME_STDOUT, data: '{"crane_connection_file": "/home/jovyan/.local/share/jupyter/runtime/kernel-r.json"}\n' }] };
        } else {
          yield { items: [{ mime: MIME_STDOUT, data: 'relayed\n' }] };
        }
      },
    };
    host.jupyterApi = { getKernel: async () => kernel };
    host.notebooks = ['file:///nb.ipynb'];
    const controller = new Controller(host);
    await controller.start();
    await tick();
    assert.deepEqual(host.client.notifications, [{ method: 'crane/attachKernel', params: { notebookUri: 'file:///nb.ipynb', relay: true } }]);
    const relayExecute = host.client.requestHandlers.get(RELAY_REQUEST);
    const relayStatus = host.client.requestHandlers.get(RELAY_STATUS_REQUEST);
    assert.ok(relayExecute && relayStatus, 'both relay requests are answered');
    const answer = await relayExecute({ notebookUri: 'file:///nb.ipynb', code: 'exec(...)', startTimeoutMs: 500, timeoutMs: 1000 });
    assert.deepEqual(answer, { status: 'ok', stdout: 'relayed\n', stderr: '', outputs: [] });
    assert.deepEqual(await relayStatus({ notebookUri: 'file:///nb.ipynb' }), { status: 'idle' });
    assert.equal(executed.at(-1), 'exec(...)');
    await host.invoke('crane.attachKernel');
    assert.match(host.messages.at(-1)?.text ?? '', /attached through the editor/);
  });
});
