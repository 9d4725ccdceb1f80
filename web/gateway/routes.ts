// The /v1 endpoints a paired tab may call (docs/http.md §Endpoints), one handler per route of the
// contract's table (contract.ts), typed from it. The server does the checks first (Host, cookie,
// Origin, read-only); serveRoute reads and checks the body, calls the handler with the tab, and sends
// its answer as JSON with the route's status; a handler calls the tab's own AstraClient.
import type { IncomingMessage, ServerResponse } from 'node:http';
import crypto from 'node:crypto';
import { AstraError, EVENT_TYPES, isAstraError, type Session } from '../../protocol/index.js';
import { HttpError, sendJson } from './errors.js';
import { readJsonBody } from './security.js';
import type { SessionFeeds } from './session-feed.js';
import { EventStream, type StreamOptions } from './sse.js';
import { eventToJson } from './sse-frames.js';
import type { Tabs } from './tab-registry.js';
import type { Tab } from './tabs.js';
import { ENDPOINTS, MAX_BODY_BYTES, STREAM_EVENTS, type AuthRoute, type Endpoint, type PathParams, type RequestOf, type ResponseOf } from './contract.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  tab: Tab;
  tabs: Tabs;
  stream: StreamOptions;
  version: string;
}

/** What a handler is given: the path's `{name}` parts and the body its schema admitted. */
export interface RouteRequest<K extends AuthRoute> {
  params: PathParams<K>;
  body: RequestOf<K>;
}

/** A route's handler: it answers with the route's response, which the router sends with the route's status; the event stream answers itself. */
type Handler<K extends AuthRoute> = (ctx: RouteContext, request: RouteRequest<K>) => Promise<ResponseOf<K> extends undefined ? void : ResponseOf<K>>;

/** One handler for each route of the contract behind the cookie: a missing, extra or mistyped one does not compile. */
export type Handlers = { [K in AuthRoute]: Handler<K> };

interface Route {
  endpoint: Endpoint;
  pattern: RegExp;
  /** The `{name}` parts of the path, in the order the pattern captures them. */
  names: string[];
  handler: (ctx: RouteContext, request: { params: Record<string, string>; body: unknown }) => Promise<unknown>;
}

/**
 * The request's JSON body, checked once against its endpoint's schema (contract.ts), as the fields
 * the schema names: a field sent as null is left out, as for an optional field null and absent mean
 * the same (protocol/schema.ts opt), and fields the schema does not name are ignored.
 */
async function bodyOf(req: IncomingMessage, endpoint: Endpoint): Promise<unknown> {
  if (!endpoint.request) return undefined;
  const body = await readJsonBody(req);
  const problem = endpoint.request.check(body, 'body');
  if (problem) throw new AstraError('invalid_params', `${problem} (docs/http.md lists each endpoint's body)`);
  const value: Record<string, unknown> = {};
  for (const key of Object.keys(endpoint.request.shape)) if (body[key] !== undefined && body[key] !== null) value[key] = body[key];
  return value;
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

function requireControl(tab: Tab, heldLeases: ReadonlyMap<string, unknown>, sessionId: string): void {
  if (!heldLeases.has(sessionId)) throw new HttpError(403, 'not_controller', 'this tab does not control the session: take control first (POST /v1/sessions/{id}/lease)', { sessionId });
}

const handlers: Handlers = {
  'GET /v1/me': async ({ tab }) => {
    const client = await tab.daemon();
    return { clientId: client.connectionId, clientName: tab.clientName, tabId: tab.tabId, browser: tab.grant.id, readOnly: tab.readOnly };
  },
  'GET /v1/capabilities': async ({ tab, stream, version, tabs }) => {
    const daemon = (await tab.daemon()).serverInfo;
    return {
      version,
      readOnly: tab.readOnly,
      outputEncoding: 'base64',
      heartbeatMs: stream.heartbeatMs,
      maxBodyBytes: MAX_BODY_BYTES,
      limits: { streamsPerTab: tabs.limits.streamsPerTab, tabsPerBrowser: tabs.limits.tabsPerBrowser },
      eventTypes: EVENT_TYPES,
      streamEvents: Object.keys(STREAM_EVENTS),
      engines: daemon.engines ?? [],
      userAgent: daemon.userAgent ?? `astra/${daemon.daemon.version}`,
      home: daemon.home ?? '',
      platform: daemon.platform ?? '',
    };
  },
  'GET /v1/sessions': async ({ tab, url, stream }) => {
    const client = await tab.daemon();
    const limit = intParam(url, 'limit', 1, 1000) ?? 100;
    const cursor = url.searchParams.get('cursor') ?? undefined;
    const page = await client.session.list({ limit, includeArchived: url.searchParams.get('archived') === 'true', ...(cursor ? { cursor } : {}) });
    return { sessions: await decorate(tab, page.sessions, stream.feeds), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
  },
  // The contract's schema checked types and bounds; the daemon checks the rest (cwd, engine, engineOptions).
  'POST /v1/sessions': async ({ tab, stream }, { body }) => {
    const client = await tab.daemon();
    const { session } = await client.session.create(body);
    return { session: (await decorate(tab, [session], stream.feeds))[0]! };
  },
  'GET /v1/sessions/{id}': async ({ tab, url, stream }, { params: { id } }) => {
    const client = await tab.daemon();
    const limit = intParam(url, 'limit', 1, 100_000);
    const since = intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER);
    const r = await client.session.read({ sessionId: id, ...(limit !== undefined ? { limit } : {}), ...(since !== undefined ? { sinceSeq: since } : {}) });
    return {
      session: (await decorate(tab, [r.session], stream.feeds))[0]!,
      events: r.events.map(eventToJson),
      headSeq: r.headSeq,
      ...(r.nextSeq !== undefined ? { nextSeq: r.nextSeq } : {}),
    };
  },
  'GET /v1/sessions/{id}/events': async ({ req, res, tab, url, stream }, { params: { id } }) => {
    const header = req.headers['last-event-id'];
    let since = intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER) ?? 0;
    if (typeof header === 'string' && header.length > 0) {
      const n = Number(header);
      if (!Number.isSafeInteger(n) || n < 0) throw new AstraError('invalid_params', 'Last-Event-ID must be an event seq (an integer ≥ 0)');
      since = n;
    }
    const previous = tab.streams.get(id);
    if (!previous && tab.streams.size >= tab.limitStreams)
      throw new AstraError('overloaded', `this tab has ${tab.streams.size} event streams open (at most ${tab.limitStreams}); close one and retry`);
    const client = await tab.daemon({ whileStopped: true });
    // Unknown sessions and a seq beyond the head are answered as JSON errors, before the stream
    // opens, when the daemon is there to ask. While it is down the stream opens at once and says
    // `reconnecting` (the subscription reports those errors once the daemon is back).
    if (!tab.down) {
      const head = await client.session.read({ sessionId: id, limit: 1 });
      if (since > head.headSeq) throw new AstraError('cursor_ahead', `since=${since} is beyond the session's head (${head.headSeq}); resync from ${head.headSeq}`, { headSeq: head.headSeq });
    }
    // One stream per session per tab: a newer one (the browser reconnecting) replaces the older.
    if (previous) {
      previous.stop();
      await previous.ended;
    }
    const s = new EventStream(tab, id, since, res, stream);
    tab.streams.set(id, s);
    await s.start();
  },
  'POST /v1/sessions/{id}/messages': async ({ tab }, { params: { id }, body: { text, idempotencyKey } }) => {
    const client = await tab.daemon();
    requireControl(tab, client.heldLeases, id);
    const r = await client.turn.start({ sessionId: id, input: { text }, idempotencyKey });
    return { turnId: r.turnId, idempotencyKey };
  },
  'POST /v1/sessions/{id}/cancel': async ({ tab }, { params: { id } }) => {
    const client = await tab.daemon();
    requireControl(tab, client.heldLeases, id);
    try {
      const r = await client.turn.cancel({ sessionId: id });
      return { turnId: r.turnId, status: r.status };
    } catch (e) {
      // Cancel is idempotent: nothing running (any more) is not an error.
      if (!isAstraError(e, 'not_found') && !isAstraError(e, 'invalid_state')) throw e;
      return { status: 'none' };
    }
  },
  'POST /v1/sessions/{id}/lease': async ({ tab }, { params: { id }, body: { takeover = false, resumeToken } }) => {
    const client = await tab.daemon();
    const held = client.heldLeases.get(id);
    const lease = held && !takeover ? held : await client.acquireController(id, { takeover, ...(resumeToken ? { resumeToken } : {}) });
    tab.rememberLease(lease);
    return { sessionId: lease.sessionId, epoch: lease.epoch, resumeToken: lease.resumeToken, graceMs: lease.graceMs };
  },
  'DELETE /v1/sessions/{id}/lease': async ({ tab }, { params: { id } }) => {
    await tab.daemon();
    return { sessionId: id, released: await tab.releaseLease(id) };
  },
  'POST /v1/tab/release': async ({ tab, tabs }) => ({ released: await tabs.release(tab) }),
  'POST /v1/approvals/{id}': async ({ tab }, { params: { id }, body: { decision, revision, sessionId, idempotencyKey = crypto.randomUUID(), optionId } }) =>
    tab.decide(id, decision, revision, idempotencyKey, sessionId, optionId),
};

/** The router: the contract's endpoints that need the cookie, each with its handler. */
const routes: Route[] = ENDPOINTS.filter((e) => e.auth).map((endpoint) => {
  const names = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const pattern = new RegExp(`^${endpoint.path.replace(/\{\w+\}/g, '([^/]{1,128})')}$`);
  // The one place a route's types are erased: the handler of this key gets this key's params and body.
  const handler = handlers[endpoint.key as AuthRoute] as unknown as Route['handler'];
  return { endpoint, pattern, names, handler };
});

/** The route for a method and path, with its path's `{name}` parts; `undefined` when the path is unknown. */
export function matchRoute(method: string, pathname: string): { route: Route; params: Record<string, string> } | { allowed: string[] } | undefined {
  const allowed: string[] = [];
  for (const route of routes) {
    const m = route.pattern.exec(pathname);
    if (!m) continue;
    if (route.endpoint.method !== method) {
      allowed.push(route.endpoint.method);
      continue;
    }
    const params: Record<string, string> = {};
    try {
      route.names.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1]!)));
    } catch {
      throw new AstraError('invalid_params', 'the path has a malformed %-escape');
    }
    return { route, params };
  }
  return allowed.length > 0 ? { allowed } : undefined;
}

/** Serves a matched route: its body read and checked, its handler called, its answer sent with the endpoint's status. */
export async function serveRoute(route: Route, ctx: RouteContext, params: Record<string, string>): Promise<void> {
  const body = await bodyOf(ctx.req, route.endpoint);
  const result = await route.handler(ctx, { params, body });
  if (route.endpoint.response) sendJson(ctx.res, route.endpoint.status, result);
}
