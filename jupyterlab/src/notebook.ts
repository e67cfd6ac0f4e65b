/**
 * One open notebook kept in sync with crane-lsp: its cells as `notebookDocument/*`, its own kernel
 * attached (by kernel id, again after a restart or a kernel change), and what the server finds
 * drawn in the cells: CodeMirror lint marks with their hover tooltip, and the verdict box.
 */

import { setDiagnostics } from '@codemirror/lint';
import type { EditorView } from '@codemirror/view';
import type { Cell, ICodeCellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import type { FixRow } from './generated/cellVerdict';
import { confirmFix } from './fixdialog';
import { fixEdit } from './fixes';
import { IVerdict, shouldAsk } from './guard';
import { ILspDiagnostic, toMarks } from './marks';
import { ICellSnapshot, INotebookSnapshot, NotebookDocumentState, cellIdOf, cellUri, notebookUri } from './protocol';
import { CellPreview } from './previewbox';
import type { IServerStatus } from './statustext';
import { CellUndo } from './undobox';
import { renderVerdict } from './verdict';

export interface IClient {
  readonly isReady: boolean;
  notify(method: string, params: any): void;
  request<T = any>(method: string, params: any, timeoutMs?: number): Promise<T>;
}

interface IShownVerdict {
  verdict: IVerdict;
  text: string; // the cell text the verdict is for
  node: HTMLElement;
}

const OUTLINE_MS = 4000;

export class NotebookSync {
  uri: string;
  server: IServerStatus | null = null;
  private doc = new NotebookDocumentState();
  private diagnostics = new Map<string, ILspDiagnostic[]>();
  private verdicts = new Map<string, IShownVerdict>();
  private watched = new WeakSet<object>();
  private flushQueued = false;
  private attachedKernel: string | null = null;
  private disposed = false;
  private verdictSeqs = new Map<string, number>();
  /** the crashed last cell's undo line and button (docs/undo.md) */
  readonly undo: CellUndo;
  /** the "Try cell in sandbox" box (docs/undo.md, "Preview") */
  readonly preview: CellPreview;

  constructor(
    readonly panel: NotebookPanel,
    private client: IClient,
    private rootUri: string | undefined,
    private changed: () => void,
    undoOn: () => boolean = () => false
  ) {
    this.uri = notebookUri(rootUri, panel.context.path);
    const self = this; // the uri changes with the notebook's path
    this.undo = new CellUndo({
      get uri() {
        return self.uri;
      },
      enabled: undoOn,
      cells: () => this.snapshot().cells,
      kernelIdle: () => this.panel.sessionContext.session?.kernel?.status === 'idle',
      running: () => this.anyRunning(),
      widget: id => this.widget(id),
      flush: () => this.flush(),
      request: (m, p, t) => this.client.request(m, p, t)
    });
    this.preview = new CellPreview({
      get uri() {
        return self.uri;
      },
      cells: () => this.snapshot().cells,
      widget: id => this.widget(id),
      flush: () => this.flush(),
      request: (m, p, t) => this.client.request(m, p, t)
    });
    void panel.context.ready.then(() => {
      if (this.disposed) {
        return;
      }
      const model = panel.content.model;
      if (model) {
        model.cells.changed.connect(this.onCells, this);
        this.watchCells();
      }
      panel.sessionContext.kernelChanged.connect(this.onKernel, this);
      panel.sessionContext.statusChanged.connect(this.onKernelStatus, this);
      panel.context.pathChanged.connect(this.onPath, this);
      this.queueFlush();
      this.attach();
    });
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    const close = this.doc.close();
    if (close && this.client.isReady) {
      this.client.notify('notebookDocument/didClose', close);
    }
    for (const shown of this.verdicts.values()) {
      shown.node.remove();
    }
    this.verdicts.clear();
    this.undo.dispose();
    this.preview.dispose();
  }

  /** The connection came (back): the server knows nothing of this notebook. */
  reopen(): void {
    this.doc = new NotebookDocumentState();
    this.attachedKernel = null;
    this.queueFlush();
    this.attach();
  }

  get kernelStatus(): string | null {
    const kernel = this.panel.sessionContext.session?.kernel;
    return kernel ? this.panel.sessionContext.kernelDisplayStatus || kernel.status : null;
  }

  snapshot(): INotebookSnapshot {
    const cells: ICellSnapshot[] = [];
    const model = this.panel.content.model;
    if (model) {
      for (let i = 0; i < model.cells.length; i++) {
        const cell = model.cells.get(i);
        const kind = cell.type === 'code' ? 'code' : cell.type === 'markdown' ? 'markdown' : 'raw';
        let order: number | null = null;
        let success: boolean | null = null;
        if (kind === 'code') {
          const code = cell as ICodeCellModel;
          order = typeof code.executionCount === 'number' ? code.executionCount : null;
          if (order !== null) {
            success = true;
            for (let j = 0; j < code.outputs.length; j++) {
              if (code.outputs.get(j).type === 'error') {
                success = false;
              }
            }
          }
        }
        cells.push({ id: cell.id, kind, text: cell.sharedModel.getSource(), executionOrder: order, success });
      }
    }
    return { uri: this.uri, cells };
  }

  /** Whether a code cell of this notebook is running or queued (JupyterLab marks both 'running'). */
  private anyRunning(): boolean {
    const model = this.panel.content.model;
    if (!model) {
      return false;
    }
    for (let i = 0; i < model.cells.length; i++) {
      const cell = model.cells.get(i);
      if (cell.type === 'code' && (cell as ICodeCellModel).executionState === 'running') {
        return true;
      }
    }
    return false;
  }

  // ------------------------------------------------------------------ sync

  queueFlush(): void {
    if (this.flushQueued || this.disposed) {
      return;
    }
    this.flushQueued = true;
    Promise.resolve().then(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  flush(): void {
    if (this.disposed || !this.client.isReady || !this.panel.content.model) {
      return;
    }
    const snap = this.snapshot();
    if (!this.doc.opened) {
      this.client.notify('notebookDocument/didOpen', this.doc.open(snap));
    } else {
      const change = this.doc.change(snap);
      if (change) {
        this.client.notify('notebookDocument/didChange', change);
      }
    }
    this.markStale(snap);
    this.undo.update(snap.cells);
    this.preview.update(snap.cells);
  }

  private onCells(): void {
    this.watchCells();
    this.queueFlush();
  }

  private watchCells(): void {
    const model = this.panel.content.model;
    if (!model) {
      return;
    }
    for (let i = 0; i < model.cells.length; i++) {
      const cell = model.cells.get(i);
      if (this.watched.has(cell)) {
        continue;
      }
      this.watched.add(cell);
      cell.contentChanged.connect(() => this.queueFlush(), this);
      if (cell.type === 'code') {
        const code = cell as ICodeCellModel;
        code.stateChanged.connect(() => this.queueFlush(), this);
        code.outputs.changed.connect(() => this.queueFlush(), this);
      }
    }
  }

  private onPath(): void {
    const close = this.doc.close();
    if (close && this.client.isReady) {
      this.client.notify('notebookDocument/didClose', close);
    }
    this.uri = notebookUri(this.rootUri, this.panel.context.path);
    this.reopen();
  }

  // ------------------------------------------------------------------ kernel

  private onKernel(): void {
    this.attachedKernel = null;
    this.undo.restarted();
    this.attach();
    this.changed();
  }

  private onKernelStatus(): void {
    const status = this.panel.sessionContext.session?.kernel?.status;
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this.attachedKernel = null; // attach again once it is back
      this.undo.restarted();
    } else if (status === 'idle' || status === 'busy') {
      this.attach();
      if (status === 'idle' && this.client.isReady) {
        this.undo.update(this.snapshot().cells); // a crashed run is asked about once the kernel is idle
      }
    }
    this.changed();
  }

  attach(): void {
    const kernel = this.panel.sessionContext.session?.kernel;
    if (!kernel || !this.client.isReady || this.disposed) {
      return;
    }
    if (kernel.status === 'restarting' || kernel.status === 'dead' || kernel.status === 'autorestarting') {
      return;
    }
    if (this.attachedKernel === kernel.id) {
      return;
    }
    this.flush(); // the server must know the notebook before it attaches a kernel to it
    this.attachedKernel = kernel.id;
    this.client.notify('crane/attachKernel', {
      notebookUri: this.uri,
      kernelId: kernel.id,
      connectionFile: `kernel-${kernel.id}.json`
    });
  }

  // ------------------------------------------------------------------ diagnostics

  owns(uri: string): string | null {
    return cellIdOf(this.uri, uri);
  }

  setDiagnostics(cellId: string, diagnostics: ILspDiagnostic[]): void {
    this.diagnostics.set(cellId, diagnostics);
    this.paint(cellId);
    void this.refreshVerdict(cellId);
  }

  diagnosticsOf(cellId: string): ILspDiagnostic[] {
    return this.diagnostics.get(cellId) || [];
  }

  widget(cellId: string): Cell | undefined {
    return this.panel.content.widgets.find(w => w.model.id === cellId);
  }

  private paint(cellId: string): void {
    const widget = this.widget(cellId);
    if (!widget) {
      return;
    }
    const view = editorView(widget);
    if (!view) {
      void widget.ready.then(() => {
        const later = editorView(widget);
        if (later) {
          this.paintView(later, cellId);
        }
      });
      return;
    }
    this.paintView(view, cellId);
  }

  private paintView(view: EditorView, cellId: string): void {
    const marks = toMarks(view.state.doc.toString(), this.diagnosticsOf(cellId));
    try {
      view.dispatch(setDiagnostics(view.state, marks));
    } catch (err) {
      console.warn('crane: could not mark the cell', err);
    }
  }

  // ------------------------------------------------------------------ verdicts

  cellUri(cellId: string): string {
    return cellUri(this.uri, cellId);
  }

  async verdict(cellId: string, timeoutMs = 5000): Promise<{ verdict: IVerdict; text: string } | null> {
    if (!this.client.isReady) {
      return null;
    }
    const text = this.doc.sentText(cellId);
    const uri = this.cellUri(cellId);
    try {
      const verdict = await this.client.request<IVerdict>(
        'workspace/executeCommand',
        { command: 'crane.cellVerdict', arguments: [{ uri, cell: uri }] },
        timeoutMs
      );
      return verdict && text !== undefined ? { verdict, text } : null;
    } catch {
      return null;
    }
  }

  private async refreshVerdict(cellId: string): Promise<void> {
    const seq = (this.verdictSeqs.get(cellId) || 0) + 1;
    this.verdictSeqs.set(cellId, seq);
    const hasCrash = this.diagnosticsOf(cellId).length > 0;
    const got = hasCrash ? await this.verdict(cellId) : null;
    if (this.disposed || seq !== this.verdictSeqs.get(cellId)) {
      if (!hasCrash) {
        this.removeVerdict(cellId);
      }
      return;
    }
    if (!got || !got.verdict.crash || got.verdict.ignored) {
      this.removeVerdict(cellId);
      return;
    }
    this.showVerdict(cellId, got.verdict, got.text);
  }

  private showVerdict(cellId: string, verdict: IVerdict, text: string): void {
    const widget = this.widget(cellId);
    this.removeVerdict(cellId);
    if (!widget) {
      return;
    }
    const current = widget.model.sharedModel.getSource();
    const node = renderVerdict({
      verdict,
      stale: Boolean(verdict.stale) || current !== text,
      originLabel: o => {
        const id = o.uri ? this.owns(o.uri) : null;
        if (id === null) {
          return null;
        }
        const count = o.executionCount ? `[${o.executionCount}] ` : '';
        return `${count}cell ${(o.index ?? 0) + 1}`;
      },
      onOrigin: o => this.showOrigin(o.uri || ''),
      onFix: fix => void this.offerFix(cellId, fix, text)
    });
    node.dataset.cellId = cellId;
    const anchor = widget.node.querySelector('.jp-Cell-inputWrapper');
    if (anchor && anchor.parentNode) {
      anchor.parentNode.insertBefore(node, anchor.nextSibling);
    } else {
      widget.node.appendChild(node);
    }
    this.verdicts.set(cellId, { verdict, text, node });
  }

  private removeVerdict(cellId: string): void {
    const shown = this.verdicts.get(cellId);
    if (shown) {
      shown.node.remove();
      this.verdicts.delete(cellId);
    }
  }

  /** A verdict whose cell was edited since is marked stale at once, until the re-check answers. */
  private markStale(snap: INotebookSnapshot): void {
    for (const [cellId, shown] of this.verdicts) {
      const cell = snap.cells.find(c => c.id === cellId);
      if (!cell) {
        this.removeVerdict(cellId);
        continue;
      }
      const stale = cell.text !== shown.text;
      if (stale !== shown.node.classList.contains('crane-verdict-stale')) {
        this.showVerdict(cellId, { ...shown.verdict, stale }, shown.text);
      }
    }
  }

  shownVerdict(cellId: string): IVerdict | null {
    return this.verdicts.get(cellId)?.verdict || null;
  }

  showOrigin(uri: string): void {
    const id = this.owns(uri);
    const widget = id !== null ? this.widget(id) : undefined;
    if (!widget) {
      return;
    }
    void this.panel.content.scrollToCell(widget).catch(() => undefined);
    widget.node.classList.add('crane-origin-outline');
    setTimeout(() => widget.node.classList.remove('crane-origin-outline'), OUTLINE_MS);
  }

  // ------------------------------------------------------------------ fixes

  /** The Fix button: the diff first; Apply edits the cell (never runs it). */
  async offerFix(cellId: string, fix: FixRow, text: string): Promise<boolean> {
    const widget = this.widget(cellId);
    if (!widget || widget.model.sharedModel.getSource() !== text) {
      return false; // edited since the verdict: the re-check brings the fixes for the new text
    }
    if (!(await confirmFix(text, fix))) {
      return false;
    }
    return this.applyFix(cellId, fix, text);
  }

  /**
   * Replaces the fix's lines of the cell's source in the shared model: one edit, which the cell's
   * undo takes back, as typing would be. Only on the text the fix was verified for; runs nothing.
   */
  applyFix(cellId: string, fix: FixRow, text: string): boolean {
    const widget = this.widget(cellId);
    const shared = widget ? widget.model.sharedModel : null;
    if (!shared || shared.getSource() !== text) {
      return false;
    }
    const edit = fixEdit(text, fix);
    if (!edit) {
      return false;
    }
    shared.updateSource(edit.from, edit.to, edit.insert);
    return true;
  }

  // ------------------------------------------------------------------ commands

  async recheck(cellId: string): Promise<void> {
    this.flush();
    const uri = this.cellUri(cellId);
    await this.client.request(
      'workspace/executeCommand',
      { command: 'crane.recheckCell', arguments: [{ uri, cell: uri }] },
      120000
    );
  }

  async ignore(cellId: string): Promise<boolean> {
    const uri = this.cellUri(cellId);
    const fromDiag = this.diagnosticsOf(cellId).find(d => d.data && d.data.predictionId);
    const predictionId = this.shownVerdict(cellId)?.predictionId || (fromDiag ? fromDiag.data.predictionId : undefined);
    if (!predictionId) {
      return false;
    }
    await this.client.request('workspace/executeCommand', {
      command: 'crane.ignoreFinding',
      arguments: [{ uri, cell: uri, predictionId }]
    });
    return true;
  }

  /** The verdict (and the text it is for) when the run guard should ask before running this cell now. */
  async guardVerdict(cellId: string): Promise<{ verdict: IVerdict; text: string } | null> {
    this.flush();
    const widget = this.widget(cellId);
    if (!widget || widget.model.type !== 'code') {
      return null;
    }
    const got = await this.verdict(cellId, 1500);
    if (!got) {
      return null;
    }
    return shouldAsk(got.verdict, got.text, widget.model.sharedModel.getSource()) ? got : null;
  }
}

function editorView(widget: Cell): EditorView | null {
  const editor = widget.editor as any;
  const view = editor && editor.editor;
  return view && view.state && typeof view.dispatch === 'function' ? (view as EditorView) : null;
}
