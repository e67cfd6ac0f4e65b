import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  CONNECTION_FILE_CODE,
  MIME_ERROR,
  MIME_STDERR,
  MIME_STDOUT,
  MIME_TEXT,
  extractConnectionFile,
  findInText,
  type KernelOutput,
} from '../src/connectionFile';

const bytes = (text: string) => new TextEncoder().encode(text);
const out = (mime: string, text: string, asBytes = true): KernelOutput => ({ items: [{ mime, data: asBytes ? bytes(text) : text }] });

describe('connection file extraction', () => {
  it('reads the printed JSON line from a stdout stream (bytes, as the Jupyter API yields them)', () => {
    const outputs = [out(MIME_STDOUT, '{"crane_connection_file": "/run/user/1000/jupyter/kernel-1a2b.json"}\n')];
    assert.deepEqual(extractConnectionFile(outputs), { connectionFile: '/run/user/1000/jupyter/kernel-1a2b.json' });
  });

  it('joins stdout that arrives in several chunks', () => {
    const outputs = [
      out(MIME_STDOUT, '{"crane_connection_'),
      out(MIME_STDOUT, 'file": "/home/ada/.local/share/jupyter/runtime/kernel-9.json"}'),
      out(MIME_STDOUT, '\n'),
    ];
    assert.deepEqual(extractConnectionFile(outputs), { connectionFile: '/home/ada/.local/share/jupyter/runtime/kernel-9.json' });
  });

  it('ignores other output printed before it (e.g. a warning from a startup script)', () => {
    const outputs = [
      out(MIME_STDERR, 'DeprecationWarning: something\n'),
      out(MIME_STDOUT, 'hello from an IPython startup file\n{"crane_connection_file": "/tmp/k.json"}\n'),
    ];
    assert.deepEqual(extractConnectionFile(outputs), { connectionFile: '/tmp/k.json' });
  });

  it('unescapes Windows paths', () => {
    const outputs = [out(MIME_STDOUT, '{"crane_connection_file": "C:\\\\Users\\\\ada\\\\AppData\\\\Roaming\\\\jupyter\\\\runtime\\\\kernel-3.json"}\n')];
    assert.deepEqual(extractConnectionFile(outputs), {
      connectionFile: 'C:\\Users\\ada\\AppData\\Roaming\\jupyter\\runtime\\kernel-3.json',
    });
  });

  it('reads an execute_result text/plain repr of the JSON string', () => {
    const outputs = [out(MIME_TEXT, `'{"crane_connection_file": "/tmp/kernel-7.json"}'`, false)];
    assert.deepEqual(extractConnectionFile(outputs), { connectionFile: '/tmp/kernel-7.json' });
    assert.equal(findInText(`'{"crane_connection_file": "C:\\\\\\\\k.json"}'`), 'C:\\k.json');
  });

  it('reports the kernel error (e.g. a non-IPython kernel)', () => {
    const error = JSON.stringify({ name: 'ModuleNotFoundError', message: "No module named 'ipykernel'", stack: '...' });
    const result = extractConnectionFile([out(MIME_ERROR, error)]);
    assert.deepEqual(result, { error: "the kernel raised ModuleNotFoundError: No module named 'ipykernel'" });
  });

  it('reports stderr, and an empty answer', () => {
    assert.deepEqual(extractConnectionFile([out(MIME_STDERR, 'Traceback...\nRuntimeError: app not initialized\n')]), {
      error: 'the kernel wrote to stderr: RuntimeError: app not initialized',
    });
    const empty = extractConnectionFile([]);
    assert.ok('error' in empty && /without a connection file/.test(empty.error));
  });

  it('rejects an empty or non-string value', () => {
    assert.ok('error' in extractConnectionFile([out(MIME_STDOUT, '{"crane_connection_file": ""}')]));
    assert.ok('error' in extractConnectionFile([out(MIME_STDOUT, '{"crane_connection_file": null}')]));
  });
});

function pythonWithJupyterClient(): string | undefined {
  for (const python of [process.env.CRANE_TEST_PYTHON, 'python3', 'python']) {
    if (!python) continue;
    const probe = spawnSync(python, ['-c', 'import jupyter_client, ipykernel'], { encoding: 'utf8' });
    if (probe.status === 0) return python;
  }
  return undefined;
}

describe('connection file code in a real ipykernel', () => {
  const python = pythonWithJupyterClient();
  const script = path.join(__dirname, '..', '..', 'test', 'fixtures', 'real_kernel.py');
  const runInKernel = (code: string) =>
    JSON.parse(execFileSync(python as string, [script, code], { encoding: 'utf8', timeout: 60_000 })) as {
      outputs: KernelOutput[];
      connectionFile: string;
      leaked: string[];
      last: string;
    };

  it('returns the kernel\'s own connection file and binds no names', { skip: python ? false : 'python with jupyter_client not found' }, () => {
    const result = runInKernel(CONNECTION_FILE_CODE);
    assert.deepEqual(extractConnectionFile(result.outputs), { connectionFile: result.connectionFile });
    assert.deepEqual(result.leaked, []);
    assert.equal(result.last, `"''"`, 'the last result `_` is untouched');
  });

  it('would notice a leaking variant (near miss)', { skip: python ? false : 'python with jupyter_client not found' }, () => {
    const result = runInKernel('import json, ipykernel; print(json.dumps({"crane_connection_file": ipykernel.get_connection_file()}))');
    assert.deepEqual(extractConnectionFile(result.outputs), { connectionFile: result.connectionFile });
    assert.deepEqual(result.leaked, ['ipykernel', 'json']);
  });
});
