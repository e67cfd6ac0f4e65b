/**
 * The undo line and button on a crashed cell (issue 37; docs/undo.md). With undo on, once the
 * kernel's last cell raised and the kernel is idle, `crane.cellChanges` says what that run changed
 * before raising; the line shows under the cell (below its verdict, if any) with an Undo button
 * that runs `crane.undoLastCell` and shows its answer in one line there. Gone when another cell
 * runs, the cell runs again, or the kernel restarts: an undo applies to the last cell only. A DOM
 * node beside the cell's editor, never the notebook's model: outputs and files are never touched.
 */

import type { Cell } from '@jupyterlab/cells';

import { el } from './dom';
import type { ICellSnapshot } from './protocol';
import {
  CHANGES_COMMAND,
  ICellChanges,
  ICrashedRun,
  UNDO_COMMAND,
  UNDO_LABEL,
  answerLine,
  changedSomething,
  crashLine,
  crashedLastRun,
  lastCount,
  segments
} from './undo';

/** What the box needs of its notebook (NotebookSync). */
export interface IUndoHost {
  readonly uri: string;
  enabled(): boolean;
  cells(): ICellSnapshot[];
  kernelIdle(): boolean;
  /** a cell is running or queued: the last run is about to change */
  running(): boolean;
  widget(cellId: string): Cell | undefined;
  /** sends the notebook's pending changes (execution counts) before a command reads them */
  flush(): void;
  request<T = any>(method: string, params: any, timeoutMs?: number): Promise<T>;
}

interface IShown {
  run: ICrashedRun;
  node: HTMLElement;
  button: HTMLButtonElement | null;
}

const CHANGES_TIMEOUT_MS = 30000;
const UNDO_TIMEOUT_MS = 90000; // the kernel's own limit is 60 s
const RETRIES = 4; // the server answers no line while its own check holds the kernel: ask again
const RETRY_MS = 1000;

export class CellUndo {
  private shown: IShown | null = null;
  /** the crashed run asked about: not again while it stays the last run (a count can recur after a
   * restart, or in a notebook saved with its outputs, so a run is forgotten once it is not the last) */
  private asked: ICrashedRun | null = null;
  private disposed = false;

  constructor(private host: IUndoHost) {}

  /** The notebook changed (a run, an output, a count) or its kernel became idle. */
  update(cells: readonly ICellSnapshot[]): void {
    if (this.disposed) {
      return;
    }
    const running = this.host.running();
    if (this.shown && (running || !this.isLast(cells, this.shown.run))) {
      this.remove();
    }
    const run = crashedLastRun(cells);
    if (this.asked && !sameRun(this.asked, run)) {
      this.asked = null;
    }
    if (!run || this.asked || this.shown || running || !this.host.enabled() || !this.host.kernelIdle()) {
      return;
    }
    this.asked = run;
    void this.ask(run, 0);
  }

  /** A restart or another kernel: the state the line spoke of is gone, and counts start again. */
  restarted(): void {
    this.remove();
    this.asked = crashedLastRun(this.host.cells()); // that crash was in the old process: not asked
  }

  dispose(): void {
    this.disposed = true;
    this.remove();
  }

  /** The cell the line is on, if any (tests and the palette command read it). */
  get shownCell(): string | null {
    return this.shown ? this.shown.run.cellId : null;
  }

  /**
   * The palette command: the shown button's undo, or else `crane.undoLastCell` for the notebook, its
   * answer on the cell it undid when that cell is here. Returns the answer's line.
   */
  async undoLast(): Promise<{ ok: boolean; text: string; shown: boolean }> {
    if (this.shown && this.shown.button && !this.shown.button.disabled) {
      const got = await this.undo(this.shown);
      return { ...got, shown: true };
    }
    const answer = await this.callUndo();
    const got = answerLine(answer);
    const cells = this.host.cells();
    const count = answer && typeof answer.executionCount === 'number' ? answer.executionCount : null;
    const cell = count !== null ? cells.find(c => c.kind === 'code' && c.executionOrder === count) : undefined;
    if (cell && count !== null && this.isLast(cells, { cellId: cell.id, executionCount: count })) {
      this.remove();
      const shown = this.place({ cellId: cell.id, executionCount: count });
      if (shown) {
        this.answer(shown, got);
        return { ...got, shown: true };
      }
    }
    return { ...got, shown: false };
  }

  // ------------------------------------------------------------------ internals

  private isLast(cells: readonly ICellSnapshot[], run: ICrashedRun): boolean {
    const cell = cells.find(c => c.id === run.cellId);
    return Boolean(cell && cell.executionOrder === run.executionCount && lastCount(cells) === run.executionCount);
  }

  private async ask(run: ICrashedRun, attempt: number): Promise<void> {
    this.host.flush();
    let changes: ICellChanges | null = null;
    try {
      changes = await this.host.request<ICellChanges>(
        'workspace/executeCommand',
        { command: CHANGES_COMMAND, arguments: [{ uri: this.host.uri }] },
        CHANGES_TIMEOUT_MS
      );
    } catch {
      changes = null; // not connected, or timed out: asked again below
    }
    if (this.disposed || this.shown || !sameRun(this.asked, run)) {
      return;
    }
    const line = crashLine(changes, run);
    if (line === null) {
      const transient = !changes || !changes.error || changes.error.startsWith('cannot say');
      if (transient && attempt < RETRIES) {
        setTimeout(() => {
          if (!this.disposed && !this.shown && this.host.kernelIdle()) {
            void this.ask(run, attempt + 1);
          } else if (!this.shown) {
            this.asked = null; // asked again when the kernel is idle
          }
        }, RETRY_MS);
      }
      return;
    }
    if (!this.isLast(this.host.cells(), run) || this.host.running()) {
      return; // another cell ran meanwhile, or runs
    }
    const shown = this.place(run);
    if (!shown) {
      return;
    }
    shown.node.appendChild(lineNode('crane-undo-line', line));
    if (changes && changedSomething(changes)) {
      const button = el('button', 'crane-undo-button jp-mod-styled', UNDO_LABEL) as HTMLButtonElement;
      button.type = 'button';
      button.title = 'Put back the names this cell changed, as they were before it ran (crane.undoLastCell)';
      button.addEventListener('click', event => {
        event.preventDefault();
        event.stopPropagation(); // a click in the box must not select or enter the cell
        void this.undo(shown);
      });
      shown.node.appendChild(button);
      shown.button = button;
    }
  }

  private async undo(shown: IShown): Promise<{ ok: boolean; text: string }> {
    if (shown.button) {
      shown.button.disabled = true;
      shown.button.textContent = 'Undoing…';
    }
    const got = answerLine(await this.callUndo());
    if (this.shown === shown) {
      this.answer(shown, got);
    }
    return got;
  }

  private async callUndo(): Promise<any> {
    this.host.flush();
    try {
      return await this.host.request(
        'workspace/executeCommand',
        { command: UNDO_COMMAND, arguments: [{ uri: this.host.uri }] },
        UNDO_TIMEOUT_MS
      );
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) };
    }
  }

  /** The answer replaces the line and the button: one line, until the next run. */
  private answer(shown: IShown, got: { ok: boolean; text: string }): void {
    shown.node.textContent = '';
    shown.button = null;
    const line = lineNode('crane-undo-answer', got.text);
    line.dataset.ok = String(got.ok);
    shown.node.appendChild(line);
    shown.node.dataset.state = got.ok ? 'undone' : 'refused';
  }

  private place(run: ICrashedRun): IShown | null {
    const widget = this.host.widget(run.cellId);
    if (!widget) {
      return null;
    }
    const node = el('div', 'crane-undo');
    node.dataset.cellId = run.cellId;
    node.dataset.executionCount = String(run.executionCount);
    node.dataset.state = 'changes';
    const anchor =
      widget.node.querySelector('.crane-verdict') || widget.node.querySelector('.jp-Cell-inputWrapper');
    if (anchor && anchor.parentNode) {
      anchor.parentNode.insertBefore(node, anchor.nextSibling);
    } else {
      widget.node.appendChild(node);
    }
    this.shown = { run, node, button: null };
    return this.shown;
  }

  private remove(): void {
    if (this.shown) {
      this.shown.node.remove();
      this.shown = null;
    }
  }
}

function sameRun(a: ICrashedRun | null, b: ICrashedRun | null): boolean {
  return Boolean(a && b && a.cellId === b.cellId && a.executionCount === b.executionCount);
}

/** A line with its `names` as code: textContent only (names and reasons come from the kernel). */
function lineNode(cls: string, text: string): HTMLElement {
  const node = el('span', cls);
  for (const part of segments(text)) {
    node.appendChild(part.code ? el('code', '', part.text) : document.createTextNode(part.text));
  }
  return node;
}
