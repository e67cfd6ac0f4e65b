/**
 * The preview box under a cell (issue 37; docs/undo.md, "Preview"): "crane: Try cell in sandbox" asks
 * `crane.previewCell` about the cell's current text, which the server runs in a jailed copy of the
 * kernel, and shows the answer under the cell: the verdict, what it would change (names as code), what
 * it would print (a <pre>), its value, or the one line of a refusal. One box per notebook, with a close
 * button; it goes when that cell's text changes or another preview replaces it. A DOM node beside the
 * cell's editor, never the notebook's model: outputs, execution counts and the file are not touched.
 */

import { el } from './dom';
import type { Cell } from '@jupyterlab/cells';
import type { ICellSnapshot } from './protocol';
import {
  HEADINGS,
  PREVIEW_CHANGED,
  PREVIEW_COMMAND,
  PREVIEW_PENDING,
  PreviewView,
  answersCell,
  codePosition,
  previewView
} from './preview';
import { segments } from './undo';

/** What the box needs of its notebook (NotebookSync). */
export interface IPreviewHost {
  readonly uri: string;
  cells(): ICellSnapshot[];
  widget(cellId: string): Cell | undefined;
  /** sends the notebook's pending changes, so that the server tries the text shown */
  flush(): void;
  request<T = any>(method: string, params: any, timeoutMs?: number): Promise<T>;
}

interface IShown {
  cellId: string;
  text: string; // the cell text tried
  node: HTMLElement;
}

/** the server waits for an idle kernel, then the copy has the Re-check's 30 s budget */
const PREVIEW_TIMEOUT_MS = 120000;

export class CellPreview {
  private shown: IShown | null = null;
  private disposed = false;

  constructor(private host: IPreviewHost) {}

  /** The cell the box is on, if any. */
  get shownCell(): string | null {
    return this.shown ? this.shown.cellId : null;
  }

  /**
   * Tries the cell's current text in the sandbox and shows the answer under it (a box saying it is
   * being tried meanwhile). Returns what the box shows, or null when the box went before the answer
   * came (closed, replaced, the cell edited).
   */
  async tryCell(cellId: string): Promise<PreviewView | null> {
    this.host.flush();
    const cells = this.host.cells();
    const cell = cells.find(c => c.id === cellId);
    const position = cell && cell.kind === 'code' ? codePosition(cells, cellId) : null;
    this.remove();
    const shown = cell ? this.place(cellId, cell.text) : null;
    if (!shown) {
      return null;
    }
    if (position === null) {
      return this.render(shown, { ok: false, text: 'Not tried: only a code cell can be tried' });
    }
    let answer: unknown;
    try {
      answer = await this.host.request(
        'workspace/executeCommand',
        { command: PREVIEW_COMMAND, arguments: [{ uri: this.host.uri, cell: position }] },
        PREVIEW_TIMEOUT_MS
      );
    } catch (err) {
      answer = { error: err instanceof Error ? err.message : String(err) };
    }
    if (this.disposed || this.shown !== shown) {
      return null; // closed or replaced meanwhile
    }
    const now = this.host.cells();
    const after = now.find(c => c.id === cellId);
    if (!after || after.text !== shown.text || codePosition(now, cellId) !== position) {
      return this.render(shown, { ok: false, text: PREVIEW_CHANGED });
    }
    const view = answersCell(answer, position)
      ? previewView(answer)
      : ({ ok: false, text: 'Not tried: the answer was for another cell' } as const);
    return this.render(shown, view);
  }

  /** The notebook changed: the box goes once its cell's text does (or the cell is gone). */
  update(cells: readonly ICellSnapshot[]): void {
    if (!this.shown) {
      return;
    }
    const cell = cells.find(c => c.id === this.shown!.cellId);
    if (!cell || cell.text !== this.shown.text) {
      this.remove();
    }
  }

  close(): void {
    this.remove();
  }

  dispose(): void {
    this.disposed = true;
    this.remove();
  }

  // ------------------------------------------------------------------ internals

  private place(cellId: string, text: string): IShown | null {
    const widget = this.host.widget(cellId);
    if (!widget) {
      return null;
    }
    const node = el('div', 'crane-preview');
    node.dataset.cellId = cellId;
    node.dataset.state = 'pending';
    const shown: IShown = { cellId, text, node };
    node.appendChild(this.head(shown, PREVIEW_PENDING, 'crane-preview-pending'));
    // below the cell's verdict and undo line, if any
    const anchor =
      widget.node.querySelector('.crane-undo') ||
      widget.node.querySelector('.crane-verdict') ||
      widget.node.querySelector('.jp-Cell-inputWrapper');
    if (anchor && anchor.parentNode) {
      anchor.parentNode.insertBefore(node, anchor.nextSibling);
    } else {
      widget.node.appendChild(node);
    }
    this.shown = shown;
    return shown;
  }

  /** The box's first line (the verdict, or the one line) with the close button. */
  private head(shown: IShown, text: string, cls: string): HTMLElement {
    const head = el('div', 'crane-preview-head');
    head.appendChild(lineNode(cls, text));
    const close = el('button', 'crane-preview-close', '×') as HTMLButtonElement;
    close.type = 'button';
    close.title = 'Close the preview';
    close.setAttribute('aria-label', 'Close the preview');
    close.addEventListener('click', event => {
      event.preventDefault();
      event.stopPropagation(); // a click in the box must not select or enter the cell
      if (this.shown === shown) {
        this.remove();
      }
    });
    head.appendChild(close);
    return head;
  }

  private render(shown: IShown, view: PreviewView): PreviewView {
    const node = shown.node;
    node.textContent = '';
    if (!view.ok) {
      node.dataset.state = 'refused';
      node.appendChild(this.head(shown, view.text, 'crane-preview-error'));
      return view;
    }
    node.dataset.state = 'shown';
    node.dataset.clean = String(view.clean);
    node.appendChild(this.head(shown, view.head, 'crane-preview-verdict'));
    node.appendChild(el('div', 'crane-preview-heading', HEADINGS.changes));
    const list = el('ul', 'crane-preview-diff');
    for (const change of view.changes) {
      list.appendChild(lineNode('', change, 'li'));
    }
    node.appendChild(list);
    if (view.stdout !== null) {
      node.appendChild(el('div', 'crane-preview-heading', HEADINGS.stdout));
      node.appendChild(el('pre', 'crane-preview-stdout', view.stdout));
      if (view.stdoutNote) {
        node.appendChild(el('div', 'crane-preview-cut', view.stdoutNote));
      }
    }
    if (view.result !== null) {
      node.appendChild(el('div', 'crane-preview-heading', HEADINGS.result));
      node.appendChild(el('pre', 'crane-preview-result', view.result));
      if (view.resultNote) {
        node.appendChild(el('div', 'crane-preview-cut', view.resultNote));
      }
    }
    if (view.note) {
      node.appendChild(el('div', 'crane-preview-note', view.note));
    }
    return view;
  }

  private remove(): void {
    if (this.shown) {
      this.shown.node.remove();
      this.shown = null;
    }
  }
}

/** A line with its `names` as code: textContent only (names and values come from the kernel). */
function lineNode(cls: string, text: string, tag = 'span'): HTMLElement {
  const node = el(tag, cls);
  for (const part of segments(text)) {
    node.appendChild(part.code ? el('code', '', part.text) : document.createTextNode(part.text));
  }
  return node;
}
