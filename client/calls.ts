// Calls (docs/client.md): the one retry policy of the client. A read-only call is retried across a
// reconnect and, with backoff, on `overloaded`; a mutation whose answer is lost (the connection
// dropped, or no answer in time) becomes OutcomeUnknownError and is never retried blindly. The safe
// turn start — the one place a lost answer is resolved by asking mutation/status — lives here too.
import crypto from 'node:crypto';
import { AstraError, METHODS, checkRequestParams, isMethodName, type ResultOf } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import type { CallOptions, ClientMethodName, ClientParams } from './api.js';
import { backoffDelay, sleep } from './backoff.js';
import { OutcomeUnknownError } from './errors.js';
import type { LeaseBook } from './leases.js';
import { checkResult, toAstraError } from './results.js';


/** Attempts at an `overloaded` read before the error reaches the caller. */
const OVERLOAD_RETRIES = 8;
const OVERLOAD_BACKOFF = { initialDelayMs: 50, maxDelayMs: 2_000, maxElapsedMs: 30_000 };
/** How long startTurn keeps asking about a turn/start the daemon is still working on. */
const IN_PROGRESS_BACKOFF = { initialDelayMs: 20, maxDelayMs: 500, maxElapsedMs: 10_000 };
/** Re-sends of one turn/start key after answers lost again and again, before giving up. */
const TURN_START_RESENDS = 3;

export interface MethodPolicy {
  /** Safe to send again after a lost answer. */
  readOnly: boolean;
  /** The params carry the caller's lease epoch (Policy.epoch). */
  hasEpoch: boolean;
  /** METADATA (Policy.epoch 'optional'): the epoch is filled in only while this client holds the lease. */
  optionalEpoch: boolean;
  /** The method takes an idempotency key (required or optional): the client generates one when missing. */
  takesKey: boolean;
}

const POLICIES = new Map<string, MethodPolicy>();

/** A method's policy, as the client reads it (made once per method: every call asks). */
export function describePolicy(method: ClientMethodName): MethodPolicy {
  let p = POLICIES.get(method);
  if (!p) {
    const { policy } = METHODS[method];
    p = Object.freeze({ readOnly: policy.idempotent && !policy.mutates, hasEpoch: policy.epoch === true, optionalEpoch: policy.epoch === 'optional', takesKey: policy.idempotencyKey !== undefined });
    POLICIES.set(method, p);
  }
  return p;
}

const NO_OPTIONS: CallOptions = Object.freeze({});


/** What a call is, for the retry policy and for the OutcomeUnknownError it may become. */
export interface CallIdentity {
  method: ClientMethodName;
  readOnly: boolean;
  sessionId?: string | undefined;
  idempotencyKey?: string | undefined;
}

/** What the calls need from the client: the connection, its liveness clock, and its leases. */
export interface CallHost {
  /** The current connection when the client is connected, without waiting. */
  liveConnection(): Connection | undefined;
  /** The current connection, waiting (up to opts.timeoutMs) through a reconnect. */
  whenConnected(opts: CallOptions): Promise<Connection>;
  /** Whether `conn` is still the client's live connection (a drop makes it not). */
  isCurrent(conn: Connection): boolean;
  /** The error calls get once the client is closed, or undefined while it is not. */
  closedError(): AstraError | undefined;
  /** Aborts backoff sleeps when the client closes. */
  readonly signal: AbortSignal;
  noteSent(): void;
  noteReceived(): void;
  readonly leases: LeaseBook;
}

export interface StartTurnOptions extends CallOptions {
  /** The key the turn is started with (default: a fresh UUID). Persist it to resolve a doubt later. */
  idempotencyKey?: string;
  /** An explicit lease epoch instead of the held lease's. */
  epoch?: number;
  /** The terminal size the session's commands get from this turn on (the controller's terminal). */
  terminal?: { cols: number; rows: number };
  /** The turn is this connection's: cancelled after the lease grace if the connection drops (turn/start cancelOnDisconnect). */
  cancelOnDisconnect?: boolean;
}

export class Calls {
  constructor(private readonly host: CallHost) {}

  /**
   * Sends through the retry policy: `send` runs on the current connection; a lost answer is retried
   * (read-only: on the next connection, or `onDroppedRead` decides) or becomes OutcomeUnknownError.
   */
  run<T>(what: CallIdentity, callOpts: CallOptions, send: (conn: Connection) => Promise<T>, onDroppedRead?: () => Promise<T>): Promise<T> {
    return this.attempt(what, callOpts, send, undefined, onDroppedRead, 0);
  }

  /**
   * One attempt: on the live connection at once (no extra promise when connected: this is the hot
   * path of a busy client), else once a reconnect gives one. `received` maps the answer; a failure
   * goes to the policy (settle), which may make another attempt.
   */
  private attempt<T>(
    what: CallIdentity,
    callOpts: CallOptions,
    send: (conn: Connection) => Promise<unknown>,
    received: ((answer: unknown) => T) | undefined,
    onDroppedRead: (() => Promise<T>) | undefined,
    overloads: number,
  ): Promise<T> {
    const conn = this.host.liveConnection();
    if (!conn) return this.host.whenConnected(callOpts).then((c) => this.attemptOn(c, what, callOpts, send, received, onDroppedRead, overloads));
    return this.attemptOn(conn, what, callOpts, send, received, onDroppedRead, overloads);
  }

  private attemptOn<T>(
    conn: Connection,
    what: CallIdentity,
    callOpts: CallOptions,
    send: (conn: Connection) => Promise<unknown>,
    received: ((answer: unknown) => T) | undefined,
    onDroppedRead: (() => Promise<T>) | undefined,
    overloads: number,
  ): Promise<T> {
    const failed = (e: unknown): Promise<T> => this.settle(conn, e, what, callOpts, send, received, onDroppedRead, overloads);
    let sent: Promise<unknown>;
    try {
      sent = send(conn);
    } catch (e) {
      return failed(e);
    }
    return (received ? sent.then(received, failed) : sent.then(undefined, failed)) as Promise<T>;
  }

  /** The retry policy: what a failed attempt on `conn` becomes — another attempt, or an error. */
  private async settle<T>(
    conn: Connection,
    e: unknown,
    what: CallIdentity,
    callOpts: CallOptions,
    send: (conn: Connection) => Promise<unknown>,
    received: ((answer: unknown) => T) | undefined,
    onDroppedRead: (() => Promise<T>) | undefined,
    overloads: number,
  ): Promise<T> {
    const err = toAstraError(e);
    if (err.reason === 'connection_closed' && !this.host.isCurrent(conn)) {
      const closed = this.host.closedError();
      if (closed) throw closed;
      if (!what.readOnly) throw outcomeUnknown(what, err);
      if (onDroppedRead) return onDroppedRead();
      return this.attempt(what, callOpts, send, received, onDroppedRead, overloads);
    }
    if (err.reason === 'request_timeout' && !what.readOnly) throw outcomeUnknown(what, err);
    if (err.reason === 'overloaded' && what.readOnly && overloads < OVERLOAD_RETRIES) {
      await sleep(backoffDelay(overloads, OVERLOAD_BACKOFF), this.host.signal);
      return this.attempt(what, callOpts, send, received, onDroppedRead, overloads + 1);
    }
    throw err;
  }

  /**
   * Any method of the table: `epoch` is filled in from the held lease at send time (a reclaim after
   * a reconnect bumps it), a missing idempotency key is generated, and the result is checked.
   */
  call<M extends ClientMethodName>(method: M, params: ClientParams<M> | undefined, callOpts: CallOptions = NO_OPTIONS): Promise<ResultOf<M>> {
    if (typeof method !== 'string' || !isMethodName(method) || (method as string) === 'initialize')
      return Promise.reject(new AstraError('method_not_found', `unknown method "${String(method)}"; see METHOD_NAMES for what the protocol offers`));
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params)))
      return Promise.reject(new AstraError('invalid_params', `${method}: params must be an object`));
    const policy = describePolicy(method);
    const base: Record<string, unknown> = { ...(params ?? {}) };
    if (policy.takesKey && (base.idempotencyKey === undefined || base.idempotencyKey === null)) base.idempotencyKey = crypto.randomUUID();
    const sessionId = typeof base.sessionId === 'string' ? base.sessionId : undefined;
    const idempotencyKey = typeof base.idempotencyKey === 'string' ? base.idempotencyKey : undefined;
    const leases = this.host.leases;
    const host = this.host;
    // What the current attempt sent (attempts of one call never overlap): the epoch is read at send time.
    let sent = base;
    const send = (conn: Connection): Promise<unknown> => {
      if (policy.hasEpoch) {
        sent = { ...base };
        if (sent.epoch === undefined || sent.epoch === null) sent.epoch = leases.epochFor(method, sessionId);
      } else if (policy.optionalEpoch && (base.epoch === undefined || base.epoch === null)) {
        // A controller's metadata call is fenced by its epoch; anyone else's goes without one.
        const lease = sessionId !== undefined ? leases.get(sessionId) : undefined;
        sent = lease ? { ...base, epoch: lease.epoch } : base;
      }
      checkRequestParams(method, sent);
      host.noteSent();
      return conn.request(method, sent, callOpts);
    };
    const received = (raw: unknown): ResultOf<M> => {
      host.noteReceived();
      const result = checkResult(method, raw);
      leases.afterCall(method, sent, result);
      return result;
    };
    const what = { method, readOnly: policy.readOnly, sessionId, idempotencyKey };
    const answered = this.attempt(what, callOpts, send, received, undefined, 0);
    if (method !== 'lease/release') return answered;
    return answered.catch((e: unknown) => {
      if (e instanceof AstraError) leases.refused(method, sessionId, e);
      throw e;
    });
  }

  /** What became of a keyed mutation; `sessionId` is left out for a session/create key. */
  mutationStatus(sessionId: string | undefined, idempotencyKey: string, opts?: CallOptions): Promise<ResultOf<'mutation/status'>> {
    return this.call('mutation/status', { ...(sessionId !== undefined ? { sessionId } : {}), idempotencyKey }, opts);
  }

  /**
   * Starts a turn at most once. When the answer is lost (OutcomeUnknownError) it asks mutation/status:
   * 'done' gives the turn that started, 'in_progress' is asked again, and only 'unknown' (the daemon
   * never saw the key) re-sends turn/start with the same key — which the daemon would answer with the
   * first result anyway, so no path can start a second turn.
   */
  async startTurn(sessionId: string, text: string, opts: StartTurnOptions = {}): Promise<ResultOf<'turn/start'>> {
    const { idempotencyKey = crypto.randomUUID(), epoch, terminal, cancelOnDisconnect, ...callOpts } = opts;
    const params: ClientParams<'turn/start'> = {
      sessionId,
      input: { text },
      idempotencyKey,
      ...(epoch !== undefined ? { epoch } : {}),
      ...(terminal !== undefined ? { terminal } : {}),
      ...(cancelOnDisconnect === true ? { cancelOnDisconnect } : {}),
    };
    for (let sent = 0; ; sent++) {
      try {
        return await this.call('turn/start', params, callOpts);
      } catch (e) {
        if (!(e instanceof OutcomeUnknownError) || sent >= TURN_START_RESENDS) throw e;
        const found = await this.settledTurnStart(sessionId, idempotencyKey, e, callOpts);
        if (found) return found;
      }
    }
  }

  /** The turn/start result once mutation/status knows it; undefined when the daemon never saw the key. */
  private async settledTurnStart(
    sessionId: string,
    idempotencyKey: string,
    doubt: OutcomeUnknownError,
    callOpts: CallOptions,
  ): Promise<ResultOf<'turn/start'> | undefined> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const st = await this.mutationStatus(sessionId, idempotencyKey, callOpts);
      if (st.state === 'unknown') return undefined;
      if (st.state === 'done') return checkResult('turn/start', st.result);
      const delay = backoffDelay(attempt, IN_PROGRESS_BACKOFF);
      if (Date.now() + delay - started > IN_PROGRESS_BACKOFF.maxElapsedMs) throw doubt;
      await sleep(delay, this.host.signal);
      const closed = this.host.closedError();
      if (closed) throw closed;
    }
  }
}

function outcomeUnknown(what: CallIdentity, cause: AstraError): OutcomeUnknownError {
  return new OutcomeUnknownError(what.method, {
    ...(what.sessionId !== undefined ? { sessionId: what.sessionId } : {}),
    ...(what.idempotencyKey !== undefined ? { idempotencyKey: what.idempotencyKey } : {}),
    cause,
  });
}
