/** A recording stand-in for the parts of the `vscode` module that src/host.ts uses. */

export interface Recorded {
  commands: Map<string, (...args: unknown[]) => unknown>;
  messages: { level: 'info' | 'warning' | 'error'; text: string; actions: string[] }[];
  statusItems: MockStatusBarItem[];
  outputLines: string[];
  openedDocuments: { language?: string; content?: string }[];
  configuration: Record<string, unknown>;
  extensions: Map<string, { isActive: boolean; exports: unknown; activate(): Promise<unknown> }>;
  notebookDocuments: { notebookType: string; uri: Uri }[];
  listeners: Map<string, ((event: unknown) => unknown)[]>;
  /** Answer given to the next show*Message call (undefined = dismissed). */
  nextAnswer: string | undefined;
  /** Files the next showOpenDialog returns (undefined = cancelled), and the options it was called with. */
  nextPick: string[] | undefined;
  dialogs: unknown[];
  /** `getConfiguration(section).update` calls. */
  updates: { key: string; value: unknown; target: unknown }[];
  executed: string[];
}

export const recorded: Recorded = {
  commands: new Map(),
  messages: [],
  statusItems: [],
  outputLines: [],
  openedDocuments: [],
  configuration: {},
  extensions: new Map(),
  notebookDocuments: [],
  listeners: new Map(),
  nextAnswer: undefined,
  nextPick: undefined,
  dialogs: [],
  updates: [],
  executed: [],
};

export function resetMock(): void {
  recorded.commands.clear();
  recorded.messages.length = 0;
  recorded.statusItems.length = 0;
  recorded.outputLines.length = 0;
  recorded.openedDocuments.length = 0;
  recorded.configuration = {};
  recorded.extensions.clear();
  recorded.notebookDocuments.length = 0;
  recorded.listeners.clear();
  recorded.nextAnswer = undefined;
  recorded.nextPick = undefined;
  recorded.dialogs.length = 0;
  recorded.updates.length = 0;
  recorded.executed.length = 0;
}

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

const disposable = { dispose: () => undefined };

function listen(name: string) {
  return (listener: (event: unknown) => unknown) => {
    const list = recorded.listeners.get(name) ?? [];
    list.push(listener);
    recorded.listeners.set(name, list);
    return disposable;
  };
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
    private readonly text: string,
  ) {}
  static parse(value: string): Uri {
    const scheme = value.split(':')[0];
    return new Uri(scheme, value.replace(/^file:\/\//, ''), value);
  }
  static file(path: string): Uri {
    return new Uri('file', path, `file://${path}`);
  }
  toString(): string {
    return this.text;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class MockStatusBarItem {
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  name: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.visible = false;
  }
}

export class CancellationTokenSource {
  token = { isCancellationRequested: false };
  cancel(): void {
    this.token.isCancellationRequested = true;
  }
  dispose(): void {}
}

function message(level: 'info' | 'warning' | 'error') {
  return async (text: string, ...actions: string[]) => {
    recorded.messages.push({ level, text, actions });
    return recorded.nextAnswer;
  };
}

export const window = {
  activeTextEditor: undefined as unknown,
  activeNotebookEditor: undefined as unknown,
  createOutputChannel: (_name: string) => ({
    appendLine: (line: string) => recorded.outputLines.push(line),
    append: (text: string) => recorded.outputLines.push(text),
    show: () => undefined,
    dispose: () => undefined,
  }),
  createStatusBarItem: (id: string, alignment: StatusBarAlignment) => {
    const item = new MockStatusBarItem(id, alignment);
    recorded.statusItems.push(item);
    return item;
  },
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showInputBox: async () => recorded.nextAnswer,
  showOpenDialog: async (options: unknown) => {
    recorded.dialogs.push(options);
    return recorded.nextPick?.map((file) => Uri.file(file));
  },
  showTextDocument: async (document: unknown) => document,
  createTerminal: () => ({ show: () => undefined, sendText: () => undefined }),
};

export const workspace = {
  workspaceFolders: undefined as unknown,
  get notebookDocuments() {
    return recorded.notebookDocuments;
  },
  getConfiguration: (section: string) => ({
    get: (key: string) => recorded.configuration[`${section}.${key}`],
    update: async (key: string, value: unknown, target: unknown) => {
      recorded.updates.push({ key: `${section}.${key}`, value, target });
    },
  }),
  openTextDocument: async (options: { language?: string; content?: string }) => {
    recorded.openedDocuments.push(options);
    return options;
  },
  onDidChangeConfiguration: listen('onDidChangeConfiguration'),
  onDidOpenNotebookDocument: listen('onDidOpenNotebookDocument'),
  onDidCloseNotebookDocument: listen('onDidCloseNotebookDocument'),
  onDidChangeNotebookDocument: listen('onDidChangeNotebookDocument'),
};

export const commands = {
  registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
    if (recorded.commands.has(id)) throw new Error(`command ${id} already registered`);
    recorded.commands.set(id, handler);
    return { dispose: () => recorded.commands.delete(id) };
  },
  executeCommand: async (id: string, ...args: unknown[]) => {
    recorded.executed.push(id);
    return recorded.commands.get(id)?.(...args);
  },
};

export const extensions = {
  getExtension: (id: string) => recorded.extensions.get(id),
};

export const env = {
  clipboard: { writeText: async () => undefined },
};
