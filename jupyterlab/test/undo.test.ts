import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import type { ICellSnapshot } from '../src/protocol';
import { answerLine, changedSomething, crashLine, crashedLastRun, lastCount, segments } from '../src/undo';

function code(id: string, executionOrder: number | null, success: boolean | null): ICellSnapshot {
  return { id, kind: 'code', text: '', executionOrder, success };
}

test('the crashed run is the cell with the highest execution count, when it raised', () => {
  const cells = [code('a', 1, true), { ...code('m', null, null), kind: 'markdown' as const }, code('b', 2, false), code('c', null, null)];
  assert.deepEqual(crashedLastRun(cells), { cellId: 'b', executionCount: 2 });
  assert.equal(lastCount(cells), 2);
  // a clean cell ran after it: the crash is no longer the kernel's last cell
  assert.equal(crashedLastRun([...cells.slice(0, 3), code('c', 3, true)]), null);
  assert.equal(lastCount([...cells.slice(0, 3), code('c', 3, true)]), 3);
  // an older crash, a later clean run above it in the notebook
  assert.equal(crashedLastRun([code('a', 5, true), code('b', 4, false)]), null);
  assert.deepEqual(crashedLastRun([code('a', 5, false), code('b', 4, true)]), { cellId: 'a', executionCount: 5 });
  assert.equal(crashedLastRun([]), null);
  assert.equal(crashedLastRun([code('a', null, null)]), null);
  assert.equal(lastCount([]), 0);
});

test("the crash line is the server's, without the hover's pointer to the command", () => {
  const run = { cellId: 'b', executionCount: 2 };
  const line =
    'Before raising at line 2 the cell mutated `df` in place. Undo: command crane.undoLastCell.';
  assert.equal(crashLine({ line, executionCount: 2, mutated: ['df'] }, run), 'Before raising at line 2 the cell mutated `df` in place.');
  assert.equal(crashLine({ line: 'Before raising at line 1 the cell changed no name.', executionCount: 2 }, run), 'Before raising at line 1 the cell changed no name.');
  assert.equal(crashLine({ line, executionCount: 3 }, run), null, "another run's line");
  assert.equal(crashLine({ text: 'the cell bound `x`', executionCount: 2 }, run), null, 'a run that did not raise');
  assert.equal(crashLine({ error: 'undo is off (the crane.undo setting)' }, run), null);
  assert.equal(crashLine(null, run), null);
  assert.equal(crashLine({ line: 'Before raising at line 3 the cell bound `x`' }, run), 'Before raising at line 3 the cell bound `x`.');
});

test('the button is offered only when the run changed a name', () => {
  assert.equal(changedSomething({ mutated: ['df'] }), true);
  assert.equal(changedSomething({ bound: [], rebound: [], deleted: ['tmp'] }), true);
  assert.equal(changedSomething({ bound: [], rebound: [], deleted: [], mutated: [] }), false);
  assert.equal(changedSomething({}), false);
});

test("the undo's answer reads as one line: restored; deleted; could not restore, with reasons", () => {
  assert.deepEqual(
    answerLine({
      restored: ['df', 'model'],
      deleted: ['tmp'],
      kept: [{ name: 'f', reason: 'an open file' }],
      cell: 2,
      executionCount: 5
    }),
    { ok: true, text: 'Undone: restored `df`, `model`; deleted `tmp`; could not restore `f` (an open file)' }
  );
  assert.deepEqual(answerLine({ restored: ['df'], deleted: [], kept: [] }), { ok: true, text: 'Undone: restored `df`' });
  assert.deepEqual(answerLine({ restored: [], deleted: [], kept: [] }), {
    ok: true,
    text: 'Undone: nothing to put back (the cell changed no name)'
  });
  assert.deepEqual(answerLine({ error: 'cannot undo cell [3]: it was undone already' }), {
    ok: false,
    text: 'Not undone: cannot undo cell [3]: it was undone already'
  });
  assert.equal(answerLine(null).ok, false);
  assert.equal(answerLine('nonsense').ok, false);
  // names that are not strings are left out, never shown as "undefined"
  assert.equal(answerLine({ restored: ['a', 3, null], kept: [{ reason: 'x' }] }).text, 'Undone: restored `a`');
});

test('a line is cut at its backquoted names, shown as code', () => {
  assert.deepEqual(segments('restored `df`, `m`; deleted'), [
    { text: 'restored ', code: false },
    { text: 'df', code: true },
    { text: ', ', code: false },
    { text: 'm', code: true },
    { text: '; deleted', code: false }
  ]);
  assert.deepEqual(segments('no names'), [{ text: 'no names', code: false }]);
  assert.deepEqual(segments('odd ` quote'), [{ text: 'odd ` quote', code: false }]);
});
