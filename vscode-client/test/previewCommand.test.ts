import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { ActiveCell } from '../src/controller';
import { PREVIEW_COMMAND, previewCell, previewMarkdown, type PreviewHost } from '../src/previewCommand';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  contributes: { commands: { command: string; title: string }[] };
};

function host(cell: ActiveCell | undefined): PreviewHost & { shown: [string, string][] } {
  const shown: [string, string][] = [];
  return {
    shown,
    activeCell: () => cell,
    openMarkdown: async (text) => {
      shown.push(['markdown', text]);
    },
    showInfo: async (message) => {
      shown.push(['info', message]);
      return undefined;
    },
    showWarning: async (message) => {
      shown.push(['warning', message]);
      return undefined;
    },
  };
}

const ANSWER = {
  stdout: 'rows 2\n',
  result: '[0.25, 0.25]',
  diff: [{ name: 'df', change: 'adds column `ratio` to `df`' }],
  verdict: 'ran clean',
  cell: 2,
};

describe('crane: Try cell in sandbox', () => {
  it('reads as the verdict, the changes, the output and the value', () => {
    const text = previewMarkdown(ANSWER);
    assert.match(text, /^# crane: cell 2 tried in a sandbox/);
    assert.match(text, /\*\*Verdict:\*\* ran clean/);
    assert.match(text, /- adds column `ratio` to `df`/);
    assert.match(text, /## What it would print\n\n```text\nrows 2\n```/);
    assert.match(text, /## Its value\n\n```text\n\[0\.25, 0\.25\]\n```/);
    const quiet = previewMarkdown({ verdict: 'raised KeyError at line 3', diff: [], stdout: '', more: 2 });
    assert.match(quiet, /_no name changed_\n- and 2 more/);
    assert.doesNotMatch(quiet, /What it would print|Its value/);
    assert.match(previewMarkdown({ verdict: 'x', stdout: 'a ```` b' }), /`````text\na ```` b\n`````/);
  });

  it('sends the cell under the cursor and opens the answer', async () => {
    const h = host({ uri: 'file:///w/a.py', line: 4 });
    const sent: [string, unknown[]][] = [];
    const answer = await previewCell([], async (command, args) => {
      sent.push([command, args]);
      return ANSWER;
    }, h);
    assert.deepEqual(sent, [[PREVIEW_COMMAND, [{ uri: 'file:///w/a.py', line: 4 }]]]);
    assert.deepEqual(answer, ANSWER);
    assert.equal(h.shown.length, 1);
    assert.equal(h.shown[0][0], 'markdown');
    const cellUri = host({ uri: 'vscode-notebook-cell:/w/nb.ipynb#C1' });
    await previewCell([], async (command, args) => {
      sent.push([command, args]);
      return ANSWER;
    }, cellUri);
    assert.deepEqual(sent[1], [PREVIEW_COMMAND, [{ uri: 'vscode-notebook-cell:/w/nb.ipynb#C1' }]]);
  });

  it('warns with the server\'s reason, and asks for a cell when none is under the cursor', async () => {
    const h = host({ uri: 'vscode-notebook-cell:/w/nb.ipynb#C1' });
    await previewCell([], async () => ({ error: 'no kernel attached' }), h);
    assert.deepEqual(h.shown, [['warning', 'crane: cannot try the cell: no kernel attached']]);
    const none = host(undefined);
    let called = false;
    await previewCell([], async () => {
      called = true;
      return {};
    }, none);
    assert.equal(called, false);
    assert.deepEqual(none.shown, [['info', 'crane: put the cursor in a notebook cell to try it in the sandbox.']]);
    const kept = host(undefined);
    const sent: unknown[][] = [];
    await previewCell([{ uri: 'file:///w/nb.ipynb', cell: 3 }], async (_command, args) => {
      sent.push(args);
      return ANSWER;
    }, kept);
    assert.deepEqual(sent, [[{ uri: 'file:///w/nb.ipynb', cell: 3 }]]);
  });

  it('is in the palette', () => {
    const command = manifest.contributes.commands.find((c) => c.command === PREVIEW_COMMAND);
    assert.equal(command?.title, 'Try cell in sandbox');
  });
});
