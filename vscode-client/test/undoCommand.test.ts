import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { UNDO_COMMAND, undoLastCell, undoMessage, type UndoHost } from '../src/undoCommand';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  contributes: { commands: { command: string; title: string }[]; configuration: { properties: Record<string, { description?: string }> } };
};

function host(uri: string | undefined): UndoHost & { shown: [string, string][] } {
  const shown: [string, string][] = [];
  return {
    shown,
    activeDocumentUri: () => uri,
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

describe('crane: Undo last cell', () => {
  it('says what came back, what was deleted and what was kept, in one line', () => {
    const answer = { restored: ['df', 'model'], deleted: ['tmp'], kept: [{ name: 'f', reason: 'an open file' }], cell: 2 };
    assert.deepEqual(undoMessage(answer), {
      ok: true,
      text: 'crane: cell 2 undone. Restored df, model; deleted tmp; kept f (an open file)',
    });
    assert.deepEqual(undoMessage({ restored: [], deleted: [], kept: [] }), {
      ok: true,
      text: 'crane: Nothing to put back (the cell changed no name)',
    });
    assert.deepEqual(undoMessage({ error: 'undo is off (the crane.undo setting)' }), {
      ok: false,
      text: 'crane: undo is off (the crane.undo setting)',
    });
  });

  it('sends the active notebook as {uri} from the palette and shows the answer once', async () => {
    const h = host('file:///w/nb.ipynb');
    const sent: [string, unknown[]][] = [];
    const answer = await undoLastCell([], async (command, args) => {
      sent.push([command, args]);
      return { restored: ['x'], deleted: [], kept: [], cell: 1 };
    }, h);
    assert.deepEqual(sent, [[UNDO_COMMAND, [{ uri: 'file:///w/nb.ipynb' }]]]);
    assert.deepEqual(answer, { restored: ['x'], deleted: [], kept: [], cell: 1 });
    assert.deepEqual(h.shown, [['info', 'crane: cell 1 undone. Restored x']]);
  });

  it('shows the server\'s reason as a warning, and asks for a notebook when none is active', async () => {
    const h = host('file:///w/nb.ipynb');
    await undoLastCell([], async () => ({ error: 'cannot undo cell [3]: it was undone already' }), h);
    assert.deepEqual(h.shown, [['warning', 'crane: cannot undo cell [3]: it was undone already']]);
    const none = host(undefined);
    let called = false;
    await undoLastCell([], async () => {
      called = true;
      return {};
    }, none);
    assert.equal(called, false);
    assert.deepEqual(none.shown, [['info', 'crane: open the notebook whose last cell to undo.']]);
  });

  it('is in the palette, with its three settings described', () => {
    assert.ok(manifest.contributes.commands.some((c) => c.command === UNDO_COMMAND && c.title === 'Undo last cell'));
    for (const key of ['crane.undo', 'crane.undoReserve', 'crane.undoHold']) {
      assert.ok(manifest.contributes.configuration.properties[key]?.description, key);
    }
  });
});
