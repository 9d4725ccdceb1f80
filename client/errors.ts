// The client's own error: a mutation whose answer was lost with the connection.
import { AstraError } from '../protocol/index.js';

/**
 * The connection dropped (or the daemon stopped answering) while a mutation was in flight, so
 * whether it took effect is unknown. The library never retries it: ask `client.mutationStatus(
 * sessionId, idempotencyKey)` (or read the session) and decide. Retrying `turn/start` with the same
 * `idempotencyKey` is always safe: the daemon returns the first result and starts nothing new.
 */
export class OutcomeUnknownError extends AstraError {
  readonly method: string;
  readonly sessionId: string | undefined;
  readonly idempotencyKey: string | undefined;

  constructor(method: string, opts: { sessionId?: string; idempotencyKey?: string; cause?: AstraError } = {}) {
    const how =
      opts.idempotencyKey !== undefined && opts.sessionId !== undefined
        ? `ask client.mutationStatus('${opts.sessionId}', '${opts.idempotencyKey}') to learn what happened, or retry with the same idempotencyKey`
        : 'read the affected state again (e.g. session/read) before retrying';
    const why = opts.cause ? ` (${opts.cause.reason}: ${opts.cause.message})` : '';
    super('outcome_unknown', `the connection to the daemon was lost while ${method} was in flight, so whether it took effect is unknown${why}; ${how}`, {
      method,
      ...(opts.sessionId !== undefined ? { sessionId: opts.sessionId } : {}),
      ...(opts.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}),
      ...(opts.cause ? { cause: opts.cause.reason } : {}),
    });
    this.name = 'OutcomeUnknownError';
    this.method = method;
    this.sessionId = opts.sessionId;
    this.idempotencyKey = opts.idempotencyKey;
  }
}
