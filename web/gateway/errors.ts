// The one error envelope of the HTTP contract (docs/http.md §Errors): the wire protocol's stable
// reasons, an HTTP status chosen from the reason, and whether retrying the same request may help.
import type { ServerResponse } from 'node:http';
import { AstraError, ERRORS, isErrorReason, type ErrorReason } from '../../protocol/index.js';

export interface ErrorEnvelope {
  error: { code: number; reason: ErrorReason; message: string; retryable: boolean; data?: Record<string, unknown> };
}

const STATUS: Partial<Record<ErrorReason, number>> = {
  parse_error: 400,
  invalid_request: 400,
  forbidden_key: 400,
  invalid_params: 400,
  input_too_large: 413,
  frame_too_large: 413,
  method_not_found: 404,
  not_found: 404,
  unauthorized: 401,
  not_controller: 403,
  stale_epoch: 409,
  lease_held: 409,
  turn_in_progress: 409,
  idempotency_conflict: 409,
  invalid_state: 409,
  cursor_ahead: 409,
  cursor_expired: 409,
  approval_expired: 409,
  incompatible_protocol: 502,
  overloaded: 503,
  shutting_down: 503,
  connection_closed: 503,
  daemon_not_running: 503,
  spawn_failed: 503,
  outcome_unknown: 503,
  request_timeout: 504,
};

/** Retrying the same request (with the same idempotencyKey) later may succeed. */
const RETRYABLE: ReadonlySet<ErrorReason> = new Set([
  'overloaded',
  'shutting_down',
  'connection_closed',
  'request_timeout',
  'outcome_unknown',
  'daemon_not_running',
  'spawn_failed',
  'lock_timeout',
]);

export function httpStatusFor(reason: ErrorReason): number {
  return STATUS[reason] ?? 500;
}

/** An error the gateway raises itself, with an HTTP status that differs from the reason's default. */
export class HttpError extends AstraError {
  constructor(
    readonly status: number,
    reason: ErrorReason,
    message: string,
    data: Record<string, unknown> = {},
  ) {
    super(reason, message, data);
  }
}

export function toEnvelope(e: unknown): { status: number; body: ErrorEnvelope } {
  let err: AstraError;
  if (e instanceof AstraError) err = e;
  else if (e && typeof e === 'object' && 'reason' in e && isErrorReason((e as { reason: unknown }).reason))
    err = new AstraError((e as { reason: ErrorReason }).reason, String((e as { message?: unknown }).message ?? ''));
  else err = new AstraError('internal_error', 'the gateway failed unexpectedly; its output has details');
  const status = err instanceof HttpError ? err.status : httpStatusFor(err.reason);
  const data = Object.keys(err.data ?? {}).length > 0 ? { data: err.data } : {};
  return {
    status,
    body: { error: { code: ERRORS[err.reason].code, reason: err.reason, message: err.message, retryable: RETRYABLE.has(err.reason), ...data } },
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

export function sendError(res: ServerResponse, e: unknown, headers: Record<string, string> = {}): void {
  const { status, body } = toEnvelope(e);
  const retry: Record<string, string> = body.error.retryable ? { 'Retry-After': '1' } : {};
  sendJson(res, status, body, { ...retry, ...headers });
}
