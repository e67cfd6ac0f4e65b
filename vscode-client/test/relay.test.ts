/**
 * The kernel relay against a kernel object with the real Jupyter extension API's shape: the fake below
 * implements `Kernel` from `@vscode/jupyter-extension` (the typings the extension is built against), so
 * a change there that the relay does not follow fails to compile. The Jupyter extension itself cannot
 * run here.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { Kernel, KernelStatus, Output } from '@vscode/jupyter-extension';
import type { CancellationToken, Disposable, Event } from 'vscode';
import { MIME_ERROR, MIME_STDERR, MIME_STDOUT } from '../src/connectionFile';
import type { Consent, JupyterLike, KernelLike } from '../src/kernelAttach';
import { collectOutputs, KernelRelay, parseRelayParams, RELAY_REQUEST, RELAY_STATUS_REQUEST, type RelayResult } from '../src/relay';

const bytes = (text: string) => new TextEncoder().encode(text);
const contract = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'contract.json'), 'utf8')) as {
  kernelRelay: {
    attachParamNames: string[];
    execute: { method: string; paramNames: string[]; resultNames: string[]; statuses: string[] };
    status: { method: string; paramNames: string[]; resultNames: string[] };
  };
};

/** A kernel as the Jupyter extension hands it to other extensions (api.d.ts `Kernel`). */
class FakeJupyterKernel implements Kernel {
  status: KernelStatus = 'idle';
  language = 'python';
  executed: string[] = [];
  tokens: CancellationToken[] = [];
  /** Before the first output: a cell of someone else runs (the execution waits in the queue). */
  delayFirstMs = 0;
  hang = false;
  fail: Error | undefined;
  finished = 0;
  constructor(private readonly outputs: Output[]) {}
  onDidChangeStatus: Event<KernelStatus> = () => ({ dispose: () => undefined }) as Disposable;
  async *executeCode(code: string, token: CancellationToken): AsyncIterable<Output> {
    this.executed.push(code);
    this.tokens.push(token);
    if (this.delayFirstMs) await new Promise((r) => setTimeout(r, this.delayFirstMs));
    if (this.fail) throw this.fail;
    for (const output of this.outputs) yield output;
    if (this.hang) await new Promise(() => undefined);
    this.finished += 1;
  }
}

function stdout(text: string): Output {
  return { items: [{ mime: MIME_STDOUT, data: bytes(text) }] };
}

function setup(kernel: FakeJupyterKernel | undefined, consent: Consent | null = 'allow') {
  const asLike: KernelLike | undefined = kernel; // the real API's Kernel is what the relay takes
  const jupyter: JupyterLike = { getKernel: async (uri) => (uri === 'file:///r.ipynb' ? asLike : undefined) };
  const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) };
  const logs: string[] = [];
  const relay = new KernelRelay({ jupyter: async () => jupyter, getConsent: () => consent ?? undefined, token: () => token, log: (l) => logs.push(l) });
  return { relay, token, logs };
}

const params = (extra: Record<string, unknown> = {}) => ({ notebookUri: 'file:///r.ipynb', code: 'print(1)', startTimeoutMs: 200, timeoutMs: 1000, ...extra });

describe('kernel relay (crane/kernelRelay/execute)', () => {
  it('runs the code with executeCode and answers stdout, stderr, the error and display data by mime', async () => {
    const kernel = new FakeJupyterKernel([
      stdout('<crane-relay-start n>\n'),
      { items: [{ mime: MIME_STDERR, data: bytes('a warning\n') }] },
      stdout('<crane-relay n>{"status": "ok"}'),
      stdout('</crane-relay n>\n'),
      { items: [{ mime: 'text/plain', data: bytes('42') }, { mime: 'image/png', data: new Uint8Array([137, 80]) }] },
      { items: [{ mime: MIME_ERROR, data: bytes(JSON.stringify({ name: 'KeyError', message: "'x'", stack: '...' })) }] },
    ]);
    const { relay } = setup(kernel);
    const result = await relay.execute(params({ code: 'exec(...)' }));
    assert.deepEqual(result, {
      status: 'ok',
      stdout: '<crane-relay-start n>\n<crane-relay n>{"status": "ok"}</crane-relay n>\n',
      stderr: 'a warning\n',
      error: { ename: 'KeyError', evalue: "'x'" },
      outputs: [{ 'text/plain': '42' }],
    });
    assert.deepEqual(kernel.executed, ['exec(...)']);
  });

  it('answers exactly the pinned fields and statuses (contract.json, read by the server too)', async () => {
    assert.equal(RELAY_REQUEST, contract.kernelRelay.execute.method);
    assert.equal(RELAY_STATUS_REQUEST, contract.kernelRelay.status.method);
    const parsed = parseRelayParams(params());
    assert.deepEqual(Object.keys(parsed).sort(), contract.kernelRelay.execute.paramNames);
    const full: Required<RelayResult> = { status: 'ok', stdout: '', stderr: '', error: { ename: '', evalue: '' }, outputs: [], message: '' };
    assert.deepEqual(Object.keys(full).sort(), contract.kernelRelay.execute.resultNames);
    const statuses: RelayResult['status'][] = ['busy', 'denied', 'failed', 'noKernel', 'ok', 'timeout'];
    assert.deepEqual(statuses, contract.kernelRelay.execute.statuses);
  });

  it('says busy at once while a cell runs, without running anything', async () => {
    const kernel = new FakeJupyterKernel([stdout('x')]);
    kernel.status = 'busy';
    const { relay } = setup(kernel);
    const result = await relay.execute(params());
    assert.equal(result.status, 'busy');
    assert.deepEqual(kernel.executed, []);
  });

  it('runs when a busy status turns idle within moments (another client\'s quick request)', async () => {
    const kernel = new FakeJupyterKernel([stdout('ran\n')]);
    kernel.status = 'busy';
    setTimeout(() => (kernel.status = 'idle'), 100);
    const { relay } = setup(kernel);
    const result = await relay.execute(params());
    assert.equal(result.status, 'ok');
    assert.equal(result.stdout, 'ran\n');
  });

  it('says busy when nothing starts within startTimeoutMs, and never cancels the queued execution', async () => {
    const kernel = new FakeJupyterKernel([stdout('late\n')]);
    kernel.delayFirstMs = 400;
    const { relay, token } = setup(kernel);
    const t0 = Date.now();
    const result = await relay.execute(params({ startTimeoutMs: 100 }));
    assert.equal(result.status, 'busy');
    assert.ok(Date.now() - t0 < 350, 'answered before the execution started');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(kernel.finished, 1, 'the queued execution ran to its end (its answer dropped)');
    assert.equal(token.isCancellationRequested, false);
  });

  it('answers timeout with what came so far when the execution does not end, still without cancelling', async () => {
    const kernel = new FakeJupyterKernel([stdout('<start>\n')]);
    kernel.hang = true;
    const { relay, token } = setup(kernel);
    const result = await relay.execute(params({ timeoutMs: 150 }));
    assert.equal(result.status, 'timeout');
    assert.equal(result.stdout, '<start>\n');
    assert.equal(token.isCancellationRequested, false);
  });

  it('reports a failing executeCode (access revoked, kernel disposed) as failed', async () => {
    const kernel = new FakeJupyterKernel([]);
    kernel.fail = Object.assign(new Error('Access to Jupyter Kernel has been revoked'), { name: 'vscode.jupyter.apiAccessRevoked' });
    const { relay, logs } = setup(kernel);
    const result = await relay.execute(params());
    assert.equal(result.status, 'failed');
    assert.deepEqual(result.error, { ename: 'vscode.jupyter.apiAccessRevoked', evalue: 'Access to Jupyter Kernel has been revoked' });
    assert.match(logs.join('\n'), /revoked/);
  });

  it('runs nothing without consent, for a notebook without a kernel, or with bad parameters', async () => {
    const kernel = new FakeJupyterKernel([stdout('x')]);
    assert.equal((await setup(kernel, 'deny').relay.execute(params())).status, 'denied');
    assert.equal((await setup(kernel, null).relay.execute(params())).status, 'denied');
    assert.equal((await setup(kernel).relay.execute(params({ notebookUri: 'file:///other.ipynb' }))).status, 'noKernel');
    assert.equal((await setup(kernel).relay.execute({ notebookUri: 'file:///r.ipynb' })).status, 'failed');
    kernel.status = 'restarting';
    assert.equal((await setup(kernel).relay.execute(params())).status, 'noKernel');
    assert.deepEqual(kernel.executed, []);
  });

  it('bounds the timeouts the server asks for', () => {
    const parsed = parseRelayParams({ notebookUri: 'u', code: 'c', startTimeoutMs: -1, timeoutMs: 1e12 });
    assert.ok(typeof parsed !== 'string');
    assert.equal(parsed.startTimeoutMs, 2000);
    assert.equal(parsed.timeoutMs, 600_000);
  });

  it('decodes string data too (older Jupyter extensions) and both stream mime spellings', () => {
    const result = collectOutputs([
      { items: [{ mime: 'application/x.notebook.stream.stdout', data: 'a' }] },
      { items: [{ mime: MIME_STDOUT, data: bytes('b') }] },
    ]);
    assert.equal(result.stdout, 'ab');
  });
});

describe('kernel relay (crane/kernelRelay/status)', () => {
  it("answers the Jupyter extension's kernel status without running anything", async () => {
    const kernel = new FakeJupyterKernel([]);
    kernel.status = 'busy';
    const { relay } = setup(kernel);
    const answer = await relay.status({ notebookUri: 'file:///r.ipynb' });
    assert.deepEqual(answer, { status: 'busy' });
    assert.ok(Object.keys(answer).every((k) => contract.kernelRelay.status.resultNames.includes(k)));
    assert.equal((await relay.status({ notebookUri: 'file:///nope.ipynb' })).status, 'noKernel');
    assert.equal((await setup(kernel, 'deny').relay.status({ notebookUri: 'file:///r.ipynb' })).status, 'denied');
    assert.deepEqual(kernel.executed, []);
  });
});

/** A Python with crane_lsp (to write the relay's code as the server does) and a kernel to run it in. */
function pythonWithCrane(): string | undefined {
  for (const python of [process.env.CRANE_TEST_PYTHON, 'python3', 'python']) {
    if (!python) continue;
    if (spawnSync(python, ['-c', 'import crane_lsp.kernel.transport_relay, jupyter_client, ipykernel']).status === 0) return python;
  }
  return undefined;
}

describe('the server\'s relay code in a real ipykernel, sent as executeCode sends it', () => {
  const python = pythonWithCrane();
  const skip = python ? false : 'no python with crane_lsp and jupyter_client';
  const script = path.join(__dirname, '..', '..', 'test', 'fixtures', 'real_kernel.py');

  it('decodes into the reply the server reads, leaving no name, no Out/_, no count, no sys.last_value', { skip }, () => {
    const request = {
      kind: 'execute',
      code: '',
      user_expressions: { ok: '6 * 7', bad: '1 / 0' },
      start: '<start n1>',
      open: '<crane-relay n1>',
      close: '</crane-relay n1>',
    };
    const code = execFileSync(
      python as string,
      ['-c', 'import json, sys; from crane_lsp.kernel.transport_relay import relay_code; print(relay_code(json.loads(sys.argv[1])))', JSON.stringify(request)],
      { encoding: 'utf8' },
    ).trim();
    const run = JSON.parse(execFileSync(python as string, [script, code, 'executeCode'], { encoding: 'utf8', timeout: 60_000 })) as {
      outputs: Output[];
      leaked: string[];
      last: string;
      countBefore: string;
      countAfter: string;
      lastValue: string;
    };
    const result = collectOutputs(run.outputs);
    assert.equal(result.status, 'ok');
    assert.ok(result.stdout.startsWith('<start n1>\n'), result.stdout);
    const reply = JSON.parse(result.stdout.split('<crane-relay n1>')[1].split('</crane-relay n1>')[0]) as {
      status: string;
      user_expressions: Record<string, { status: string; data?: Record<string, string>; ename?: string }>;
    };
    assert.equal(reply.status, 'ok');
    assert.deepEqual(reply.user_expressions.ok.data, { 'text/plain': '42' });
    assert.equal(reply.user_expressions.bad.ename, 'ZeroDivisionError');
    assert.deepEqual(result.outputs, [], 'no execute_result: the statement returns None');
    assert.equal(result.error, undefined);
    assert.deepEqual(run.leaked, []);
    assert.equal(run.last, `"''"`);
    assert.equal(run.countAfter, run.countBefore);
    assert.equal(run.lastValue, 'False', 'the failing expression left no sys.last_value');
  });
});
