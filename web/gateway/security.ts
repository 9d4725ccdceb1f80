// The checks every request passes before anything else (docs/http.md §Security): the Host header
// against DNS rebinding, the Origin of state-changing requests and event streams, bounded bodies,
// and the response headers that keep the page from being framed or sniffed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AstraError } from '../../protocol/index.js';
import { MAX_BODY_BYTES } from './contract.js';
import { HttpError, toEnvelope } from './errors.js';

/**
 * Headers on every response; the page's CSP allows only what the gateway itself serves. Scripts come
 * only from the gateway; styles may also be inline, because xterm.js writes its theme and cell sizes
 * as <style> elements and 24-bit colours as style attributes (refused, they were console errors on
 * every load and lost colours). An inline style can load nothing from elsewhere: every fetch is still
 * bound by default-src 'self'.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export function setSecurityHeaders(res: ServerResponse): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
}

/** The loopback names a browser on this machine may use to reach the gateway, with its port. */
export function allowedHosts(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
}

/**
 * DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends `Host:
 * evil.example`. Only the loopback names with the bound port pass. Returns the page's own origin.
 */
export function checkHost(req: IncomingMessage, port: number): string {
  const host = (req.headers.host ?? '').toLowerCase();
  if (!allowedHosts(port).has(host))
    throw new HttpError(421, 'invalid_request', `Host "${host.slice(0, 100)}" is not this gateway; open http://127.0.0.1:${port}/ instead`);
  return `http://${host}`;
}

/**
 * For state-changing requests and event streams: a browser names the page that sent the request in
 * Origin (always for POST/DELETE, for cross-origin GETs) and Sec-Fetch-Site; both must say "this
 * gateway". A request with neither comes from a program, not a page, and the cookie decides.
 */
export function checkOrigin(req: IncomingMessage, ownOrigin: string): void {
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== ownOrigin)
    throw new HttpError(403, 'unauthorized', `requests from ${String(origin).slice(0, 100)} are refused: only the page served by this gateway (${ownOrigin}) may do this`);
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    throw new HttpError(403, 'unauthorized', `a ${String(site).slice(0, 40)} request is refused: only the page served by this gateway (${ownOrigin}) may do this`);
}

/**
 * Every request, before anything else: a declared body over MAX_BODY_BYTES is refused at once
 * (Node's parser has already refused a malformed Content-Length: clientErrorResponse). The body is
 * not read; the server closes the connection after the answer.
 */
export function checkDeclaredBody(req: IncomingMessage): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES)
    throw new HttpError(413, 'frame_too_large', `the body has ${declared} bytes; at most ${MAX_BODY_BYTES} are accepted (docs/http.md §Endpoints)`);
}

/** Reads a JSON object body of at most MAX_BODY_BYTES; an empty body is `{}`. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  checkDeclaredBody(req);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new HttpError(413, 'frame_too_large', `the body exceeds ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  if (size === 0) return {};
  const type = String(req.headers['content-type'] ?? '');
  if (!/^application\/json\b/i.test(type)) throw new HttpError(415, 'invalid_request', 'the body must be JSON (Content-Type: application/json)');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new HttpError(400, 'parse_error', `the body is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, 'invalid_request', 'the body must be a JSON object');
  for (const key of Object.keys(value)) if (key === '__proto__' || key === 'constructor' || key === 'prototype') throw new HttpError(400, 'forbidden_key', `the key "${key}" is not allowed`);
  return value as Record<string, unknown>;
}

/** The value of one cookie, or undefined. */
export function cookieValue(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/**
 * The answer to a request Node's parser refused before it became a request (a malformed or
 * contradictory body header, headers too long): the same envelope as every other error, then the
 * connection is closed (what follows on it cannot be framed). A timeout stays a bare 408.
 */
export function clientErrorResponse(e: NodeJS.ErrnoException & { reason?: string }): string {
  if (e.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';
  const detail = String(e.reason ?? e.message ?? '').replace(/[^\x20-\x7e]/g, '?').slice(0, 100);
  let status = 400;
  let statusText = 'Bad Request';
  let err: AstraError;
  if (e.code === 'HPE_INVALID_CONTENT_LENGTH' && /overflow/i.test(detail)) {
    status = 413;
    statusText = 'Payload Too Large';
    err = new AstraError('frame_too_large', `the body's Content-Length is out of range; at most ${MAX_BODY_BYTES} bytes are accepted`);
  } else if (e.code === 'HPE_INVALID_CONTENT_LENGTH') {
    err = new AstraError('invalid_request', `Content-Length must be one decimal byte count (${detail}); send the body's length in bytes`);
  } else if (e.code === 'HPE_UNEXPECTED_CONTENT_LENGTH') {
    err = new AstraError('invalid_request', `the request has more than one Content-Length (${detail}); send exactly one`);
  } else if (e.code === 'HPE_INVALID_TRANSFER_ENCODING') {
    err = new AstraError('invalid_request', `the body's Transfer-Encoding is refused (${detail}); send Content-Length, or Transfer-Encoding: chunked alone`);
  } else if (e.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    statusText = 'Request Header Fields Too Large';
    err = new AstraError('invalid_request', 'the request\'s headers are too large (at most 16 KiB); send fewer or shorter headers');
  } else {
    err = new AstraError('invalid_request', `the request is not valid HTTP/1.1 (${e.code ?? 'parse error'}: ${detail})`);
  }
  const text = JSON.stringify(toEnvelope(err).body);
  const head = Object.entries({ ...SECURITY_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)), 'Cache-Control': 'no-store', Connection: 'close' })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} ${statusText}\r\n${head}\r\n${text}`;
}
