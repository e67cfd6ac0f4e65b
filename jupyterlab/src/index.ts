/**
 * crane-lsp in JupyterLab 4 and Notebook 7: one connection to crane-lsp through jupyter-lsp's
 * websocket, every open notebook synchronised with `notebookDocument/*`, findings drawn as lint
 * marks and verdict boxes, a status item, palette and context-menu commands, and the opt-in run guard.
 * Works with or without jupyterlab-lsp (its own completion server is untouched).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, Notification, showDialog } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { CANCEL, GUARD_TITLE, RUN_ANYWAY, RUN_WITH_FIX } from './generated/cellVerdict';
import { fixBody } from './fixdialog';
import { verifiedFix } from './fixes';
import { question } from './guard';
import { ILspDiagnostic } from './marks';
import { NotebookSync } from './notebook';
import { RpcClient } from './rpc';
import { ConnectionState, IServerStatus, statusLine } from './statustext';
import { PREVIEW_CAPTION, PREVIEW_LABEL } from './preview';
import { UNDO_PALETTE_LABEL } from './undo';

const PLUGIN_ID = 'crane-lsp:plugin';
const SERVER = 'crane-lsp';
const RECHECK = 'crane:recheck-cell';
const IGNORE = 'crane:ignore-finding';
const UNDO = 'crane:undo-last-cell';
const PREVIEW = 'crane:try-cell-in-sandbox';
const RUN_COMMANDS = new Set([
  'notebook:run-cell',
  'notebook:run-cell-and-select-next',
  'notebook:run-cell-and-insert-below',
  'notebook:run-in-console',
  'runmenu:run'
]);

interface ISettings {
  runGuard: boolean;
  debounceMs: number;
  dryRun: string;
  undo: boolean;
  undoReserve: number;
  undoHold: number;
}

class StatusItem extends Widget {
  constructor() {
    super();
    this.addClass('crane-status');
    this.node.textContent = 'crane: starting…';
  }

  show_(text: string, title: string, level: string): void {
    if (this.node.textContent !== text) {
      this.node.textContent = text;
    }
    this.node.title = title;
    this.node.dataset.level = level;
  }
}

class Crane {
  readonly syncs = new Map<NotebookPanel, NotebookSync>();
  readonly status = new StatusItem();
  settings: ISettings = {
    runGuard: false,
    debounceMs: 500,
    dryRun: 'safe',
    undo: false,
    undoReserve: 1024,
    undoHold: 600
  };
  private client: RpcClient | null = null;
  private connection: ConnectionState = 'connecting';
  private detail: string | undefined;
  private statuses = new Map<string, IServerStatus>();

  constructor(private app: JupyterFrontEnd, private tracker: INotebookTracker) {}

  get rootUri(): string | undefined {
    return PageConfig.getOption('rootUri') || undefined;
  }

  async start(): Promise<void> {
    const ok = await this.probe();
    if (!ok) {
      this.refresh();
      return;
    }
    const settings = ServerConnection.makeSettings();
    let url = URLExt.join(settings.wsUrl, 'lsp', 'ws', SERVER);
    const token = PageConfig.getToken();
    if (token) {
      url += '?token=' + encodeURIComponent(token);
    }
    this.client = new RpcClient({
      url,
      initialize: () => this.initializeParams(),
      onNotification: (m, p) => this.onNotification(m, p),
      onRequest: (m, p) => this.onRequest(m, p),
      onState: (state, detail) => {
        this.connection = state;
        this.detail = detail;
        this.refresh();
      },
      onReady: () => {
        for (const sync of this.syncs.values()) {
          sync.reopen();
        }
      }
    });
    this.client.connect();
  }

  /** Is jupyter-lsp there, and does it offer crane-lsp? Said in the status item when not. */
  private async probe(): Promise<boolean> {
    const settings = ServerConnection.makeSettings();
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(URLExt.join(settings.baseUrl, 'lsp', 'status'), {}, settings);
    } catch {
      this.connection = 'no-jupyter-lsp';
      return false;
    }
    if (response.status === 404) {
      this.connection = 'no-jupyter-lsp';
      return false;
    }
    if (!response.ok) {
      this.connection = 'failed';
      this.detail = `jupyter-lsp answered ${response.status}`;
      return false;
    }
    try {
      const data = await response.json();
      if (!data || !data.specs || !data.specs[SERVER]) {
        this.connection = 'no-server';
        return false;
      }
    } catch {
      this.connection = 'failed';
      this.detail = 'jupyter-lsp sent an unreadable status';
      return false;
    }
    return true;
  }

  private initializeParams(): any {
    return {
      processId: null,
      clientInfo: { name: 'crane-jupyterlab', version: '0.1.0' },
      rootUri: this.rootUri || null,
      workspaceFolders: null,
      initializationOptions: { crane: this.serverSettings() },
      capabilities: {
        textDocument: {
          publishDiagnostics: { relatedInformation: true, versionSupport: false },
          synchronization: { dynamicRegistration: false, didSave: false }
        },
        notebookDocument: { synchronization: { dynamicRegistration: false, executionSummarySupport: true } },
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
        window: { workDoneProgress: false }
      }
    };
  }

  private serverSettings(): any {
    const s = this.settings;
    return { debounce: s.debounceMs, dryRun: s.dryRun, undo: s.undo, undoReserve: s.undoReserve, undoHold: s.undoHold };
  }

  applySettings(settings: ISettings): void {
    const sent = (s: ISettings) => [s.debounceMs, s.dryRun, s.undo, s.undoReserve, s.undoHold].join('|');
    const changed = sent(settings) !== sent(this.settings);
    this.settings = settings;
    if (changed && this.client && this.client.isReady) {
      this.client.notify('workspace/didChangeConfiguration', { settings: { crane: this.serverSettings() } });
    }
  }

  private onRequest(method: string, params: any): any {
    if (method === 'workspace/configuration') {
      const items = (params && params.items) || [];
      return items.map(() => this.serverSettings());
    }
    if (method === 'client/registerCapability' || method === 'client/unregisterCapability') {
      return null;
    }
    if (method === 'window/workDoneProgress/create' || method === 'window/showMessageRequest') {
      return null;
    }
    throw new Error(`unsupported request ${method}`);
  }

  private onNotification(method: string, params: any): void {
    if (method === 'textDocument/publishDiagnostics' && params && typeof params.uri === 'string') {
      for (const sync of this.syncs.values()) {
        const cellId = sync.owns(params.uri);
        if (cellId !== null) {
          sync.setDiagnostics(cellId, (params.diagnostics || []) as ILspDiagnostic[]);
          return;
        }
      }
      return;
    }
    if (method === 'crane/status' && params) {
      const status = params as IServerStatus;
      if (status.notebookUri) {
        this.statuses.set(status.notebookUri, status);
      }
      this.refresh();
    }
  }

  track(panel: NotebookPanel): void {
    if (this.syncs.has(panel)) {
      return;
    }
    const self = this; // the connection may come after the notebook: look it up on each use
    const sync = new NotebookSync(
      panel,
      {
        get isReady() {
          return Boolean(self.client && self.client.isReady);
        },
        notify: (m, p) => self.client && self.client.notify(m, p),
        request: (m, p, t) =>
          self.client ? self.client.request(m, p, t) : Promise.reject(new Error('crane-lsp is not connected'))
      },
      this.rootUri,
      () => this.refresh(),
      () => this.settings.undo
    );
    this.syncs.set(panel, sync);
    panel.disposed.connect(() => {
      sync.dispose();
      this.syncs.delete(panel);
      this.refresh();
    });
    this.refresh();
  }

  closeAll(): void {
    for (const sync of this.syncs.values()) {
      sync.dispose();
    }
    this.syncs.clear();
  }

  current(): NotebookSync | null {
    const panel = this.tracker.currentWidget;
    return panel ? this.syncs.get(panel) || null : null;
  }

  refresh(): void {
    const sync = this.current();
    const line = statusLine({
      connection: this.connection,
      detail: this.detail,
      notebook: sync !== null,
      kernelStatus: sync ? sync.kernelStatus : null,
      server: sync ? this.statuses.get(sync.uri) || null : null
    });
    this.status.show_(line.text, line.title, line.level);
    const server = sync ? this.statuses.get(sync.uri) : undefined;
    this.status.node.dataset.predictions = String(server && server.predictions !== undefined ? server.predictions : '');
  }

  activeCellId(): string | null {
    const cell = this.tracker.activeCell;
    return cell ? cell.model.id : null;
  }

  /** Wraps the run commands: with the guard on, a cell known to crash asks first. */
  installGuard(): void {
    const commands = this.app.commands;
    const execute = commands.execute.bind(commands);
    commands.execute = async (id: string, args?: any): Promise<any> => {
      if (this.settings.runGuard && RUN_COMMANDS.has(id)) {
        const proceed = await this.confirmRun().catch(() => true);
        if (!proceed) {
          return undefined;
        }
      }
      return execute(id, args);
    };
  }

  private async confirmRun(): Promise<boolean> {
    const panel = this.tracker.currentWidget;
    const sync = panel ? this.syncs.get(panel) : undefined;
    if (!panel || !sync) {
      return true;
    }
    const selected = panel.content.widgets.filter(w => panel.content.isSelectedOrActive(w));
    for (const cell of selected) {
      const got = await sync.guardVerdict(cell.model.id);
      if (!got) {
        continue;
      }
      // a fix that ran clean in the dry run: a third button applies it, then the run goes on
      const fix = verifiedFix(got.verdict);
      const buttons = [Dialog.cancelButton({ label: CANCEL }), Dialog.warnButton({ label: RUN_ANYWAY })];
      if (fix) {
        buttons.push(Dialog.okButton({ label: RUN_WITH_FIX }));
      }
      const answer = await showDialog({
        title: GUARD_TITLE,
        body: fix ? fixBody(got.text, fix, question(got.verdict)) : question(got.verdict),
        buttons
      });
      if (fix && answer.button.accept && answer.button.label === RUN_WITH_FIX) {
        return sync.applyFix(cell.model.id, fix, got.text); // not applied (the cell changed): no run
      }
      return answer.button.accept;
    }
    return true;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'crane-lsp: see which cells will crash, and why, before running them.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar, ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    registry: ISettingRegistry | null
  ) => {
    const crane = new Crane(app, tracker);
    if (statusBar) {
      statusBar.registerStatusItem(PLUGIN_ID, { item: crane.status, align: 'left', rank: 10 });
    } else {
      crane.status.addClass('crane-status-floating'); // Notebook 7 has no status bar
    }
    tracker.widgetAdded.connect((_, panel) => {
      crane.track(panel);
      if (!statusBar) {
        void panel.context.ready.then(() => {
          try {
            panel.toolbar.addItem('crane-status', new StatusItemMirror(crane.status));
          } catch {
            // a toolbar without room for it
          }
        });
      }
    });
    tracker.currentChanged.connect(() => crane.refresh());
    tracker.forEach(panel => crane.track(panel));
    crane.installGuard();
    // the server may outlive this page (jupyter-lsp shares it): tell it the notebooks are gone
    window.addEventListener('pagehide', () => crane.closeAll());

    app.commands.addCommand(RECHECK, {
      label: 'crane: Re-check cell',
      caption: 'Check the active cell again now (bypasses the LLM cache)',
      isEnabled: () => crane.current() !== null && crane.activeCellId() !== null,
      execute: async () => {
        const sync = crane.current();
        const id = crane.activeCellId();
        if (sync && id) {
          await sync.recheck(id).catch(err => console.warn('crane: re-check failed', err));
        }
      }
    });
    app.commands.addCommand(IGNORE, {
      label: 'crane: Ignore this finding',
      caption: 'Hide crane\'s finding on the active cell until its text changes',
      isEnabled: () => {
        const sync = crane.current();
        const id = crane.activeCellId();
        return Boolean(sync && id && sync.diagnosticsOf(id).length);
      },
      execute: async () => {
        const sync = crane.current();
        const id = crane.activeCellId();
        if (sync && id) {
          await sync.ignore(id).catch(err => console.warn('crane: ignore failed', err));
        }
      }
    });
    app.commands.addCommand(UNDO, {
      label: UNDO_PALETTE_LABEL,
      caption: "Put back what the notebook's last cell changed in the kernel (needs crane's undo setting)",
      isEnabled: () => crane.current() !== null,
      execute: async () => {
        const sync = crane.current();
        if (!sync) {
          return;
        }
        // the answer shows on the undone cell; a refusal with no cell to show it on, as a notification
        const got = await sync.undo.undoLast();
        if (!got.shown) {
          if (got.ok) {
            Notification.info(`crane: ${got.text}`, { autoClose: 8000 });
          } else {
            Notification.warning(`crane: ${got.text}`, { autoClose: 8000 });
          }
        }
      }
    });
    app.commands.addCommand(PREVIEW, {
      label: PREVIEW_LABEL,
      caption: PREVIEW_CAPTION,
      iconClass: 'crane-preview-icon',
      isEnabled: () => {
        const cell = tracker.activeCell;
        return crane.current() !== null && Boolean(cell && cell.model.type === 'code');
      },
      // the answer shows in a box under the cell; returned too (what the box shows)
      execute: async () => {
        const sync = crane.current();
        const id = crane.activeCellId();
        return sync && id ? sync.preview.tryCell(id) : null;
      }
    });
    if (palette) {
      palette.addItem({ command: RECHECK, category: 'crane' });
      palette.addItem({ command: IGNORE, category: 'crane' });
      palette.addItem({ command: UNDO, category: 'crane' });
      palette.addItem({ command: PREVIEW, category: 'crane' });
    }
    app.contextMenu.addItem({ command: RECHECK, selector: '.jp-Notebook .jp-Cell', rank: 60 });
    app.contextMenu.addItem({ command: IGNORE, selector: '.jp-Notebook .jp-Cell', rank: 61 });
    app.contextMenu.addItem({ command: UNDO, selector: '.jp-Notebook .jp-Cell', rank: 62 });
    app.contextMenu.addItem({ command: PREVIEW, selector: '.jp-Notebook .jp-CodeCell', rank: 63 });

    const load = (s: ISettingRegistry.ISettings) => {
      const c = s.composite as any;
      crane.applySettings({
        runGuard: Boolean(c.runGuard),
        debounceMs: typeof c.debounceMs === 'number' ? c.debounceMs : 500,
        dryRun: typeof c.dryRun === 'string' ? c.dryRun : 'safe',
        undo: Boolean(c.undo),
        undoReserve: typeof c.undoReserve === 'number' ? c.undoReserve : 1024,
        undoHold: typeof c.undoHold === 'number' ? c.undoHold : 600
      });
    };
    const ready = registry
      ? registry
          .load(PLUGIN_ID)
          .then(s => {
            load(s);
            s.changed.connect(load);
          })
          .catch(err => console.warn('crane: settings unavailable, using the defaults', err))
      : Promise.resolve();
    void ready.then(() => crane.start()).catch(err => console.warn('crane: could not start', err));
  }
};

/** The status text again in a notebook's toolbar, where there is no status bar (Notebook 7). */
class StatusItemMirror extends Widget {
  private observer: MutationObserver;

  constructor(source: Widget) {
    super();
    this.addClass('crane-status');
    const copy = () => {
      this.node.textContent = source.node.textContent;
      this.node.title = source.node.title;
      this.node.dataset.level = source.node.dataset.level || '';
    };
    copy();
    this.observer = new MutationObserver(copy);
    this.observer.observe(source.node, { childList: true, characterData: true, subtree: true, attributes: true });
  }

  dispose(): void {
    this.observer.disconnect();
    super.dispose();
  }
}

export default plugin;
