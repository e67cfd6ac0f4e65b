import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INITIAL_STATUS, formatLatency, parseStatus, renderStatus, type ClientState } from '../src/status';

const running = (status: Partial<ClientState['status']>, attachMode: ClientState['attachMode'] = 'jupyter'): ClientState => ({
  server: 'running',
  status: { ...INITIAL_STATUS, ...status },
  attachMode,
});

describe('crane/status handling', () => {
  it('parses a full payload', () => {
    assert.deepEqual(parseStatus({ kernel: 'attached', checking: true, lastLatencyMs: 42, message: ' ok ' }), {
      kernel: 'attached',
      checking: true,
      lastLatencyMs: 42,
      message: 'ok',
    });
  });

  it('keeps previous values for missing fields and ignores unknown ones', () => {
    const previous = parseStatus({ kernel: 'attached', checking: false, lastLatencyMs: 12 });
    const next = parseStatus({ checking: true, extra: { nested: 1 } }, previous);
    assert.deepEqual(next, { kernel: 'attached', checking: true, lastLatencyMs: 12 });
  });

  it('tolerates garbage', () => {
    assert.deepEqual(parseStatus(null), INITIAL_STATUS);
    assert.deepEqual(parseStatus('busy'), INITIAL_STATUS);
    assert.deepEqual(parseStatus([1, 2]), INITIAL_STATUS);
    const odd = parseStatus({ kernel: 'zombie', checking: 'yes', lastLatencyMs: -5 });
    assert.deepEqual(odd, { kernel: 'unknown', checking: false, lastLatencyMs: null });
    assert.equal(parseStatus({ lastLatencyMs: null }, { ...INITIAL_STATUS, lastLatencyMs: 9 }).lastLatencyMs, null);
  });

  it('names the kernel of crane.connectionFile instead of "discovery"', () => {
    const state = { ...running({ kernel: 'attached', lastLatencyMs: 12 }, 'noJupyter'), connectionFile: '/k/kernel-1.json' };
    const view = renderStatus(state);
    assert.equal(view.text, '$(check) crane 12 ms');
    assert.match(view.tooltip, /Kernel from crane\.connectionFile: \/k\/kernel-1\.json/);
    assert.doesNotMatch(view.tooltip, /discovers kernels itself/);
    assert.equal(renderStatus(running({ kernel: 'attached' }, 'noJupyter')).text, '$(check) crane (discovery)');
  });

  it('renders kernel state, checking and latency', () => {
    assert.equal(renderStatus(running({ kernel: 'attached', lastLatencyMs: 37.4 })).text, '$(check) crane 37 ms');
    assert.equal(renderStatus(running({ kernel: 'attached', checking: true, lastLatencyMs: 37 })).text, '$(sync~spin) crane: checking');
    assert.equal(renderStatus(running({ kernel: 'busy' })).text, '$(watch) crane: kernel busy');
    const none = renderStatus(running({ kernel: 'none', message: 'kernel died' }));
    assert.equal(none.text, '$(debug-disconnect) crane: no kernel');
    assert.equal(none.severity, 'warning');
    assert.match(none.tooltip, /kernel died/);
  });

  it('says when the server discovers kernels itself', () => {
    const noJupyter = renderStatus(running({ kernel: 'attached' }, 'noJupyter'));
    assert.match(noJupyter.text, /\(discovery\)$/);
    assert.match(noJupyter.tooltip, /Jupyter extension not available/);
    const declined = renderStatus(running({ kernel: 'none' }, 'declined'));
    assert.match(declined.tooltip, /Kernel access declined/);
    assert.doesNotMatch(renderStatus(running({ kernel: 'attached' })).text, /discovery/);
  });

  it('shows a missing server as an error that restarts on click', () => {
    const view = renderStatus({ server: 'missing', status: INITIAL_STATUS, attachMode: 'jupyter', detail: 'pip install crane-lsp' });
    assert.equal(view.severity, 'error');
    assert.equal(view.command, 'crane.restartServer');
    assert.match(view.tooltip, /pip install crane-lsp/);
  });

  it('formats latency', () => {
    assert.equal(formatLatency(999), '999 ms');
    assert.equal(formatLatency(1500), '1.5 s');
  });

  it('says where the kernel is: relayed through the editor, a URL (never a token), or a file', () => {
    const relayed = parseStatus({ kernel: 'attached', relayed: true, kernelUrl: null, connectionFile: null });
    assert.match(relayed.where ?? '', /relayed through the Jupyter extension/);
    const running: ClientState = { server: 'running', status: relayed, attachMode: 'jupyter' };
    assert.match(renderStatus(running).tooltip, /Kernel attached\. Kernel: the editor's kernel connection \(relayed/);
    const url = parseStatus({ relayed: false, kernelUrl: 'http://h:8888/api/kernels/k?token=abc123', connectionFile: null }, relayed);
    assert.equal(url.where, 'http://h:8888/api/kernels/k?token=***');
    assert.equal(parseStatus({ checking: true }, url).where, url.where, 'kept while the server leaves it out');
    assert.equal(parseStatus({ relayed: false, kernelUrl: null, connectionFile: null }, url).where, undefined);
  });
});
