// The gateway's HTTP contract as the page uses it (docs/http.md). Every request names this tab, so
// the gateway gives the tab its own client identity on the daemon. The routes, their bodies and their
// answers are the types of the contract's table (web/gateway/contract.ts), imported as types only:
// nothing of the gateway's code goes into the page's bundle.
import type { ErrorEnvelope, HttpEvent, PathParams, QueryOf, RequestOf, ResponseOf, RouteKey } from '../gateway/contract.js';

export const tabId: string = (() => {
  const saved = sessionStorage.getItem('astra.tab');
  if (saved) return saved;
  const id = crypto.randomUUID().replace(/-/g, '');
  sessionStorage.setItem('astra.tab', id);
  return id;
})();

/** Sessions this tab controlled when the page went away (a reload): taken again, if still free, when shown. */
const RECLAIM_KEY = 'astra.reclaim';

/**
 * When the page goes away (closed, reloaded, navigated off), the gateway is told with a beacon, which
 * the browser sends even as the page unloads: it releases this tab's control at once and closes the
 * tab (docs/http.md §Tabs), so a terminal can take over without waiting for a grace period. A page
 * kept in the back/forward cache sends nothing: it may come back as it was.
 */
export function releaseOnPageHide(controlled: () => string[]): void {
  window.addEventListener('pagehide', (ev) => {
    if (ev.persisted) return;
    sessionStorage.setItem(RECLAIM_KEY, JSON.stringify(controlled()));
    navigator.sendBeacon(`/v1/tab/release?tab=${tabId}`);
  });
}

/** Whether this tab controlled the session before a reload (asked once per session). */
export function controlledBeforeReload(sessionId: string): boolean {
  let ids: unknown;
  try {
    ids = JSON.parse(sessionStorage.getItem(RECLAIM_KEY) ?? '[]');
  } catch {
    ids = [];
  }
  if (!Array.isArray(ids) || !ids.includes(sessionId)) return false;
  sessionStorage.setItem(RECLAIM_KEY, JSON.stringify(ids.filter((x) => x !== sessionId)));
  return true;
}

export type ApiError = ErrorEnvelope['error'];

export class RequestFailed extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiError,
  ) {
    super(error.message);
  }
}

/** The routes the page calls with fetch: every one that answers JSON (the event stream is EventSource's). */
export type JsonRoute = { [K in RouteKey]: ResponseOf<K> extends undefined ? never : K }[RouteKey];

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** What a call of a route sends: its path's `{name}` parts, its body (when it takes one), its query. */
export type ApiRequest<K extends JsonRoute> = Simplify<
  ([keyof PathParams<K>] extends [never] ? unknown : { params: PathParams<K> }) &
    (RequestOf<K> extends undefined ? unknown : { body: RequestOf<K> }) &
    ([QueryOf<K>] extends [never] ? unknown : { query?: { [Q in QueryOf<K>]?: string | number | boolean } })
>;

type ApiArgs<K extends JsonRoute> = {} extends ApiRequest<K> ? [request?: ApiRequest<K>] : [request: ApiRequest<K>];

/** Calls a route of the contract by its key (`'GET /v1/me'`) and answers its response's type. */
export async function api<K extends JsonRoute>(route: K, ...[request]: ApiArgs<K>): Promise<ResponseOf<K>> {
  const space = route.indexOf(' ');
  const r = (request ?? {}) as { params?: Record<string, string>; body?: unknown; query?: Record<string, string | number | boolean | undefined> };
  let path = route.slice(space + 1).replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(r.params?.[name] ?? ''));
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query ?? {})) if (v !== undefined) query.set(k, String(v));
  if ([...query.keys()].length > 0) path += `?${query.toString()}`;
  const body = r.body;
  const res = await fetch(path, {
    method: route.slice(0, space),
    credentials: 'same-origin',
    headers: { 'X-Astra-Tab': tabId, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  const value = text ? (JSON.parse(text) as unknown) : {};
  if (!res.ok) {
    const err = (value as { error?: ApiError }).error ?? { code: 0, reason: 'internal_error', message: `HTTP ${res.status}`, retryable: false };
    throw new RequestFailed(res.status, err);
  }
  return value as ResponseOf<K>;
}

/** A session as GET /v1/sessions lists it. */
export type SessionView = ResponseOf<'GET /v1/sessions'>['sessions'][number];

export type PageEvent = HttpEvent;

export type Me = ResponseOf<'GET /v1/me'>;
