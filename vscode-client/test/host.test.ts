/** src/host.ts against the mocked `vscode` module (test/mocks), with a real Python for the install check. */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type * as vscodeTypes from 'vscode';
import { MIME_STDOUT } from '../src/connectionFile';
import { PICK_INTERPRETER } from '../src/controller';
import { activate, deactivate } from '../src/host';
import { LanguageClient } from './mocks/languageclient';
import { pythonState } from './mocks/pythonExtension';
import { ConfigurationTarget, Uri, recorded, resetMock, window } from './mocks/vscode';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  main: string;
  contributes: {
    commands: { command: string; title: string }[];
    configuration: { properties: Record<string, { scope?: string }> };
  };
};

/** A Python interpreter without crane-lsp: the real one started with -S (no site-packages). */
function pythonWithoutCrane(dir: string): string {
  const file = path.join(dir, 'python-no-crane');
  writeFileSync(file, `#!/bin/sh\nexec ${python ?? 'python3'} -S "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

const python = ['python3', 'python'].find((p) => spawnSync(p, ['-c', 'import crane_lsp']).status === 0);

function fakeContext() {
  const secrets = new Map<string, string>();
  const state = new Map<string, unknown>();
  return {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: {
      get: async (k: string) => secrets.get(k),
      store: async (k: string, v: string) => void secrets.set(k, v),
      delete: async (k: string) => void secrets.delete(k),
      onDidChange: () => ({ dispose: () => undefined }),
    },
    workspaceState: { get: (k: string) => state.get(k), update: async (k: string, v: unknown) => void state.set(k, v) },
    secretMap: secrets,
    stateMap: state,
  };
}

type Context = ReturnType<typeof fakeContext>;
const asContext = (c: Context) => c as unknown as vscodeTypes.ExtensionContext;

describe('host (VS Code wrapper) with a mocked vscode', { skip: python ? false : 'no python with crane_lsp' }, () => {
  let context: Context;

  beforeEach(() => {
    resetMock();
    LanguageClient.instances.length = 0;
    recorded.extensions.set('ms-python.python', { isActive: true, exports: {}, activate: async () => ({}) });
    pythonState.executable = python;
    recorded.configuration = { 'crane.votes': 2, 'crane.provider': 'openai', 'crane.model': '' };
    context = fakeContext();
    context.secretMap.set('crane.apiKey.OPENAI_API_KEY', 'sk-host-test');
  });

  afterEach(async () => {
    await deactivate();
  });

  it('has every contributed command once the server runs, without clashing with the client\'s registrations', async () => {
    await activate(asContext(context));
    const contributed = manifest.contributes.commands.map((c) => c.command);
    assert.deepEqual([...recorded.commands.keys()].sort(), [...new Set([...contributed, ...LanguageClient.serverCommands])].sort());
    assert.equal(manifest.main, './dist/extension.js');
  });

  it('has every contributed command while the server is missing', async () => {
    recorded.configuration['crane.server.pythonPath'] = '/nonexistent/python';
    await activate(asContext(context));
    assert.deepEqual([...recorded.commands.keys()].sort(), manifest.contributes.commands.map((c) => c.command).sort());
  });

  it('routes "crane: Show last prompt" from the palette to the server and opens the answer', async () => {
    window.activeTextEditor = { document: { uri: Uri.parse('vscode-notebook-cell:/w/nb.ipynb#ch0000002'), languageId: 'python' } };
    await activate(asContext(context));
    LanguageClient.instances[0].requestResult = { prompt: 'PROMPT TEXT', answer: 'ANSWER TEXT' };
    await recorded.commands.get('crane.showPrompt')?.();
    assert.deepEqual(LanguageClient.instances[0].requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'crane.showPrompt', arguments: ['vscode-notebook-cell:/w/nb.ipynb#ch0000002'] },
    });
    assert.equal(recorded.openedDocuments[0].language, 'markdown');
    assert.match(recorded.openedDocuments[0].content ?? '', /PROMPT TEXT[\s\S]*ANSWER TEXT/);
    window.activeTextEditor = undefined;
  });

  it('starts the language client with the Python extension\'s interpreter, notebook selector, options and key env', async () => {
    await activate(asContext(context));
    assert.equal(LanguageClient.instances.length, 1);
    const client = LanguageClient.instances[0];
    assert.equal(client.running, true);
    assert.equal(client.serverOptions.command, python);
    assert.deepEqual(client.serverOptions.args, ['-m', 'crane_lsp.cli', 'serve']);
    assert.equal(client.serverOptions.options.env.OPENAI_API_KEY, 'sk-host-test');
    assert.deepEqual(client.clientOptions.initializationOptions, { provider: 'openai', votes: 2 });
    assert.deepEqual(client.clientOptions.documentSelector[0], { notebook: 'jupyter-notebook', language: 'python' });
    assert.deepEqual(client.clientOptions.middleware.workspace.configuration({ items: [{ section: 'crane' }] }), [
      { provider: 'openai', votes: 2 },
    ]);
    assert.doesNotMatch(recorded.outputLines.join('\n'), /sk-host-test/);
  });

  it('drives the status bar item from crane/status', async () => {
    await activate(asContext(context));
    const item = recorded.statusItems[0];
    assert.equal(item.visible, true);
    LanguageClient.instances[0].handlers.get('crane/status')?.({ kernel: 'busy', checking: false });
    assert.equal(item.text, '$(watch) crane: kernel busy');
    LanguageClient.instances[0].handlers.get('crane/status')?.({ kernel: 'none' });
    assert.equal((item.backgroundColor as { id: string } | undefined)?.id, 'statusBarItem.warningBackground');
  });

  it('forwards a settings change', async () => {
    await activate(asContext(context));
    recorded.configuration['crane.votes'] = 7;
    const listener = recorded.listeners.get('onDidChangeConfiguration')?.[0];
    await listener?.({ affectsConfiguration: (s: string) => s === 'crane' || s === 'crane.votes' });
    assert.deepEqual(LanguageClient.instances[0].notifications.at(-1), {
      method: 'workspace/didChangeConfiguration',
      params: { settings: { crane: { provider: 'openai', votes: 7 } } },
    });
  });

  it('attaches the kernel of the active notebook through the Jupyter extension (relayed when its file is elsewhere)', async () => {
    const asked: string[] = [];
    const kernelFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'crane-host-')), 'kernel-9.json');
    writeFileSync(kernelFile, '{}');
    recorded.extensions.set('ms-toolsai.jupyter', {
      isActive: false,
      exports: undefined,
      activate: async () => ({
        kernels: {
          getKernel: async (uri: Uri) => {
            asked.push(uri.toString());
            return {
              status: 'idle',
              onDidChangeStatus: () => ({ dispose: () => undefined }),
              async *executeCode() {
                yield { items: [{ mime: MIME_STDOUT, data: new TextEncoder().encode(JSON.stringify({ crane_connection_file: kernelFile }) + '\n') }] };
              },
            };
          },
        },
      }),
    });
    window.activeNotebookEditor = { notebook: { uri: Uri.parse('file:///work/nb.ipynb') } };
    await activate(asContext(context));
    recorded.nextAnswer = 'Allow';
    await recorded.commands.get('crane.attachKernel')?.();
    assert.deepEqual(asked, ['file:///work/nb.ipynb']);
    assert.deepEqual(LanguageClient.instances[0].notifications.at(-1), {
      method: 'crane/attachKernel',
      params: { notebookUri: 'file:///work/nb.ipynb', connectionFile: kernelFile },
    });
    assert.equal(context.stateMap.get('crane.kernelAccess'), 'allow');
    // the same kernel on another machine (its file is not here), or another user's (not readable):
    // relayed, and the relay is answered
    if (process.getuid?.() !== 0) {
      chmodSync(kernelFile, 0o000);
      await recorded.commands.get('crane.attachKernel')?.();
      assert.deepEqual(LanguageClient.instances[0].notifications.at(-1)?.params, { notebookUri: 'file:///work/nb.ipynb', relay: true });
    }
    rmSync(kernelFile);
    await recorded.commands.get('crane.attachKernel')?.();
    assert.deepEqual(LanguageClient.instances[0].notifications.at(-1), {
      method: 'crane/attachKernel',
      params: { notebookUri: 'file:///work/nb.ipynb', relay: true },
    });
    const status = LanguageClient.instances[0].requestHandlers.get('crane/kernelRelay/status');
    assert.deepEqual(await status?.({ notebookUri: 'file:///work/nb.ipynb' }), { status: 'idle' });
    assert.ok(LanguageClient.instances[0].requestHandlers.has('crane/kernelRelay/execute'));
    window.activeNotebookEditor = undefined;
  });

  it('says the package is missing when the interpreter lacks it', async () => {
    recorded.configuration['crane.server.pythonPath'] = '/nonexistent/python';
    await activate(asContext(context));
    assert.equal(LanguageClient.instances.length, 0);
    assert.match(recorded.messages[0].text, /cannot run the Python interpreter "\/nonexistent\/python"/);
    assert.equal(recorded.statusItems[0].text, '$(error) crane: server error');
  });

  it('offers the exact install command for a bare interpreter, and a picker that sets crane.server.pythonPath', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'crane-host-'));
    try {
      const bare = pythonWithoutCrane(dir);
      recorded.configuration['crane.server.pythonPath'] = bare;
      recorded.nextAnswer = PICK_INTERPRETER;
      recorded.nextPick = [python as string];
      await activate(asContext(context));
      assert.equal(LanguageClient.instances.length, 0);
      const error = recorded.messages.find((m) => m.level === 'error');
      assert.ok(error?.text.includes(`Install it with: ${bare} -m pip install crane-lsp`), error?.text);
      assert.ok(error?.actions.includes(PICK_INTERPRETER));
      await new Promise((r) => setTimeout(r, 20));
      assert.equal((recorded.dialogs[0] as { defaultUri?: Uri }).defaultUri?.fsPath, dir);
      assert.deepEqual(recorded.updates, [{ key: 'crane.server.pythonPath', value: python, target: ConfigurationTarget.Global }]);
      assert.equal(recorded.statusItems[0].text, '$(error) crane: not installed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("picks another interpreter with the Python extension's own picker when it supplied the interpreter", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'crane-host-'));
    try {
      pythonState.executable = pythonWithoutCrane(dir);
      recorded.nextAnswer = PICK_INTERPRETER;
      await activate(asContext(context));
      await new Promise((r) => setTimeout(r, 20));
      assert.match(recorded.messages[0].text, /from Python extension/);
      assert.deepEqual(recorded.executed, ['python.setInterpreter']);
      assert.deepEqual(recorded.updates, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes crane.connectionFile to the server, with ~ as the home folder', async () => {
    recorded.configuration['crane.connectionFile'] = '~/runtime/kernel-3.json';
    await activate(asContext(context));
    const options = LanguageClient.instances[0].clientOptions.initializationOptions as Record<string, unknown>;
    assert.equal(options.connectionFile, path.join(os.homedir(), 'runtime', 'kernel-3.json'));
  });

  it('attaches a kernel from a connection file picked in a dialog that opens in the Jupyter runtime folder', async () => {
    const saved = process.env.JUPYTER_RUNTIME_DIR;
    process.env.JUPYTER_RUNTIME_DIR = '/srv/jupyter/runtime';
    try {
      window.activeNotebookEditor = { notebook: { uri: Uri.parse('file:///work/nb.ipynb'), notebookType: 'jupyter-notebook' } };
      await activate(asContext(context));
      const client = LanguageClient.instances[0];
      client.requestResult = { attached: true, error: null };
      recorded.nextPick = ['/srv/jupyter/runtime/kernel-42.json'];
      await recorded.commands.get('crane.attachKernelFromFile')?.();
      const dialog = recorded.dialogs[0] as { defaultUri?: Uri; filters?: Record<string, string[]>; canSelectMany?: boolean };
      assert.equal(dialog.defaultUri?.fsPath, '/srv/jupyter/runtime');
      assert.deepEqual(dialog.filters?.['Kernel connection file'], ['json']);
      assert.equal(dialog.canSelectMany, false);
      assert.deepEqual(client.requests.at(-1), {
        method: 'workspace/executeCommand',
        params: {
          command: 'crane.attachKernel',
          arguments: [{ notebookUri: 'file:///work/nb.ipynb', connectionFile: '/srv/jupyter/runtime/kernel-42.json' }],
        },
      });
      assert.match(recorded.messages.at(-1)?.text ?? '', /kernel attached \(\/srv\/jupyter\/runtime\/kernel-42.json\)/);
    } finally {
      if (saved === undefined) delete process.env.JUPYTER_RUNTIME_DIR;
      else process.env.JUPYTER_RUNTIME_DIR = saved;
      window.activeNotebookEditor = undefined;
    }
  });

  it('contributes the interpreter and kernel settings in a scope that remote windows apply from user settings', () => {
    const props = manifest.contributes.configuration.properties;
    for (const key of ['crane.server.pythonPath', 'crane.server.command', 'crane.connectionFile']) {
      assert.ok(props[key], key);
      // VS Code ignores `machine` and `machine-overridable` settings of the local User settings in a remote window
      assert.ok(!['machine', 'machine-overridable', 'application'].includes(props[key].scope ?? ''), `${key}: ${props[key].scope}`);
    }
    const titles = manifest.contributes.commands.map((c) => c.title);
    assert.ok(titles.includes('Attach kernel from connection file…'));
  });

  it('stops the client on deactivate', async () => {
    await activate(asContext(context));
    await deactivate();
    assert.equal(LanguageClient.instances[0].running, false);
  });
});
