import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { answersCell, codePosition, previewView } from '../src/preview';
import type { ICellSnapshot } from '../src/protocol';

function cell(id: string, kind: 'code' | 'markdown'): ICellSnapshot {
  return { id, kind, text: '', executionOrder: null, success: null };
}

test("the cell asked about is counted among code cells, 1-based (the server's `cell`)", () => {
  const cells = [cell('m', 'markdown'), cell('a', 'code'), cell('n', 'markdown'), cell('b', 'code')];
  assert.equal(codePosition(cells, 'a'), 1);
  assert.equal(codePosition(cells, 'b'), 2);
  assert.equal(codePosition(cells, 'm'), null, 'a markdown cell is not tried');
  assert.equal(codePosition(cells, 'gone'), null);
  assert.equal(codePosition([], 'a'), null);
});

test('an answer reads as the verdict, the changes in words, what it prints and its value', () => {
  const view = previewView({
    stdout: 'rows 3\n',
    result: '(3, 3)',
    diff: [{ name: 'df', change: 'adds column `ratio` to `df`' }],
    verdict: 'ran clean',
    outcome: 'completed',
    cell: 2
  });
  assert.deepEqual(view, {
    ok: true,
    head: 'Tried in a sandbox (the kernel is unchanged): ran clean',
    clean: true,
    changes: ['adds column `ratio` to `df`'],
    stdout: 'rows 3',
    stdoutNote: null,
    result: '(3, 3)',
    resultNote: null,
    note: null
  });
});

test('a crash, cut output, more names and a note are all said', () => {
  const view = previewView({
    stdout: 'x'.repeat(10),
    stdoutCut: true,
    result: 'y',
    resultCut: true,
    diff: [{ name: 'df', change: 'rebinds `X_train` (800 → 640 rows)' }, { name: 'bad' }, null],
    more: 3,
    verdict: "raised KeyError at line 3: 'x'",
    note: 'torch tensors on a GPU were stood in by their shapes'
  });
  assert.ok(view.ok);
  if (view.ok) {
    assert.equal(view.clean, false);
    assert.equal(view.head, "Tried in a sandbox (the kernel is unchanged): raised KeyError at line 3: 'x'");
    assert.deepEqual(view.changes, ['rebinds `X_train` (800 → 640 rows)', 'and 3 more']);
    assert.equal(view.stdoutNote, '(cut: the first 20,000 characters)');
    assert.equal(view.resultNote, '(cut)');
    assert.equal(view.note, 'torch tensors on a GPU were stood in by their shapes');
  }
});

test('nothing printed, no value and no change: no sections but the changes, which say none', () => {
  const view = previewView({ stdout: '', diff: [], verdict: 'ran clean' });
  assert.ok(view.ok);
  if (view.ok) {
    assert.deepEqual(view.changes, ['no name changed']);
    assert.equal(view.stdout, null);
    assert.equal(view.result, null);
  }
  const bare = previewView({});
  assert.ok(bare.ok && bare.head.endsWith(': no verdict') && !bare.clean);
});

test("a refusal or a malformed answer is one line", () => {
  assert.deepEqual(previewView({ error: 'no kernel attached' }), { ok: false, text: 'Not tried: no kernel attached' });
  assert.deepEqual(previewView({ error: 'first\nsecond' }), { ok: false, text: 'Not tried: first' });
  assert.deepEqual(previewView(null), { ok: false, text: 'Not tried: no answer from crane-lsp' });
  assert.deepEqual(previewView('text'), { ok: false, text: 'Not tried: no answer from crane-lsp' });
});

test('an answer naming another cell is not shown as this one', () => {
  assert.equal(answersCell({ cell: 2 }, 2), true);
  assert.equal(answersCell({ cell: 3 }, 2), false);
  assert.equal(answersCell({ error: 'no kernel attached' }, 2), true, 'a refusal names no cell');
  assert.equal(answersCell(null, 2), true);
});
