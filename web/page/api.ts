// The gateway's HTTP contract as the page uses it (docs/http.md). Every request names this tab, so
// the gateway gives the tab its own client identity on the daemon.
export const tabId: string = (() => {
  const saved = sessionStorage.getItem('astra.tab');
  if (saved) return saved;
  const id = crypto.randomUUID().replace(/-/g, '');
  sessionStorage.setItem('astra.tab', id);
  return id;
})();

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
