// The client's own errors: a mutation whose answer was lost with the connection; a subscription the daemon ended.
import { AstraError } from '../protocol/index.js';

/**
 * The connection dropped (or the daemon stopped answering) while a mutation was in flight, so
 * whether it took effect is unknown. The library never retries it: ask `client.mutationStatus(
 * sessionId, idempotencyKey)` (`undefined` as the session id for a session/create key), or read the
 * session, and decide. Retrying `turn/start` or `session/create` with the same `idempotencyKey` is
 * always safe: the daemon returns the first result and starts nothing new. `client.startTurn` does
 * all of this for a turn.
 */
export class OutcomeUnknownError extends AstraError {
  readonly method: string;
  readonly sessionId: string | undefined;
  readonly idempotencyKey: string | undefined;

  constructor(method: string, opts: { sessionId?: string; idempotencyKey?: string; cause?: AstraError } = {}) {
    const how =
      opts.idempotencyKey === undefined
        ? 'read the affected state again (e.g. session/read) before retrying'
        : opts.sessionId !== undefined
          ? `ask client.mutationStatus('${opts.sessionId}', '${opts.idempotencyKey}') to learn what happened, or retry with the same idempotencyKey`
          : `ask client.mutationStatus(undefined, '${opts.idempotencyKey}') to learn what happened (a ${method} key needs no session id), or retry with the same idempotencyKey`;
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

/**
 * The daemon ended a subscription with `session/closed`: the session was deleted (`closeReason:
 * 'deleted'`), archived (`'archived'`), or another reason a newer daemon names; or with
 * `session/invalidated` (`closeReason: 'journal_damage'`, with `resyncFrom`: subscribe again from
 * there; the events between the subscription's lastSeq and it could not be read). The
 * subscription's `for await` loop throws it after the events that came before, and `onEnd` gets it.
 */
export class SubscriptionClosedError extends AstraError {
  readonly sessionId: string;
  readonly closeReason: string;
  readonly resyncFrom: number | undefined;

  constructor(sessionId: string, closeReason: string, resyncFrom?: number) {
    const why = closeReason === 'deleted' || closeReason === 'archived' ? `the session was ${closeReason}` : closeReason;
    const resync = resyncFrom !== undefined ? `; subscribe again from seq ${resyncFrom}` : '';
    super('subscription_closed', `the daemon ended the subscription to session ${sessionId}: ${why}${resync}`, {
      sessionId,
      closeReason,
      ...(resyncFrom !== undefined ? { resyncFrom } : {}),
    });
    this.name = 'SubscriptionClosedError';
    this.sessionId = sessionId;
    this.closeReason = closeReason;
    this.resyncFrom = resyncFrom;
  }
}
