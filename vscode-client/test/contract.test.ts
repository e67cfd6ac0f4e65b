/**
 * The messages the extension sends, pinned to test/fixtures/contract.json, which the server's
 * end-to-end test (tests/test_vscode_contract.py) replays against a real server and kernel.
 */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CONNECTION_FILE_CODE, CONNECTION_MARKER } from '../src/connectionFile';
import { DOCUMENT_SELECTOR, SERVER_COMMANDS, STATUS_NOTIFICATION } from '../src/controller';
import { ATTACH_NOTIFICATION, attachKernelParams } from '../src/kernelAttach';
import { CELL_VERDICT_COMMAND, cellVerdictArgument } from '../src/runGuard';
import { SERVER_MODULE_ARGS } from '../src/serverCommand';
import { didChangeConfigurationParams, readCraneOptions, type CraneOptions } from '../src/settings';

const root = path.join(__dirname, '..', '..');
const contract = JSON.parse(readFileSync(path.join(root, 'test', 'fixtures', 'contract.json'), 'utf8')) as {
  serverArgs: string[];
  notebookTypes: string[];
  attachKernel: { method: string; paramNames: string[] };
  statusNotification: string;
  serverCommands: string[];
  initializationOptions: CraneOptions;
  changedOptions: CraneOptions;
  didChangeConfiguration: unknown;
  connectionFileCode: string;
  connectionFileMarker: string;
  cellVerdict: { command: string; argumentNames: string[]; blockField: string };
};
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
};

describe('contract with the server (test/fixtures/contract.json)', () => {
  it('starts the server with the pinned arguments', () => {
    assert.deepEqual([...SERVER_MODULE_ARGS], contract.serverArgs);
  });

  it('sends crane/attachKernel with exactly the pinned parameter names', () => {
    assert.equal(ATTACH_NOTIFICATION, contract.attachKernel.method);
    assert.deepEqual(Object.keys(attachKernelParams('file:///nb.ipynb', '/k.json')).sort(), contract.attachKernel.paramNames);
  });

  it('listens to crane/status and routes the pinned server commands', () => {
    assert.equal(STATUS_NOTIFICATION, contract.statusNotification);
    assert.deepEqual([...SERVER_COMMANDS], contract.serverCommands);
  });

  it('selects Python cells of the pinned notebook types', () => {
    const types = DOCUMENT_SELECTOR.flatMap((f) => ('notebook' in f ? [f.notebook] : []));
    assert.deepEqual(types, contract.notebookTypes);
  });

  it('sends the pinned initializationOptions for default settings', () => {
    const defaults = Object.fromEntries(
      Object.entries(manifest.contributes.configuration.properties).map(([k, v]) => [k.slice('crane.'.length), v.default]),
    );
    assert.deepEqual(readCraneOptions((key) => defaults[key]).options, contract.initializationOptions);
  });

  it('sends the pinned didChangeConfiguration payload', () => {
    assert.deepEqual(didChangeConfigurationParams(contract.changedOptions), contract.didChangeConfiguration);
  });

  it('asks the run guard\'s verdict with the pinned command and argument names', () => {
    assert.equal(CELL_VERDICT_COMMAND, contract.cellVerdict.command);
    assert.deepEqual(Object.keys(cellVerdictArgument('vscode-notebook-cell:/nb.ipynb#c1', 'x')).sort(), contract.cellVerdict.argumentNames);
    assert.equal(contract.cellVerdict.blockField, 'blockRun');
  });

  it('asks the kernel with the pinned code', () => {
    assert.equal(CONNECTION_FILE_CODE, contract.connectionFileCode);
    assert.equal(CONNECTION_MARKER, contract.connectionFileMarker);
  });
});
