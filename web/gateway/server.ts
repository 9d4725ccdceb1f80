// `astra web`'s HTTP server (docs/http.md): bound to 127.0.0.1 only; every request passes the Host
// check, then pairing or the cookie, then the Origin check for what changes state; each tab is a
// client of the daemon of its own (tabs.ts). Serves the page (dist/web/page) from the same origin.
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Socket } from 'node:net';
import { AstraError } from '../../protocol/index.js';
import { ASTRA_VERSION, isProcessAlive } from '../../discovery/index.js';
import { HttpError, sendError, sendJson } from './errors.js';
import { LeaseStore } from './lease-store.js';
import { Pairing, DEFAULT_CODE_TTL_MS } from './pairing.js';
import { prepareDir, readLastPort, readWebRecord, removeWebRecord, webFiles, writeWebRecord } from './record.js';
import { matchRoute, refuseReadOnly, serveRoute } from './routes.js';
import { checkDeclaredBody, checkHost, checkOrigin, clientErrorResponse, cookieValue, readJsonBody, setSecurityHeaders } from './security.js';
import { SessionFeeds } from './session-feed.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_MAX_BUFFERED } from './sse.js';
import { DEFAULT_TAB_LIMITS, Tabs, type TabLimits } from './tab-registry.js';
import { feedLink, TAB_ID } from './tabs.js';

export const LOOPBACK = '127.0.0.1';
const DEFAULT_MAX_CONNECTIONS = 128;
/** A request's headers and body within 10 s, as a frame on the socket (LIMITS.frameDeadlineMs). */
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

export interface GatewayOptions {
  env?: NodeJS.ProcessEnv;
  /** 0 or undefined: the port of the last gateway here if free, else any free one. */
  port?: number;
  /** Only 127.0.0.1 (or `localhost`) is accepted. */
  host?: string;
  heartbeatMs?: number;
  codeTtlMs?: number;
  maxConnections?: number;
  /** A request's headers and body must arrive within this long (an event stream's response is not bounded by it). */
  requestTimeoutMs?: number;
  tabLimits?: Partial<TabLimits>;
  /** One line per notable thing (never a code, token or cookie). */
  log?: (line: string) => void;
}

export interface Gateway {
  port: number;
  /** The port of the last gateway here, when it was taken and this one listens elsewhere. */
  movedFrom?: number;
  origin: string;
  /** A fresh single-use pairing link. */
  pairLink(readOnly: boolean): string;
  close(): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/** dist/web/page, whether this module runs from dist/web/gateway or from a bundle one level below dist/. */
function pageDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, '..', 'page'), path.join(here, '..', 'web', 'page'), path.join(here, '..', 'dist', 'web', 'page')])
    if (fs.existsSync(path.join(candidate, 'index.html'))) return candidate;
  return undefined;
}

function envNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new AstraError('invalid_params', `${name} must be a positive number of milliseconds, got "${v}"`);
  return n;
}

export function validateHost(host: string | undefined): string {
  if (host === undefined || host === LOOPBACK || host === 'localhost') return LOOPBACK;
  throw new AstraError('invalid_params', `astra web listens on ${LOOPBACK} only (it hands out control of your sessions); "${host}" is refused. Reach it from elsewhere through an SSH tunnel.`);
}

/** Listens on the port; a port that cannot be had is an error that says why and what to do. */
function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (e: NodeJS.ErrnoException): void => {
      server.off('listening', listening);
      if (e.code === 'EADDRINUSE')
        reject(new AstraError('invalid_state', `port ${port} on ${host} is in use by another program (\`ss -ltnp 'sport = :${port}'\` shows which): stop it, choose another port with --port <n>, or leave --port out to take a free one`, { port, code: e.code }));
      else if (e.code === 'EACCES')
        reject(new AstraError('invalid_state', `port ${port} on ${host} may not be used by this user (ports below 1024 need privileges): choose one from 1024 up with --port <n>, or leave --port out`, { port, code: e.code }));
      else reject(e);
    };
    const listening = (): void => {
      server.off('error', failed);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', listening);
    server.listen(port, host);
  });
}

/** How long a connection closed with its request's body unread still reads (and drops) what the client sends. */
const LINGER_MS = 2_000;

/**
 * For a response with `Connection: close` sent before the request's body was read: Node ends the
 * socket once the answer is written, then destroys it, and a client still uploading would get a
 * reset that can discard the answer before it reads it. Instead the socket is ended (our FIN after the
 * answer) and keeps reading, dropping the rest of the body, until the client closes or LINGER_MS.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  };
}

export async function startGateway(opts: GatewayOptions = {}): Promise<Gateway> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => undefined);
  const host = validateHost(opts.host);
  prepareDir(env);
  const previous = readWebRecord(env);
  if (previous && previous.pid !== process.pid && isProcessAlive(previous.pid))
    throw new AstraError('invalid_state', `a gateway already runs for this user at ${previous.url} (pid ${previous.pid}); \`astra web pair\` prints a link for it`);
  const port = opts.port ?? 0;
  // No port asked for: the last gateway's, so open pages (and their cookie, named after it) find this one.
  const lastPort = port === 0 ? readLastPort(env) : undefined;

  const heartbeatMs = opts.heartbeatMs ?? envNumber(env, 'ASTRA_WEB_HEARTBEAT_MS') ?? DEFAULT_HEARTBEAT_MS;
  const pairing = new Pairing(webFiles(env).auth, opts.codeTtlMs ?? envNumber(env, 'ASTRA_WEB_PAIR_TTL_MS') ?? DEFAULT_CODE_TTL_MS);
  const leaseStore = new LeaseStore(webFiles(env).leases);
  const tabs = new Tabs(env, ASTRA_VERSION, { ...DEFAULT_TAB_LIMITS, ...opts.tabLimits }, leaseStore);
  // One daemon subscription per session for all its streams; ASTRA_WEB_SHARED_FEEDS=0 gives each stream its own (for comparison).
  const feeds = env.ASTRA_WEB_SHARED_FEEDS === '0' ? undefined : new SessionFeeds(feedLink(env, ASTRA_VERSION, leaseStore));
  const maxConnections = opts.maxConnections ?? envNumber(env, 'ASTRA_WEB_MAX_CONNECTIONS') ?? DEFAULT_MAX_CONNECTIONS;
  const requestTimeoutMs = opts.requestTimeoutMs ?? envNumber(env, 'ASTRA_WEB_REQUEST_TIMEOUT_MS') ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const adminSecret = crypto.randomBytes(32).toString('base64url');
  const stream = { heartbeatMs, maxBuffered: DEFAULT_MAX_BUFFERED, feeds };
  const dir = pageDir();
  const assets = new Set(dir ? fs.readdirSync(dir) : []);
  const assetCache = new Map<string, Buffer>();
  const sockets = new Set<Socket>();
  const overflow = new WeakSet<Socket>();
  let boundPort = port;
  const cookieName = (): string => `astra_web_${boundPort}`;

  // Node answers a request not received in time with a bare 408 and closes the connection (a body
  // dripped a byte at a time would hold a connection for ever); it checks at connectionsCheckingInterval.
  const server = http.createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, requestTimeoutMs / 5)),
      keepAliveTimeout: 5_000,
    },
    (req, res) => {
      void handle(req, res).catch((e: unknown) => {
        if (!(e instanceof AstraError)) log(`internal error on ${req.method} ${(req.url ?? '').split('?')[0]}: ${(e as Error)?.stack ?? String(e)}`);
        // A body left unread (refused before or while reading it) is not drained: the connection ends after the answer.
        if (req.complete) return sendError(res, e);
        lingerOnClose(req.socket);
        sendError(res, e, { Connection: 'close' });
      });
    },
  );
  server.on('connection', (socket: Socket) => {
    socket.on('error', () => undefined);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    if (sockets.size > maxConnections) overflow.add(socket);
  });
  // A request Node's parser refused (malformed or contradictory body headers, headers too large): the envelope, then close.
  server.on('clientError', (e: NodeJS.ErrnoException, socket: Socket & { _httpMessage?: http.ServerResponse }) => {
    if (!socket.writable || socket._httpMessage?.headersSent) return void socket.destroy();
    socket.end(clientErrorResponse(e));
  });

  /** Attacker-chosen header values go into the log only shortened and printable. */
  const printable = (v: unknown): string => String(v ?? '').slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
  const guard = (what: string, req: http.IncomingMessage, check: () => void): void => {
    try {
      check();
    } catch (e) {
      log(`refused ${req.method} ${printable((req.url ?? '').split('?')[0])}: ${what} (Host ${printable(req.headers.host)}, Origin ${printable(req.headers.origin ?? '-')}, Sec-Fetch-Site ${printable(req.headers['sec-fetch-site'] ?? '-')})`);
      throw e;
    }
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    setSecurityHeaders(res);
    checkDeclaredBody(req);
    if (overflow.has(req.socket)) {
      res.setHeader('Connection', 'close');
      throw new AstraError('overloaded', `the gateway has ${sockets.size - 1} connections open (at most ${maxConnections}); retry shortly`);
    }
    let ownOrigin = '';
    guard('Host check', req, () => (ownOrigin = checkHost(req, boundPort)));
    const url = new URL(req.url ?? '/', ownOrigin);
    const method = req.method ?? 'GET';
    const pathname = url.pathname;

    if (!pathname.startsWith('/v1/')) return servePage(method, pathname, res);
    if (pathname === '/v1/health' && method === 'GET') return sendJson(res, 200, { ok: true, version: ASTRA_VERSION, port: boundPort });
    if (pathname === '/v1/pair') {
      if (method !== 'POST') throw new HttpError(405, 'method_not_found', 'use POST /v1/pair {code}');
      guard('Origin check', req, () => checkOrigin(req, ownOrigin));
      const body = await readJsonBody(req);
      const code = typeof body.code === 'string' ? body.code : '';
      const redeemed = code ? pairing.redeem(code) : undefined;
      if (!redeemed) throw new AstraError('unauthorized', 'this pairing code is unknown, used or expired: run `astra web pair` for a fresh link');
      log(`paired a browser (${redeemed.grant.readOnly ? 'read-only' : 'read-write'}, ${redeemed.grant.id})`);
      return sendJson(res, 200, { paired: true, readOnly: redeemed.grant.readOnly }, {
        'Set-Cookie': `${cookieName()}=${redeemed.token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000`,
      });
    }
    if (pathname === '/v1/admin/pair') {
      if (method !== 'POST') throw new HttpError(405, 'method_not_found', 'use POST');
      const auth = String(req.headers.authorization ?? '');
      const given = Buffer.from(auth.startsWith('Bearer ') ? auth.slice(7) : '');
      const want = Buffer.from(adminSecret);
      if (req.headers.origin !== undefined || given.length !== want.length || !crypto.timingSafeEqual(given, want))
        throw new AstraError('unauthorized', 'only `astra web pair` (which reads web.json) may ask for pairing codes');
      const body = await readJsonBody(req);
      return sendJson(res, 200, { url: gateway.pairLink(body.observe === true) });
    }

    const grant = pairing.check(cookieValue(req, cookieName()));
    if (!grant) throw new AstraError('unauthorized', 'this browser is not paired with the gateway: open the link `astra web pair` prints');
    const tabId = String(req.headers['x-astra-tab'] ?? url.searchParams.get('tab') ?? 'default');
    if (!TAB_ID.test(tabId)) throw new AstraError('invalid_params', 'the tab id (X-Astra-Tab or ?tab=) must be 1-64 letters, digits, - or _');
    const found = matchRoute(method, pathname);
    if (!found) throw new AstraError('method_not_found', `no endpoint ${pathname}; GET /v1/capabilities lists what there is`);
    if ('allowed' in found) throw new HttpError(405, 'method_not_found', `${method} is not allowed on ${pathname}; use ${found.allowed.join(' or ')}`);
    if (found.route.endpoint.guarded) guard('Origin check', req, () => checkOrigin(req, ownOrigin));
    const tab = tabs.get(grant, tabId);
    if (found.route.endpoint.writes) refuseReadOnly(tab);
    await serveRoute(found.route, { req, res, url, tab, tabs, stream, version: ASTRA_VERSION }, found.params);
  }

  function servePage(method: string, pathname: string, res: http.ServerResponse): void {
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'method_not_found', 'the page is read with GET');
    // Browsers ask for it by themselves; a 404 would be an error in the page's console on every load.
    if (pathname === '/favicon.ico') {
      res.writeHead(204, { 'Cache-Control': 'max-age=86400' });
      return void res.end();
    }
    const name = pathname === '/' ? 'index.html' : pathname.slice(1);
    if (!dir || !assets.has(name)) {
      if (!dir && pathname === '/') throw new AstraError('not_found', 'the page was not built: run `npm run build`');
      throw new AstraError('not_found', `no such file ${pathname.slice(0, 100)}`);
    }
    // Read once per gateway (the page is a build's output; a new build needs a new `astra web`).
    let body = assetCache.get(name);
    if (!body) assetCache.set(name, (body = fs.readFileSync(path.join(dir, name))));
    res.writeHead(200, { 'Content-Type': CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream', 'Content-Length': body.length, 'Cache-Control': 'no-cache' });
    res.end(method === 'HEAD' ? undefined : body);
  }

  let movedFrom: number | undefined;
  if (lastPort !== undefined) {
    try {
      await listen(server, lastPort, host);
    } catch (e) {
      if (!(e instanceof AstraError)) throw e;
      movedFrom = lastPort; // taken by another program: any free port, said aloud (the caller prints it)
      await listen(server, 0, host);
    }
  } else await listen(server, port, host);
  boundPort = (server.address() as { port: number }).port;
  const origin = `http://${LOOPBACK}:${boundPort}`;
  writeWebRecord(env, { pid: process.pid, port: boundPort, url: `${origin}/`, adminSecret, observe: false, startedAt: Date.now() });
  if (movedFrom !== undefined)
    log(`port ${movedFrom}, where the last gateway here listened, is taken by another program, so this one listens on ${boundPort}: pages open at :${movedFrom} do not reach it — open the new link (a browser paired on :${movedFrom} pairs again); \`astra web --port ${movedFrom}\` insists on the old port`);
  log(`listening on ${origin}/`);

  let closing: Promise<void> | undefined;
  const gateway: Gateway = {
    port: boundPort,
    ...(movedFrom !== undefined ? { movedFrom } : {}),
    origin,
    pairLink: (readOnly) => `${origin}/#pair=${pairing.newCode(readOnly)}`,
    close: () =>
      (closing ??= (async () => {
        removeWebRecord(env, process.pid);
        const closed = new Promise<void>((r) => server.close(() => r()));
        await tabs.closeAll();
        await feeds?.close();
        for (const s of sockets) s.destroy();
        await closed;
      })()),
  };
  return gateway;
}
