import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  RUN_ANYWAY,
  RUN_WITH_FIX,
  SHOW,
  blocks,
  fixLines,
  verifiedFix,
  guardedRun,
  isKind,
  question,
  withTimeout,
  type CellVerdict,
  type FixRow,
  type GuardCell,
  type GuardHost,
} from '../src/runGuard';

const CRASH: CellVerdict = {
  found: true,
  checked: true,
  stale: false,
  ignored: false,
  crash: true,
  certainty: 'certain',
  exception: 'KeyError',
  line: 1,
  message: "df has no column 'Region'",
  label: 'will crash',
  question: "crane: this cell raises KeyError at line 2 (df has no column 'Region'). Run anyway?",
  blockRun: true,
};

class FakeGuardHost implements GuardHost {
  on = true;
  cells: GuardCell[] | undefined = [{ uri: 'vscode-notebook-cell:/nb.ipynb#c1', text: "df['Region']" }];
  verdicts = new Map<string, CellVerdict | undefined | Error>();
  answer: string | undefined = undefined;
  asked: { message: string; buttons: string[] }[] = [];
  ran: { command: string; target: unknown }[] = [];
  shown: { uri: string; line: number }[] = [];
  lines: string[] = [];
  targets: unknown[] = [];

  enabled() {
    return this.on;
  }
  selectedCells(target?: unknown) {
    this.targets.push(target);
    return this.cells;
  }
  async verdict(cell: GuardCell) {
    const v = this.verdicts.get(cell.uri);
    if (v instanceof Error) throw v;
    return v;
  }
  async ask(message: string, ...buttons: string[]) {
    this.asked.push({ message, buttons });
    return this.answer;
  }
  /** The cells' texts as the editor holds them: applyFix edits them as the real host does. */
  texts = new Map<string, string>();
  events: string[] = [];
  async applyFix(cell: GuardCell, fix: FixRow) {
    const now = this.texts.get(cell.uri) ?? cell.text;
    const lines = fixLines(now, fix);
    if (!lines || now !== cell.text) return false;
    const all = now.split('\n');
    all.splice(fix.startLine, fix.endLine - fix.startLine, ...lines.new);
    this.texts.set(cell.uri, all.join('\n'));
    this.events.push(`edit ${cell.uri}`);
    return true;
  }
  async show(cell: GuardCell, line: number) {
    this.shown.push({ uri: cell.uri, line });
  }
  async run(command: string, target?: unknown) {
    this.events.push(`run ${command}`);
    this.ran.push({ command, target });
  }
  log(line: string) {
    this.lines.push(line);
  }
}

const URI = 'vscode-notebook-cell:/nb.ipynb#c1';

describe('run guard', () => {
  it('asks before a certain crash and runs only on "Run anyway"', async () => {
    const host = new FakeGuardHost();
    host.verdicts.set(URI, CRASH);
    host.answer = RUN_ANYWAY;
    assert.equal(await guardedRun(host, 'executeAndSelectBelow'), 'ranAnyway');
    assert.deepEqual(host.asked, [
      { message: "crane: this cell raises KeyError at line 2 (df has no column 'Region'). Run anyway?", buttons: [RUN_ANYWAY, SHOW] },
    ]);
    assert.deepEqual(host.ran, [{ command: 'notebook.cell.executeAndSelectBelow', target: undefined }]);
  });

  it('does not run when cancelled, and "Show" reveals the line instead of running', async () => {
    const host = new FakeGuardHost();
    host.verdicts.set(URI, CRASH);
    assert.equal(await guardedRun(host, 'execute'), 'cancelled');
    host.answer = SHOW;
    assert.equal(await guardedRun(host, 'execute'), 'shown');
    assert.deepEqual(host.ran, []);
    assert.deepEqual(host.shown, [{ uri: URI, line: 1 }]);
  });

  it('never blocks a cell without a verdict, with a stale, ignored, predicted or failed one', async () => {
    const cases: (CellVerdict | undefined | Error)[] = [
      undefined,
      { found: false, crash: false, blockRun: false },
      { found: true, checked: false, crash: false, blockRun: false },
      { ...CRASH, stale: true },
      { ...CRASH, ignored: true },
      { ...CRASH, certainty: 'predicted' },
      { ...CRASH, blockRun: false },
      new Error('request timed out'),
    ];
    for (const verdict of cases) {
      const host = new FakeGuardHost();
      host.verdicts.set(URI, verdict);
      assert.equal(await guardedRun(host, 'executeAndInsertBelow'), 'ran', JSON.stringify(verdict));
      assert.deepEqual(host.asked, []);
      assert.deepEqual(host.ran, [{ command: 'notebook.cell.executeAndInsertBelow', target: undefined }]);
    }
  });

  it('is off by default: the setting off, nothing is asked (not even the server)', async () => {
    const host = new FakeGuardHost();
    host.on = false;
    host.verdicts.set(URI, CRASH);
    assert.equal(await guardedRun(host, 'execute'), 'ran');
    assert.deepEqual(host.asked, []);
    assert.deepEqual(host.targets, []);
  });

  it('runs the cell of the run menu it was called from', async () => {
    const host = new FakeGuardHost();
    const cell = { index: 3 };
    assert.equal(await guardedRun(host, 'execute', cell), 'ran');
    assert.deepEqual(host.targets, [cell]);
    assert.deepEqual(host.ran, [{ command: 'notebook.cell.execute', target: cell }]);
  });

  it("asks in the server's words, and says the label when an older server sends no question", () => {
    const observed = 'crane: this cell raised ZeroDivisionError at line 1 in a sandboxed dry run (division by zero). Run anyway?';
    assert.equal(question({ ...CRASH, certainty: 'observed', question: observed }), observed);
    assert.equal(question({ ...CRASH, question: null }), 'crane: this cell will crash. Run anyway?');
    assert.ok(blocks({ ...CRASH, certainty: 'observed' }));
    assert.ok(!blocks(undefined));
  });

  const PRICE: FixRow = {
    title: "Use 'region'",
    status: 'runs clean in a dry run',
    verified: true,
    startLine: 0,
    endLine: 1,
    newText: "df['region']\n",
  };
  const FURTHER: FixRow = { ...PRICE, title: "Use 'Regions'", status: 'gets further in a dry run', verified: false };

  it('offers "Run with the fix" for a verified fix: shows its diff, edits the cell, then runs it', async () => {
    const host = new FakeGuardHost();
    host.verdicts.set(URI, { ...CRASH, fixes: [PRICE] });
    host.answer = RUN_WITH_FIX;
    assert.equal(await guardedRun(host, 'execute'), 'ranWithFix');
    assert.deepEqual(host.asked[0].buttons, [RUN_WITH_FIX, RUN_ANYWAY, SHOW]);
    assert.equal(
      host.asked[0].message,
      `${CRASH.question}\n\nRun with the fix: Use 'region' (runs clean in a dry run)\n- 1 | df['Region']\n+ 1 | df['region']`,
    );
    assert.equal(host.texts.get(URI), "df['region']");
    assert.deepEqual(host.events, [`edit ${URI}`, 'run notebook.cell.execute'], 'edited first, then run');
  });

  it('"Run anyway" leaves the cell as it is; a gets-further fix gets no third button', async () => {
    const host = new FakeGuardHost();
    host.verdicts.set(URI, { ...CRASH, fixes: [PRICE] });
    host.answer = RUN_ANYWAY;
    assert.equal(await guardedRun(host, 'execute'), 'ranAnyway');
    assert.equal(host.texts.get(URI), undefined);
    const further = new FakeGuardHost();
    further.verdicts.set(URI, { ...CRASH, fixes: [FURTHER] });
    await guardedRun(further, 'execute');
    assert.deepEqual(further.asked[0].buttons, [RUN_ANYWAY, SHOW]);
    assert.equal(verifiedFix({ fixes: [FURTHER, PRICE] }), PRICE);
  });

  it('runs nothing when the cell changed before the fix could be applied', async () => {
    const host = new FakeGuardHost();
    host.verdicts.set(URI, { ...CRASH, fixes: [PRICE] });
    host.texts.set(URI, "df['Region'] + 1");
    host.answer = RUN_WITH_FIX;
    assert.equal(await guardedRun(host, 'execute'), 'cancelled');
    assert.deepEqual(host.ran, []);
    assert.equal(fixLines('a\nb', { ...PRICE, startLine: 1, endLine: 3 }), undefined);
  });

  it('knows its run kinds, and a late answer counts as none', async () => {
    assert.ok(isKind('execute') && isKind('executeAndSelectBelow') && !isKind('toString') && !isKind({}));
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('late'), 200));
    assert.equal(await withTimeout(late, 10), undefined);
    assert.equal(await withTimeout(Promise.resolve('now'), 1000), 'now');
  });
});
