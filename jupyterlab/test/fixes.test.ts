import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import type { FixRow } from '../src/generated/cellVerdict';
import { applyFix, fixDiff, fixEdit, fixLabel, topFix, verifiedFix } from '../src/fixes';

const CELL = 'x = 1\ntotal = df["prise"].sum()\nprint(total)';
const PRICE: FixRow = {
  title: "Use 'price'",
  status: 'runs clean in a dry run',
  verified: true,
  startLine: 1,
  endLine: 2,
  newText: 'total = df["price"].sum()\n'
};
const FURTHER: FixRow = { ...PRICE, title: "Use 'qty'", status: 'gets further in a dry run', verified: false };

test('a fix replaces its whole lines, as the server verified it (a trailing newline is not a line)', () => {
  assert.equal(applyFix(CELL, PRICE), 'x = 1\ntotal = df["price"].sum()\nprint(total)');
  const edit = fixEdit(CELL, PRICE);
  assert.ok(edit);
  assert.equal(CELL.slice(edit.from, edit.to), 'total = df["prise"].sum()');
  // the first line, the last line, several lines into one, one line into two
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 0, endLine: 1, newText: 'x = 2' }), CELL.replace('x = 1', 'x = 2'));
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 2, endLine: 3, newText: 'print(total * 2)' }), CELL.replace('print(total)', 'print(total * 2)'));
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 0, endLine: 3, newText: 'pass' }), 'pass');
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 0, endLine: 1, newText: 'a = 1\nx = 1' }), 'a = 1\n' + CELL);
});

test('a fix for lines the cell does not have is not applied', () => {
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 3, endLine: 4 }), null);
  assert.equal(applyFix(CELL, { ...PRICE, startLine: 1, endLine: 1 }), null);
  assert.equal(applyFix('', { ...PRICE, startLine: -1, endLine: 0 }), null);
  assert.deepEqual(fixDiff(CELL, { ...PRICE, endLine: 9 }), []);
});

test('the diff shows the old lines, then the new, numbered as a person counts', () => {
  assert.deepEqual(fixDiff(CELL, PRICE), [
    { kind: '-', line: 2, text: 'total = df["prise"].sum()' },
    { kind: '+', line: 2, text: 'total = df["price"].sum()' }
  ]);
});

test('the box offers the first fix, the run guard only a verified one', () => {
  assert.equal(topFix({ fixes: [FURTHER] }), FURTHER);
  assert.equal(verifiedFix({ fixes: [FURTHER] }), null);
  assert.equal(verifiedFix({ fixes: [FURTHER, PRICE] }), PRICE);
  assert.equal(topFix({}), null);
  assert.equal(topFix(null), null);
  assert.equal(fixLabel(PRICE), "Use 'price' (runs clean in a dry run)");
  assert.equal(fixLabel(FURTHER), "Use 'qty' (gets further in a dry run)");
});
