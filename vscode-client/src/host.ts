/**
 * The only module that touches VS Code (`vscode`, `vscode-languageclient`, the Python and Jupyter
 * extensions' APIs). It implements `Host` for the controller and wires commands and events.
 *
 * crane.recheckCell / crane.attachKernel / crane.showPrompt are server commands: vscode-languageclient
 * registers them when the server starts and routes them through `middleware.executeCommand`
 * (Controller.executeCommand); stand-ins are registered only while no server provides them.
 */
import type { Jupyter, Kernel } from '@vscode/jupyter-extension';
import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';
import {
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type DocumentSelector,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { Controller, type ActiveCell, type ClientSpec, type Host, type LspClient } from './controller';
import type { JupyterLike, KernelLike } from './kernelAttach';
import type { PickFileOptions } from './pickers';
import {
  fixLines,
  guardedRun,
  isKind,
  withTimeout,
  VERDICT_TIMEOUT_MS,
  type CellVerdict,
  type GuardCell,
  type GuardHost,
} from './runGuard';
import { runProcess } from './serverCommand';
import type { StatusView } from './status';

export const JUPYTER_EXTENSION_ID = 'ms-toolsai.jupyter';
const NOTEBOOK_TYPES = new Set(['jupyter-notebook', 'interactive']);
const STOPPED_GRACE_MS = 3000;

async function activeInterpreter(resource: vscode.Uri | undefined): Promise<string[] | undefined> {
  if (!vscode.extensions.getExtension('ms-python.python')) return undefined;
  try {
    const api = await PythonExtension.api();
    const active = api.environments.getActiveEnvironmentPath(resource);
    const environment = await api.environments.resolveEnvironment(active);
    if (environment?.executable.uri) return [environment.executable.uri.fsPath];
    return active.path ? [active.path] : undefined;
  } catch {
    return undefined;
  }
}

async function jupyterKernels(): Promise<JupyterLike | undefined> {
  const extension = vscode.extensions.getExtension<Jupyter>(JUPYTER_EXTENSION_ID);
  if (!extension) return undefined;
  const api = extension.isActive ? extension.exports : await extension.activate();
  const kernels = api?.kernels;
  if (!kernels) return undefined;
  return {
    getKernel: async (notebookUri) => {
      const kernel: Kernel | undefined = await kernels.getKernel(vscode.Uri.parse(notebookUri));
      return kernel as unknown as KernelLike | undefined;
    },
  };
}

function activeCell(): ActiveCell | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor?.document.uri.scheme === 'vscode-notebook-cell') return { uri: editor.document.uri.toString() };
  const notebook = vscode.window.activeNotebookEditor;
  if (notebook && notebook.selections.length > 0) {
    const index = notebook.selections[0].start;
    if (index < notebook.notebook.cellCount) return { uri: notebook.notebook.cellAt(index).document.uri.toString() };
  }
  if (editor?.document.languageId === 'python') {
    return { uri: editor.document.uri.toString(), line: editor.selection.active.line };
  }
  return undefined;
}

/** The active notebook, else the active Python file. */
function activeDocumentUri(): string | undefined {
  const notebook = vscode.window.activeNotebookEditor;
  if (notebook && NOTEBOOK_TYPES.has(notebook.notebook.notebookType)) return notebook.notebook.uri.toString();
  const editor = vscode.window.activeTextEditor;
  if (editor?.document.languageId === 'python' && editor.document.uri.scheme !== 'vscode-notebook-cell') {
    return editor.document.uri.toString();
  }
  return undefined;
}

/** The open dialog shows the file system the extension host runs on (the remote one in a remote window). */
async function pickFile(options: PickFileOptions): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title: options.title,
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
    openLabel: 'Choose',
    defaultUri: options.defaultPath ? vscode.Uri.file(options.defaultPath) : undefined,
    filters: options.filters,
  });
  return picked?.[0]?.fsPath;
}

function createClient(spec: ClientSpec, output: vscode.OutputChannel): LspClient {
  const serverOptions: ServerOptions = { command: spec.command, args: spec.args, options: { env: spec.env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: spec.documentSelector.map((filter) => ({ ...filter })) as DocumentSelector,
    initializationOptions: spec.initializationOptions,
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    middleware: {
      workspace: {
        configuration: (params) => params.items.map((item) => spec.configuration(item.section)),
      },
      executeCommand: (command, args, next) =>
        spec.executeCommand(command, args, async (c, a) => next(c, a)),
    },
  };
  const client = new LanguageClient('crane', 'crane-lsp', serverOptions, clientOptions);
  // After a crash vscode-languageclient passes through Stopped while it restarts the server itself
  // (and then registers the server's commands again), so only a client still stopped counts.
  client.onDidChangeState((event) => {
    if (event.newState !== State.Stopped) return;
    setTimeout(() => {
      if (client.state === State.Stopped) spec.onStopped();
    }, STOPPED_GRACE_MS).unref();
  });
  return {
    start: () => client.start(),
    stop: () => client.stop(),
    isRunning: () => client.isRunning(),
    sendNotification: (method, params) => client.sendNotification(method, params),
    sendRequest: (method, params) => client.sendRequest(method, params),
    onNotification: (method, handler) => client.onNotification(method, handler),
    onRequest: (method, handler) => client.onRequest(method, (params: unknown) => handler(params)),
    serverCommands: () => client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [],
  };
}

export function createHost(context: vscode.ExtensionContext, output: vscode.OutputChannel, item: vscode.StatusBarItem): Host {
  const config = () => vscode.workspace.getConfiguration('crane');
  const fallbacks = new Map<string, vscode.Disposable>();
  context.subscriptions.push({ dispose: () => fallbacks.forEach((registration) => registration.dispose()) });
  return {
    config: (key) => config().get(key),
    updateConfig: async (key, value) => config().update(key, value, vscode.ConfigurationTarget.Global),
    interpreter: () => activeInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri),
    run: runProcess,
    processEnv: () => ({ ...process.env }),
    getSecret: async (id) => context.secrets.get(id),
    storeSecret: async (id, value) => context.secrets.store(id, value),
    deleteSecret: async (id) => context.secrets.delete(id),
    getState: (key) => context.workspaceState.get(key),
    setState: async (key, value) => context.workspaceState.update(key, value),
    createClient: (spec) => createClient(spec, output),
    setStatus: (view: StatusView) => {
      item.text = view.text;
      item.tooltip = view.tooltip;
      item.command = view.command;
      item.backgroundColor =
        view.severity === 'ok' ? undefined : new vscode.ThemeColor(`statusBarItem.${view.severity}Background`);
      item.show();
    },
    log: (line) => output.appendLine(`[${new Date().toISOString()}] ${line}`),
    showError: async (message, ...actions) => vscode.window.showErrorMessage(message, ...actions),
    showWarning: async (message, ...actions) => vscode.window.showWarningMessage(message, ...actions),
    showInfo: async (message, ...actions) => vscode.window.showInformationMessage(message, ...actions),
    inputSecret: async (prompt) => vscode.window.showInputBox({ prompt, password: true, ignoreFocusOut: true }),
    inputText: async (options) =>
      vscode.window.showInputBox({
        prompt: options.prompt,
        placeHolder: options.placeHolder,
        ignoreFocusOut: true,
        validateInput: options.validate ? (text) => options.validate?.(text) : undefined,
      }),
    fileExists: async (file) => {
      try {
        await fs.promises.access(file, fs.constants.R_OK); // another user's kernel file: not ours to read
        return (await fs.promises.stat(file)).isFile();
      } catch {
        return false;
      }
    },
    runInTerminal: (command) => {
      const terminal = vscode.window.createTerminal('crane-lsp install');
      terminal.show();
      terminal.sendText(command);
    },
    copyToClipboard: async (text) => vscode.env.clipboard.writeText(text),
    openMarkdown: async (text) => {
      const document = await vscode.workspace.openTextDocument({ language: 'markdown', content: text });
      await vscode.window.showTextDocument(document, { preview: true });
    },
    activeCell,
    activeDocumentUri,
    pickFile,
    executeCommand: async (id) => vscode.commands.executeCommand(id),
    hasPythonExtension: () => vscode.extensions.getExtension('ms-python.python') !== undefined,
    platform: () => process.platform,
    homeDir: () => os.homedir(),
    activeNotebookUri: () => vscode.window.activeNotebookEditor?.notebook.uri.toString(),
    openNotebookUris: () =>
      vscode.workspace.notebookDocuments.filter((nb) => NOTEBOOK_TYPES.has(nb.notebookType)).map((nb) => nb.uri.toString()),
    jupyter: jupyterKernels,
    createCancel: () => new vscode.CancellationTokenSource(),
    setFallbackCommands: (ids, run) => {
      for (const [id, registration] of fallbacks) {
        if (!ids.includes(id)) {
          registration.dispose();
          fallbacks.delete(id);
        }
      }
      for (const id of ids) {
        if (!fallbacks.has(id)) fallbacks.set(id, vscode.commands.registerCommand(id, (...args: unknown[]) => run(id, args)));
      }
    },
  };
}

/** A `vscode.NotebookCell` passed by a cell menu (the run button's menu), else undefined. */
function menuCell(target: unknown): vscode.NotebookCell | undefined {
  if (!target || typeof target !== 'object') return undefined;
  const cell = target as Partial<vscode.NotebookCell>;
  return cell.notebook && cell.document && typeof cell.index === 'number' ? (cell as vscode.NotebookCell) : undefined;
}

/** The open notebook cell whose document has this URI. */
function findCell(uri: string): vscode.NotebookCell | undefined {
  return vscode.workspace.notebookDocuments.flatMap((nb) => nb.getCells()).find((c) => c.document.uri.toString() === uri);
}

function guardHost(ctl: Controller, output: vscode.OutputChannel): GuardHost {
  const asGuardCell = (cell: vscode.NotebookCell): GuardCell => ({ uri: cell.document.uri.toString(), text: cell.document.getText() });
  return {
    enabled: () => vscode.workspace.getConfiguration('crane').get<boolean>('runGuard', false) === true,
    selectedCells: (target) => {
      const cell = menuCell(target);
      if (cell) return cell.kind === vscode.NotebookCellKind.Code ? [asGuardCell(cell)] : [];
      const editor = vscode.window.activeNotebookEditor;
      if (!editor || !NOTEBOOK_TYPES.has(editor.notebook.notebookType)) return undefined;
      return editor.selections
        .flatMap((range) => editor.notebook.getCells(range))
        .filter((c) => c.kind === vscode.NotebookCellKind.Code)
        .map(asGuardCell);
    },
    verdict: async (cell) =>
      (await withTimeout(ctl.cellVerdict(cell.uri, cell.text), VERDICT_TIMEOUT_MS)) as CellVerdict | undefined,
    ask: async (message, ...buttons) => vscode.window.showWarningMessage(message, { modal: true }, ...buttons),
    applyFix: async (cell, fix) => {
      const document = findCell(cell.uri)?.document;
      const lines = document ? fixLines(document.getText(), fix) : undefined;
      if (!document || !lines || document.getText() !== cell.text) return false;
      // whole lines, without the line break after the last: the edit the server's dry run verified
      const range = new vscode.Range(fix.startLine, 0, fix.endLine - 1, document.lineAt(fix.endLine - 1).text.length);
      const edit = new vscode.WorkspaceEdit();
      edit.replace(document.uri, range, lines.new.join(document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n'));
      return vscode.workspace.applyEdit(edit);
    },
    show: async (cell, line) => {
      const found = findCell(cell.uri);
      if (!found) return;
      const at = new vscode.Position(Math.min(line, Math.max(found.document.lineCount - 1, 0)), 0);
      await vscode.window.showTextDocument(found.document, { selection: new vscode.Range(at, at) });
      await vscode.commands.executeCommand('editor.action.marker.next');
    },
    run: async (command, target) => {
      const cell = menuCell(target);
      if (!cell) return vscode.commands.executeCommand(command);
      const ranges = [{ start: cell.index, end: cell.index + 1 }];
      return vscode.commands.executeCommand(command, { ranges, document: cell.notebook.uri });
    },
    log: (line) => output.appendLine(`[${new Date().toISOString()}] ${line}`),
  };
}

let controller: Controller | undefined;

/** Restarts the server when the active interpreter changes and no setting pins the server's. */
async function watchInterpreter(context: vscode.ExtensionContext, ctl: Controller): Promise<void> {
  if (!vscode.extensions.getExtension('ms-python.python')) return;
  try {
    const api = await PythonExtension.api();
    context.subscriptions.push(
      api.environments.onDidChangeActiveEnvironmentPath(() => {
        if (ctl.usesInterpreterFromPythonExtension()) void ctl.restart();
      }),
    );
  } catch {
    // the Python extension failed to activate: the settings or PATH apply
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<Controller> {
  const output = vscode.window.createOutputChannel('crane-lsp');
  const item = vscode.window.createStatusBarItem('crane.status', vscode.StatusBarAlignment.Right, 100);
  item.name = 'crane-lsp';
  const ctl = new Controller(createHost(context, output, item));
  controller = ctl;
  const guard = guardHost(ctl, output);
  const isNotebook = (nb: vscode.NotebookDocument) => NOTEBOOK_TYPES.has(nb.notebookType);
  context.subscriptions.push(
    output,
    item,
    ctl,
    vscode.commands.registerCommand('crane.setApiKey', () => ctl.setApiKey()),
    vscode.commands.registerCommand('crane.restartServer', () => ctl.restart()),
    vscode.commands.registerCommand('crane.attachKernelFromFile', () => ctl.attachKernelFromFile()),
    vscode.commands.registerCommand('crane.attachKernelFromUrl', () => ctl.attachKernelFromUrl()),
    vscode.commands.registerCommand('crane.setJupyterToken', () => ctl.setJupyterToken()),
    vscode.commands.registerCommand('crane.selectInterpreter', () => ctl.pickInterpreter()),
    vscode.commands.registerCommand('crane.showLog', () => output.show(true)),
    vscode.commands.registerCommand('crane.runCell', (kind?: unknown, ...rest: unknown[]) =>
      isKind(kind) ? guardedRun(guard, kind, rest[0]) : guardedRun(guard, 'execute', kind),
    ),
    vscode.workspace.onDidChangeConfiguration((event) =>
      ctl.onConfigurationChanged((section) => event.affectsConfiguration(section)),
    ),
    vscode.workspace.onDidOpenNotebookDocument((nb) => {
      if (isNotebook(nb)) ctl.onNotebookOpened(nb.uri.toString());
    }),
    vscode.workspace.onDidCloseNotebookDocument((nb) => {
      if (isNotebook(nb)) ctl.onNotebookClosed(nb.uri.toString());
    }),
    vscode.workspace.onDidChangeNotebookDocument((event) => {
      if (isNotebook(event.notebook) && event.cellChanges.some((change) => change.executionSummary !== undefined)) {
        ctl.onCellExecuted(event.notebook.uri.toString());
      }
    }),
  );
  void watchInterpreter(context, ctl);
  await ctl.start();
  return ctl;
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
