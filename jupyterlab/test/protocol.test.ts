import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { ICellSnapshot, INotebookSnapshot, NotebookDocumentState, cellIdOf, cellUri, notebookUri } from '../src/protocol';

const NB = 'file:///srv/work/sales%20q1.ipynb';

function snap(cells: Partial<ICellSnapshot>[]): INotebookSnapshot {
  return {
    uri: NB,
    cells: cells.map((c, i) => ({
      id: c.id ?? `c${i}`,
      kind: c.kind ?? 'code',
      text: c.text ?? '',
      executionOrder: c.executionOrder ?? null,
      success: c.success ?? null
    }))
  };
}

test('notebook and cell URIs: root + encoded path, cells by stable id, and back', () => {
  assert.equal(notebookUri('file:///srv/work/', 'sales q1.ipynb'), NB);
  assert.equal(notebookUri(undefined, 'a/b.ipynb'), 'file:///a/b.ipynb');
  const uri = cellUri(NB, 'ab#1');
  assert.equal(uri, 'vscode-notebook-cell:/srv/work/sales%20q1.ipynb#ab%231');
  assert.equal(cellIdOf(NB, uri), 'ab#1');
  assert.equal(cellIdOf('file:///other.ipynb', uri), null);
});

test('didOpen carries exact cells, kinds, texts and execution summaries', () => {
  const state = new NotebookDocumentState();
  const open = state.open(
    snap([
      { text: 'import pandas as pd', executionOrder: 1, success: true },
      { kind: 'markdown', text: '# Title' },
      { text: 'df["x"]' }
    ])
  );
  assert.equal(open.notebookDocument.notebookType, 'jupyter-notebook');
  assert.deepEqual(
    open.notebookDocument.cells.map((c: any) => [c.kind, c.executionSummary?.executionOrder]),
    [
      [2, 1],
      [1, undefined],
      [2, undefined]
    ]
  );
  assert.deepEqual(
    open.cellTextDocuments.map((d: any) => [d.languageId, d.text, d.version]),
    [
      ['python', 'import pandas as pd', 1],
      ['markdown', '# Title', 1],
      ['python', 'df["x"]', 1]
    ]
  );
});

test('a keystroke is one whole-text change with a rising version; nothing changed is no message', () => {
  const state = new NotebookDocumentState();
  state.open(snap([{ text: 'a = 1' }, { text: 'b' }]));
  assert.equal(state.change(snap([{ text: 'a = 1' }, { text: 'b' }])), null);
  const first = state.change(snap([{ text: 'a = 1' }, { text: 'b.' }]));
  assert.deepEqual(first.change.cells.textContent, [
    { document: { uri: cellUri(NB, 'c1'), version: 2 }, changes: [{ text: 'b.' }] }
  ]);
  assert.equal(first.change.cells.structure, undefined);
  const second = state.change(snap([{ text: 'a = 1' }, { text: 'b.x' }]));
  assert.equal(second.change.cells.textContent[0].document.version, 3);
  assert.ok(second.notebookDocument.version > first.notebookDocument.version);
  assert.equal(state.sentText('c1'), 'b.x');
});

test('running a cell sends its execution order (and failure) as cell data', () => {
  const state = new NotebookDocumentState();
  state.open(snap([{ text: 'a = 1' }, { text: '1/0' }]));
  const ran = state.change(snap([{ text: 'a = 1', executionOrder: 1, success: true }, { text: '1/0' }]));
  assert.deepEqual(ran.change.cells.data, [
    { kind: 2, document: cellUri(NB, 'c0'), executionSummary: { executionOrder: 1, success: true } }
  ]);
  const failed = state.change(
    snap([
      { text: 'a = 1', executionOrder: 1, success: true },
      { text: '1/0', executionOrder: 2, success: false }
    ])
  );
  assert.deepEqual(failed.change.cells.data[0].executionSummary, { executionOrder: 2, success: false });
});

test('inserting and deleting cells is a structure change that opens and closes exactly those cells', () => {
  const state = new NotebookDocumentState();
  state.open(snap([{ id: 'a', text: 'x = 1' }, { id: 'b', text: 'y' }]));
  const inserted = state.change(snap([{ id: 'a', text: 'x = 1' }, { id: 'n', text: 'z = 2' }, { id: 'b', text: 'y' }]));
  const structure = inserted.change.cells.structure;
  assert.deepEqual(structure.array.start, 0);
  assert.deepEqual(structure.array.deleteCount, 2);
  assert.deepEqual(
    structure.array.cells.map((c: any) => c.document),
    ['a', 'n', 'b'].map(id => cellUri(NB, id))
  );
  assert.deepEqual(structure.didOpen.map((d: any) => [d.uri, d.text]), [[cellUri(NB, 'n'), 'z = 2']]);
  assert.deepEqual(structure.didClose, []);
  const deleted = state.change(snap([{ id: 'n', text: 'z = 2' }, { id: 'b', text: 'y' }]));
  assert.deepEqual(deleted.change.cells.structure.didClose, [{ uri: cellUri(NB, 'a') }]);
  const close = state.close();
  assert.deepEqual(
    close.cellTextDocuments.map((d: any) => d.uri),
    ['n', 'b'].map(id => cellUri(NB, id))
  );
});
