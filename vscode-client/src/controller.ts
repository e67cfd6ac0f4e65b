/**
 * The extension's behaviour, independent of VS Code: start and restart the server, forward
 * settings and keys, attach kernels, keep the status bar current, run the commands.
 * Everything VS Code-specific comes in through `Host` (implemented in host.ts).
 */
import { apiKeyEnvName, buildServerEnv, redact, secretId, type Env } from './apiKey';
import { ATTACH_NOTIFICATION, KernelAttacher, type CancelSource, type Consent, type Disposable, type JupyterLike } from './kernelAttach';
import { JUPYTER_TOKEN_ENV, JUPYTER_TOKEN_SECRET, looksLikeUrl, parseKernelUrl, redactTokens } from './kernelUrl';
import {
  attachFromFile,
  attachFromUrl,
  jupyterRuntimeDir,
  pickInterpreter,
  type AttachFromFileOutcome,
  type AttachFromUrlOutcome,
  type InputOptions,
  type PickFileOptions,
  type PickInterpreterOutcome,
} from './pickers';
import { KernelRelay, RELAY_REQUEST, RELAY_STATUS_REQUEST } from './relay';
import { CELL_VERDICT_COMMAND, cellVerdictArgument } from './runGuard';
import { checkServer, describeLaunch, resolveServerLaunch, type Runner } from './serverCommand';
import {
  configurationFor,
  didChangeConfigurationParams,
  readCraneOptions,
  type CraneOptions,
} from './settings';
import { PREVIEW_COMMAND, previewCell } from './previewCommand';
import { UNDO_COMMAND, undoLastCell } from './undoCommand';
import { INITIAL_STATUS, parseStatus, renderStatus, type ClientState, type ServerState, type StatusView } from './status';

export const STATUS_NOTIFICATION = 'crane/status';
export const CONSENT_KEY = 'crane.kernelAccess';

/** Python cells of Jupyter notebooks and interactive windows, and Python files (`# %%` cells). */
export const DOCUMENT_SELECTOR = [
  { notebook: 'jupyter-notebook', language: 'python' },
  { notebook: 'interactive', language: 'python' },
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
] as const;

export interface LspClient {
  start(): Promise<void>;
  stop(): Promise<void>;
  isRunning(): boolean;
  sendNotification(method: string, params: unknown): Promise<void>;
  sendRequest(method: string, params: unknown): Promise<unknown>;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  /** Answers a request the server sends (`crane/kernelRelay/execute`). */
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): Disposable;
  /** Commands the server declared (`executeCommandProvider.commands`); the client registers them in VS Code. */
  serverCommands(): string[];
}

/** Sends `workspace/executeCommand` (vscode-languageclient's own `executeCommand`). */
export type ExecuteNext = (command: string, args: unknown[]) => Promise<unknown>;

/**
 * The commands that exist both in the palette and on the server. vscode-languageclient registers
 * every server command in VS Code itself (a second registration would throw), so the extension
 * shapes these through `middleware.executeCommand`, and registers stand-ins only while the server
 * does not provide them.
 */
export const SERVER_COMMANDS = [
  'crane.recheckCell',
  'crane.attachKernel',
  'crane.showPrompt',
  'crane.undoLastCell',
  'crane.previewCell',
] as const;

/** The cell under the cursor: a notebook cell URI, or a `# %%` file with the cursor line. */
export interface ActiveCell {
  uri: string;
  line?: number;
}

export interface ClientSpec {
  command: string;
  args: string[];
  env: Env;
  initializationOptions: CraneOptions;
  documentSelector: typeof DOCUMENT_SELECTOR;
  /** Answers the server's `workspace/configuration` for one section. */
  configuration(section: string | undefined): unknown;
  /** Called when the client stops on its own (the server process died). */
  onStopped(): void;
  /** `middleware.executeCommand`. */
  executeCommand(command: string, args: unknown[], next: ExecuteNext): Promise<unknown>;
}

export interface Host {
  /** A key of the `crane` configuration section, e.g. "provider" or "server.pythonPath". */
  config(key: string): unknown;
  /** The active environment's interpreter (Python extension), if any. */
  interpreter(): Promise<string[] | undefined>;
  run: Runner;
  processEnv(): Env;
  getSecret(id: string): Promise<string | undefined>;
  storeSecret(id: string, value: string): Promise<void>;
  deleteSecret(id: string): Promise<void>;
  getState(key: string): unknown;
  setState(key: string, value: unknown): Promise<void>;
  createClient(spec: ClientSpec): LspClient;
  setStatus(view: StatusView): void;
  log(line: string): void;
  showError(message: string, ...actions: string[]): Promise<string | undefined>;
  showWarning(message: string, ...actions: string[]): Promise<string | undefined>;
  showInfo(message: string, ...actions: string[]): Promise<string | undefined>;
  inputSecret(prompt: string): Promise<string | undefined>;
  /** A one-line input box; undefined when dismissed. */
  inputText(options: InputOptions): Promise<string | undefined>;
  /** Whether a file exists and can be read on the machine the server runs on (the extension host's). */
  fileExists(path: string): Promise<boolean>;
  runInTerminal(command: string): void;
  copyToClipboard(text: string): Promise<void>;
  openMarkdown(text: string): Promise<void>;
  activeCell(): ActiveCell | undefined;
  activeNotebookUri(): string | undefined;
  openNotebookUris(): string[];
  jupyter(): Promise<JupyterLike | undefined>;
  createCancel(): CancelSource;
  /** Registers stand-ins for exactly these server commands (disposing any others). */
  setFallbackCommands(ids: readonly string[], run: (command: string, args: unknown[]) => Promise<unknown>): void;
  /** The active notebook, else the active Python file (a `# %%` script). */
  activeDocumentUri(): string | undefined;
  /** An open-file dialog on the machine the server runs on; the chosen path, or undefined. */
  pickFile(options: PickFileOptions): Promise<string | undefined>;
  /** Writes a `crane` setting in the user settings. */
  updateConfig(key: string, value: unknown): Promise<void>;
  /** Runs another extension's command (`python.setInterpreter`). */
  executeCommand(id: string): Promise<unknown>;
  hasPythonExtension(): boolean;
  platform(): NodeJS.Platform;
  homeDir(): string;
}

export const ALLOW = 'Allow';
export const NOT_NOW = "Don't allow";
export const INSTALL = 'Install in terminal';
export const COPY = 'Copy command';
export const SHOW_LOG = 'Show log';
export const PICK_INTERPRETER = 'Pick another interpreter…';
export const BY_URL = 'Kernel URL…';
export const BY_FILE = 'Connection file…';

/** The text of `crane.showPrompt`'s result as Markdown: a string, or `{prompt, answer}`. */
export function promptMarkdown(result: unknown, cellUri: string): string {
  if (result === null || result === undefined || result === '') {
    return `# crane: last prompt\n\nNo LLM request has been made for this cell yet (${cellUri}).\n`;
  }
  if (typeof result === 'string') return result;
  if (typeof result === 'object') {
    const r = result as Record<string, unknown>;
    const parts = ['# crane: last prompt', '', `Cell: \`${cellUri}\``, ''];
    if (typeof r.prompt === 'string') parts.push('## Prompt', '', '````text', r.prompt, '````', '');
    if (r.answer !== undefined) {
      const answer = typeof r.answer === 'string' ? r.answer : JSON.stringify(r.answer, null, 2);
      parts.push('## Answer', '', '````text', answer, '````', '');
    }
    if (parts.length > 4) return parts.join('\n');
  }
  return ['# crane: last prompt', '', '````json', JSON.stringify(result, null, 2), '````', ''].join('\n');
}

/** `~/x` → `<home>/x` (the server takes paths as they are). */
export function expandHome(file: string, home: string): string {
  return file === '~' || file.startsWith('~/') || file.startsWith('~\\') ? home + file.slice(1) : file;
}

export class Controller implements Disposable {
  private client: LspClient | undefined;
  private subscriptions: Disposable[] = [];
  private state: ClientState = { server: 'stopped', status: INITIAL_STATUS, attachMode: 'jupyter' };
  private options: CraneOptions = {};
  private queue: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private knownSecrets: string[] = [];
  private launchSource: string | undefined;
  private launchPython: string[] | undefined;
  readonly attacher: KernelAttacher;
  readonly relay: KernelRelay;
  /** The token every relayed `executeCode` gets; never cancelled (relay.ts says why). */
  private readonly relayCancel: CancelSource;

  constructor(
    private readonly host: Host,
    attachTimeoutMs?: number,
  ) {
    this.attacher = new KernelAttacher(
      {
        jupyter: () => host.jupyter(),
        getConsent: () => {
          const v = host.getState(CONSENT_KEY);
          return v === 'allow' || v === 'deny' ? v : undefined;
        },
        setConsent: (consent) => host.setState(CONSENT_KEY, consent),
        askConsent: () => this.askConsent(),
        notify: async (params) => {
          if (this.client?.isRunning()) await this.client.sendNotification(ATTACH_NOTIFICATION, params);
        },
        fileExists: (path) => host.fileExists(path),
        createCancel: () => host.createCancel(),
        onModeChange: (mode) => this.update({ attachMode: mode }),
        log: (line) => this.log(line),
      },
      attachTimeoutMs,
    );
    this.relayCancel = host.createCancel();
    this.relay = new KernelRelay({
      jupyter: () => host.jupyter(),
      getConsent: () => {
        const v = host.getState(CONSENT_KEY);
        return v === 'allow' || v === 'deny' ? v : undefined;
      },
      token: () => this.relayCancel.token,
      log: (line) => this.log(line),
    });
  }

  get clientState(): ClientState {
    return this.state;
  }

  /** True when no crane setting pins the interpreter, so a new selection in the Python extension applies. */
  usesInterpreterFromPythonExtension(): boolean {
    return this.launchSource === 'Python extension' || this.launchSource === 'PATH';
  }

  get currentOptions(): CraneOptions {
    return this.options;
  }

  /** Every line for the output channel: known secrets and anything shaped like a token removed. */
  private log(line: string): void {
    this.host.log(redactTokens(redact(line, this.knownSecrets)));
  }

  private update(patch: Partial<ClientState>): void {
    this.state = { ...this.state, ...patch };
    this.host.setStatus(renderStatus(this.state));
  }

  private setServer(server: ServerState, detail?: string): void {
    this.update({ server, detail });
  }

  private async askConsent(): Promise<Consent | undefined> {
    const answer = await this.host.showInfo(
      'crane-lsp reads the live kernel of your notebooks (through the Jupyter extension) to predict crashes. ' +
        'It only asks the kernel for its connection file. Allow this in this workspace?',
      ALLOW,
      NOT_NOW,
    );
    if (answer === ALLOW) return 'allow';
    if (answer === NOT_NOW) return 'deny';
    return undefined;
  }

  private readOptions(): CraneOptions {
    const { options, problems } = readCraneOptions((key) => this.host.config(key));
    if (options.connectionFile !== undefined && looksLikeUrl(options.connectionFile)) {
      const parsed = parseKernelUrl(options.connectionFile);
      if (!parsed.ok) {
        problems.push(`crane.connectionFile: ${parsed.error}; not used`);
        delete options.connectionFile;
      } else {
        if (parsed.token) {
          problems.push('crane.connectionFile holds a token: remove it there and run "crane: Set Jupyter server token" (the URL is used without it)');
        }
        options.connectionFile = parsed.url;
      }
    } else if (options.connectionFile?.startsWith('~')) {
      options.connectionFile = expandHome(options.connectionFile, this.host.homeDir());
    }
    const inSettings = this.host.config('jupyterToken');
    if (typeof inSettings === 'string' && inSettings !== '') {
      problems.push('a Jupyter token in settings (crane.jupyterToken) is ignored: settings files are not secret; run "crane: Set Jupyter server token"');
    }
    for (const problem of problems) this.log(`Settings: ${problem}`);
    if (problems.length > 0) void this.host.showWarning(`crane: ${problems.join('; ')}`);
    this.options = options;
    if (options.connectionFile !== this.state.connectionFile) this.update({ connectionFile: options.connectionFile });
    return options;
  }

  /** Runs server lifecycle steps one after another. */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  start(): Promise<boolean> {
    return this.serial(() => this.doStart());
  }

  restart(): Promise<boolean> {
    return this.serial(async () => {
      await this.doStop();
      return this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.serial(() => this.doStop());
  }

  private useFallbacks(ids: readonly string[]): void {
    this.host.setFallbackCommands(ids, (command, args) => this.executeCommand(command, args, this.notRunning));
  }

  /** The `next` of a command run while no server provides it. */
  private readonly notRunning: ExecuteNext = async () => {
    void this.host.showWarning('crane: the server is not running.', SHOW_LOG);
    return undefined;
  };

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const s of this.subscriptions) s.dispose();
    this.subscriptions = [];
    if (client) {
      this.stopping = true;
      try {
        await client.stop();
      } catch (error) {
        this.log(`Stopping the server failed: ${String(error)}`);
      } finally {
        this.stopping = false;
      }
    }
    this.setServer('stopped');
    this.useFallbacks(SERVER_COMMANDS);
  }

  private async doStart(): Promise<boolean> {
    this.setServer('starting');
    this.useFallbacks(SERVER_COMMANDS);
    const options = this.readOptions();
    const launch = resolveServerLaunch({
      command: this.host.config('server.command'),
      pythonPath: this.host.config('server.pythonPath'),
      interpreter: await this.host.interpreter(),
    });
    this.launchSource = launch.source;
    this.launchPython = launch.python;
    this.log(`Server command: ${describeLaunch(launch)}`);
    const check = await checkServer(launch, this.host.run);
    if (check.status === 'missing') {
      this.log(check.message);
      this.setServer('missing', check.message);
      void this.host.showError(check.message, INSTALL, COPY, PICK_INTERPRETER).then((choice) => {
        if (choice === INSTALL) this.host.runInTerminal(check.installCommand);
        else if (choice === COPY) void this.host.copyToClipboard(check.installCommand);
        else if (choice === PICK_INTERPRETER) void this.pickInterpreter();
      });
      return false;
    }
    if (check.status === 'noInterpreter' || check.status === 'failed') {
      this.log(check.message);
      this.setServer('error', check.message);
      void this.host.showError(check.message, PICK_INTERPRETER, SHOW_LOG).then((choice) => {
        if (choice === PICK_INTERPRETER) void this.pickInterpreter();
      });
      return false;
    }
    if (check.status === 'ok') this.log(`crane-lsp ${check.version} found in ${launch.python?.join(' ') ?? launch.command}.`);

    const envName = apiKeyEnvName(options.provider, options.apiKeyEnv);
    const key = envName ? await this.host.getSecret(secretId(envName)) : undefined;
    const jupyterToken = await this.host.getSecret(JUPYTER_TOKEN_SECRET);
    const base = this.host.processEnv();
    this.knownSecrets = [key, jupyterToken, base[JUPYTER_TOKEN_ENV]].filter((s): s is string => !!s);
    const { env, fromSecrets } = buildServerEnv(base, envName, key);
    if (jupyterToken) {
      env[JUPYTER_TOKEN_ENV] = jupyterToken;
      this.log(`Jupyter server token passed in ${JUPYTER_TOKEN_ENV} (from the secret store).`);
    }
    if (fromSecrets.length > 0) {
      this.log(`API key passed in ${fromSecrets.join(', ')} (from the secret store).`);
    } else if (envName && options.provider !== 'none' && !base[envName]) {
      this.log(`No API key for provider ${String(options.provider)}: run "crane: Set API key" (variable ${envName}).`);
    }

    const client = this.host.createClient({
      command: launch.command,
      args: launch.args,
      env,
      initializationOptions: options,
      documentSelector: DOCUMENT_SELECTOR,
      configuration: (section) => configurationFor(section, this.options, () => this.host.config(section ?? '')),
      onStopped: () => {
        if (this.client === client && !this.stopping) {
          this.log('The server stopped.');
          this.setServer('error', 'The server process stopped.');
          this.useFallbacks(SERVER_COMMANDS);
        }
      },
      executeCommand: (command, args, next) => this.executeCommand(command, args, next),
    });
    this.client = client;
    this.subscriptions.push(
      client.onNotification(STATUS_NOTIFICATION, (params) => {
        this.update({ status: parseStatus(params, this.state.status) });
      }),
      client.onRequest(RELAY_REQUEST, (params) => this.relay.execute(params)),
      client.onRequest(RELAY_STATUS_REQUEST, (params) => this.relay.status(params)),
    );
    this.useFallbacks([]); // the client registers the server's commands while starting
    try {
      await client.start();
    } catch (error) {
      this.useFallbacks(SERVER_COMMANDS);
      const message = `crane: the server did not start: ${error instanceof Error ? error.message : String(error)}`;
      this.log(message);
      this.setServer('error', message);
      void this.host.showError(message, SHOW_LOG);
      return false;
    }
    this.setServer('running');
    const provided = new Set(client.serverCommands());
    const missing = SERVER_COMMANDS.filter((id) => !provided.has(id));
    if (missing.length > 0) this.log(`The server does not provide ${missing.join(', ')}.`);
    this.useFallbacks(missing);
    await this.attacher.resendAll();
    for (const uri of this.host.openNotebookUris()) void this.attacher.attach(uri);
    return true;
  }

  /** `workspace.onDidChangeConfiguration`: server settings restart, the others are forwarded. */
  async onConfigurationChanged(affects: (section: string) => boolean): Promise<void> {
    if (!affects('crane')) return;
    if (affects('crane.server') || affects('crane.provider') || affects('crane.apiKeyEnv')) {
      this.log('Server, provider or key variable changed: restarting the server.');
      await this.restart();
      return;
    }
    const options = this.readOptions();
    if (this.client?.isRunning()) {
      await this.client.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(options));
    }
  }

  async setApiKey(): Promise<void> {
    const options = this.readOptions();
    const envName = apiKeyEnvName(options.provider, options.apiKeyEnv);
    if (!envName) {
      void this.host.showInfo('crane: choose an LLM provider first (setting crane.provider); with "none" no key is needed.');
      return;
    }
    const key = await this.host.inputSecret(`API key for ${String(options.provider)} (passed to the server in ${envName}; empty to remove)`);
    if (key === undefined) return;
    if (key.trim() === '') {
      await this.host.deleteSecret(secretId(envName));
      this.log(`API key for ${envName} removed from the secret store.`);
    } else {
      await this.host.storeSecret(secretId(envName), key.trim());
      this.log(`API key for ${envName} stored in the secret store.`);
    }
    await this.restart();
  }

  /**
   * "crane: Set Jupyter server token": kept in the secret store, handed to the server only in its
   * environment (JUPYTER_TOKEN), never in settings, initializationOptions (a verbose LSP trace
   * prints those) or the log. Restarts the server.
   */
  async setJupyterToken(): Promise<void> {
    const token = await this.host.inputSecret(
      `Token of the Jupyter server whose kernels crane reads (passed to the server in ${JUPYTER_TOKEN_ENV}; empty to remove)`,
    );
    if (token === undefined) return;
    if (token.trim() === '') {
      await this.host.deleteSecret(JUPYTER_TOKEN_SECRET);
      this.log('Jupyter server token removed from the secret store.');
    } else {
      await this.host.storeSecret(JUPYTER_TOKEN_SECRET, token.trim());
      this.knownSecrets.push(token.trim());
      this.log('Jupyter server token stored in the secret store.');
    }
    await this.restart();
  }

  /** `middleware.executeCommand` for the server's commands (and their stand-ins). */
  async executeCommand(command: string, args: unknown[], next: ExecuteNext): Promise<unknown> {
    switch (command) {
      case 'crane.recheckCell':
        return this.recheckCell(args, next);
      case 'crane.showPrompt':
        return this.showPrompt(args, next);
      case 'crane.attachKernel':
        return this.attachKernel(args, next);
      case UNDO_COMMAND:
        return undoLastCell(args, next, this.host);
      case PREVIEW_COMMAND:
        return previewCell(args, next, this.host);
      default:
        return next(command, args);
    }
  }

  /** Arguments given by a caller (a code action) are kept; from the palette, the cell under the cursor. */
  private cellArguments(args: unknown[], purpose: string): unknown[] | undefined {
    if (args.length > 0 && args[0] !== undefined && args[0] !== null) {
      const first = args[0];
      const isUri = typeof first === 'object' && typeof (first as { scheme?: unknown }).scheme === 'string';
      return isUri ? [String(first), ...args.slice(1)] : args;
    }
    const cell = this.host.activeCell();
    if (!cell) {
      void this.host.showInfo(`crane: put the cursor in a notebook cell to ${purpose}.`);
      return undefined;
    }
    return cell.line === undefined ? [cell.uri] : [{ uri: cell.uri, line: cell.line }];
  }

  async recheckCell(args: unknown[], next: ExecuteNext): Promise<unknown> {
    const cellArgs = this.cellArguments(args, 're-check it');
    if (!cellArgs) return undefined;
    const result = await next('crane.recheckCell', cellArgs);
    if (result && typeof result === 'object' && (result as { checked?: unknown }).checked === false) {
      const why = (result as { error?: unknown }).error;
      void this.host.showWarning(`crane: could not re-check the cell: ${typeof why === 'string' ? why : 'unknown reason'}`);
    }
    return result;
  }

  async showPrompt(args: unknown[], next: ExecuteNext): Promise<unknown> {
    const cellArgs = this.cellArguments(args, 'see its last prompt');
    if (!cellArgs) return undefined;
    if (!this.client?.isRunning()) return next('crane.showPrompt', cellArgs);
    const result = await next('crane.showPrompt', cellArgs);
    const first = cellArgs[0];
    const label = typeof first === 'string' ? first : String((first as { uri?: unknown }).uri ?? '');
    await this.host.openMarkdown(promptMarkdown(result, label));
    return result;
  }

  /**
   * With `{notebookUri, connectionFile}` (another extension, a test) the server is told directly;
   * otherwise the notebook's kernel is asked through the Jupyter extension.
   */
  async attachKernel(args: unknown[], next: ExecuteNext): Promise<unknown> {
    const first = args[0];
    if (first && typeof first === 'object' && 'connectionFile' in first) return next('crane.attachKernel', args);
    if (first && typeof first === 'object' && 'kernelUrl' in first) {
      const { notebookUri, kernelUrl } = first as { notebookUri?: unknown; kernelUrl?: unknown };
      const parsed = typeof kernelUrl === 'string' ? parseKernelUrl(kernelUrl) : undefined;
      if (!parsed?.ok) return { attached: false, error: parsed?.error ?? 'kernelUrl must be a string' };
      const forwarded = [{ notebookUri, kernelUrl: parsed.url }, ...args.slice(1)];
      if (!parsed.token || !(await this.keepToken(parsed.token))) return next('crane.attachKernel', forwarded);
      // a new token reaches the server only through its environment: restart, then attach there
      await this.restart();
      if (!this.client?.isRunning()) return undefined;
      return this.client.sendRequest('workspace/executeCommand', { command: 'crane.attachKernel', arguments: forwarded });
    }
    if (typeof first === 'string' && typeof args[1] === 'string' && looksLikeUrl(args[1])) {
      return this.attachKernel([{ notebookUri: first, kernelUrl: args[1] }, ...args.slice(2)], next);
    }
    if (typeof first === 'string' && typeof args[1] === 'string') return next('crane.attachKernel', args);
    const notebookUri = typeof first === 'string' && first !== '' ? first : this.host.activeNotebookUri();
    if (!notebookUri) {
      void this.host.showInfo('crane: open a notebook to attach its kernel.');
      return undefined;
    }
    const outcome = await this.attacher.attach(notebookUri, { userInitiated: true });
    switch (outcome.kind) {
      case 'attached':
        void this.host.showInfo(`crane: kernel attached (${outcome.connectionFile}).`);
        break;
      case 'relayed':
        void this.host.showInfo(
          "crane: kernel attached through the editor (it runs on another machine: crane reads it with the Jupyter extension's executeCode).",
        );
        break;
      case 'noKernel':
        void this.host.showInfo('crane: this notebook has no running kernel yet; run a cell first.');
        break;
      case 'noJupyter':
        this.offerOtherWays(this.host.showInfo('crane: the Jupyter extension is not available; the server discovers kernels itself.', BY_URL, BY_FILE));
        break;
      case 'declined':
        this.offerOtherWays(this.host.showInfo('crane: kernel access not allowed; the server discovers kernels itself.', BY_URL, BY_FILE));
        break;
      case 'failed':
        this.offerOtherWays(this.host.showWarning(`crane: could not attach the kernel: ${outcome.reason}`, BY_URL, BY_FILE, SHOW_LOG));
        break;
    }
    return outcome;
  }

  /** "Kernel URL…" / "Connection file…" on a message: attach the kernel the other ways. */
  private offerOtherWays(choice: Promise<string | undefined>): void {
    void choice.then((picked) => {
      if (picked === BY_URL) void this.attachKernelFromUrl();
      else if (picked === BY_FILE) void this.attachKernelFromFile();
    });
  }

  /** "crane: Attach kernel from connection file…". */
  attachKernelFromFile(): Promise<AttachFromFileOutcome> {
    return attachFromFile({
      targetUri: () => this.host.activeDocumentUri(),
      pickFile: (options) => this.host.pickFile(options),
      runtimeDir: () => jupyterRuntimeDir(this.host.processEnv(), this.host.platform(), this.host.homeDir()),
      attach: async (notebookUri, connectionFile) => {
        if (!this.client?.isRunning()) return undefined;
        const params = { command: 'crane.attachKernel', arguments: [{ notebookUri, connectionFile }] };
        return (await this.client.sendRequest('workspace/executeCommand', params)) ?? null;
      },
      pin: (notebookUri, connectionFile) => {
        this.attacher.pin(notebookUri, connectionFile);
        this.log(`Attached ${notebookUri} to kernel ${connectionFile} (chosen by hand).`);
      },
      showInfo: (message) => void this.host.showInfo(message),
      showWarning: (message) => void this.host.showWarning(message, SHOW_LOG),
    });
  }

  /**
   * "crane: Attach kernel by URL…": a kernel on a Jupyter server for the active notebook or `# %%`
   * file. A token typed in the URL goes to the secret store (and the server restarts to get it).
   */
  attachKernelFromUrl(): Promise<AttachFromUrlOutcome> {
    return attachFromUrl({
      targetUri: () => this.host.activeDocumentUri(),
      inputText: (options) => this.host.inputText(options),
      attach: async (notebookUri, kernelUrl) => {
        if (!this.client?.isRunning()) return undefined;
        const params = { command: 'crane.attachKernel', arguments: [{ notebookUri, kernelUrl }] };
        return (await this.client.sendRequest('workspace/executeCommand', params)) ?? null;
      },
      keepToken: async (token, notebookUri, kernelUrl) => {
        if (!(await this.keepToken(token))) return;
        // the server gets a new token only at its start: pinned first, the URL is attached there too
        this.attacher.pin(notebookUri, { kernelUrl });
        await this.restart();
      },
      pin: (notebookUri, kernelUrl) => {
        this.attacher.pin(notebookUri, { kernelUrl });
        this.log(`Attached ${notebookUri} to kernel ${kernelUrl} (chosen by hand).`);
      },
      unpin: (notebookUri) => this.attacher.forget(notebookUri),
      showInfo: (message) => void this.host.showInfo(message),
      showWarning: (message) => void this.host.showWarning(message, SHOW_LOG),
    });
  }

  /** Stores a token that came inside a URL; true when it differs from the stored one. */
  private async keepToken(token: string): Promise<boolean> {
    if (!this.knownSecrets.includes(token)) this.knownSecrets.push(token);
    if ((await this.host.getSecret(JUPYTER_TOKEN_SECRET)) === token) return false;
    await this.host.storeSecret(JUPYTER_TOKEN_SECRET, token);
    this.log('The token in the kernel URL was moved to the secret store (crane: Set Jupyter server token changes it).');
    return true;
  }

  /** "Pick another interpreter…" (and "crane: Select server interpreter…"). */
  pickInterpreter(): Promise<PickInterpreterOutcome> {
    return pickInterpreter({
      source: this.launchSource,
      current: this.launchPython,
      hasPythonExtension: this.host.hasPythonExtension(),
      executeCommand: (id) => this.host.executeCommand(id),
      pickFile: (options) => this.host.pickFile(options),
      setPythonPath: (value) => this.host.updateConfig('server.pythonPath', value),
    });
  }

  /**
   * The server's `crane.cellVerdict` for a cell, judged against `text` (the editor's current text: a
   * verdict for any other text comes back stale); undefined while no server runs.
   */
  async cellVerdict(uri: string, text: string): Promise<unknown> {
    if (!this.client?.isRunning()) return undefined;
    const params = { command: CELL_VERDICT_COMMAND, arguments: [cellVerdictArgument(uri, text)] };
    return this.client.sendRequest('workspace/executeCommand', params);
  }

  onNotebookOpened(notebookUri: string): void {
    if (this.client?.isRunning()) void this.attacher.attach(notebookUri);
  }

  onNotebookClosed(notebookUri: string): void {
    this.attacher.forget(notebookUri);
  }

  onCellExecuted(notebookUri: string): void {
    if (this.client?.isRunning()) void this.attacher.ensureAttached(notebookUri);
  }

  dispose(): void {
    this.attacher.dispose();
    this.relayCancel.dispose();
    void this.stop();
  }
}
