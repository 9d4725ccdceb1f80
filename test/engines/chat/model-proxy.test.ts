// The model client's proxy settings (engines/chat/model-proxy.ts): which variables count, and an
// https model server reached through a CONNECT tunnel of a real proxy on loopback, the server's
// certificate checked end to end (NODE_EXTRA_CA_CERTS, in a process of its own since Node reads it
// at start; the built dist/ — `npm run build` first).
import * as fs from 'node:fs';
import * as https from 'node:https';
import type * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { proxyFromEnv } from '../../../engines/chat/index.js';
import { startTestProxy } from '../../helpers/http-proxy.js';
import { ROOT, runNode } from '../../helpers/processes.js';

const TLS = path.join(ROOT, 'test', 'fixtures', 'tls');
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('the proxy settings', () => {
  it('are none without a proxy variable; lowercase wins; https falls back to the http proxy; NO_PROXY is kept', () => {
    expect(proxyFromEnv({ NO_PROXY: 'localhost' })).toBeUndefined();
    expect(proxyFromEnv({ HTTP_PROXY: 'http://upper:1', http_proxy: 'http://lower:2' })).toEqual({
      http: { url: 'http://lower:2', from: 'http_proxy' },
      https: { url: 'http://lower:2', from: 'http_proxy' },
      noProxy: '',
    });
    expect(proxyFromEnv({ HTTPS_PROXY: 'http://p:3', no_proxy: '.internal', NO_PROXY: 'x' })).toEqual({ https: { url: 'http://p:3', from: 'HTTPS_PROXY' }, noProxy: '.internal' });
  });
});

describe('an https model server behind HTTPS_PROXY', () => {
  it('is reached through a CONNECT tunnel, its certificate checked, the answer streamed', async () => {
    const sse =
      'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"through the tunnel"},"finish_reason":null}]}\n\n' +
      'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    const server = https.createServer({ key: fs.readFileSync(path.join(TLS, 'localhost.key')), cert: fs.readFileSync(path.join(TLS, 'localhost.crt')) }, (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(sse);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
    const port = (server.address() as net.AddressInfo).port;
    const proxy = await startTestProxy();
    closers.push(() => proxy.close());

    const script = `
      const { streamChatCompletion, proxyFromEnv } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'engines', 'chat', 'index.js'))});
      let text = '';
      for await (const p of streamChatCompletion({ baseUrl: 'https://localhost:${port}/v1', model: 'm', messages: [], signal: new AbortController().signal, stallMs: 5000, maxRetryAfterMs: 1, maxAttempts: 1, proxy: proxyFromEnv(process.env) }))
        if (p.type === 'text') text += p.text;
      console.log(JSON.stringify(text));`;
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_EXTRA_CA_CERTS: path.join(TLS, 'localhost.crt'), HTTPS_PROXY: proxy.url };
    delete env.NO_PROXY;
    delete env.no_proxy;
    const r = await runNode(['--input-type=module', '-e', script], env);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toBe('through the tunnel');
    expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `localhost:${port}` }]);
  });
});
