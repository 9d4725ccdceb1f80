// AstraClient (DESIGN.md §8): connect-or-spawn, typed calls derived from the method table, event
// subscriptions, leases, approvals, liveness pings, and reconnect with resume.
import crypto from 'node:crypto';
import { setMaxListeners } from 'node:events';
import {
  AstraError,
  METHODS,
  METHOD_NAMES,
  PROTOCOL_VERSION,
  SERVER_NOTIFICATIONS,
  checkNotificationParams,
  checkRequestParams,
  checkServerRequestParams,
  isAstraError,
  isMethodName,
  validateEvent,
  type ErrorReason,
  type ResultOf,
  type ServerNotificationParams,
  type ServerParamsOf,
  type Decision,
  type SessionEvent,
} from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import { readRecord, resolvePaths, type DiscoveryRecord } from '../discovery/index.js';
import { connectOrSpawn, envFor, type Connected, type InitializeResult } from './connect.js';
import type { CallArgs, CallOptions, ClientMethodName, ClientParams, DerivedApi } from './api.js';
import { backoffDelay, resolveBackoff, sleep, type BackoffOptions } from './backoff.js';
import { OutcomeUnknownError } from './errors.js';
import { TypedEmitter } from './events.js';
import { ControllerLease, type LeaseState } from './lease.js';
import { Subscription, type SubscribeOptions } from './subscription.js';

export interface AstraClientOptions {
  /** Shown in `astra daemon status` and in lease holders. */
  clientName: string;
  clientVersion?: string;
  /** Start a daemon when none answers, at connect and on reconnect (default true). */
  autoStart?: boolean;
  /** Relocates everything, like ASTRA_HOME. */
  home?: string;
  /** The environment used to find (and start) the daemon; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Backoff for reconnecting after a dropped connection; `false` turns reconnecting off. */
  reconnect?: BackoffOptions | false;
  /** Per-call timeout, also the longest a call waits for a reconnect (default 30 s; 0 = none). */
  requestTimeoutMs?: number;
  /** Ping an idle connection this often (default 15 s; 0 = never). */
  pingIntervalMs?: number;
  /** A daemon that does not answer a ping within this is treated as gone (default 10 s). */
  pingTimeoutMs?: number;
  /** How long to wait for a daemon this client starts (default 15 s). */
  startTimeoutMs?: number;
  /** Extra arguments for a daemon this client starts (e.g. ['--idle-timeout', '30s']). */
  daemonArgs?: string[];
  /**
   * Replace a running daemon that speaks another protocol version, but only when it says it is idle
   * (no other client, no running turn); a busy one still fails with incompatible_protocol. Default false.
   */
  replaceIdleIncompatibleDaemon?: boolean;
  /** Notification methods the daemon should not send to this client. */
  optOutNotificationMethods?: string[];
}

export interface AcquireControllerOptions {
  /** Demote the current holder (it is told with lease/revoked). */
  takeover?: boolean;
  /** A resume token from an earlier grant (e.g. persisted before a crash): reclaims the lease within grace. */
  resumeToken?: string;
}

export type ApprovalRequest = ServerParamsOf<'approval/request'>;
export type ApprovalHandler = (request: ApprovalRequest) => Decision | { decision: Decision } | Promise<Decision | { decision: Decision }>;

export type ClientState = 'connected' | 'reconnecting' | 'closed';

export type LeaseHolderInfo = NonNullable<ServerNotificationParams<'lease/revoked'>['holder']>;

export interface ClientEvents {
  /** The connection dropped (not by close()); the client is reconnecting unless reconnect is off. */
  disconnected: { error: AstraError | undefined; daemonShuttingDown: boolean };
  /** Connected again, leases reclaimed and subscriptions resumed. */
  reconnected: { instanceId: string; connectionId: string; daemonPid: number; attempts: number; daemonRestarted: boolean };
  /** The new connection reached a different daemon instance (the old one crashed, stopped or was replaced). */
  daemonRestarted: { previousInstanceId: string; instanceId: string; daemonPid: number };
  /** Control of a session was lost: taken over, expired, or not reclaimable after a reconnect. */
  /** `holder` is who controls the session now, when the daemon said (after a takeover). */
  leaseLost: { sessionId: string; reason: string; lease: ControllerLease; error?: AstraError; holder?: LeaseHolderInfo };
  /** A lease was reclaimed after a reconnect; its resumeToken changed (persist the new one). */
  leaseReclaimed: { sessionId: string; lease: ControllerLease };
  /** Something went wrong outside any call: a bad frame from the daemon, or the client gave up reconnecting (then it is closed). */
  error: AstraError;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_PING_INTERVAL_MS = 15_000;
const DEFAULT_PING_TIMEOUT_MS = 10_000;
/** Attempts at an `overloaded` read before the error reaches the caller. */
const OVERLOAD_RETRIES = 8;
const OVERLOAD_BACKOFF = { initialDelayMs: 50, maxDelayMs: 2_000, maxElapsedMs: 30_000 };
/** Errors no amount of reconnecting fixes. */
const FATAL_CONNECT_REASONS: ReadonlySet<ErrorReason> = new Set(['incompatible_protocol', 'unsafe_runtime_dir', 'socket_path_too_long']);

function toAstraError(e: unknown): AstraError {
  if (e instanceof AstraError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return new AstraError('connection_closed', message, code ? { code } : {});
}

function describePolicy(method: ClientMethodName): { readOnly: boolean; hasEpoch: boolean; needsKey: boolean } {
  const spec = METHODS[method];
  const shape = (spec.params as { shape?: Record<string, unknown> }).shape ?? {};
  return {
    readOnly: spec.policy.idempotent && !spec.policy.mutates,
    hasEpoch: Object.prototype.hasOwnProperty.call(shape, 'epoch'),
    needsKey: spec.policy.idempotencyKey === 'required',
  };
}

// Typed members come from DerivedApi (see api.ts); the constructor defines them from METHOD_NAMES.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface AstraClient extends DerivedApi {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class AstraClient extends TypedEmitter<ClientEvents> {
  private readonly opts: AstraClientOptions;
  private readonly backoff: Required<BackoffOptions> | undefined;
  private readonly requestTimeoutMs: number;
  private readonly pingIntervalMs: number;
  private readonly pingTimeoutMs: number;

  private conn: Connection | undefined;
  private initResult!: InitializeResult;
  private currentState: ClientState = 'reconnecting';
  private failure: AstraError | undefined;
  private readonly subs = new Map<string, Subscription>();
  /** Held subscriptions: the session/unsubscribe that stopped each (see Subscription maxQueuedBytes). */
  private readonly holds = new Map<Subscription, Promise<void>>();
  private readonly leases = new Map<string, ControllerLease>();
  private approvalHandler: ApprovalHandler | undefined;
  private waiters: { resolve: (c: Connection) => void; reject: (e: AstraError) => void }[] = [];
  private readonly closeController = new AbortController();
  private pingTimer: NodeJS.Timeout | undefined;
  private pinging = false;
  private lastSentAt = 0;
  private lastReceivedAt = 0;
  private shuttingDownSeen = false;

  /** Connects to the running daemon (starting one unless autoStart is false) and performs the handshake. */
  static async connect(opts: AstraClientOptions): Promise<AstraClient> {
    const client = new AstraClient(opts);
    const connected = await client.open();
    client.adopt(connected);
    client.currentState = 'connected';
    if (connected.conn.closed) client.onConnectionLost(connected.conn, undefined);
    return client;
  }

  private constructor(opts: AstraClientOptions) {
    super();
    if (typeof opts?.clientName !== 'string' || opts.clientName.length === 0 || opts.clientName.length > 256)
      throw new AstraError('invalid_params', 'clientName must be a non-empty string of at most 256 characters');
    for (const k of ['requestTimeoutMs', 'pingIntervalMs', 'pingTimeoutMs', 'startTimeoutMs'] as const) {
      const v = opts[k];
      if (v !== undefined && (typeof v !== 'number' || Number.isNaN(v) || v < 0))
        throw new AstraError('invalid_params', `${k} must be a number of milliseconds ≥ 0, got ${String(v)}`);
    }
    this.opts = { ...opts };
    this.backoff = opts.reconnect === false ? undefined : resolveBackoff(opts.reconnect);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.pingIntervalMs = opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    this.pingTimeoutMs = opts.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS;
    // Every backoff sleep listens on this signal; many concurrent retries are normal, not a leak.
    setMaxListeners(0, this.closeController.signal);
    this.defineDerivedApi();
  }

  // ---- what the application reads ----

  get state(): ClientState {
    return this.currentState;
  }

  get connected(): boolean {
    return this.currentState === 'connected';
  }

  /** The handshake result of the current (or last) connection. */
  get serverInfo(): InitializeResult {
    return this.initResult;
  }

  get instanceId(): string {
    return this.initResult.instanceId;
  }

  get connectionId(): string {
    return this.initResult.connectionId;
  }

  get daemonPid(): number {
    return this.initResult.daemon.pid;
  }

  /** The leases this client holds, by session id. */
  get heldLeases(): ReadonlyMap<string, ControllerLease> {
    return this.leases;
  }

  // ---- calls ----

  /**
   * Calls any method of the protocol's method table, typed by it. `epoch` is filled in from the
   * lease this client holds for `params.sessionId`; a missing required `idempotencyKey` is generated.
   * Read-only calls are retried across a reconnect and on `overloaded`; a mutation in flight when
   * the connection drops rejects with OutcomeUnknownError and is never retried here.
   */
  async call<M extends ClientMethodName>(method: M, ...args: CallArgs<M>): Promise<ResultOf<M>> {
    const [params, callOpts = {}] = args as [ClientParams<M> | undefined, CallOptions | undefined];
    if (typeof method !== 'string' || !isMethodName(method) || (method as string) === 'initialize')
      throw new AstraError('method_not_found', `unknown method "${String(method)}"; see METHOD_NAMES for what the protocol offers`);
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params)))
      throw new AstraError('invalid_params', `${method}: params must be an object`);
    const policy = describePolicy(method);
    const base: Record<string, unknown> = { ...(params ?? {}) };
    if (policy.needsKey && (base.idempotencyKey === undefined || base.idempotencyKey === null)) base.idempotencyKey = crypto.randomUUID();
    const sessionId = typeof base.sessionId === 'string' ? base.sessionId : undefined;
    const idempotencyKey = typeof base.idempotencyKey === 'string' ? base.idempotencyKey : undefined;

    for (let overloadAttempt = 0; ; ) {
      const conn = await this.whenConnected(callOpts);
      // The epoch is read at send time: a reclaim after a reconnect bumps it.
      const sent = { ...base };
      if (policy.hasEpoch && (sent.epoch === undefined || sent.epoch === null)) sent.epoch = this.epochFor(method, sessionId);
      checkRequestParams(method, sent);
      const lease = method === 'lease/release' && sessionId !== undefined ? this.leases.get(sessionId) : undefined;
      let result: unknown;
      try {
        this.lastSentAt = Date.now();
        result = await conn.request(method, sent, callOpts);
        this.lastReceivedAt = Date.now();
      } catch (e) {
        const err = toAstraError(e);
        const dropped = err.reason === 'connection_closed' && (conn.closed || this.conn !== conn);
        if (dropped) {
          if (this.currentState === 'closed') throw this.closedError();
          if (policy.readOnly) continue;
          throw new OutcomeUnknownError(method, { ...(sessionId !== undefined ? { sessionId } : {}), ...(idempotencyKey !== undefined ? { idempotencyKey } : {}), cause: err });
        }
        if (err.reason === 'request_timeout' && !policy.readOnly)
          throw new OutcomeUnknownError(method, { ...(sessionId !== undefined ? { sessionId } : {}), ...(idempotencyKey !== undefined ? { idempotencyKey } : {}), cause: err });
        if (err.reason === 'overloaded' && policy.readOnly && overloadAttempt < OVERLOAD_RETRIES) {
          await sleep(backoffDelay(overloadAttempt++, OVERLOAD_BACKOFF), this.closeController.signal);
          continue;
        }
        if (lease && (err.reason === 'not_controller' || err.reason === 'stale_epoch')) this.dropLease(lease, err.reason, err, false);
        throw err;
      }
      const problem = METHODS[method].result.check(result, `${method} result`);
      if (problem) throw new AstraError('invalid_request', `the daemon answered ${method} with something unexpected: ${problem}`);
      this.afterCall(method, sent, result);
      return result as ResultOf<M>;
    }
  }

  /** What became of a mutation sent with an idempotency key (after an OutcomeUnknownError). */
  mutationStatus(sessionId: string, idempotencyKey: string, opts?: CallOptions): Promise<ResultOf<'mutation/status'>> {
    return this.call('mutation/status', { sessionId, idempotencyKey }, opts);
  }

  // ---- leases ----

  /**
   * Becomes the session's controller. The returned lease stays current across reconnects; persist
   * `lease.toJSON()` (its resumeToken) to reclaim control from a new process within the grace period.
   */
  async acquireController(sessionId: string, opts: AcquireControllerOptions = {}): Promise<ControllerLease> {
    const params: ClientParams<'lease/acquire'> = { sessionId };
    if (opts.takeover !== undefined) params.takeover = opts.takeover;
    if (opts.resumeToken !== undefined) params.resumeToken = opts.resumeToken;
    await this.call('lease/acquire', params);
    const lease = this.leases.get(sessionId);
    if (!lease) throw new AstraError('not_controller', `control of ${sessionId} was lost right after it was granted; try again`);
    return lease;
  }

  private async releaseLease(lease: ControllerLease): Promise<void> {
    if (this.leases.get(lease.sessionId) !== lease) return;
    lease.releasing = true;
    try {
      await this.call('lease/release', { sessionId: lease.sessionId, epoch: lease.epoch });
    } finally {
      lease.releasing = false;
    }
  }

  private epochFor(method: string, sessionId: string | undefined): number {
    const lease = sessionId !== undefined ? this.leases.get(sessionId) : undefined;
    if (!lease) {
      throw new AstraError(
        'not_controller',
        `${method} needs the controller lease of session ${sessionId ?? '(no sessionId given)'}; call client.acquireController(sessionId) first, or pass epoch`,
        sessionId !== undefined ? { sessionId } : {},
      );
    }
    return lease.epoch;
  }

  private afterCall(method: ClientMethodName, params: Record<string, unknown>, result: unknown): void {
    if (method === 'lease/acquire') {
      const r = result as ResultOf<'lease/acquire'>;
      const state: LeaseState = { sessionId: r.sessionId, epoch: r.epoch, resumeToken: r.resumeToken, graceMs: r.graceMs };
      const existing = this.leases.get(r.sessionId);
      if (existing) existing.update(state);
      else this.leases.set(r.sessionId, new ControllerLease(state, { releaseLease: (l) => this.releaseLease(l) }));
    } else if (method === 'lease/release') {
      const lease = this.leases.get(params.sessionId as string);
      if (lease && lease.epoch === params.epoch) {
        this.leases.delete(lease.sessionId);
        lease.markLost('released');
      }
    }
  }

  private dropLease(lease: ControllerLease, reason: string, error: AstraError | undefined, notify: boolean, holder?: LeaseHolderInfo): void {
    if (this.leases.get(lease.sessionId) !== lease) return;
    this.leases.delete(lease.sessionId);
    lease.markLost(reason);
    if (notify) this.emit('leaseLost', { sessionId: lease.sessionId, reason, lease, ...(error ? { error } : {}), ...(holder ? { holder } : {}) });
  }

  // ---- approvals ----

  /**
   * Answers the daemon's approval requests for sessions this client controls. Without a handler
   * (or when it throws) the daemon gets an error and the approval stays pending.
   * Returns a function that removes the handler.
   */
  onApproval(handler: ApprovalHandler): () => void {
    this.approvalHandler = handler;
    return () => {
      if (this.approvalHandler === handler) this.approvalHandler = undefined;
    };
  }

  private async answerServerRequest(method: string, params: unknown): Promise<unknown> {
    this.lastReceivedAt = Date.now();
    checkServerRequestParams(method, params);
    const handler = this.approvalHandler;
    if (!handler) {
      throw new AstraError('method_not_found', `client "${this.opts.clientName}" has no approval handler (client.onApproval); the approval stays pending`);
    }
    const answer = await handler(params as ApprovalRequest);
    const decision = typeof answer === 'string' ? answer : answer?.decision;
    if (decision !== 'approve' && decision !== 'deny')
      throw new AstraError('invalid_params', `the approval handler answered ${JSON.stringify(answer)}; it must return 'approve' or 'deny'`);
    return { decision };
  }

  // ---- subscriptions ----

  /**
   * Streams a session's events after `sinceSeq`: the backlog, then live. Resolves once the daemon
   * accepted the subscription. Iterate with `for await` (breaking out unsubscribes) or pass onEvent.
   * Across reconnects and lag the stream resumes from `lastSeq`: no gap, no duplicate.
   */
  async subscribe(sessionId: string, opts: SubscribeOptions = {}): Promise<Subscription> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new AstraError('invalid_params', 'subscribe: sessionId must be a non-empty string');
    if (opts.sinceSeq !== undefined && (!Number.isSafeInteger(opts.sinceSeq) || opts.sinceSeq < 0))
      throw new AstraError('invalid_params', `subscribe: sinceSeq must be an integer ≥ 0, got ${String(opts.sinceSeq)}`);
    if (opts.maxQueuedBytes !== undefined && !(typeof opts.maxQueuedBytes === 'number' && opts.maxQueuedBytes > 0))
      throw new AstraError('invalid_params', `subscribe: maxQueuedBytes must be a number > 0, got ${String(opts.maxQueuedBytes)}`);
    const existing = this.subs.get(sessionId);
    if (existing && !existing.closed)
      throw new AstraError('invalid_state', `this client is already subscribed to ${sessionId}; close that subscription first (or share it)`, { sessionId });
    const sub = new Subscription(
      sessionId,
      { unsubscribe: (s) => this.unsubscribe(s), hold: (s) => this.holdSubscription(s), resume: (s) => this.resubscribe(s) },
      opts,
    );
    // Registered before the request: the backlog may arrive before the answer.
    this.subs.set(sessionId, sub);
    try {
      for (let overloadAttempt = 0; ; ) {
        const conn = await this.whenConnected({});
        try {
          await this.sendSubscribe(conn, sub);
          return sub;
        } catch (e) {
          const err = toAstraError(e);
          if (err.reason === 'connection_closed' && (conn.closed || this.conn !== conn)) {
            if (this.currentState === 'closed') throw this.closedError();
            // The reconnect resubscribes every registered subscription before calls resume.
            await this.whenConnected({});
            return sub;
          }
          if (err.reason === 'overloaded' && overloadAttempt < OVERLOAD_RETRIES) {
            await sleep(backoffDelay(overloadAttempt++, OVERLOAD_BACKOFF), this.closeController.signal);
            continue;
          }
          throw err;
        }
      }
    } catch (e) {
      if (this.subs.get(sessionId) === sub) this.subs.delete(sessionId);
      sub.end(undefined);
      throw e;
    }
  }

  private async sendSubscribe(conn: Connection, sub: Subscription): Promise<void> {
    const result = (await conn.request('session/subscribe', { sessionId: sub.sessionId, sinceSeq: sub.lastSeq })) as ResultOf<'session/subscribe'>;
    this.lastReceivedAt = Date.now();
    const problem = METHODS['session/subscribe'].result.check(result, 'session/subscribe result');
    if (problem) throw new AstraError('invalid_request', `the daemon answered session/subscribe with something unexpected: ${problem}`);
    sub.headSeq = result.headSeq;
  }

  /** Stops a held subscription's stream at the daemon; resubscribe() waits for this before subscribing again. */
  private holdSubscription(sub: Subscription): void {
    const conn = this.conn;
    if (!conn || conn.closed || this.currentState !== 'connected') return; // a reconnect leaves held ones alone
    const stopped = conn.request('session/unsubscribe', { sessionId: sub.sessionId }).then(
      () => undefined,
      () => undefined,
    );
    this.holds.set(sub, stopped);
  }

  /** Subscribes again from lastSeq on the current connection (after lag or a hold); without one, the reconnect does it. */
  private resubscribe(sub: Subscription): void {
    const conn = this.conn;
    if (this.subs.get(sub.sessionId) !== sub || sub.held || !conn || conn.closed || this.currentState !== 'connected') return;
    const stopped = this.holds.get(sub);
    this.holds.delete(sub);
    void (async () => {
      // The unsubscribe that held it must be done first, or it could cancel this subscribe.
      if (stopped) await stopped;
      if (this.subs.get(sub.sessionId) !== sub || sub.held || conn !== this.conn) return;
      await this.sendSubscribe(conn, sub);
    })().catch((e: unknown) => {
      const err = toAstraError(e);
      if (err.reason === 'connection_closed') return; // the reconnect resubscribes
      if (this.subs.get(sub.sessionId) === sub) this.subs.delete(sub.sessionId);
      sub.end(err);
    });
  }

  private async unsubscribe(sub: Subscription): Promise<void> {
    this.holds.delete(sub);
    if (this.subs.get(sub.sessionId) !== sub) return;
    this.subs.delete(sub.sessionId);
    const conn = this.conn;
    if (!conn || conn.closed || this.currentState !== 'connected') return;
    try {
      await conn.request('session/unsubscribe', { sessionId: sub.sessionId });
    } catch {
      // The connection went away: its subscriptions went with it.
    }
  }

  // ---- notifications ----

  private onNotification(conn: Connection, method: string, params: unknown): void {
    this.lastReceivedAt = Date.now();
    if (!Object.prototype.hasOwnProperty.call(SERVER_NOTIFICATIONS, method)) return; // from a newer daemon
    try {
      if (method === 'session/event') {
        const event = validateEvent(params);
        this.subs.get(event.sessionId)?.deliver(event);
        return;
      }
      if (method === 'session/events') {
        // Validate the whole batch first: a malformed frame delivers nothing, as for session/event.
        const p = params as { sessionId?: unknown; events?: unknown };
        if (typeof p?.sessionId !== 'string' || !Array.isArray(p.events))
          throw new AstraError('invalid_params', 'session/events needs {sessionId: string, events: [event, ...]}');
        const events = p.events as unknown[];
        for (let i = 0; i < events.length; i++) {
          const event = validateEvent(events[i]);
          if (event.sessionId !== p.sessionId) throw new AstraError('invalid_params', `events[${i}] belongs to session ${event.sessionId}, not ${p.sessionId}`);
        }
        const sub = this.subs.get(p.sessionId);
        if (sub) for (let i = 0; i < events.length; i++) sub.deliver(events[i] as SessionEvent);
        return;
      }
      checkNotificationParams(method, params, 'toClient');
    } catch (e) {
      this.emit('error', new AstraError('invalid_request', `the daemon sent a malformed ${method}: ${toAstraError(e).message}`));
      return;
    }
    switch (method) {
      case 'session/replayed': {
        const p = params as ServerNotificationParams<'session/replayed'>;
        this.subs.get(p.sessionId)?.replayed(p.throughSeq);
        return;
      }
      case 'session/lagged': {
        // The daemon dropped this stream; pick it up again from what was really delivered.
        const p = params as ServerNotificationParams<'session/lagged'>;
        const sub = this.subs.get(p.sessionId);
        if (!sub) return;
        sub.lagCount++;
        if (conn === this.conn) this.resubscribe(sub);
        return;
      }
      case 'lease/revoked': {
        const p = params as ServerNotificationParams<'lease/revoked'>;
        const lease = this.leases.get(p.sessionId);
        if (!lease || lease.releasing) return;
        if (p.epoch !== undefined && p.epoch !== null && p.epoch < lease.epoch) return; // about an older grant
        this.dropLease(lease, p.reason, undefined, true, p.holder ?? undefined);
        return;
      }
      case 'daemon/shuttingDown':
        if (conn === this.conn) this.shuttingDownSeen = true;
        return;
    }
  }

  // ---- connection lifecycle ----

  private async open(): Promise<Connected> {
    const o = this.opts;
    try {
      return await connectOrSpawn({
        clientName: o.clientName,
        ...(o.clientVersion !== undefined ? { clientVersion: o.clientVersion } : {}),
        ...(o.autoStart !== undefined ? { autoStart: o.autoStart } : {}),
        ...(o.home !== undefined ? { home: o.home } : {}),
        ...(o.env !== undefined ? { env: o.env } : {}),
        ...(o.startTimeoutMs !== undefined ? { startTimeoutMs: o.startTimeoutMs } : {}),
        ...(o.daemonArgs !== undefined ? { daemonArgs: o.daemonArgs } : {}),
        ...(o.replaceIdleIncompatibleDaemon !== undefined ? { replaceIdleIncompatibleDaemon: o.replaceIdleIncompatibleDaemon } : {}),
        ...(o.optOutNotificationMethods !== undefined ? { optOutNotificationMethods: o.optOutNotificationMethods } : {}),
        requestTimeoutMs: this.requestTimeoutMs,
        batchEvents: true,
        onConnection: (conn) => this.wire(conn),
      });
    } catch (e) {
      if (isAstraError(e, 'incompatible_protocol')) throw this.incompatible(e);
      throw e;
    }
  }

  /** Names both versions and the fix, whatever the daemon's own message said. */
  private incompatible(e: AstraError): AstraError {
    let record: DiscoveryRecord | undefined;
    try {
      record = readRecord(resolvePaths(envFor(this.opts)).recordPath);
    } catch {
      record = undefined;
    }
    const supported = e.data.supported as { min?: unknown; max?: unknown } | undefined;
    const theirs =
      supported && typeof supported.min === 'number' && typeof supported.max === 'number'
        ? supported.min === supported.max
          ? `${supported.min}`
          : `${supported.min}-${supported.max}`
        : record
          ? `${record.protocolVersion}`
          : 'another version';
    const who = record ? `the running daemon (astra ${record.version}, pid ${record.pid})` : 'the running daemon';
    return new AstraError(
      'incompatible_protocol',
      `this client speaks Astra protocol ${PROTOCOL_VERSION} but ${who} speaks protocol ${theirs}; ` +
        'run `astra daemon restart` to replace it with a daemon of your version (the daemon said: ' + e.message + ')',
      { ...e.data, clientProtocolVersion: PROTOCOL_VERSION, daemonProtocolVersion: record?.protocolVersion ?? supported?.max },
    );
  }

  private wire(conn: Connection): void {
    conn.onNotification((method, params) => this.onNotification(conn, method, params));
    conn.onRequest((method, params) => this.answerServerRequest(method, params));
    conn.onClose((err) => this.onConnectionLost(conn, err));
  }

  private adopt(c: Connected): void {
    this.conn = c.conn;
    this.initResult = c.init;
    this.shuttingDownSeen = false;
    this.lastReceivedAt = this.lastSentAt = Date.now();
    this.startPing();
  }

  private onConnectionLost(conn: Connection, err: AstraError | undefined): void {
    if (conn !== this.conn) return;
    this.conn = undefined;
    this.stopPing();
    if (this.currentState !== 'connected') return; // closed, or the reconnect loop sees it
    this.emit('disconnected', { error: err, daemonShuttingDown: this.shuttingDownSeen });
    if (!this.backoff) {
      this.fail(new AstraError('connection_closed', `the connection to the daemon closed${err ? ` (${err.reason}: ${err.message})` : ''} and reconnect is off`));
      return;
    }
    this.currentState = 'reconnecting';
    void this.reconnectLoop(this.backoff);
  }

  private async reconnectLoop(cfg: Required<BackoffOptions>): Promise<void> {
    const started = Date.now();
    const previousInstanceId = this.initResult.instanceId;
    let lastError: AstraError | undefined;
    for (let attempt = 0; this.currentState === 'reconnecting'; attempt++) {
      const delay = backoffDelay(attempt, cfg);
      if (Date.now() + delay - started > cfg.maxElapsedMs) {
        this.fail(
          new AstraError(
            lastError?.reason ?? 'daemon_not_running',
            `could not reconnect to the Astra daemon within ${cfg.maxElapsedMs} ms (${attempt} attempts)` +
              (lastError ? `; last error: ${lastError.message}` : ''),
            { attempts: attempt },
          ),
        );
        return;
      }
      await sleep(delay, this.closeController.signal);
      if (this.currentState !== 'reconnecting') return;
      let c: Connected;
      try {
        c = await this.open();
      } catch (e) {
        lastError = toAstraError(e);
        if (FATAL_CONNECT_REASONS.has(lastError.reason)) {
          this.fail(lastError);
          return;
        }
        continue;
      }
      if (this.currentState !== 'reconnecting') {
        c.conn.close();
        return;
      }
      this.adopt(c);
      try {
        await this.restore(c.conn);
      } catch (e) {
        lastError = toAstraError(e);
        if (this.conn === c.conn) {
          this.conn = undefined;
          this.stopPing();
          c.conn.destroy();
        }
        continue;
      }
      if (this.conn !== c.conn || c.conn.closed) continue;
      this.currentState = 'connected';
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w.resolve(c.conn);
      const daemonRestarted = c.init.instanceId !== previousInstanceId;
      if (daemonRestarted) this.emit('daemonRestarted', { previousInstanceId, instanceId: c.init.instanceId, daemonPid: c.init.daemon.pid });
      this.emit('reconnected', {
        instanceId: c.init.instanceId,
        connectionId: c.init.connectionId,
        daemonPid: c.init.daemon.pid,
        attempts: attempt + 1,
        daemonRestarted,
      });
      return;
    }
  }

  /** Reclaims every held lease, then resumes every live subscription from its lastSeq. */
  private async restore(conn: Connection): Promise<void> {
    for (const lease of [...this.leases.values()]) {
      try {
        const r = (await conn.request('lease/acquire', { sessionId: lease.sessionId, resumeToken: lease.resumeToken })) as ResultOf<'lease/acquire'>;
        const problem = METHODS['lease/acquire'].result.check(r, 'lease/acquire result');
        if (problem) throw new AstraError('invalid_request', `the daemon answered lease/acquire with something unexpected: ${problem}`);
        lease.update({ sessionId: r.sessionId, epoch: r.epoch, resumeToken: r.resumeToken, graceMs: r.graceMs });
        this.emit('leaseReclaimed', { sessionId: lease.sessionId, lease });
      } catch (e) {
        const err = toAstraError(e);
        if (err.reason === 'connection_closed' || err.reason === 'request_timeout') throw err;
        this.dropLease(lease, err.reason, err, true);
      }
    }
    for (const sub of [...this.subs.values()]) {
      // A held one subscribes again when its loop catches up (on whatever connection is current then).
      if (sub.closed || sub.held) continue;
      try {
        await this.sendSubscribe(conn, sub);
      } catch (e) {
        const err = toAstraError(e);
        if (err.reason === 'connection_closed' || err.reason === 'request_timeout' || err.reason === 'overloaded') throw err;
        if (this.subs.get(sub.sessionId) === sub) this.subs.delete(sub.sessionId);
        sub.end(err);
      }
    }
  }

  private whenConnected(opts: CallOptions): Promise<Connection> {
    if (this.currentState === 'closed') return Promise.reject(this.closedError());
    if (this.currentState === 'connected' && this.conn && !this.conn.closed) return Promise.resolve(this.conn);
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    return new Promise<Connection>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = {
        resolve: (c: Connection) => {
          if (timer) clearTimeout(timer);
          resolve(c);
        },
        reject: (e: AstraError) => {
          if (timer) clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(waiter);
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          reject(new AstraError('connection_closed', `not connected to the Astra daemon: still reconnecting after ${timeoutMs} ms; try again later`));
        }, timeoutMs);
      }
    });
  }

  private closedError(): AstraError {
    if (this.failure) return this.failure;
    return new AstraError('connection_closed', 'this AstraClient is closed; connect again with AstraClient.connect()');
  }

  /** Gives up: the client is closed with `err`, which every waiting call and stream receives. */
  private fail(err: AstraError): void {
    if (this.currentState === 'closed') return;
    this.failure = err;
    this.shutdownLocally(err);
    this.emit('error', err);
  }

  private shutdownLocally(err: AstraError | undefined): void {
    this.currentState = 'closed';
    this.closeController.abort();
    this.stopPing();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(this.closedError());
    const subs = [...this.subs.values()];
    this.subs.clear();
    this.holds.clear();
    for (const sub of subs) sub.end(err);
  }

  /**
   * Closes the connection. Held leases are not released (a disconnect starts their grace period,
   * so this or another process can reclaim them) unless `releaseLeases` is set.
   */
  async close(opts: { releaseLeases?: boolean; releaseTimeoutMs?: number } = {}): Promise<void> {
    if (this.currentState === 'closed') return;
    if (opts.releaseLeases && this.leases.size > 0) {
      // Mid-reconnect, wait a little for the daemon: a lease left in grace would, by default,
      // have its running turn cancelled when the grace ends.
      const connected = await this.whenConnected({ timeoutMs: opts.releaseTimeoutMs ?? 5_000 }).then(
        () => true,
        () => false,
      );
      if (connected) await Promise.all([...this.leases.values()].map((l) => l.release().catch(() => undefined)));
      else this.emit('error', new AstraError('connection_closed', 'closed without releasing control: the daemon could not be reached; the lease stays in its grace period'));
    }
    const conn = this.conn;
    this.shutdownLocally(undefined);
    this.conn = undefined;
    if (conn && !conn.closed) {
      await new Promise<void>((resolve) => {
        conn.onClose(() => resolve());
        conn.close();
      });
    }
  }

  /**
   * Drops the current connection as if the daemon had gone away, so an application can exercise its
   * reconnect handling (the client reconnects as usual). No effect unless connected.
   */
  simulateDisconnect(): void {
    if (this.currentState === 'connected') this.conn?.destroy(new AstraError('connection_closed', 'disconnect simulated by the application'));
  }

  // ---- liveness (DESIGN.md §7) ----

  private startPing(): void {
    this.stopPing();
    if (this.pingIntervalMs <= 0) return;
    this.pingTimer = setInterval(() => this.pingIfIdle(), this.pingIntervalMs);
    // Pings alone must not keep the host process alive.
    this.pingTimer.unref();
  }

  private stopPing(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  private pingIfIdle(): void {
    const conn = this.conn;
    if (!conn || conn.closed || this.pinging) return;
    const now = Date.now();
    // Ping when nothing arrived lately (is the daemon hung?) or nothing was sent (the daemon closes silent connections).
    if (now - this.lastReceivedAt < this.pingIntervalMs && now - this.lastSentAt < this.pingIntervalMs) return;
    this.pinging = true;
    this.lastSentAt = now;
    conn.request('ping', {}, { timeoutMs: this.pingTimeoutMs }).then(
      () => {
        this.pinging = false;
        this.lastReceivedAt = Date.now();
      },
      (e: unknown) => {
        this.pinging = false;
        if (isAstraError(e, 'request_timeout') && this.conn === conn) {
          conn.destroy(new AstraError('request_timeout', `the daemon did not answer a ping within ${this.pingTimeoutMs} ms; treating it as gone`));
        }
      },
    );
  }

  // ---- the derived API ----

  private defineDerivedApi(): void {
    const namespaces = new Map<string, Record<string, unknown>>();
    for (const name of METHOD_NAMES) {
      if (name === 'initialize') continue;
      const method = name as ClientMethodName;
      const fn = (params?: unknown, opts?: CallOptions) =>
        (this.call as (m: ClientMethodName, p?: unknown, o?: CallOptions) => Promise<unknown>)(method, params, opts);
      const slash = method.indexOf('/');
      if (slash < 0) {
        this.defineMember(method, fn);
        continue;
      }
      const ns = method.slice(0, slash);
      let table = namespaces.get(ns);
      if (!table) namespaces.set(ns, (table = {}));
      table[method.slice(slash + 1)] = fn;
    }
    for (const [ns, table] of namespaces) this.defineMember(ns, Object.freeze(table));
  }

  private defineMember(name: string, value: unknown): void {
    if (name in this)
      throw new AstraError('internal_error', `the method table's "${name}" clashes with an AstraClient member; rename one of them`);
    Object.defineProperty(this, name, { value, enumerable: true, writable: false, configurable: false });
  }
}
