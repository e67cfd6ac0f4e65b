/**
 * The notebook as LSP sees it: `notebookDocument/*` messages built from a plain snapshot of the
 * JupyterLab notebook model (exact cells, kinds, execution order), so the server never guesses
 * cell boundaries from joined text. Pure: no JupyterLab import, tested with node's test runner.
 */

export const CODE = 2; // NotebookCellKind.Code
export const MARKUP = 1; // NotebookCellKind.Markup

export interface ICellSnapshot {
  id: string;
  kind: 'code' | 'markdown' | 'raw';
  text: string;
  executionOrder: number | null;
  success: boolean | null;
}

export interface INotebookSnapshot {
  uri: string;
  cells: ICellSnapshot[];
}

export interface ILspCell {
  kind: number;
  document: string;
  executionSummary?: { executionOrder: number; success?: boolean };
}

export interface ITextItem {
  uri: string;
  languageId: string;
  version: number;
  text: string;
}

/** The notebook's URI: the server root (jupyter-lsp's `rootUri`) joined with its path. */
export function notebookUri(rootUri: string | undefined, path: string): string {
  const clean = path.replace(/^\/+/, '');
  const encoded = clean.split('/').map(encodeURIComponent).join('/');
  if (!rootUri) {
    return 'file:///' + encoded;
  }
  return rootUri.replace(/\/+$/, '') + '/' + encoded;
}

/** A cell's document URI: VS Code's scheme, the notebook's path, the cell's stable id. */
export function cellUri(nbUri: string, cellId: string): string {
  const path = nbUri.replace(/^file:\/\//, '');
  return `vscode-notebook-cell:${path}#${encodeURIComponent(cellId)}`;
}

/** The cell id of a cell URI made by `cellUri` (null for any other document). */
export function cellIdOf(nbUri: string, uri: string): string | null {
  const prefix = cellUri(nbUri, '');
  if (!uri.startsWith(prefix)) {
    return null;
  }
  return decodeURIComponent(uri.slice(prefix.length));
}

export function languageOf(cell: ICellSnapshot): string {
  return cell.kind === 'code' ? 'python' : cell.kind === 'markdown' ? 'markdown' : 'raw';
}

export function lspCell(nbUri: string, cell: ICellSnapshot): ILspCell {
  const out: ILspCell = { kind: cell.kind === 'code' ? CODE : MARKUP, document: cellUri(nbUri, cell.id) };
  if (cell.kind === 'code' && cell.executionOrder !== null) {
    out.executionSummary = { executionOrder: cell.executionOrder };
    if (cell.success !== null) {
      out.executionSummary.success = cell.success;
    }
  }
  return out;
}

/** Tracks what the server was told, so each change becomes the smallest correct message. */
export class NotebookDocumentState {
  version = 0;
  private cellVersions = new Map<string, number>();
  private sent: INotebookSnapshot | null = null;

  get opened(): boolean {
    return this.sent !== null;
  }

  /** `notebookDocument/didOpen` params for the snapshot. */
  open(snap: INotebookSnapshot): any {
    this.version = 1;
    this.cellVersions.clear();
    this.sent = clone(snap);
    return {
      notebookDocument: {
        uri: snap.uri,
        notebookType: 'jupyter-notebook',
        version: this.version,
        cells: snap.cells.map(c => lspCell(snap.uri, c))
      },
      cellTextDocuments: snap.cells.map(c => this.item(snap.uri, c))
    };
  }

  /** `notebookDocument/didChange` params from what was sent to `snap`, or null when nothing changed. */
  change(snap: INotebookSnapshot): any | null {
    const before = this.sent;
    if (before === null) {
      throw new Error('notebook not opened');
    }
    const uri = snap.uri;
    const cells: any = {};
    const oldIds = before.cells.map(c => c.id);
    const newIds = snap.cells.map(c => c.id);
    const oldById = new Map(before.cells.map(c => [c.id, c] as [string, ICellSnapshot]));
    if (!sameList(oldIds, newIds)) {
      const kept = new Set(newIds);
      const had = new Set(oldIds);
      cells.structure = {
        array: { start: 0, deleteCount: oldIds.length, cells: snap.cells.map(c => lspCell(uri, c)) },
        didOpen: snap.cells.filter(c => !had.has(c.id)).map(c => this.item(uri, c)),
        didClose: before.cells.filter(c => !kept.has(c.id)).map(c => ({ uri: cellUri(uri, c.id) }))
      };
      for (const c of before.cells) {
        if (!kept.has(c.id)) {
          this.cellVersions.delete(c.id);
        }
      }
    }
    const data: ILspCell[] = [];
    const textContent: any[] = [];
    for (const c of snap.cells) {
      const old = oldById.get(c.id);
      if (old === undefined) {
        continue; // opened above with its text and summary
      }
      if (old.executionOrder !== c.executionOrder || old.success !== c.success || old.kind !== c.kind) {
        data.push(lspCell(uri, c));
      }
      if (old.text !== c.text) {
        const version = (this.cellVersions.get(c.id) || 1) + 1;
        this.cellVersions.set(c.id, version);
        textContent.push({
          document: { uri: cellUri(uri, c.id), version },
          changes: [{ text: c.text }]
        });
      }
    }
    if (data.length) {
      cells.data = data;
    }
    if (textContent.length) {
      cells.textContent = textContent;
    }
    if (!Object.keys(cells).length) {
      return null;
    }
    this.version += 1;
    this.sent = clone(snap);
    return { notebookDocument: { uri, version: this.version }, change: { cells } };
  }

  /** `notebookDocument/didClose` params. */
  close(): any | null {
    const before = this.sent;
    if (before === null) {
      return null;
    }
    this.sent = null;
    return {
      notebookDocument: { uri: before.uri },
      cellTextDocuments: before.cells.map(c => ({ uri: cellUri(before.uri, c.id) }))
    };
  }

  /** The text the server has for a cell (what a verdict received now was computed against, at best). */
  sentText(cellId: string): string | undefined {
    return this.sent?.cells.find(c => c.id === cellId)?.text;
  }

  private item(nbUri: string, c: ICellSnapshot): ITextItem {
    this.cellVersions.set(c.id, 1);
    return { uri: cellUri(nbUri, c.id), languageId: languageOf(c), version: 1, text: c.text };
  }
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function clone(snap: INotebookSnapshot): INotebookSnapshot {
  return { uri: snap.uri, cells: snap.cells.map(c => ({ ...c })) };
}
