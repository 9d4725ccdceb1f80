// `astra web`'s answer to a request whose body headers are too large or malformed (docs/http.md
// §Endpoints): a typed 4xx envelope at once, without reading (or waiting for) the body, and the
// connection closed after it. Raw sockets against a real gateway process.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, useTempHomes } from '../helpers/processes.js';
import { pair, request, startWeb, stopAllWebs } from './gateway-helpers.js';

const newHome = useTempHomes('awb');
afterEach(stopAllWebs);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** The gateway ended the connection. */
  closed: boolean;
}

/**
 * Sends `head` (the request line and headers, without the blank line), then `{` and — with `flood`
 * — body bytes for as long as the socket is open, as a client uploading a huge body would. Resolves
 * once the answer is whole and the gateway has closed the connection; fails after 30 s without that.
 */
function rawRequest(port: number, head: string, flood = false): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let text = '';
    let closed = false;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = (): void => {
      while (flood && !closed && sock.writable && sock.write(chunk));
    };
    sock.on('drain', pump);
    sock.on('error', () => undefined); // EPIPE / ECONNRESET once the gateway closes
    const deadline = setTimeout(() => {
      flood = false;
      sock.destroy();
      reject(new Error(`the gateway did not answer and close within 30 s; got ${JSON.stringify(text.slice(0, 300))}`));
    }, 30_000);
    sock.on('data', (d: Buffer) => (text += d.toString('utf8')));
    sock.on('close', () => {
      clearTimeout(deadline);
      closed = true;
      const i = text.indexOf('\r\n\r\n');
      if (i < 0) return reject(new Error(`no answer before the connection closed: ${JSON.stringify(text.slice(0, 200))}`));
      const lines = text.slice(0, i).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
      let body: unknown;
      try {
        body = JSON.parse(text.slice(i + 4));
      } catch {
        body = undefined;
      }
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body, closed });
    });
    sock.write(`${head}\r\n\r\n{`);
    pump();
  });
}

describe('astra web: body headers', () => {
  it('answers a Content-Length over the bound with 413 at once, without reading the body, and closes the connection', async () => {
    // A long request deadline: a connection left open to drain the body would outlast the test's wait.
    const env = envFor(newHome(), { ASTRA_WEB_REQUEST_TIMEOUT_MS: '600000' });
    const g = await startWeb(env);
    const cookie = await pair(g.port, g.link);
    const host = `Host: 127.0.0.1:${g.port}`;
    for (const [head, flood] of [
      [`POST /v1/sessions HTTP/1.1\r\n${host}\r\nCookie: ${cookie}\r\nContent-Type: application/json\r\nContent-Length: 999999999999`, false],
      [`POST /v1/sessions HTTP/1.1\r\n${host}\r\nCookie: ${cookie}\r\nContent-Type: application/json\r\nContent-Length: 999999999999`, true],
      // Before the cookie, the route, or the method is looked at.
      [`POST /v1/sessions/ses_x/messages HTTP/1.1\r\n${host}\r\nContent-Type: application/json\r\nContent-Length: 999999999999`, true],
      [`GET /v1/health HTTP/1.1\r\n${host}\r\nContent-Length: 200000`, false],
    ] as Array<[string, boolean]>) {
      const r = await rawRequest(g.port, head, flood);
      expect(r.status, head).toBe(413);
      expect(r.body.error).toMatchObject({ reason: 'frame_too_large', retryable: false });
      expect(r.body.error.message).toMatch(/at most 131072/);
      expect(r.headers.connection).toBe('close');
      expect(r.headers['content-security-policy']).toMatch(/default-src 'self'/);
    }
    expect((await request(g.port, 'GET', '/v1/health')).status).toBe(200);
  });

  it('answers malformed or contradictory body headers with a typed 4xx envelope and closes the connection', async () => {
    const env = envFor(newHome(), { ASTRA_WEB_REQUEST_TIMEOUT_MS: '600000' });
    const g = await startWeb(env);
    const cookie = await pair(g.port, g.link);
    const start = `POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:${g.port}\r\nCookie: ${cookie}\r\nContent-Type: application/json`;
    const cases: Array<[string, number, string, RegExp]> = [
      ['Content-Length: abc', 400, 'invalid_request', /Content-Length must be one decimal byte count/],
      ['Content-Length: -1', 400, 'invalid_request', /Content-Length/],
      ['Content-Length: 99999999999999999999999', 413, 'frame_too_large', /at most 131072/],
      ['Content-Length: 5\r\nContent-Length: 6', 400, 'invalid_request', /more than one Content-Length/],
      ['Content-Length: 5\r\nTransfer-Encoding: chunked', 400, 'invalid_request', /Transfer-Encoding/],
      [`X-Filler: ${'a'.repeat(20_000)}`, 431, 'invalid_request', /headers are too large/],
    ];
    for (const [header, status, reason, says] of cases) {
      const r = await rawRequest(g.port, `${start}\r\n${header}`);
      expect(r.status, header.slice(0, 60)).toBe(status);
      expect(r.body?.error, header.slice(0, 60)).toMatchObject({ reason, code: expect.any(Number), retryable: false });
      expect(r.body.error.message).toMatch(says);
      expect(r.headers.connection).toBe('close');
      expect(r.closed).toBe(true);
    }
    expect((await request(g.port, 'GET', '/v1/health')).status).toBe(200);
  });
});
