// The model request through a proxy, when the daemon's environment names one (HTTPS_PROXY,
// HTTP_PROXY, NO_PROXY, each also lowercase, the lowercase one first as curl and undici read them).
// The proxying is undici's EnvHttpProxyAgent, the implementation Node's ecosystem keeps: it decides
// per request whether NO_PROXY bypasses the proxy, tunnels https with CONNECT, and sends http to the
// proxy as a forward request (an absolute URI), as curl does: many proxies allow CONNECT to port 443
// only. undici is loaded at the first request made with a proxy set; without one nothing here runs
// and model-http.ts's own client is used as before.
import { createRequire } from 'node:module';
import type { Dispatcher, EnvHttpProxyAgent } from 'undici';
import { ModelError } from './model-errors.js';
import { UnknownContentEncoding, type ModelResponse } from './model-http.js';

/** The proxy settings read from the daemon's environment; undefined when no proxy is set. */
export interface ProxySettings {
  /** For http:// model servers: its URL and the variable it came from. */
  http?: { url: string; from: string };
  /** For https:// model servers. */
  https?: { url: string; from: string };
  /** Hosts (and host:port) reached directly: comma or space separated, `*` for all, `.example.com` for a domain. */
  noProxy: string;
}

type Env = Record<string, string | undefined>;

function firstSet(env: Env, names: string[]): { url: string; from: string } | undefined {
  for (const from of names) {
    const url = env[from]?.trim();
    if (url) return { url, from };
  }
  return undefined;
}

/** The proxy settings of `env`, or undefined when it names no proxy. */
export function proxyFromEnv(env: Env): ProxySettings | undefined {
  const http = firstSet(env, ['http_proxy', 'HTTP_PROXY']);
  // As undici and curl: https falls back to the http proxy.
  const https = firstSet(env, ['https_proxy', 'HTTPS_PROXY']) ?? http;
  if (!http && !https) return undefined;
  return { ...(http ? { http } : {}), ...(https ? { https } : {}), noProxy: env.no_proxy ?? env.NO_PROXY ?? '' };
}

/** A proxy URL as it may be shown: without its credentials. */
export function shownProxy(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href.replace(/\/$/, '');
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//');
  }
}

/** A proxy setting that is not an http(s) URL: the message says which variable to fix. */
export class BadProxySetting extends Error {
  constructor(readonly variable: string, value: string) {
    super(`${variable}=${shownProxy(value)} is not a proxy URL such as http://proxy.example:3128: correct it in the daemon's environment and restart the daemon`);
  }
}

function checkProxyUrl(p: { url: string; from: string } | undefined): void {
  if (!p) return;
  let u: URL;
  try {
    u = new URL(p.url);
  } catch {
    throw new BadProxySetting(p.from, p.url);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new BadProxySetting(p.from, p.url);
}

type Undici = typeof import('undici');
let undiciModule: Undici | undefined;
/** undici, loaded on first use: a daemon without a proxy never pays for it. */
const undici = (): Undici => (undiciModule ??= createRequire(import.meta.url)('undici') as Undici);

const agents = new Map<string, EnvHttpProxyAgent>();

function agentFor(p: ProxySettings): EnvHttpProxyAgent {
  const key = JSON.stringify(p);
  let agent = agents.get(key);
  if (agent) return agent;
  checkProxyUrl(p.http);
  checkProxyUrl(p.https);
  const { EnvHttpProxyAgent: Agent, Pool } = undici();
  // The stream's own stall timer (ASTRA_CHAT_STALL_MS) bounds every wait: undici's are off, on the
  // direct agent, the tunnels and the forward-proxy pools alike.
  const timeouts = { headersTimeout: 0, bodyTimeout: 0 };
  // undici 6 calls EnvHttpProxyAgent experimental in a process warning at its first construction
  // (its 7.x, which needs Node 20.18, does not): a note for undici's users, not for Astra's.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if ((rest[0] as { code?: string } | undefined)?.code === 'UNDICI-EHPA') return;
    (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    agent = new Agent({
      // '' (not undefined) when unset: undici would fall back to process.env.
      httpProxy: p.http?.url ?? '',
      httpsProxy: p.https?.url ?? '',
      noProxy: p.noProxy,
      proxyTunnel: false,
      ...timeouts,
      factory: (origin: string | URL, opts: object) => new Pool(origin, { ...opts, ...timeouts }),
    } as ConstructorParameters<typeof Agent>[0]);
  } finally {
    process.emitWarning = emitWarning;
  }
  agents.set(key, agent);
  return agent;
}

/** POSTs through `proxy`'s agent; resolves once the response's head arrived, as postModel does. */
export async function postModelViaProxy(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal, proxy: ProxySettings): Promise<ModelResponse> {
  const res = await undici().request(url, {
    method: 'POST',
    headers: { ...headers, 'accept-encoding': 'identity' },
    body,
    signal,
    dispatcher: agentFor(proxy),
  });
  const coding = String(res.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (coding !== 'identity' && coding !== '') {
    res.body.destroy();
    throw new UnknownContentEncoding(coding);
  }
  return new ProxiedResponse(res);
}

/** undici's response as a ModelResponse: each read gives all the text that arrived since the last. */
class ProxiedResponse implements ModelResponse {
  readonly status: number;
  private readonly body: Dispatcher.ResponseData['body'];
  private ended = false;
  private closed = false;
  private failed: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly res: Dispatcher.ResponseData) {
    this.status = res.statusCode;
    this.body = res.body;
    this.body.setEncoding('utf8');
    const poke = () => {
      const w = this.wake;
      this.wake = undefined;
      w?.();
    };
    this.body.on('readable', poke);
    this.body.on('end', () => {
      this.ended = true;
      poke();
    });
    this.body.on('error', (e: Error) => {
      this.failed ??= e;
      poke();
    });
  }

  header(name: string): string | undefined {
    const v = this.res.headers[name.toLowerCase()];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  async read(): Promise<string | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      const t = this.body.read() as string | null;
      if (t !== null && t !== '') return t;
      if (this.failed) throw this.failed;
      if (this.ended || this.body.readableEnded) return undefined;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Read to its end, the connection stays in undici's pool; cut short, destroying closes it.
    if (!this.ended) this.body.destroy();
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/** The proxy a request to `url` would go through (unless NO_PROXY names its host). */
function proxyOf(url: URL, proxy: ProxySettings): { url: string; from: string } | undefined {
  return url.protocol === 'https:' ? proxy.https : proxy.http;
}

/**
 * What failed when a proxy is set, said so the user can tell the proxy from the model server; the
 * message of `fallback` (connectionError's) with the proxy named otherwise.
 */
export function proxiedConnectionError(e: unknown, url: URL, proxy: ProxySettings, fallback: (e: unknown) => ModelError): ModelError {
  const p = proxyOf(url, proxy);
  if (e instanceof BadProxySetting) return new ModelError('model_unreachable', e.message, false);
  if (!p) return fallback(e);
  const shown = shownProxy(p.url);
  const err = e as { code?: unknown; message?: unknown; port?: unknown };
  const message = String(err.message ?? '');
  const bypass = `add ${url.hostname} to NO_PROXY to reach it directly`;
  const refused = /^Proxy response \((\d+)\)/.exec(message);
  if (refused || /Proxy Authentication Required/.test(message)) {
    const status = refused ? Number(refused[1]) : 407;
    const what =
      status === 407
        ? `wants credentials (HTTP 407): put them in ${p.from} as http://USER:PASSWORD@host:port`
        : `refused to connect to ${url.host} (HTTP ${status}): check that the proxy allows it, or ${bypass}`;
    return new ModelError('model_unreachable', `the proxy ${shown} (${p.from}) ${what}; then restart the daemon`, status >= 500);
  }
  let proxyPort = NaN;
  try {
    const u = new URL(p.url);
    proxyPort = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  } catch {
    // checked when the agent was made
  }
  if (err.code === 'ECONNREFUSED' && Number(err.port) === proxyPort)
    return new ModelError('model_unreachable', `the proxy ${shown} (${p.from}) refused the connection: is it running? Correct ${p.from} in the daemon's environment and restart the daemon, or ${bypass}`, true);
  const base = fallback(err.code === 'UND_ERR_SOCKET' ? Object.assign(new Error(message), { code: 'ECONNRESET' }) : e);
  return new ModelError(base.code, `${base.message} (requests go through the proxy ${shown} from ${p.from}${proxy.noProxy ? `, NO_PROXY=${proxy.noProxy}` : ''})`, base.retryable);
}
