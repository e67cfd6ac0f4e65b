import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONNECTION_FILE_CODE, MIME_STDOUT, type KernelOutput } from '../src/connectionFile';
import {
  ATTACH_NOTIFICATION,
  KernelAttacher,
  type AttachDeps,
  type AttachKernelParams,
  type Consent,
  type KernelLike,
} from '../src/kernelAttach';
import type { AttachMode } from '../src/status';

const bytes = (text: string) => new TextEncoder().encode(text);

class FakeKernel implements KernelLike {
  status = 'idle';
  executed: string[] = [];
  private listeners: ((status: string) => void)[] = [];
  constructor(
    public connectionFile: string,
    public hang = false,
  ) {}
  onDidChangeStatus(listener: (status: string) => void) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  fire(status: string): void {
    this.status = status;
    for (const l of this.listeners) l(status);
  }
  get listenerCount(): number {
    return this.listeners.length;
  }
  async *executeCode(code: string): AsyncIterable<KernelOutput> {
    this.executed.push(code);
    if (this.hang) await new Promise(() => undefined);
    yield { items: [{ mime: MIME_STDOUT, data: bytes(`{"crane_connection_file": "${this.connectionFile}"}\n`) }] };
  }
}

function setup(options: { jupyter?: boolean; consent?: Consent; answer?: Consent; missing?: string[] } = {}) {
  const kernels = new Map<string, FakeKernel>();
  const sent: AttachKernelParams[] = [];
  const modes: AttachMode[] = [];
  const tokens: { cancelled: boolean }[] = [];
  const state: { consent: Consent | undefined; asked: number } = { consent: options.consent, asked: 0 };
  const deps: AttachDeps = {
    jupyter: async () => (options.jupyter === false ? undefined : { getKernel: async (uri) => kernels.get(uri) }),
    getConsent: () => state.consent,
    setConsent: async (c) => {
      state.consent = c;
    },
    askConsent: async () => {
      state.asked += 1;
      await new Promise((r) => setTimeout(r, 5));
      return options.answer;
    },
    notify: async (params) => {
      sent.push(params);
    },
    fileExists: async (file) => !(options.missing ?? []).includes(file),
    createCancel: () => {
      const token = { cancelled: false };
      tokens.push(token);
      return { token, cancel: () => (token.cancelled = true), dispose: () => undefined };
    },
    onModeChange: (mode) => modes.push(mode),
    log: () => undefined,
  };
  return { kernels, sent, modes, state, tokens, attacher: new KernelAttacher(deps, 50) };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('kernel attachment', () => {
  it('sends crane/attachKernel with exactly {notebookUri, connectionFile}', async () => {
    const { kernels, sent, attacher } = setup({ consent: 'allow' });
    const kernel = new FakeKernel('/tmp/kernel-1.json');
    kernels.set('file:///a.ipynb', kernel);
    const outcome = await attacher.attach('file:///a.ipynb');
    assert.equal(ATTACH_NOTIFICATION, 'crane/attachKernel');
    assert.deepEqual(outcome, { kind: 'attached', connectionFile: '/tmp/kernel-1.json' });
    assert.deepEqual(sent, [{ notebookUri: 'file:///a.ipynb', connectionFile: '/tmp/kernel-1.json' }]);
    assert.deepEqual(Object.keys(sent[0]).sort(), ['connectionFile', 'notebookUri']);
    assert.deepEqual(kernel.executed, [CONNECTION_FILE_CODE]);
  });

  it('asks once for two notebooks opened together and remembers the answer', async () => {
    const { kernels, sent, state, attacher } = setup({ answer: 'allow' });
    kernels.set('a', new FakeKernel('/k/a.json'));
    kernels.set('b', new FakeKernel('/k/b.json'));
    await Promise.all([attacher.attach('a'), attacher.attach('b')]);
    assert.equal(state.asked, 1);
    assert.equal(state.consent, 'allow');
    assert.equal(sent.length, 2);
  });

  it('falls back to discovery when declined, and does not ask again', async () => {
    const { kernels, sent, modes, state, attacher } = setup({ answer: 'deny' });
    const kernel = new FakeKernel('/k/a.json');
    kernels.set('a', kernel);
    assert.deepEqual(await attacher.attach('a'), { kind: 'declined' });
    assert.deepEqual(await attacher.attach('a'), { kind: 'declined' });
    assert.equal(state.asked, 1);
    assert.equal(state.consent, 'deny');
    assert.deepEqual(sent, []);
    assert.deepEqual(kernel.executed, []);
    assert.deepEqual(modes, ['declined', 'declined']);
  });

  it('asks again when the user runs "Attach kernel" after declining', async () => {
    const ctx = setup({ consent: 'deny', answer: 'allow' });
    ctx.kernels.set('a', new FakeKernel('/k/a.json'));
    assert.equal((await ctx.attacher.attach('a')).kind, 'declined');
    assert.equal(ctx.state.asked, 0);
    assert.equal((await ctx.attacher.attach('a', { userInitiated: true })).kind, 'attached');
    assert.equal(ctx.state.asked, 1);
    assert.equal(ctx.state.consent, 'allow');
  });

  it('does not store a dismissed question, but stops asking in this session', async () => {
    const ctx = setup({ answer: undefined });
    ctx.kernels.set('a', new FakeKernel('/k/a.json'));
    assert.equal((await ctx.attacher.attach('a')).kind, 'declined');
    assert.equal((await ctx.attacher.attach('a')).kind, 'declined');
    assert.equal(ctx.state.asked, 1);
    assert.equal(ctx.state.consent, undefined);
  });

  it('says so without the Jupyter extension', async () => {
    const { modes, sent, attacher } = setup({ jupyter: false });
    assert.deepEqual(await attacher.attach('a'), { kind: 'noJupyter' });
    assert.deepEqual(modes, ['noJupyter']);
    assert.deepEqual(sent, []);
  });

  it('waits for a kernel that has not started', async () => {
    const ctx = setup({ consent: 'allow' });
    assert.deepEqual(await ctx.attacher.attach('a'), { kind: 'noKernel' });
    ctx.kernels.set('a', new FakeKernel('/k/a.json'));
    const outcome = await ctx.attacher.ensureAttached('a');
    assert.deepEqual(outcome, { kind: 'attached', connectionFile: '/k/a.json' });
    assert.equal(await ctx.attacher.ensureAttached('a'), undefined, 'same kernel: nothing to do');
    assert.equal(ctx.sent.length, 1);
  });

  it('attaches again after a kernel restart, and after the kernel was replaced', async () => {
    const ctx = setup({ consent: 'allow' });
    const first = new FakeKernel('/k/one.json');
    ctx.kernels.set('a', first);
    await ctx.attacher.attach('a');
    first.fire('busy');
    first.fire('idle');
    await settle();
    assert.equal(ctx.sent.length, 1, 'an ordinary busy/idle cycle does not re-attach');
    first.fire('restarting');
    first.fire('starting');
    first.fire('idle');
    await settle();
    assert.equal(ctx.sent.length, 2);
    const second = new FakeKernel('/k/two.json');
    ctx.kernels.set('a', second);
    await ctx.attacher.ensureAttached('a');
    assert.deepEqual(ctx.sent.at(-1), { notebookUri: 'a', connectionFile: '/k/two.json' });
    assert.equal(first.listenerCount, 0, 'the old kernel is no longer watched');
    assert.equal(ctx.attacher.connectionFileOf('a'), '/k/two.json');
  });

  it('gives up on a kernel that does not answer (busy), and never cancels the request (a cancel interrupts the kernel)', async () => {
    const ctx = setup({ consent: 'allow' });
    ctx.kernels.set('a', new FakeKernel('/k/a.json', true));
    const outcome = await ctx.attacher.attach('a');
    assert.equal(outcome.kind, 'failed');
    assert.ok(outcome.kind === 'failed' && /no answer from the kernel within 50 ms/.test(outcome.reason));
    assert.deepEqual(ctx.sent, []);
    assert.deepEqual(ctx.tokens, [{ cancelled: false }]);
  });

  it('attaches through the editor (relay) when the connection file is not on this machine', async () => {
    const ctx = setup({ consent: 'allow', missing: ['/home/jovyan/.local/share/jupyter/runtime/kernel-9.json'] });
    ctx.kernels.set('a', new FakeKernel('/home/jovyan/.local/share/jupyter/runtime/kernel-9.json'));
    const outcome = await ctx.attacher.attach('a');
    assert.equal(outcome.kind, 'relayed');
    assert.deepEqual(ctx.sent, [{ notebookUri: 'a', relay: true }]);
    assert.deepEqual(ctx.attacher.targetOf('a'), { relay: true });
    ctx.sent.length = 0;
    await ctx.attacher.resendAll();
    assert.deepEqual(ctx.sent, [{ notebookUri: 'a', relay: true }], 'a server restart gets the relay again');
  });

  it('does not relay a kernel that is not Python (the probe is Python)', async () => {
    const ctx = setup({ consent: 'allow', missing: ['/remote/kernel-r.json'] });
    const kernel = Object.assign(new FakeKernel('/remote/kernel-r.json'), { language: 'r' });
    ctx.kernels.set('a', kernel);
    const outcome = await ctx.attacher.attach('a');
    assert.equal(outcome.kind, 'failed');
    assert.deepEqual(ctx.sent, []);
  });

  it('keeps a kernel URL chosen by hand, and re-sends it (without a token) after a server restart', async () => {
    const ctx = setup({ consent: 'allow' });
    ctx.attacher.pin('a', { kernelUrl: 'http://10.0.0.5:8888/api/kernels/k1' });
    const outcome = await ctx.attacher.attach('a');
    assert.deepEqual(outcome, { kind: 'attached', connectionFile: 'http://10.0.0.5:8888/api/kernels/k1' });
    await ctx.attacher.resendAll();
    assert.deepEqual(ctx.sent, [{ notebookUri: 'a', kernelUrl: 'http://10.0.0.5:8888/api/kernels/k1' }]);
  });

  it('resends attachments after a server restart and forgets closed notebooks', async () => {
    const ctx = setup({ consent: 'allow' });
    ctx.kernels.set('a', new FakeKernel('/k/a.json'));
    ctx.kernels.set('b', new FakeKernel('/k/b.json'));
    await ctx.attacher.attach('a');
    await ctx.attacher.attach('b');
    ctx.attacher.forget('b');
    ctx.sent.length = 0;
    await ctx.attacher.resendAll();
    assert.deepEqual(ctx.sent, [{ notebookUri: 'a', connectionFile: '/k/a.json' }]);
  });
});
