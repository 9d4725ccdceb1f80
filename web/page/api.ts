// The gateway's HTTP contract as the page uses it (docs/http.md). Every request names this tab, so
// the gateway gives the tab its own client identity on the daemon.
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

export interface ApiError {
  code: number;
  reason: string;
  message: string;
  retryable: boolean;
}

export class RequestFailed extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiError,
  ) {
    super(error.message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
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
  return value as T;
}

export interface SessionView {
  id: string;
  title: string;
  engine: string;
  state: string;
  updatedAt: number;
  headSeq: number;
  observers: number;
  controlledByMe: boolean;
  runningTurnId?: string;
  controller?: { connectionId: string; clientName: string; graceUntil?: number };
}

export interface PageEvent {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
  data: Record<string, unknown>;
}

export interface Me {
  clientId: string;
  clientName: string;
  readOnly: boolean;
}
