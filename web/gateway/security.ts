// The checks every request passes before anything else (docs/http.md §Security): the Host header
// against DNS rebinding, the Origin of state-changing requests and event streams, bounded bodies,
// and the response headers that keep the page from being framed or sniffed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './errors.js';

/** The wire protocol's bound on a client frame; the same for an HTTP body. */
export const MAX_BODY_BYTES = 128 * 1024;

/** Headers on every response; the page's CSP allows only what the gateway itself serves. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
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

/** Reads a JSON object body of at most MAX_BODY_BYTES; an empty body is `{}`. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    throw new HttpError(413, 'frame_too_large', `the body has ${declared} bytes; at most ${MAX_BODY_BYTES} are accepted`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.resume();
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
