// The model client over https (engines/chat/model-http.ts): a real TLS server on loopback with the
// self-signed certificate of test/fixtures/tls. Untrusted, the request fails as fetch's did, naming
// the certificate error; trusted through NODE_EXTRA_CA_CERTS (in a process of its own, since Node
// reads it at start; the built dist/ — `npm run build` first), the answer streams, the host name
// checked against the certificate (SNI), and two requests share one connection.
import * as fs from 'node:fs';
import * as https from 'node:https';
import type * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelError, streamChatCompletion } from '../../../engines/chat/index.js';
import { ROOT, runNode } from '../../helpers/processes.js';

const TLS = path.join(ROOT, 'test', 'fixtures', 'tls');
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const sse =
  'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"over tls"},"finish_reason":null}]}\n\n' +
  'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';

async function tlsServer(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = https.createServer({ key: fs.readFileSync(path.join(TLS, 'localhost.key')), cert: fs.readFileSync(path.join(TLS, 'localhost.crt')) }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sse);
    });
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { port: (server.address() as net.AddressInfo).port, connections: () => connections };
}

describe('the model client over https', () => {
  it('fails against a certificate nothing trusts as model_unreachable naming the certificate error', async () => {
    const { port } = await tlsServer();
    let error: unknown;
    try {
      for await (const _ of streamChatCompletion({ baseUrl: `https://localhost:${port}/v1`, model: 'm', messages: [], signal: new AbortController().signal, stallMs: 5_000, maxRetryAfterMs: 1, maxAttempts: 1 }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe('model_unreachable');
    expect((error as ModelError).message).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
  });

  it('streams the answer when NODE_EXTRA_CA_CERTS trusts the certificate, one connection for two requests', async () => {
    const { port, connections } = await tlsServer();
    const script = `
      const { streamChatCompletion } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'engines', 'chat', 'index.js'))});
      const out = [];
      for (let i = 0; i < 2; i++) {
        let text = '';
        for await (const p of streamChatCompletion({ baseUrl: 'https://localhost:${port}/v1', model: 'm', messages: [], signal: new AbortController().signal, stallMs: 5000, maxRetryAfterMs: 1, maxAttempts: 1 }))
          if (p.type === 'text') text += p.text;
        out.push(text);
      }
      console.log(JSON.stringify(out));`;
    const r = await runNode(['--input-type=module', '-e', script], { ...process.env, NODE_EXTRA_CA_CERTS: path.join(TLS, 'localhost.crt') });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(['over tls', 'over tls']);
    expect(connections()).toBe(1);
  });
});
