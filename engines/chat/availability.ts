// Whether the chat engine can run a session with the daemon's defaults (Engine.availability): a
// model named in the daemon's environment (ASTRA_CHAT_MODEL), and a model server answering at the
// default base URL. The server is probed with one TCP connection, bounded by PROBE_TIMEOUT_MS, and
// the answer kept for CACHE_MS (an injected clock), so initialize never waits long and a burst of
// connections probes once. Not probed through a proxy (the proxy decides where the request goes).
//
// At session/create (options given, a model named: parseChatOptions refuses a create without one)
// nothing is probed: a session outlives its model server's restarts, and a turn on a server that does
// not answer fails with model_unreachable saying what to do (docs/engines.md).
import * as net from 'node:net';
import type { EngineAvailability } from '../../runtime/engine.js';
import { CHAT_DEFAULT_BASE_URL, normalizeBaseUrl } from './options.js';

export const PROBE_TIMEOUT_MS = 1000;
export const CACHE_MS = 30_000;

type Env = Record<string, string | undefined>;

export interface ChatAvailabilityOptions {
  /** A proxy is configured: the server is not probed. */
  proxied: boolean;
  /** ms clock for the cache (default Date.now). */
  now?: () => number;
  /** Opens a TCP connection; resolves with an error code, or undefined when it connected. Default: node:net. */
  probe?: (host: string, port: number, timeoutMs: number) => Promise<string | undefined>;
}

export function chatAvailability(env: Env, opts: ChatAvailabilityOptions): (options?: object) => Promise<EngineAvailability> {
  const now = opts.now ?? Date.now;
  const probe = opts.probe ?? tcpProbe;
  let cached: { at: number; answer: Promise<EngineAvailability> } | undefined;
  return async (options) => {
    if (options !== undefined) return { available: true };
    if (!env.ASTRA_CHAT_MODEL || env.ASTRA_CHAT_MODEL.trim() === '')
      return {
        available: false,
        reason: 'not configured: no model server and model are set for the daemon (ASTRA_CHAT_MODEL=<model> [ASTRA_CHAT_BASE_URL=<url>] astra daemon restart), so each session must name its model (engineOptions.model, astra chat --model)',
      };
    let baseUrl: string;
    try {
      baseUrl = env.ASTRA_CHAT_BASE_URL ? normalizeBaseUrl(env.ASTRA_CHAT_BASE_URL, 'ASTRA_CHAT_BASE_URL') : CHAT_DEFAULT_BASE_URL;
    } catch (e) {
      return { available: false, reason: `not configured: ${(e as Error).message}` };
    }
    if (opts.proxied) return { available: true };
    const t = now();
    if (!cached || t - cached.at >= CACHE_MS) cached = { at: t, answer: check(baseUrl) };
    return cached.answer;
  };

  async function check(baseUrl: string): Promise<EngineAvailability> {
    const url = new URL(baseUrl);
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const code = await probe(host, port, PROBE_TIMEOUT_MS);
    if (code === undefined) return { available: true };
    return {
      available: false,
      reason: `unreachable: the model server at ${baseUrl} does not answer (${code}); start it (\`ollama serve\`) or point the daemon at yours: ASTRA_CHAT_BASE_URL=<url> astra daemon restart`,
    };
  }
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (code: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(code);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(undefined));
    socket.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  });
}
