// Message envelopes (docs/protocol.md) and their validation. Every decoded frame goes through
// parseMessage before anything else looks at it.
import { AstraError, type WireError } from './errors.js';
import { checkPlainValue, isPlainObject } from './schema.js';
import { METHODS, SERVER_REQUESTS, CLIENT_NOTIFICATIONS, SERVER_NOTIFICATIONS, isMethodName } from './methods.js';
import { eventEnvelopeSchema, sessionEventSchema, type SessionEvent } from './types.js';

export type RequestId = number | string;

export interface TraceContext {
  traceparent?: string;
  tracestate?: string;
}

export interface RequestMessage {
  id: RequestId;
  method: string;
  params?: unknown;
  trace?: TraceContext;
}
export interface ResponseMessage {
  id: RequestId;
  result: unknown;
}
export interface ErrorMessage {
  id: RequestId | null;
  error: WireError;
}
export interface NotificationMessage {
  method: string;
  params?: unknown;
}

export type Message =
  | ({ kind: 'request' } & RequestMessage)
  | ({ kind: 'response' } & ResponseMessage)
  | ({ kind: 'error' } & ErrorMessage)
  | ({ kind: 'notification' } & NotificationMessage);

function isId(v: unknown): v is RequestId {
  return (typeof v === 'number' && Number.isSafeInteger(v)) || (typeof v === 'string' && v.length > 0 && v.length <= 128);
}

/**
 * Checks the envelope of a decoded frame and returns it tagged with its kind. Throws AstraError
 * (`invalid_request` or `forbidden_key`) for anything that is not a well-formed message.
 * The params of a request are checked later, against the method table, by checkParams.
 */
export function parseMessage(value: unknown): Message {
  const problem = checkPlainValue(value);
  if (problem) throw new AstraError(problem.kind === 'forbidden_key' ? 'forbidden_key' : 'invalid_request', problem.detail);
  return parseTrustedMessage(value);
}

/**
 * The envelope alone (the same checks and errors as parseMessage), without parseMessage's walk
 * over every value inside: for frames from a peer trusted for shape — the client reading the
 * daemon its token authenticated, which speaks its protocol version (client option `validate`,
 * docs/architecture.md). The decoder already turned `__proto__` keys into plain `__proto_` ones.
 */
export function parseTrustedMessage(value: unknown): Message {
  if (!isPlainObject(value)) throw new AstraError('invalid_request', 'a message must be a map');
  const m = value;
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method.length === 0)
      throw new AstraError('invalid_request', 'method must be a non-empty string');
    if (m.method.length > 128) throw new AstraError('invalid_request', `method must be at most 128 characters, got ${m.method.length}`);
    if (m.params !== undefined && m.params !== null && !isPlainObject(m.params))
      throw new AstraError('invalid_request', 'params must be a map');
    const params = m.params ?? undefined;
    if (m.id === undefined || m.id === null) return { kind: 'notification', method: m.method, params };
    if (!isId(m.id)) throw new AstraError('invalid_request', 'id must be an integer or a short string');
    const msg: Message = { kind: 'request', id: m.id, method: m.method, params };
    if (m.trace !== undefined && m.trace !== null) {
      if (!isPlainObject(m.trace)) throw new AstraError('invalid_request', 'trace must be a map');
      const { traceparent, tracestate } = m.trace;
      if ((traceparent !== undefined && typeof traceparent !== 'string') || (tracestate !== undefined && typeof tracestate !== 'string'))
        throw new AstraError('invalid_request', 'trace.traceparent and trace.tracestate must be strings');
      msg.trace = { traceparent: traceparent as string | undefined, tracestate: tracestate as string | undefined };
    }
    return msg;
  }
  if ('error' in m && m.error !== undefined) {
    if (m.id !== null && !isId(m.id)) throw new AstraError('invalid_request', 'error id must be an integer, a string or nil');
    const e = m.error;
    if (!isPlainObject(e) || typeof e.code !== 'number' || !Number.isInteger(e.code) || typeof e.message !== 'string')
      throw new AstraError('invalid_request', 'error must be {code: integer, message: string, data?}');
    if (e.data !== undefined && e.data !== null && (!isPlainObject(e.data) || typeof e.data.reason !== 'string'))
      throw new AstraError('invalid_request', 'error.data must be a map with a string reason');
    const error: WireError = { code: e.code, message: e.message };
    if (isPlainObject(e.data)) error.data = e.data as WireError['data'];
    return { kind: 'error', id: m.id as RequestId | null, error };
  }
  if ('result' in m) {
    if (!isId(m.id)) throw new AstraError('invalid_request', 'response id must be an integer or a short string');
    return { kind: 'response', id: m.id, result: m.result ?? null };
  }
  throw new AstraError('invalid_request', 'a message needs a method, a result or an error');
}

function checkWith(schema: { check(v: unknown, p: string): string | undefined }, params: unknown, what: string): void {
  const problem = schema.check(params ?? {}, 'params');
  if (problem) throw new AstraError('invalid_params', `${what}: ${problem}`);
}

/** Checks a client→daemon request's params against the method table. */
export function checkRequestParams(method: string, params: unknown): void {
  if (!isMethodName(method)) throw new AstraError('method_not_found', `unknown method "${method}"`);
  checkWith(METHODS[method].params, params, method);
}

/** Checks a daemon→client server request's params. */
export function checkServerRequestParams(method: string, params: unknown): void {
  const spec = (SERVER_REQUESTS as Record<string, { params: { check(v: unknown, p: string): string | undefined } }>)[method];
  if (!spec) throw new AstraError('method_not_found', `unknown server request "${method}"`);
  checkWith(spec.params, params, method);
}

/** Checks a notification's params; returns false for a notification this side does not know. */
export function checkNotificationParams(method: string, params: unknown, direction: 'toDaemon' | 'toClient'): boolean {
  const table = (direction === 'toDaemon' ? CLIENT_NOTIFICATIONS : SERVER_NOTIFICATIONS) as Record<
    string,
    { check(v: unknown, p: string): string | undefined }
  >;
  const schema = table[method];
  if (!schema) return false;
  checkWith(schema, params, method);
  return true;
}

/**
 * Validates an event. Unknown event types from a newer daemon are allowed through (clients ignore
 * them), but the envelope must be right and known types must have the right data.
 */
export function validateEvent(value: unknown): SessionEvent {
  const problem = sessionEventSchema.check(value, 'event');
  if (problem) throw new AstraError('invalid_params', problem);
  return value as SessionEvent;
}

/**
 * Checks an event's envelope only — what a client's own logic reads: `sessionId`, `seq` (an
 * integer ≥ 1), `ts`, `type` (a string; unknown types pass, as in validateEvent) and that `data` is
 * a map — not the data of its type. For events from a peer trusted for shape (see
 * parseTrustedMessage); validateEvent is the full check. Throws what validateEvent throws.
 */
export function validateEventEnvelope(value: unknown): SessionEvent {
  const e = value as { sessionId?: unknown; seq?: unknown; ts?: unknown; type?: unknown; data?: unknown } | null;
  if (
    isPlainObject(e) &&
    typeof e.sessionId === 'string' &&
    e.sessionId.length > 0 &&
    e.sessionId.length <= 128 &&
    typeof e.seq === 'number' &&
    Number.isSafeInteger(e.seq) &&
    e.seq >= 1 &&
    typeof e.ts === 'number' &&
    Number.isSafeInteger(e.ts) &&
    e.ts >= 0 &&
    typeof e.type === 'string' &&
    isPlainObject(e.data)
  )
    return value as SessionEvent;
  // Not the common case: let the schema say what is wrong, in validateEvent's words.
  const problem = eventEnvelopeSchema.check(value, 'event') ?? 'event is not a valid event envelope';
  throw new AstraError('invalid_params', problem);
}
