import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { question, shouldAsk } from '../src/guard';
import { offsetAt, toMarks } from '../src/marks';
import { statusLine } from '../src/statustext';

const range = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 }
});

test('a diagnostic range becomes the same characters in the editor', () => {
  const text = 'total = 0\ntotal += df["prise"].sum()';
  const [mark] = toMarks(text, [
    { range: range(1, 12, 1, 19), message: "KeyError: 'prise'", severity: 1, source: 'crane' }
  ]);
  assert.equal(text.slice(mark.from, mark.to), '"prise"');
  assert.equal(mark.severity, 'error');
  assert.equal(mark.markClass, 'crane-mark');
});

test('UTF-16 columns: characters beyond the BMP count twice, as in LSP and CodeMirror', () => {
  const text = 's = "😀"; s.nope()';
  const start = text.indexOf('s.nope');
  const [mark] = toMarks(text, [{ range: range(0, start, 0, start + 6), message: 'AttributeError', source: 'crane' }]);
  assert.equal(text.slice(mark.from, mark.to), 's.nope');
});

test('warnings stay warnings, stale marks are dimmed, other sources are not ours', () => {
  const text = 'model.predict(X)';
  const marks = toMarks(text, [
    { range: range(0, 0, 0, 16), message: 'ValueError: shapes', severity: 2, source: 'crane' },
    { range: range(0, 0, 0, 5), message: '(stale) NameError: model', severity: 1, source: 'crane', data: { stale: true } },
    { range: range(0, 0, 0, 5), message: 'unused import', severity: 2, source: 'pyflakes' }
  ]);
  assert.deepEqual(
    marks.map(m => [m.severity, m.markClass]),
    [
      ['warning', 'crane-mark'],
      ['error', 'crane-mark crane-mark-stale']
    ]
  );
});

test('out-of-range and empty ranges are clamped into the cell, never thrown', () => {
  const text = 'a = 1\nb';
  assert.equal(offsetAt(text, { line: 9, character: 9 }), text.length);
  const [wide] = toMarks(text, [{ range: range(0, 2, 0, 2), message: 'x', source: 'crane' }]);
  assert.deepEqual([wide.from, wide.to], [2, 5]);
  const [end] = toMarks(text, [{ range: range(5, 0, 5, 0), message: 'x', source: 'crane' }]);
  assert.ok(end.from < end.to && end.to <= text.length);
});

test('the run guard asks only for a current, certain or observed, not ignored crash', () => {
  const asked = "crane: this cell raises KeyError at line 1 ('prise'). Run anyway?";
  const v = { crash: true, blockRun: true, certainty: 'certain' as const, exception: 'KeyError', line: 0, message: "'prise'", question: asked };
  assert.equal(shouldAsk(v, 'df["prise"]', 'df["prise"]'), true);
  assert.equal(shouldAsk(v, 'df["prise"]', 'df["price"]'), false, 'a verdict for older text is not current');
  assert.equal(shouldAsk({ ...v, stale: true }, 'x', 'x'), false);
  assert.equal(shouldAsk({ ...v, ignored: true }, 'x', 'x'), false);
  assert.equal(shouldAsk({ ...v, certainty: 'predicted' }, 'x', 'x'), false);
  assert.equal(shouldAsk(null, 'x', 'x'), false);
  assert.equal(question(v), asked, "the server's words");
  assert.equal(question({ ...v, question: null, label: 'will crash' }), 'crane: this cell will crash. Run anyway?');
});

test('the status item says what is missing in one line', () => {
  const base = { notebook: true, kernelStatus: 'idle' as string | null };
  assert.match(statusLine({ ...base, connection: 'no-jupyter-lsp' }).text, /jupyter-lsp is not installed/);
  assert.match(statusLine({ ...base, connection: 'failed' }).text, /failed to start/);
  assert.match(statusLine({ ...base, connection: 'ready', kernelStatus: null }).text, /no kernel/);
  assert.match(statusLine({ ...base, connection: 'ready', kernelStatus: 'restarting' }).text, /restarting/);
  assert.match(statusLine({ ...base, connection: 'ready', kernelStatus: 'dead' }).text, /kernel dead/);
  const attached = statusLine({ ...base, connection: 'ready', server: { kernel: 'attached', lastLatencyMs: 41.6 } });
  assert.equal(attached.text, 'crane: ✓ attached');
  const checking = statusLine({ ...base, connection: 'ready', server: { kernel: 'attached', checking: true } });
  assert.equal(checking.text, 'crane: ✓ attached · checking…');
  assert.equal(statusLine({ ...base, connection: 'ready', server: { kernel: 'none', checking: true } }).text, 'crane: checking…');
  assert.match(attached.title, /42 ms/);
  const why = statusLine({ ...base, connection: 'ready', server: { kernel: 'none', message: 'no kernel yet for\n a.ipynb' } });
  assert.equal(why.title, 'no kernel yet for a.ipynb');
  for (const s of [attached, why]) {
    assert.ok(!s.text.includes('\n'));
  }
});
