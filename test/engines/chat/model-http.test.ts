// The model client's own HTTP/1.1 (engines/chat/model-http.ts) against raw TCP servers on loopback
// that answer with exact bytes: framings the fixture server (node:http) never sends, connections
// kept and reused, a kept connection the server closed, and the answers it refuses to follow.
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ModelRequest, type ModelStreamPart } from '../../../engines/chat/index.js';
import { collect, fault } from './stream-helpers.js';
import { until } from './context.js';
import { connectionError } from '../../../engines/chat/model-errors.js';
import { postModel } from '../../../engines/chat/model-http.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const chunkJson = (content: string) =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`;
const finishSse = 'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
const chunkedOf = (parts: string[]) => parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n';

interface RawServer {
  baseUrl: string;
  /** Sockets accepted so far. */
  connections: number;
  /** Requests read so far (a head and its body). */
  requests: string[];
}

/** A TCP server that answers each request (head + content-length body) with `answer(n)`'s bytes. */
async function rawServer(answer: (n: number, socket: net.Socket) => string | Buffer | undefined, port = 0): Promise<RawServer> {
  const sockets = new Set<net.Socket>();
  const state: RawServer = { baseUrl: '', connections: 0, requests: [] };
  const server = net.createServer((s) => {
    state.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    s.on('data', (b) => {
      buf = Buffer.concat([buf, b]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.toString('latin1', 0, end);
        const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        state.requests.push(buf.toString('utf8', 0, end + 4 + len));
        buf = buf.subarray(end + 4 + len);
        const out = answer(state.requests.length, s);
        if (out !== undefined) s.write(out);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  state.baseUrl = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`;
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return state;
}

function request(baseUrl: string, over: Partial<ModelRequest> = {}): ModelRequest {
  return { baseUrl, model: 'm', messages: [{ role: 'user', content: 'hi' }], signal: new AbortController().signal, stallMs: 3_000, maxRetryAfterMs: 1_000, maxAttempts: 1, ...over };
}

const text = (parts: ModelStreamPart[]) => parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
const sseHead = (extra = '') => `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n${extra}`;

describe('the model client\'s HTTP', () => {
  it('sends one well-formed POST and reads a chunked answer, a content-length one and one that ends with the connection', async () => {
    const body = chunkJson('Hello') + chunkJson(' there') + finishSse;
    const s = await rawServer((n) => {
      if (n === 1) return sseHead('transfer-encoding: chunked\r\n\r\n') + chunkedOf([chunkJson('Hello'), chunkJson(' there') + finishSse.slice(0, 30), finishSse.slice(30)]);
      if (n === 2) return sseHead(`content-length: ${Buffer.byteLength(body)}\r\n\r\n`) + body;
      return undefined;
    });
    expect(text(await collect(request(s.baseUrl, { apiKey: 'sk-x' })))).toBe('Hello there');
    const req = s.requests[0]!;
    expect(req).toMatch(/^POST \/v1\/chat\/completions HTTP\/1\.1\r\n/);
    expect(req).toMatch(/\r\nhost: 127\.0\.0\.1:\d+\r\n/);
    expect(req).toContain('\r\nauthorization: Bearer sk-x\r\n');
    expect(req).toContain('\r\naccept-encoding: identity\r\n');
    expect(JSON.parse(req.slice(req.indexOf('\r\n\r\n') + 4))).toMatchObject({ model: 'm', stream: true });
    expect(text(await collect(request(s.baseUrl)))).toBe('Hello there');
    // Both on one kept-alive connection.
    expect(s.connections).toBe(1);

    const closing = await rawServer((_n, sock) => {
      sock.end('HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n' + body);
      return undefined;
    });
    expect(text(await collect(request(closing.baseUrl)))).toBe('Hello there');
  });

  it("reaches a server on a port fetch refuses (the Fetch standard's bad ports, here 6666)", async () => {
    const body = chunkJson('on a bad port') + finishSse;
    const s = await rawServer(() => sseHead(`content-length: ${Buffer.byteLength(body)}\r\n\r\n`) + body, 6666);
    expect(text(await collect(request(s.baseUrl)))).toBe('on a bad port');
  });

  it('skips a 1xx answer before the real one, and sends again on a new connection when the kept one was closed by the server', async () => {
    const body = chunkJson('ok') + finishSse;
    const s = await rawServer((n, sock) => {
      if (n === 1) return `HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n${sseHead(`content-length: ${Buffer.byteLength(body)}\r\n\r\n`)}${body}`;
      // The second request arrives on the kept connection: close it unanswered, as a server whose
      // keep-alive ran out does.
      if (n === 2) {
        sock.destroy();
        return undefined;
      }
      return sseHead(`content-length: ${Buffer.byteLength(body)}\r\n\r\n`) + body;
    });
    expect(text(await collect(request(s.baseUrl)))).toBe('ok');
    expect(text(await collect(request(s.baseUrl)))).toBe('ok');
    expect(s.connections).toBe(2);
  });

  it('fails a cut chunked body as model_incomplete and malformed framing or a non-HTTP answer as model_bad_response', async () => {
    const cut = await rawServer((_n, sock) => {
      sock.write(sseHead('transfer-encoding: chunked\r\n\r\n') + chunkedOf([chunkJson('part')]).replace(/0\r\n\r\n$/, ''));
      setTimeout(() => sock.destroy(), 20);
      return undefined;
    });
    const e1 = await fault(request(cut.baseUrl));
    expect(e1).toMatchObject({ code: 'model_incomplete', retryable: true });
    expect(e1.message).toContain('closed the connection mid-answer');

    const garbled = await rawServer(() => sseHead('transfer-encoding: chunked\r\n\r\n') + 'zz\r\nnot a chunk\r\n');
    expect(await fault(request(garbled.baseUrl))).toMatchObject({ code: 'model_bad_response', retryable: false });
    const notHttp = await rawServer(() => 'SSH-2.0-OpenSSH_9.2\r\n\r\n');
    const e3 = await fault(request(notHttp.baseUrl));
    expect(e3.code).toBe('model_bad_response');
    expect(e3.message).toContain('malformed HTTP answer');
  });

  it('says where a redirect points instead of following it, refuses a compressed body, and a key a header cannot carry', async () => {
    const moved = await rawServer(() => 'HTTP/1.1 308 Permanent Redirect\r\nlocation: https://api.example.com/v2/chat/completions\r\ncontent-length: 0\r\n\r\n');
    const e1 = await fault(request(moved.baseUrl, { apiKey: 'sk-secret' }));
    expect(e1).toMatchObject({ code: 'model_rejected', retryable: false });
    expect(e1.message).toContain('redirects the request to https://api.example.com/v2 (HTTP 308)');
    expect(moved.requests).toHaveLength(1);

    const gz = await rawServer(() => sseHead('content-encoding: gzip\r\ncontent-length: 4\r\n\r\n') + 'abcd');
    const e2 = await fault(request(gz.baseUrl));
    expect(e2.code).toBe('model_bad_response');
    expect(e2.message).toContain('content-encoding gzip');

    const s = await rawServer(() => undefined);
    const e3 = await fault(request(s.baseUrl, { apiKey: 'sk-a\r\nx-injected: 1' }));
    expect(e3.code).toBe('model_auth');
    expect(e3.message).not.toContain('sk-a');
    expect(s.requests).toHaveLength(0);
  });

  it('closes the connection at once on abort, before and after the answer began', async () => {
    const s = await rawServer((n, sock) => {
      if (n === 1) return undefined; // never answers
      sock.write(sseHead('transfer-encoding: chunked\r\n\r\n') + chunkedOf([chunkJson('first')]).replace(/0\r\n\r\n$/, ''));
      return undefined;
    });
    const url = new URL(`${s.baseUrl}/chat/completions`);
    const a1 = new AbortController();
    const p1 = postModel(url, {}, '{}', a1.signal);
    // Aborted once the server has the request (not after a fixed sleep: the connection may take longer).
    await until(() => s.requests.length === 1, 'the server to get the first request');
    a1.abort();
    await expect(p1).rejects.toMatchObject({ name: 'AbortError' });
    const a2 = new AbortController();
    const res = await postModel(url, {}, '{}', a2.signal);
    expect(await res.read()).toContain('first');
    const next = res.read();
    a2.abort();
    await expect(next).rejects.toMatchObject({ name: 'AbortError' });
    expect(s.connections).toBe(2);
  });

  it('maps a failure of every address of a host (an AggregateError) by its first error\'s code', () => {
    const all = Object.assign(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:11434'), { code: 'ECONNREFUSED' })], 'all failed'), {});
    expect(connectionError(all, 'http://localhost:11434/v1', (t) => t)).toMatchObject({ code: 'model_unreachable', retryable: true });
    expect(connectionError(all, 'http://localhost:11434/v1', (t) => t).message).toContain('connection refused');
  });
});
