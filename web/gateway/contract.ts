// The HTTP contract as data (docs/http.md): every endpoint with its request and response bodies,
// and the SSE stream's own events. schema/astra-http-v1.json is generated from this table
// (scripts/gen-http-schema.mjs); test/web/http-contract.test.ts keeps the table, that file, the
// router and docs/http.md in step, and checks real answers against the schemas.
import {
  APPROVAL_POLICIES,
  APPROVAL_TIMEOUT_BOUNDS,
  DECISIONS,
  ERRORS,
  EVENT_TYPES,
  arr,
  bool,
  engineCapabilitySchema,
  int,
  obj,
  oneOf,
  opt,
  sessionSchema,
  str,
  type Infer,
  type JsonSchema,
  type Schema,
} from '../../protocol/index.js';

export const HTTP_CONTRACT_VERSION = 1;

/** The wire protocol's bound on a client frame; the same for an HTTP body. */
export const MAX_BODY_BYTES = 128 * 1024;

const sessionView = obj(
  { ...sessionSchema.shape, observers: int({ min: 0 }), controlledByMe: bool() },
  'A session as the wire protocol describes it, with the observers count and whether this tab controls it.',
);

/** An event: the wire's event; bytes (command.output data) are base64 text, with encoding: "base64" beside them. */
export const httpEventSchema = obj(
  { sessionId: str(), seq: int({ min: 1 }), ts: int({ min: 0 }), type: str(), data: obj({}) },
  'A session event. In data, bytes travel as base64 text with "encoding": "base64" beside them (command.output).',
);

export const errorEnvelopeSchema = obj({
  error: obj({
    code: int(),
    reason: oneOf(Object.keys(ERRORS) as [string, ...string[]]),
    message: str(),
    retryable: bool(),
    data: opt(obj({})),
  }),
});

export type ErrorEnvelope = Infer<typeof errorEnvelopeSchema>;

const lease = obj({ sessionId: str(), epoch: int({ min: 0 }), resumeToken: str(), graceMs: int({ min: 0 }) });

/** What the table says of one endpoint; its method and path are its key (`GET /v1/me`). */
export interface EndpointSpec {
  summary: string;
  /** Needs the pairing cookie. */
  auth: boolean;
  /** Checks Origin (state-changing requests and event streams). */
  guarded: boolean;
  /** Refused (403 not_controller) for a read-only link. */
  writes: boolean;
  /** The query parameters, each with what it holds. */
  query?: Readonly<Record<string, string>>;
  /** The JSON body (an object), checked by the router before the handler sees it; absent: no body is read. */
  request?: Schema<unknown> & { readonly shape: object };
  status: number;
  /** The JSON body of a success, or undefined for the event stream. */
  response?: Schema<unknown>;
}

type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** The endpoints, keyed by method and path. The router's handlers, the page's api() and the published schema follow it. */
export const ROUTES = {
  'GET /v1/health': { summary: 'Whether the gateway runs.', auth: false, guarded: false, writes: false, status: 200, response: obj({ ok: bool(), version: str(), port: int() }) },
  'POST /v1/pair': {
    summary: 'Trades a single-use pairing code for the cookie (Set-Cookie: HttpOnly; SameSite=Strict; Path=/).',
    auth: false,
    guarded: true,
    writes: false,
    request: obj({ code: str({ maxLength: 256 }) }),
    status: 200,
    response: obj({ paired: bool(), readOnly: bool() }),
  },
  'GET /v1/me': {
    summary: 'Who this tab is on the daemon.',
    auth: true,
    guarded: false,
    writes: false,
    status: 200,
    response: obj({ clientId: str(), clientName: str(), tabId: str(), browser: str(), readOnly: bool() }),
  },
  'GET /v1/capabilities': {
    summary: 'What this gateway offers this tab.',
    auth: true,
    guarded: false,
    writes: false,
    status: 200,
    response: obj({
      version: str(),
      readOnly: bool(),
      outputEncoding: oneOf(['base64'] as const),
      heartbeatMs: int({ min: 1 }),
      maxBodyBytes: int({ min: 1 }),
      limits: obj({ streamsPerTab: int({ min: 1 }), tabsPerBrowser: int({ min: 1 }) }),
      eventTypes: arr(str()),
      streamEvents: arr(str()),
      // What the daemon said when this tab's connection was made (its initialize result).
      engines: arr(engineCapabilitySchema),
      userAgent: str(),
      home: str(),
      platform: str(),
    }),
  },
  'GET /v1/sessions': {
    summary: 'Sessions, newest first.',
    auth: true,
    guarded: false,
    writes: false,
    query: { limit: '1-1000 (default 100)', cursor: 'nextCursor of the previous page', archived: '"true" includes archived sessions' },
    status: 200,
    response: obj({ sessions: arr(sessionView), nextCursor: opt(str()) }),
  },
  'POST /v1/sessions': {
    summary: 'Creates a session.',
    auth: true,
    guarded: true,
    writes: true,
    request: obj({
      title: opt(str({ maxLength: 256 })),
      cwd: opt(str({ maxLength: 4096 })),
      engine: opt(str({ maxLength: 64 })),
      engineOptions: opt(obj({}, 'Options of the engine, checked by it: for chat {model, baseUrl?, maxSteps?, systemPrompt?}.')),
      approvalPolicy: opt(oneOf(APPROVAL_POLICIES)),
      approvalTimeoutMs: opt(int(APPROVAL_TIMEOUT_BOUNDS)),
      idempotencyKey: opt(str({ maxLength: 128 })),
    }),
    status: 201,
    response: obj({ session: sessionView }),
  },
  'GET /v1/sessions/{id}': {
    summary: 'A snapshot and its events after ?since= (at most ?limit=).',
    auth: true,
    guarded: false,
    writes: false,
    query: { since: 'a seq (default 0)', limit: '1-100000' },
    status: 200,
    response: obj({ session: sessionView, events: arr(httpEventSchema), headSeq: int({ min: 0 }), nextSeq: opt(int({ min: 0 })) }),
  },
  'GET /v1/sessions/{id}/events': {
    summary: 'The event stream (SSE): the events after Last-Event-ID or ?since=, then live.',
    auth: true,
    guarded: true,
    writes: false,
    query: { since: 'a seq (Last-Event-ID wins)', tab: 'the tab id (EventSource cannot send X-Astra-Tab)' },
    status: 200,
  },
  'POST /v1/sessions/{id}/messages': {
    summary: 'Starts a turn (this tab must control the session). The same idempotencyKey never starts a second one.',
    auth: true,
    guarded: true,
    writes: true,
    request: obj({ text: str(), idempotencyKey: str({ minLength: 1, maxLength: 128 }) }),
    status: 202,
    response: obj({ turnId: str(), idempotencyKey: str() }),
  },
  'POST /v1/sessions/{id}/cancel': {
    summary: 'Cancels the running turn; idempotent (status "none" when nothing runs).',
    auth: true,
    guarded: true,
    writes: true,
    request: obj({}),
    status: 200,
    response: obj({ turnId: opt(str()), status: str() }),
  },
  'POST /v1/sessions/{id}/lease': {
    summary: 'Takes control: granted when free, lease_held when not; takeover demotes the holder; resumeToken reclaims within the grace period.',
    auth: true,
    guarded: true,
    writes: true,
    request: obj({ takeover: opt(bool()), resumeToken: opt(str({ maxLength: 256 })) }),
    status: 200,
    response: lease,
  },
  'DELETE /v1/sessions/{id}/lease': {
    summary: 'Gives control up; idempotent (released: false when this tab held none).',
    auth: true,
    guarded: true,
    writes: true,
    status: 200,
    response: obj({ sessionId: str(), released: bool() }),
  },
  'POST /v1/tab/release': {
    summary:
      'The tab is going away (the page sends it with navigator.sendBeacon on pagehide): gives up control of every session it holds and closes its daemon connection. The tab is named by ?tab= (a beacon cannot send headers); no body.',
    auth: true,
    guarded: true,
    writes: false,
    query: { tab: 'the tab id' },
    request: obj({}),
    status: 200,
    response: obj({ released: arr(str()) }),
  },
  'POST /v1/approvals/{id}': {
    summary:
      'Answers a pending approval as the session\'s controller (the daemon\'s approval/answer). A stale revision or an expired approval is 409 approval_expired; one no longer pending (answered, withdrawn) is 404 not_found. optionId: one of the approval\'s options (approval.requested options), whose kind agrees with decision.',
    auth: true,
    guarded: true,
    writes: true,
    request: obj({
      decision: oneOf(DECISIONS),
      revision: int({ min: 1 }),
      sessionId: opt(str({ maxLength: 128 })),
      idempotencyKey: opt(str({ maxLength: 128 })),
      optionId: opt(str({ minLength: 1, maxLength: 256 })),
    }),
    status: 200,
    response: obj({ approvalId: str(), sessionId: str(), decision: oneOf(DECISIONS), revision: int({ min: 1 }), optionId: opt(str()) }),
  },
} as const satisfies Record<`${HttpMethod} /v1/${string}`, EndpointSpec>;

export type RouteKey = keyof typeof ROUTES;
type SpecOf<K extends RouteKey> = (typeof ROUTES)[K];
type PathOf<K extends RouteKey> = K extends `${string} ${infer P}` ? P : never;
type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamNames<Rest> : never;

/** The `{name}` parts of a route's path, decoded. */
export type PathParams<K extends RouteKey> = { [N in ParamNames<PathOf<K>>]: string };
/** A route's JSON body as its schema admits it (after the router dropped fields sent as null, which mean absent), or undefined when it takes none. */
export type RequestOf<K extends RouteKey> = SpecOf<K> extends { request: Schema<infer T> } ? T : undefined;
/** A route's JSON answer, or undefined for the event stream. */
export type ResponseOf<K extends RouteKey> = SpecOf<K> extends { response: Schema<infer T> } ? T : undefined;
/** The names of a route's query parameters. */
export type QueryOf<K extends RouteKey> = SpecOf<K> extends { query: infer Q } ? keyof Q & string : never;
/** The routes behind the pairing cookie, which routes.ts serves. */
export type AuthRoute = { [K in RouteKey]: SpecOf<K>['auth'] extends true ? K : never }[RouteKey];

export interface Endpoint extends EndpointSpec {
  key: RouteKey;
  method: HttpMethod;
  path: string;
}

/** The table as a list, in its order. */
export const ENDPOINTS: readonly Endpoint[] = Object.entries(ROUTES).map(([key, spec]: [string, EndpointSpec]) => {
  const [method, path] = key.split(' ') as [HttpMethod, string];
  return { key: key as RouteKey, method, path, ...spec };
});

/** Events of the SSE stream that are not session events (no `id:`, so Last-Event-ID stays the last seq). */
export const STREAM_EVENTS = {
  open: { summary: 'The stream is open; sinceSeq is where it starts.', data: obj({ sessionId: str(), sinceSeq: int({ min: 0 }), heartbeatMs: int({ min: 1 }) }) },
  replayed: { summary: 'The backlog through throughSeq has been sent; what follows is live.', data: obj({ throughSeq: int({ min: 0 }) }) },
  heartbeat: { summary: 'Sent every heartbeatMs (15 s by default) so proxies and the page notice a dead stream.', data: obj({ ts: int({ min: 0 }), lastSeq: int({ min: 0 }) }) },
  lagged: { summary: 'The browser read too slowly; the stream stopped its subscription and resumes from resumeFromSeq out of the journal.', data: obj({ resumeFromSeq: int({ min: 0 }), lagCount: int({ min: 1 }) }) },
  resynced: { summary: 'Resumed after lagging (the gateway\'s or the daemon\'s); nothing was skipped.', data: obj({ lastSeq: int({ min: 0 }), lagCount: int({ min: 1 }), throughSeq: opt(int({ min: 0 })) }) },
  reconnecting: { summary: 'The tab\'s connection to the daemon dropped (a daemon restart); the stream stays open, and the page shows "reconnecting" until reconnected.', data: obj({ reason: str(), daemonShuttingDown: bool(), lastSeq: int({ min: 0 }) }) },
  reconnected: { summary: 'The tab\'s client is back on the daemon; events resume after lastSeq, nothing skipped or repeated.', data: obj({ daemonRestarted: bool(), attempts: int({ min: 0 }), lastSeq: int({ min: 0 }) }) },
  notice: {
    summary:
      'The daemon\'s word about the session that no event carries (session/notice). reason \'disk_full\': the session\'s events cannot be saved (path: the journal; free space there), so none arrive until there is space, nothing is lost; \'disk_ok\': they are saved and arrive again. The page shows it in its status bar. Ignore an unknown reason.',
    data: obj({ reason: str(), message: str(), path: opt(str()), lastSeq: int({ min: 0 }) }),
  },
  closed: { summary: 'The daemon ended the session\'s subscription (session/closed): reason \'deleted\' or \'archived\' (session/closed), or \'journal_damage\' (session/invalidated). The stream ends; do not reconnect to it.', data: obj({ reason: str(), lastSeq: int({ min: 0 }) }) },
  error: { summary: 'The stream failed and ends; data is the error envelope. Reconnect with Last-Event-ID.', data: errorEnvelopeSchema },
} satisfies Record<string, { summary: string; data: Schema<unknown> }>;

export type StreamEventName = keyof typeof STREAM_EVENTS;
export type StreamEventData<N extends StreamEventName> = Infer<(typeof STREAM_EVENTS)[N]['data']>;
/** A session event as JSON (httpEventSchema): its data is an open map. */
export type HttpEvent = Omit<Infer<typeof httpEventSchema>, 'data'> & { data: Record<string, unknown> };

export function buildHttpSchema(): JsonSchema {
  const endpoints: JsonSchema = {};
  for (const e of ENDPOINTS) {
    endpoints[`${e.method} ${e.path}`] = {
      summary: e.summary,
      auth: e.auth ? 'cookie' : 'none',
      originChecked: e.guarded,
      readOnlyRefused: e.writes,
      ...(e.query ? { query: e.query } : {}),
      ...(e.request ? { request: e.request.json() } : {}),
      status: e.status,
      ...(e.response ? { response: e.response.json() } : { response: { contentType: 'text/event-stream' } }),
    };
  }
  const streamEvents: JsonSchema = {};
  for (const [name, s] of Object.entries(STREAM_EVENTS)) streamEvents[name] = { summary: s.summary, data: s.data.json() };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'urn:astra:http:v1',
    title: 'Astra HTTP + SSE contract (astra web)',
    description:
      'Generated from web/gateway/contract.ts by scripts/gen-http-schema.mjs; do not edit. JSON bodies; errors are the envelope below with the wire protocol\'s reasons. Unknown fields and SSE event names must be ignored.',
    version: HTTP_CONTRACT_VERSION,
    limits: { maxBodyBytes: MAX_BODY_BYTES },
    endpoints,
    sse: {
      frame: 'id: <seq>\\nevent: <type>\\ndata: <event JSON>\\n\\n for session events; stream events carry no id',
      event: httpEventSchema.json(),
      sessionEventTypes: EVENT_TYPES,
      streamEvents,
    },
    error: errorEnvelopeSchema.json(),
  };
}

export function renderHttpSchema(): string {
  return `${JSON.stringify(buildHttpSchema(), null, 2)}\n`;
}
