/**
 * A recording stand-in for `vscode-languageclient/node`'s LanguageClient. Like the real one, it
 * registers the server's commands in VS Code when it starts (through the middleware), so a clash
 * with the extension's own registrations throws.
 */
import { commands } from './vscode';

type Next = (command: string, args: unknown[]) => Promise<unknown>;

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

export enum RevealOutputChannelOn {
  Info = 1,
  Warn = 2,
  Error = 3,
  Never = 4,
}

export class LanguageClient {
  static instances: LanguageClient[] = [];
  static serverCommands = ['crane.recheckCell', 'crane.attachKernel', 'crane.showPrompt', 'crane.ignoreFinding', 'crane.undoLastCell', 'crane.previewCell'];
  initializeResult: { capabilities: { executeCommandProvider?: { commands: string[] } } } | undefined;
  private registrations: { dispose(): unknown }[] = [];
  running = false;
  notifications: { method: string; params: unknown }[] = [];
  requests: { method: string; params: unknown }[] = [];
  handlers = new Map<string, (params: unknown) => void>();
  stateListeners: ((event: { oldState: State; newState: State }) => void)[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args: string[]; options: { env: Record<string, string | undefined> } },
    readonly clientOptions: {
      documentSelector: unknown[];
      initializationOptions: unknown;
      middleware: {
        workspace: { configuration: (params: { items: { section?: string }[] }) => unknown[] };
        executeCommand?: (command: string, args: unknown[], next: Next) => Promise<unknown>;
      };
    },
  ) {
    LanguageClient.instances.push(this);
  }
  async start(): Promise<void> {
    const provided = [...LanguageClient.serverCommands];
    this.initializeResult = { capabilities: { executeCommandProvider: { commands: provided } } };
    const middleware = this.clientOptions.middleware;
    const next: Next = (command, args) => this.sendRequest('workspace/executeCommand', { command, arguments: args });
    for (const id of provided) {
      this.registrations.push(
        commands.registerCommand(id, (...args: unknown[]) =>
          middleware.executeCommand ? middleware.executeCommand(id, args, next) : next(id, args),
        ),
      );
    }
    this.running = true;
  }
  async stop(): Promise<void> {
    for (const registration of this.registrations) registration.dispose();
    this.registrations = [];
    this.running = false;
    for (const listener of this.stateListeners) listener({ oldState: State.Running, newState: State.Stopped });
  }
  get state(): State {
    return this.running ? State.Running : State.Stopped;
  }
  isRunning(): boolean {
    return this.running;
  }
  async sendNotification(method: string, params: unknown): Promise<void> {
    this.notifications.push({ method, params });
  }
  requestResult: unknown = null;
  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    return this.requestResult;
  }
  onNotification(method: string, handler: (params: unknown) => void) {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }
  requestHandlers = new Map<string, (params: unknown) => unknown>();
  onRequest(method: string, handler: (params: unknown) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
  onDidChangeState(listener: (event: { oldState: State; newState: State }) => void) {
    this.stateListeners.push(listener);
    return { dispose: () => undefined };
  }
}
