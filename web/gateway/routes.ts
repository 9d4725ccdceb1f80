// The /v1 endpoints a paired tab may call (docs/http.md §Endpoints). Each handler takes the tab and
// the request, calls the tab's own AstraClient, and answers JSON; the server does the checks first.
import type { IncomingMessage, ServerResponse } from 'node:http';
import crypto from 'node:crypto';
import { AstraError, EVENT_TYPES, isAstraError, type Decision, type Schema, type Session } from '../../protocol/index.js';
import { HttpError, sendJson } from './errors.js';
import { MAX_BODY_BYTES, readJsonBody } from './security.js';
import type { SessionFeeds } from './session-feed.js';
import { EventStream, type StreamOptions } from './sse.js';
import { eventToJson } from './sse-frames.js';
import type { Tabs } from './tab-registry.js';
import type { Tab } from './tabs.js';
import { ENDPOINTS, STREAM_EVENTS, type Endpoint } from './contract.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  tab: Tab;
  tabs: Tabs;
  stream: StreamOptions;
  version: string;
}

type Handler = (ctx: RouteContext, params: string[]) => Promise<void>;

interface Route {
  endpoint: Endpoint;
  pattern: RegExp;
  handler: Handler;
}

/** The request's JSON body, checked against the contract's request schema of its endpoint (contract.ts: one statement of what a body may hold). */
const REQUEST_SCHEMAS = new Map<string, Schema<unknown>>(ENDPOINTS.flatMap((e) => (e.request ? [[`${e.method} ${e.path}`, e.request] as const] : [])));

async function bodyOf(req: IncomingMessage, key: string): Promise<Record<string, unknown>> {
  const body = await readJsonBody(req);
  const problem = REQUEST_SCHEMAS.get(key)?.check(body, 'body');
  if (problem) throw new AstraError('invalid_params', `${problem} (docs/http.md lists each endpoint's body)`);
  return body;
}

function str(body: Record<string, unknown>, key: string, opts: { required?: boolean; max?: number } = {}): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) {
    if (opts.required) throw new AstraError('invalid_params', `"${key}" is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw new AstraError('invalid_params', `"${key}" must be a string`);
  if (opts.max !== undefined && v.length > opts.max) throw new AstraError('invalid_params', `"${key}" is longer than ${opts.max} characters`);
  return v;
}

function intParam(url: URL, key: string, min: number, max: number): number | undefined {
  const raw = url.searchParams.get(key);
  if (raw === null) return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new AstraError('invalid_params', `?${key}= must be an integer from ${min} to ${max}`);
  return n;
}

export function refuseReadOnly(tab: Tab): void {
  if (tab.readOnly) throw new HttpError(403, 'not_controller', 'this is a read-only (observer) link: it can watch but not write; pair with `astra web pair` (without --observe) to control');
}

/** What the page shows beside a session: observers (from daemon/status) and whether this tab controls it. */
async function decorate(tab: Tab, sessions: Session[], feeds: SessionFeeds | undefined): Promise<Array<Session & { observers: number; controlledByMe: boolean }>> {
  const client = await tab.daemon();
  const status = await client.daemon.status();
  // The daemon counts the shared feed as one subscriber for all the tabs that watch through it.
  const observers = new Map(status.sessions.map((s) => [s.id, feeds ? feeds.observers(s.id, s.observers, s.controller?.connectionId) : s.observers]));
  return sessions.map((s) => ({ ...s, observers: observers.get(s.id) ?? 0, controlledByMe: client.heldLeases.has(s.id) }));
}

const handlers: Record<string, { handler: Handler }> = {
  'GET /v1/me': {
    handler: async ({ res, tab }) => {
      const client = await tab.daemon();
      sendJson(res, 200, { clientId: client.connectionId, clientName: tab.clientName, tabId: tab.tabId, browser: tab.grant.id, readOnly: tab.readOnly });
    },
  },
  'GET /v1/capabilities': {
    handler: async ({ res, tab, stream, version, tabs }) => {
      sendJson(res, 200, {
        version,
        readOnly: tab.readOnly,
        outputEncoding: 'base64',
        heartbeatMs: stream.heartbeatMs,
        maxBodyBytes: MAX_BODY_BYTES,
        limits: { streamsPerTab: tabs.limits.streamsPerTab, tabsPerBrowser: tabs.limits.tabsPerBrowser },
        eventTypes: EVENT_TYPES,
        streamEvents: Object.keys(STREAM_EVENTS),
      });
    },
  },
  'GET /v1/sessions': {
    handler: async ({ res, tab, url, stream }) => {
      const client = await tab.daemon();
      const limit = intParam(url, 'limit', 1, 1000) ?? 100;
      const cursor = url.searchParams.get('cursor') ?? undefined;
      const page = await client.session.list({ limit, includeArchived: url.searchParams.get('archived') === 'true', ...(cursor ? { cursor } : {}) });
      sendJson(res, 200, { sessions: await decorate(tab, page.sessions, stream.feeds), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
    },
  },
  'POST /v1/sessions': {
    handler: async ({ req, res, tab, stream }) => {
      const body = await bodyOf(req, 'POST /v1/sessions');
      // Types and bounds are the contract's (bodyOf); the daemon checks the rest (cwd, engine, engineOptions).
      const policy = body.approvalPolicy as 'ask' | 'auto' | undefined;
      const title = str(body, 'title', { max: 256 });
      const cwd = str(body, 'cwd', { max: 4096 });
      const engine = str(body, 'engine', { max: 64 });
      const idempotencyKey = str(body, 'idempotencyKey', { max: 128 });
      const engineOptions = body.engineOptions as Record<string, unknown> | undefined;
      const approvalTimeoutMs = body.approvalTimeoutMs as number | undefined;
      const client = await tab.daemon();
      const { session } = await client.session.create({
        ...(engineOptions !== undefined ? { engineOptions } : {}),
        ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
        ...(title !== undefined ? { title } : {}),
        ...(cwd !== undefined ? { cwd } : {}),
        ...(engine !== undefined ? { engine } : {}),
        ...(policy !== undefined ? { approvalPolicy: policy } : {}),
        ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      });
      sendJson(res, 201, { session: (await decorate(tab, [session], stream.feeds))[0] });
    },
  },
  'GET /v1/sessions/{id}': {
    handler: async ({ res, tab, url, stream }, [id]) => {
      const client = await tab.daemon();
      const limit = intParam(url, 'limit', 1, 100_000);
      const since = intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER);
      const r = await client.session.read({ sessionId: id!, ...(limit !== undefined ? { limit } : {}), ...(since !== undefined ? { sinceSeq: since } : {}) });
      sendJson(res, 200, {
        session: (await decorate(tab, [r.session], stream.feeds))[0],
        events: r.events.map(eventToJson),
        headSeq: r.headSeq,
        ...(r.nextSeq !== undefined ? { nextSeq: r.nextSeq } : {}),
      });
    },
  },
  'GET /v1/sessions/{id}/events': {
    handler: async ({ req, res, tab, url, stream }, [id]) => {
      const header = req.headers['last-event-id'];
      let since = intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER) ?? 0;
      if (typeof header === 'string' && header.length > 0) {
        const n = Number(header);
        if (!Number.isSafeInteger(n) || n < 0) throw new AstraError('invalid_params', 'Last-Event-ID must be an event seq (an integer ≥ 0)');
        since = n;
      }
      const previous = tab.streams.get(id!);
      if (!previous && tab.streams.size >= tab.limitStreams)
        throw new AstraError('overloaded', `this tab has ${tab.streams.size} event streams open (at most ${tab.limitStreams}); close one and retry`);
      const client = await tab.daemon({ whileStopped: true });
      // Unknown sessions and a seq beyond the head are answered as JSON errors, before the stream
      // opens, when the daemon is there to ask. While it is down the stream opens at once and says
      // `reconnecting` (the subscription reports those errors once the daemon is back).
      if (!tab.down) {
        const head = await client.session.read({ sessionId: id!, limit: 1 });
        if (since > head.headSeq) throw new AstraError('cursor_ahead', `since=${since} is beyond the session's head (${head.headSeq}); resync from ${head.headSeq}`, { headSeq: head.headSeq });
      }
      // One stream per session per tab: a newer one (the browser reconnecting) replaces the older.
      if (previous) {
        previous.stop();
        await previous.ended;
      }
      const s = new EventStream(tab, id!, since, res, stream);
      tab.streams.set(id!, s);
      await s.start();
    },
  },
  'POST /v1/sessions/{id}/messages': {
    handler: async ({ req, res, tab }, [id]) => {
      const body = await bodyOf(req, 'POST /v1/sessions/{id}/messages');
      const text = str(body, 'text', { required: true })!;
      const idempotencyKey = str(body, 'idempotencyKey', { required: true, max: 128 })!;
      if (idempotencyKey.length === 0) throw new AstraError('invalid_params', '"idempotencyKey" must not be empty');
      const client = await tab.daemon();
      if (!client.heldLeases.has(id!)) throw new HttpError(403, 'not_controller', 'this tab does not control the session: take control first (POST /v1/sessions/{id}/lease)', { sessionId: id });
      const r = await client.turn.start({ sessionId: id!, input: { text }, idempotencyKey });
      sendJson(res, 202, { turnId: r.turnId, idempotencyKey });
    },
  },
  'POST /v1/sessions/{id}/cancel': {
    handler: async ({ req, res, tab }, [id]) => {
      await bodyOf(req, 'POST /v1/sessions/{id}/cancel');
      const client = await tab.daemon();
      if (!client.heldLeases.has(id!)) throw new HttpError(403, 'not_controller', 'this tab does not control the session: take control first (POST /v1/sessions/{id}/lease)', { sessionId: id });
      try {
        const r = await client.turn.cancel({ sessionId: id! });
        sendJson(res, 200, { turnId: r.turnId, status: r.status });
      } catch (e) {
        // Cancel is idempotent: nothing running (any more) is not an error.
        if (!isAstraError(e, 'not_found') && !isAstraError(e, 'invalid_state')) throw e;
        sendJson(res, 200, { status: 'none' });
      }
    },
  },
  'POST /v1/sessions/{id}/lease': {
    handler: async ({ req, res, tab }, [id]) => {
      const body = await bodyOf(req, 'POST /v1/sessions/{id}/lease');
      const takeover = body.takeover === true;
      const resumeToken = str(body, 'resumeToken', { max: 256 });
      const client = await tab.daemon();
      const held = client.heldLeases.get(id!);
      const lease = held && !takeover ? held : await client.acquireController(id!, { takeover, ...(resumeToken ? { resumeToken } : {}) });
      tab.rememberLease(lease);
      sendJson(res, 200, { sessionId: lease.sessionId, epoch: lease.epoch, resumeToken: lease.resumeToken, graceMs: lease.graceMs });
    },
  },
  'DELETE /v1/sessions/{id}/lease': {
    handler: async ({ res, tab }, [id]) => {
      await tab.daemon();
      sendJson(res, 200, { sessionId: id, released: await tab.releaseLease(id!) });
    },
  },
  'POST /v1/tab/release': {
    handler: async ({ req, res, tab, tabs }) => {
      await bodyOf(req, 'POST /v1/tab/release');
      sendJson(res, 200, { released: await tabs.release(tab) });
    },
  },
  'POST /v1/approvals/{id}': {
    handler: async ({ req, res, tab }, [id]) => {
      const body = await bodyOf(req, 'POST /v1/approvals/{id}');
      const decision = str(body, 'decision', { required: true });
      if (decision !== 'approve' && decision !== 'deny') throw new AstraError('invalid_params', '"decision" must be "approve" or "deny"');
      const revision = body.revision;
      if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1)
        throw new AstraError('invalid_params', '"revision" must be the approval\'s revision, an integer ≥ 1 (approval.requested data.revision)');
      const sessionId = str(body, 'sessionId', { max: 128 });
      const idempotencyKey = str(body, 'idempotencyKey', { max: 128 }) ?? crypto.randomUUID();
      const r = await tab.decide(id!, decision as Decision, revision, idempotencyKey, sessionId);
      sendJson(res, 200, r);
    },
  },
};

/** The router: the contract's endpoints that need the cookie, each with its handler (one for each, checked here). */
const routes: Route[] = ENDPOINTS.filter((e) => e.auth).map((endpoint) => {
  const key = `${endpoint.method} ${endpoint.path}`;
  const h = handlers[key];
  if (!h) throw new Error(`web/gateway/routes.ts has no handler for ${key} of the contract`);
  const pattern = new RegExp(`^${endpoint.path.replace(/\{id\}/g, '([^/]{1,128})')}$`);
  return { endpoint, pattern, handler: h.handler };
});
for (const key of Object.keys(handlers))
  if (!ENDPOINTS.some((e) => `${e.method} ${e.path}` === key)) throw new Error(`web/gateway/routes.ts handles ${key}, which the contract does not name`);

/** The route for a method and path, with its captured ids; `undefined` when the path is unknown. */
export function matchRoute(method: string, pathname: string): { route: Route; params: string[] } | { allowed: string[] } | undefined {
  const allowed: string[] = [];
  for (const route of routes) {
    const m = route.pattern.exec(pathname);
    if (!m) continue;
    if (route.endpoint.method !== method) {
      allowed.push(route.endpoint.method);
      continue;
    }
    let params: string[];
    try {
      params = m.slice(1).map((p) => decodeURIComponent(p));
    } catch {
      throw new AstraError('invalid_params', 'the path has a malformed %-escape');
    }
    return { route, params };
  }
  return allowed.length > 0 ? { allowed } : undefined;
}
