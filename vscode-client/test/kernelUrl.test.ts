import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { looksLikeUrl, parseKernelUrl, redactTokens } from '../src/kernelUrl';

describe('kernel URLs', () => {
  it('parses http(s)://HOST:PORT[/BASE]/api/kernels/ID into the base and the kernel id', () => {
    assert.deepEqual(parseKernelUrl('http://127.0.0.1:8888/api/kernels/4d3c2b1a-0000-4e5f-9a8b-123456789abc'), {
      ok: true,
      url: 'http://127.0.0.1:8888/api/kernels/4d3c2b1a-0000-4e5f-9a8b-123456789abc',
      baseUrl: 'http://127.0.0.1:8888',
      kernelId: '4d3c2b1a-0000-4e5f-9a8b-123456789abc',
    });
    const hub = parseKernelUrl(' https://hub.example.org/user/ada/api/kernels/k-1/ ');
    assert.ok(hub.ok);
    assert.equal(hub.baseUrl, 'https://hub.example.org/user/ada');
    assert.equal(hub.url, 'https://hub.example.org/user/ada/api/kernels/k-1');
  });

  it('accepts the websocket URL of the kernel (ws/wss, /channels) and names it by http(s)', () => {
    const ws = parseKernelUrl('wss://lab.example.org:8443/jupyter/api/kernels/abc/channels?session_id=1');
    assert.ok(ws.ok);
    assert.equal(ws.url, 'https://lab.example.org:8443/jupyter/api/kernels/abc');
  });

  it('takes the token out of the URL (query or credentials), never keeping it in the URL', () => {
    const withQuery = parseKernelUrl('http://10.0.0.5:8888/api/kernels/abc?token=s3cr3t-t0ken&x=1');
    assert.ok(withQuery.ok);
    assert.equal(withQuery.url, 'http://10.0.0.5:8888/api/kernels/abc');
    assert.equal(withQuery.token, 's3cr3t-t0ken');
    const withCredentials = parseKernelUrl('http://user:s3cr3t@10.0.0.5:8888/api/kernels/abc');
    assert.ok(withCredentials.ok);
    assert.equal(withCredentials.url, 'http://10.0.0.5:8888/api/kernels/abc');
    assert.equal(withCredentials.token, 's3cr3t');
    assert.doesNotMatch(JSON.stringify({ url: withCredentials.url, base: withCredentials.baseUrl }), /s3cr3t/);
  });

  it('refuses what is not a kernel URL, saying what is expected', () => {
    for (const [text, why] of [
      ['/home/ada/.local/share/jupyter/runtime/kernel-1.json', /not a URL/],
      ['ftp://host/api/kernels/abc', /http:\/\/ or https:\/\//],
      ['http://host:8888/lab/tree/nb.ipynb', /does not name a kernel/],
      ['http://host:8888/api/kernels/', /does not name a kernel/],
      ['http://host:8888/api/kernels/a%20b', /not a kernel id/],
    ] as const) {
      const parsed = parseKernelUrl(text);
      assert.equal(parsed.ok, false, text);
      assert.ok(!parsed.ok && why.test(parsed.error), `${text}: ${!parsed.ok ? parsed.error : ''}`);
    }
  });

  it('tells URLs from connection file paths (Windows drive letters included)', () => {
    assert.equal(looksLikeUrl('https://h/api/kernels/a'), true);
    assert.equal(looksLikeUrl('~/kernel-1.json'), false);
    assert.equal(looksLikeUrl('C:\\Users\\ada\\kernel-1.json'), false);
  });
});

describe('token redaction', () => {
  it('removes tokens from query strings, Authorization headers and URL credentials', () => {
    const line =
      'GET http://h:8888/api/kernels/a/channels?session_id=1&token=abc123def 403; ' +
      "headers {'Authorization': 'token abc123def'} ws://user:abc123def@h:8888/api";
    const out = redactTokens(line);
    assert.doesNotMatch(out, /abc123def/);
    assert.match(out, /token=\*\*\*/);
    assert.match(out, /session_id=1/);
  });

  it('leaves ordinary text alone', () => {
    const text = 'Attached file:///nb.ipynb to kernel http://10.0.0.5:8888/api/kernels/abc (chosen by hand).';
    assert.equal(redactTokens(text), text);
  });
});
