import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import {
  CHECK_CODE,
  checkServer,
  describeLaunch,
  installCommand,
  resolveServerLaunch,
  runProcess,
  type RunResult,
  type Runner,
} from '../src/serverCommand';

describe('server command resolution', () => {
  it('prefers crane.server.command over everything', () => {
    const launch = resolveServerLaunch({ command: ['crane-lsp', 'serve', '--log-level', 'debug'], pythonPath: '/opt/py', interpreter: ['/venv/bin/python'] });
    assert.deepEqual(launch, { command: 'crane-lsp', args: ['serve', '--log-level', 'debug'], source: 'crane.server.command' });
  });

  it('accepts the command as a string', () => {
    assert.deepEqual(resolveServerLaunch({ command: '  crane-lsp   serve ' }), { command: 'crane-lsp', args: ['serve'], source: 'crane.server.command' });
  });

  it('then crane.server.pythonPath', () => {
    const launch = resolveServerLaunch({ command: [], pythonPath: '/opt/py/bin/python', interpreter: ['/venv/bin/python'] });
    assert.deepEqual(launch, {
      command: '/opt/py/bin/python',
      args: ['-m', 'crane_lsp.cli', 'serve'],
      source: 'crane.server.pythonPath',
      python: ['/opt/py/bin/python'],
    });
  });

  it('then the Python extension\'s interpreter, including a multi-part command', () => {
    const launch = resolveServerLaunch({ command: '', pythonPath: '', interpreter: ['conda', 'run', '-n', 'ds', 'python'] });
    assert.equal(launch.command, 'conda');
    assert.deepEqual(launch.args, ['run', '-n', 'ds', 'python', '-m', 'crane_lsp.cli', 'serve']);
    assert.equal(launch.source, 'Python extension');
  });

  it('falls back to python3 on PATH (python on Windows)', () => {
    assert.equal(resolveServerLaunch({ platform: 'linux' }).command, 'python3');
    assert.equal(resolveServerLaunch({ platform: 'win32' }).command, 'python');
    assert.equal(resolveServerLaunch({ platform: 'linux' }).source, 'PATH');
  });

  it('quotes the install command and describes the launch', () => {
    assert.equal(installCommand(['/home/ada/my envs/bin/python']), '"/home/ada/my envs/bin/python" -m pip install crane-lsp');
    assert.equal(describeLaunch(resolveServerLaunch({ pythonPath: '/p/python' })), '/p/python -m crane_lsp.cli serve (from crane.server.pythonPath)');
  });
});

function fakeRunner(result: RunResult, calls: string[][] = []): Runner {
  return async (command, args) => {
    calls.push([command, ...args]);
    return result;
  };
}

describe('server installation check', () => {
  const launch = resolveServerLaunch({ pythonPath: '/venv/bin/python' });

  it('reports the version when crane_lsp imports', async () => {
    const calls: string[][] = [];
    const check = await checkServer(launch, fakeRunner({ code: 0, stdout: '0.1.0', stderr: '' }, calls));
    assert.deepEqual(check, { status: 'ok', version: '0.1.0' });
    assert.deepEqual(calls, [['/venv/bin/python', '-c', CHECK_CODE]]);
  });

  it('says the package is missing and offers the install command', async () => {
    const stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1\nModuleNotFoundError: No module named 'crane_lsp'\n";
    const check = await checkServer(launch, fakeRunner({ code: 1, stdout: '', stderr }));
    assert.equal(check.status, 'missing');
    assert.ok(check.status === 'missing');
    assert.equal(check.installCommand, '/venv/bin/python -m pip install crane-lsp');
    assert.match(check.message, /not installed in \/venv\/bin\/python \(from crane\.server\.pythonPath\)/);
  });

  it('says the interpreter cannot run', async () => {
    const check = await checkServer(launch, fakeRunner({ code: null, stdout: '', stderr: '', spawnError: 'ENOENT' }));
    assert.equal(check.status, 'noInterpreter');
    assert.ok(check.status === 'noInterpreter' && /ENOENT/.test(check.message));
  });

  it('reports other import failures with their last line', async () => {
    const check = await checkServer(launch, fakeRunner({ code: 1, stdout: '', stderr: 'ImportError: cannot import name x\n' }));
    assert.deepEqual(check.status, 'failed');
    assert.ok(check.status === 'failed' && /ImportError: cannot import name x/.test(check.message));
  });

  it('does not check a custom command', async () => {
    const calls: string[][] = [];
    const check = await checkServer(resolveServerLaunch({ command: ['crane-lsp', 'serve'] }), fakeRunner({ code: 0, stdout: '', stderr: '' }, calls));
    assert.deepEqual(check, { status: 'unchecked' });
    assert.equal(calls.length, 0);
  });
});

describe('server installation check with real processes', () => {
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['-c', 'import crane_lsp']).status === 0);
  const skip = python ? false : 'no python with crane_lsp installed';

  it('finds crane_lsp in a real interpreter', { skip }, async () => {
    const check = await checkServer(resolveServerLaunch({ pythonPath: python }), runProcess);
    assert.equal(check.status, 'ok');
    assert.ok(check.status === 'ok' && /^\d+\.\d+/.test(check.version));
  });

  it('detects the missing package in a real interpreter without site-packages', { skip }, async () => {
    const check = await checkServer(resolveServerLaunch({ interpreter: [python as string, '-S', '-I'] }), runProcess);
    assert.equal(check.status, 'missing');
    assert.ok(check.status === 'missing' && check.installCommand.endsWith('-S -I -m pip install crane-lsp'));
  });

  it('reports an interpreter that does not exist', async () => {
    const check = await checkServer(resolveServerLaunch({ pythonPath: '/nonexistent/bin/python' }), runProcess);
    assert.equal(check.status, 'noInterpreter');
  });
});
