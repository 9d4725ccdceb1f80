// Driving a real `astra web` process over raw HTTP (node:http, no browser): start it for a temp
// ASTRA_HOME, pair, make requests with any Host/Origin, read SSE frames as they arrive.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { CLI, waitFor } from '../helpers/processes.js';

export interface GatewayProc {
  child: ChildProcess;
  port: number;
  origin: string;
  link: string;
  stdout: () => string;
  stderr: () => string;
}

const running = new Set<ChildProcess>();

/**
 * For afterEach, before the homes are cleaned up: stops every gateway a test started (SIGINT, then
 * SIGKILL after 5 s). A gateway killed together with its daemon could otherwise start a new daemon
 * for a home that is being removed.
 */
export async function stopAllWebs(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      running.delete(child);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

export async function startWeb(env: NodeJS.ProcessEnv, args: string[] = []): Promise<GatewayProc> {
  const child = spawn(process.execPath, [CLI, 'web', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const link = await waitFor(`astra web's pairing link (stderr: ${err})`, () => /http:\/\/127\.0\.0\.1:\d+\/#pair=[A-Za-z0-9_-]+/.exec(out)?.[0], 20_000);
  const port = Number(/:(\d+)\//.exec(link)![1]);
  return { child, port, origin: `http://127.0.0.1:${port}`, link, stdout: () => out, stderr: () => err };
}

export function codeOf(link: string): string {
  return /#pair=(.+)$/.exec(link)![1]!;
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

export interface RequestOpts {
  body?: unknown;
  rawBody?: string | Buffer;
  cookie?: string;
  headers?: Record<string, string>;
  tab?: string;
}

export function request(port: number, method: string, path: string, o: RequestOpts = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const payload = o.rawBody ?? (o.body !== undefined ? JSON.stringify(o.body) : undefined);
    const headers: Record<string, string | number> = { Host: `127.0.0.1:${port}`, ...o.headers };
    if (payload !== undefined) {
      headers['Content-Type'] ??= 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    if (o.cookie) headers.Cookie = o.cookie;
    if (o.tab) headers['X-Astra-Tab'] = o.tab;
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} got no answer within 20 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Pairs with a link's code and returns the Cookie header to send. */
export async function pair(port: number, link: string): Promise<string> {
  const r = await request(port, 'POST', '/v1/pair', { body: { code: codeOf(link) } });
  if (r.status !== 200) throw new Error(`pairing failed: ${r.status} ${r.text}`);
  const set = String(r.headers['set-cookie']?.[0] ?? '');
  return set.split(';')[0]!;
}

export interface SseFrame {
  id?: string;
  event: string;
  data: any;
}

/** An open SSE stream: its frames as they arrive. */
export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  frames: SseFrame[];
  next(pred: (f: SseFrame) => boolean, timeoutMs?: number, what?: string): Promise<SseFrame>;
  /** Stops reading (the socket fills up, as with a slow browser) and starts again. */
  pause(): void;
  resume(): void;
  close(): void;
}

export function openSse(port: number, path: string, o: { cookie?: string; headers?: Record<string, string> } = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Host: `127.0.0.1:${port}`, Accept: 'text/event-stream', ...o.headers };
    if (o.cookie) headers.Cookie = o.cookie;
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path, headers }, (res) => {
      const frames: SseFrame[] = [];
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: SseFrame = { event: 'message', data: undefined };
          let data = '';
          let hasData = false;
          for (const line of block.split('\n')) {
            const c = line.indexOf(':');
            if (c <= 0) continue;
            const k = line.slice(0, c);
            const v = line.slice(c + 1).replace(/^ /, '');
            if (k === 'id') f.id = v;
            else if (k === 'event') f.event = v;
            else if (k === 'data') {
              data += v;
              hasData = true;
            }
          }
          if (!hasData) continue;
          try {
            f.data = JSON.parse(data);
          } catch {
            f.data = data;
          }
          frames.push(f);
        }
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames,
        next: (pred, timeoutMs = 15_000, what = 'a matching SSE frame') =>
          waitFor(`${what} (got ${frames.map((f) => f.event).join(',')})`, () => frames.find(pred), timeoutMs),
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      });
    });
    req.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
    });
    req.end();
  });
}

/** Stops a gateway the test started, by its pid, and waits for it to exit. */
export async function stopWeb(g: GatewayProc, signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> {
  if (g.child.exitCode !== null) return g.child.exitCode;
  const exited = new Promise<number | null>((r) => g.child.once('exit', (code) => r(code)));
  g.child.kill(signal);
  return exited;
}
