// One POST to the model server over a socket of our own (node:net / node:tls), its answer read as
// text: the status, the headers, and the body as strings, each read giving all that arrived since
// the last one. Why not fetch or node:http: both hand the body over one HTTP chunk at a time, and a
// server that streams one token per chunk then costs a call chain per token — per 50,000-token
// answer ≈ 28 ms in fetch (undici's parser and web stream), ≈ 37 ms in node:http, ≈ 11 ms for the
// socket's reads alone (bench/REPORT.md, "Chat engine"). Here a read is decoded in one pass
// (http-framing.ts) and turned into text once.
//
// Kept from fetch: connections kept alive and reused per origin (closed after 4 s idle, before a
// Node server's default 5 s), a request on a reused connection the server had closed sent again on
// a new one, the system's and NODE_EXTRA_CA_CERTS' certificates for https with SNI, an abort that
// closes the connection at once, Node's error codes (ECONNREFUSED, ENOTFOUND, certificate errors).
// Not done: redirects (a model API that redirects a POST is a base URL to correct: the caller says
// so from `location`), compressed bodies (it asks for none; one sent anyway is an error naming the
// encoding), proxies (with one set, model-proxy.ts makes the request instead, through undici).
import { createRequire } from 'node:module';
import * as net from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { ChunkedBody, HttpFramingError, parseHead, type ResponseHead } from './http-framing.js';
import { DAEMON_BOUNDS } from '../../flow/index.js';

const IDLE_MS = 4_000;
/** Text read but not yet taken past which the socket is paused (backpressure to the server). */
const MAX_UNREAD_CHARS = DAEMON_BOUNDS.modelUnreadChars.value;

export interface ModelResponse {
  readonly status: number;
  /** A response header (repeated ones joined by ", "); undefined when absent. */
  header(name: string): string | undefined;
  /** The body's next text (all that arrived since the last read), undefined at its end; rejects on a cut or abort. */
  read(): Promise<string | undefined>;
  /** Stops reading: the connection is closed unless the body was read to its end (then it is kept). */
  close(): void;
}

export class UnknownContentEncoding extends Error {
  constructor(readonly encoding: string) {
    super(`content-encoding ${encoding}`);
  }
}

const idle = new Map<string, net.Socket[]>();
/** The listeners a socket has while it waits in the pool. */
const idleDrop = new WeakMap<net.Socket, () => void>();

function abortError(): Error {
  return Object.assign(new Error('the request was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

/** A connection lost before the answer's end, as Node reports one (model-errors.ts maps ECONNRESET). */
function connectionReset(message: string): Error {
  return Object.assign(new Error(message), { code: 'ECONNRESET' });
}

/** Closes a socket we are done with; a late error on it is of no interest. */
function discard(s: net.Socket): void {
  s.on('error', () => undefined);
  s.destroy();
}

/** node:tls, loaded at the first https request: loading it costs an idle daemon ~1.2 MB of RSS (the bench's idle row). */
let tlsModule: typeof import('node:tls') | undefined;
const tls = (): typeof import('node:tls') => (tlsModule ??= createRequire(import.meta.url)('node:tls') as typeof import('node:tls'));

function connect(url: URL): net.Socket {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (url.protocol === 'https:')
    return tls().connect({ host, port: Number(url.port || 443), ...(net.isIP(host) ? {} : { servername: host }), ALPNProtocols: ['http/1.1'] });
  return net.connect({ host, port: Number(url.port || 80) });
}

function takeIdle(origin: string): net.Socket | undefined {
  const list = idle.get(origin);
  for (let s = list?.pop(); s; s = list?.pop()) {
    const drop = idleDrop.get(s);
    if (drop) {
      s.off('error', drop).off('close', drop).off('end', drop).off('data', drop).off('timeout', drop);
      idleDrop.delete(s);
    }
    s.setTimeout(0);
    if (s.destroyed || s.readyState !== 'open') {
      discard(s);
      continue;
    }
    s.ref();
    return s;
  }
  return undefined;
}

function keepIdle(origin: string, s: net.Socket): void {
  const drop = () => {
    discard(s);
    const list = idle.get(origin);
    const at = list?.indexOf(s) ?? -1;
    if (at >= 0) list!.splice(at, 1);
  };
  idleDrop.set(s, drop);
  // Nothing is due between two responses: a byte, an end or an error drops the connection.
  s.on('error', drop).on('close', drop).on('end', drop).on('data', drop).on('timeout', drop);
  s.setTimeout(IDLE_MS);
  s.unref();
  s.resume();
  let list = idle.get(origin);
  if (!list) idle.set(origin, (list = []));
  list.push(s);
}

/**
 * POSTs `body` to `url` and resolves once the response's head arrived. Rejects with Node's error when
 * the connection fails, an HttpFramingError when the answer is not HTTP/1.1, an AbortError when
 * `signal` fires first.
 */
export async function postModel(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<ModelResponse> {
  const origin = `${url.protocol}//${url.host}`;
  const reused = takeIdle(origin);
  if (reused) {
    try {
      return await exchange(reused, true, origin, url, headers, body, signal);
    } catch (e) {
      if (!(e instanceof StaleConnection)) throw e;
    }
  }
  return exchange(connect(url), false, origin, url, headers, body, signal);
}

/** A kept-alive connection that closed before any byte of the answer: the request is sent again. */
class StaleConnection extends Error {}

function requestHead(url: URL, headers: Record<string, string>, length: number): string {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return `${head}accept-encoding: identity\r\nconnection: keep-alive\r\ncontent-length: ${length}\r\n\r\n`;
}

function exchange(socket: net.Socket, reused: boolean, origin: string, url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<ModelResponse> {
  return new Promise<ModelResponse>((resolve, reject) => {
    let headBuf: Buffer | undefined;
    let answered = false;
    let response: Reader | undefined;
    const onAbort = () => {
      if (response) response.fail(abortError());
      else failEarly(abortError());
    };
    const onError = (e: Error) => {
      if (response) response.fail(e);
      else failEarly(e);
    };
    const onClose = () => onError(connectionReset(response ? 'the connection closed mid-answer' : 'the connection closed before an answer'));
    const onEnd = () => {
      if (response) response.ended();
    };
    const onData = (b: Buffer) => {
      if (response) return response.push(b, 0);
      answered = true;
      headBuf = headBuf ? Buffer.concat([headBuf, b]) : b;
      let parsed;
      try {
        // 1xx answers (103 Early Hints, …) come before the real one: skipped.
        for (;;) {
          parsed = parseHead(headBuf);
          if (!parsed || parsed.head.status >= 200) break;
          headBuf = headBuf.subarray(parsed.length);
        }
      } catch (e) {
        failEarly(e as Error);
        return;
      }
      if (!parsed) return;
      const rest = headBuf;
      headBuf = undefined;
      try {
        response = new Reader(socket, parsed.head, origin, detach);
      } catch (e) {
        failEarly(e as Error);
        return;
      }
      resolve(response);
      response.push(rest, parsed.length);
    };
    /** The exchange's listeners off the socket, which is then the Reader's to close or pool. */
    const detach = () => {
      signal.removeEventListener('abort', onAbort);
      socket.off('error', onError).off('close', onClose).off('end', onEnd).off('data', onData);
    };
    const failEarly = (e: Error) => {
      detach();
      discard(socket);
      if (reused && !answered && (e as NodeJS.ErrnoException).code !== 'ABORT_ERR') reject(new StaleConnection(e.message));
      else reject(e);
    };
    if (signal.aborted) {
      discard(socket);
      reject(abortError());
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', onError).on('close', onClose).on('end', onEnd).on('data', onData);
    socket.setNoDelay(true);
    socket.write(requestHead(url, headers, Buffer.byteLength(body)) + body);
  });
}

/** One response's body, as text, with backpressure and the connection given back at its end. */
class Reader implements ModelResponse {
  readonly status: number;
  private readonly chunked: ChunkedBody | undefined;
  /** Bytes of the body still due (content-length); -1 when it ends with the connection. */
  private remaining: number;
  private readonly decoder = new StringDecoder('utf8');
  private text: string[] = [];
  private unread = 0;
  private over = false;
  private closed = false;
  private failed: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly head: ResponseHead,
    private readonly origin: string,
    private readonly finish: () => void,
  ) {
    this.status = head.status;
    const coding = (head.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
    if (coding !== 'identity' && coding !== '') throw new UnknownContentEncoding(coding);
    const te = (head.headers.get('transfer-encoding') ?? '').toLowerCase();
    const cl = head.headers.get('content-length');
    if (te !== '') {
      if (te.trim() !== 'chunked') throw new UnknownContentEncoding(te);
      this.chunked = new ChunkedBody();
      this.remaining = 0;
    } else if (head.status === 204 || head.status === 304) this.remaining = 0;
    else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) throw new HttpFramingError(`a malformed content-length: ${JSON.stringify(cl.slice(0, 30))}`);
      this.remaining = Number(cl);
    } else this.remaining = -1;
  }

  header(name: string): string | undefined {
    return this.head.headers.get(name.toLowerCase());
  }

  bodyDone(): boolean {
    return this.chunked ? this.chunked.done : this.remaining === 0;
  }

  /** Bytes of the connection from `start`: the body's go to the text. */
  push(buf: Buffer, start: number): void {
    if (this.over || this.failed) return;
    let data: Buffer;
    let end: number | undefined;
    try {
      if (this.chunked) ({ data, end } = this.chunked.push(buf, start));
      else if (this.remaining < 0) data = buf.subarray(start);
      else {
        const take = Math.min(this.remaining, buf.length - start);
        data = buf.subarray(start, start + take);
        this.remaining -= take;
        if (this.remaining === 0) end = start + take;
      }
    } catch (e) {
      return this.fail(e as Error);
    }
    if (data.length > 0) {
      const t = this.decoder.write(data);
      if (t !== '') {
        this.text.push(t);
        this.unread += t.length;
        if (this.unread > MAX_UNREAD_CHARS) this.socket.pause();
      }
    }
    if (end !== undefined) {
      this.over = true;
      this.release(end < buf.length);
    }
    this.poke();
  }

  /** The connection's end: the body's for a body without a length, a cut otherwise. */
  ended(): void {
    if (this.over) return;
    if (this.remaining < 0 && !this.chunked) {
      this.over = true;
      this.finish();
      discard(this.socket);
      this.poke();
    } else this.fail(connectionReset('the connection closed mid-answer'));
  }

  fail(e: Error): void {
    if (this.over || this.failed) return;
    this.failed = e;
    this.finish();
    discard(this.socket);
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The body is over: the connection goes back to the pool when nothing else came with it. */
  private release(extra: boolean): void {
    this.finish();
    if (extra || this.head.closes || this.closed) discard(this.socket);
    else keepIdle(this.origin, this.socket);
  }

  async read(): Promise<string | undefined> {
    for (;;) {
      if (this.text.length > 0) {
        const t = this.text.length === 1 ? this.text[0]! : this.text.join('');
        this.text = [];
        this.unread = 0;
        if (this.socket.isPaused() && !this.over) this.socket.resume();
        return t;
      }
      if (this.failed) throw this.failed;
      if (this.over || this.closed) {
        const rest = this.decoder.end();
        this.closed = true;
        return rest !== '' ? rest : undefined;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.over) {
      this.over = true;
      this.finish();
      discard(this.socket);
    }
    this.poke();
  }
}
