// AstraClient (docs/client.md): the face the application sees. It owns the connection and the
// client's state, and composes the rooms that do the work: calls.ts (the retry policy and the safe
// turn start), leases.ts, subscriptions.ts, notifications.ts, reconnect.ts and liveness.ts.
import { setMaxListeners } from 'node:events';
import { AstraError, isAstraError, validateEvent, validateEventEnvelope, type ResultOf } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import { connectOrSpawn, envFor, explainIncompatible, type Connected, type InitializeResult, type ValidateMode } from './connect.js';
import type { CallArgs, CallOptions, ClientMethodName, ClientParams, DerivedApi } from './api.js';
import { DEFAULT_BACKOFF, resolveBackoff, type BackoffOptions } from './backoff.js';
import { Calls, type CallHost, type StartTurnOptions } from './calls.js';
import { defineDerivedApi } from './derived-api.js';
import { TypedEmitter } from './events.js';
import type { ControllerLease } from './lease.js';
import { LeaseBook } from './leases.js';
import { Liveness } from './liveness.js';
import { routeNotification, type NotificationTargets } from './notifications.js';
import { reconnect, Waiters, type ReconnectHost } from './reconnect.js';
import type { Subscription, SubscribeOptions } from './subscription.js';
import { Subscriptions } from './subscriptions.js';
import { checkClientOptions, connectOptionsOf, DEFAULT_PING_INTERVAL_MS, DEFAULT_PING_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, type AcquireControllerOptions, type ApprovalHandler, type AstraClientOptions, type ClientEvents, type ClientState } from './options.js';
import { ApprovalAnswers } from './approvals.js';

export type { LeaseHolderInfo } from './leases.js';
export type { AstraClientOptions, AcquireControllerOptions, ApprovalRequest, ApprovalHandler, ClientState, ClientEvents } from './options.js';

// Typed members come from DerivedApi (see api.ts); the constructor defines them from METHOD_NAMES.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface AstraClient extends DerivedApi {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class AstraClient extends TypedEmitter<ClientEvents> {
  private readonly opts: AstraClientOptions;
  private readonly backoff: Required<BackoffOptions> | undefined;
  private readonly requestTimeoutMs: number;
  private readonly validate: ValidateMode;

  private conn: Connection | undefined;
  private initResult!: InitializeResult;
  private currentState: ClientState = 'reconnecting';
  private failure: AstraError | undefined;
  /** What daemon/shuttingDown said on the current connection. */
  private shutdown: { reason: string; message: string | undefined } | undefined;
  /** Set by resume(): start a daemon even when autoStart is false. */
  private startRequested = false;
  private readonly approvals: ApprovalAnswers;
  /** Calls waiting for a connection while the client reconnects. */
  private readonly waiters = new Waiters();
  private readonly closeController = new AbortController();
  private readonly leases: LeaseBook;
  private readonly calls: Calls;
  private readonly subs: Subscriptions;
  private readonly liveness: Liveness;

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
    checkClientOptions(opts);
    this.opts = { ...opts };
    this.approvals = new ApprovalAnswers(opts.clientName);
    this.backoff = opts.reconnect === false ? undefined : resolveBackoff(opts.reconnect);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.validate = opts.validate ?? ((opts.env ?? process.env).ASTRA_CLIENT_VALIDATE === 'full' ? 'full' : 'envelope');
    // Every backoff sleep listens on this signal; many concurrent retries are normal, not a leak.
    setMaxListeners(0, this.closeController.signal);
    this.liveness = new Liveness(opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS, opts.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS, () => this.conn);
    this.leases = new LeaseBook({
      sendRelease: (params) => this.call('lease/release', params),
      lost: (event) => this.emit('leaseLost', event),
      reclaimed: (lease) => this.emit('leaseReclaimed', { sessionId: lease.sessionId, lease }),
    });
    const host: CallHost = {
      liveConnection: () => this.liveConnection(),
      whenConnected: (o) => this.whenConnected(o),
      isCurrent: (conn) => this.isCurrent(conn),
      closedError: () => (this.currentState === 'closed' ? this.closedError() : undefined),
      signal: this.closeController.signal,
      noteSent: () => this.liveness.noteSent(),
      noteReceived: () => this.liveness.noteReceived(),
      leases: this.leases,
    };
    this.calls = new Calls(host);
    this.subs = new Subscriptions(
      {
        liveConnection: () => this.liveConnection(),
        whenConnected: () => this.whenConnected({}),
        noteReceived: () => this.liveness.noteReceived(),
        resynced: (event) => this.emit('resynced', event),
      },
      this.calls,
    );
    // Through this.call, looked up at each call: an application may wrap or replace it.
    defineDerivedApi(this, (method, params, opts) => (this.call as (m: ClientMethodName, p?: unknown, o?: CallOptions) => Promise<unknown>)(method, params, opts));
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
    return this.leases.held;
  }

  // ---- calls ----

  /**
   * Calls any method of the protocol's method table, typed by it. `epoch` is filled in from the
   * lease this client holds for `params.sessionId`; a missing `idempotencyKey` is generated.
   * Read-only calls are retried across a reconnect and on `overloaded`; a mutation in flight when
   * the connection drops rejects with OutcomeUnknownError and is never retried here.
   */
  call<M extends ClientMethodName>(method: M, ...args: CallArgs<M>): Promise<ResultOf<M>> {
    const [params, callOpts] = args as [ClientParams<M> | undefined, CallOptions | undefined];
    return this.calls.call(method, params, callOpts);
  }

  /**
   * What became of a mutation sent with an idempotency key (after an OutcomeUnknownError). For a
   * session/create key pass `undefined` as the session id.
   */
  mutationStatus(sessionId: string | undefined, idempotencyKey: string, opts?: CallOptions): Promise<ResultOf<'mutation/status'>> {
    return this.calls.mutationStatus(sessionId, idempotencyKey, opts);
  }

  /**
   * Starts a turn exactly once, even when the connection drops mid-call: an unknown outcome is
   * resolved with mutation/status, and turn/start is re-sent (same key) only if the daemon never saw it.
   */
  startTurn(sessionId: string, text: string, opts?: StartTurnOptions): Promise<ResultOf<'turn/start'>> {
    return this.calls.startTurn(sessionId, text, opts);
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

  // ---- approvals ----

  /**
   * Answers the daemon's approval requests for sessions this client controls. Without a handler
   * (or when it throws) the daemon gets an error and the approval stays pending.
   * Returns a function that removes the handler.
   */
  onApproval(handler: ApprovalHandler): () => void {
    return this.approvals.set(handler);
  }

  // ---- subscriptions ----

  /**
   * Streams a session's events after `sinceSeq`: the backlog, then live. Resolves once the daemon
   * accepted the subscription. Iterate with `for await` (breaking out unsubscribes) or pass onEvent.
   * Across reconnects and lag the stream resumes from `lastSeq`: no gap, no duplicate.
   */
  subscribe(sessionId: string, opts: SubscribeOptions = {}): Promise<Subscription> {
    return this.subs.subscribe(sessionId, opts);
  }

  // ---- connection lifecycle ----

  private async open(): Promise<Connected> {
    try {
      return await connectOrSpawn({
        ...connectOptionsOf(this.opts, this.startRequested),
        requestTimeoutMs: this.requestTimeoutMs,
        validate: this.validate,
        batchEvents: true,
        onConnection: (conn) => this.wire(conn),
      });
    } catch (e) {
      if (isAstraError(e, 'incompatible_protocol')) throw explainIncompatible(e, envFor(this.opts));
      throw e;
    }
  }

  private wire(conn: Connection): void {
    // One set of targets per connection, not per notification: this is the path of every event.
    const client = this;
    const targets: NotificationTargets = {
      subs: this.subs,
      leases: this.leases,
      get current() {
        return conn === client.conn;
      },
      // The connection trusts its daemon's shapes once the handshake agreed (see connect.ts).
      validateEvent: (value) => (conn.shapesTrusted ? validateEventEnvelope(value) : validateEvent(value)),
      shuttingDown: (reason, message) => (this.shutdown = { reason, message }),
      approvalResolved: (p) => this.emit('approvalResolved', p),
      notice: (n) => this.emit('notice', { sessionId: n.sessionId, reason: n.reason, message: n.message, ...(n.path != null ? { path: n.path } : {}) }),
      malformed: (err) => this.emit('error', err),
    };
    conn.onNotification((method, params) => {
      this.liveness.noteReceived();
      routeNotification(targets, method, params);
    });
    conn.onRequest((method, params) => {
      this.liveness.noteReceived();
      return this.approvals.answer(method, params);
    });
    conn.onClose((err) => this.onConnectionLost(conn, err));
  }

  private adopt(c: Connected): void {
    this.conn = c.conn;
    this.initResult = c.init;
    this.shutdown = undefined;
    this.liveness.start();
  }

  private liveConnection(): Connection | undefined {
    return this.currentState === 'connected' && this.conn && !this.conn.closed ? this.conn : undefined;
  }

  private isCurrent(conn: Connection): boolean {
    return this.conn === conn && !conn.closed;
  }

  private onConnectionLost(conn: Connection, err: AstraError | undefined): void {
    if (conn !== this.conn) return;
    this.conn = undefined;
    this.liveness.stop();
    if (this.currentState !== 'connected') return; // closed, or the reconnect loop sees it
    const shutdown = this.shutdown;
    if (shutdown?.reason === 'stopped') {
      this.enterStopped(shutdown.message);
      return;
    }
    this.emit('disconnected', { error: err, daemonShuttingDown: shutdown !== undefined, ...(shutdown ? { shutdownReason: shutdown.reason } : {}) });
    if (!this.backoff) {
      this.fail(new AstraError('connection_closed', `the connection to the daemon closed${err ? ` (${err.reason}: ${err.message})` : ''} and reconnect is off`));
      return;
    }
    this.startReconnect(this.backoff);
  }

  /** A deliberate stop stays a stop: calls fail at once, and nothing is respawned until resume(). */
  private enterStopped(said: string | undefined): void {
    this.currentState = 'stopped';
    this.waiters.rejectAll(this.stoppedError());
    this.emit('stopped', { message: said ?? 'the daemon was stopped (astra daemon stop)' });
  }

  private stoppedError(): AstraError {
    return new AstraError('daemon_not_running', 'the daemon was stopped on purpose (astra daemon stop); call client.resume() to start it again and reattach');
  }

  /**
   * After a deliberate stop (state 'stopped'): starts a daemon (even with autoStart false) and
   * restores leases and subscriptions as a reconnect does. Resolves once connected; rejects if the
   * client gives up (it is then closed). Connected already: resolves at once.
   */
  async resume(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.currentState === 'closed') throw this.closedError();
    if (this.currentState === 'stopped') {
      this.startRequested = true;
      this.startReconnect(this.backoff ?? DEFAULT_BACKOFF);
    }
    await this.whenConnected({ timeoutMs: opts.timeoutMs ?? 0 });
  }

  private startReconnect(cfg: Required<BackoffOptions>): void {
    this.currentState = 'reconnecting';
    const previousInstanceId = this.initResult.instanceId;
    const host: ReconnectHost = {
      reconnecting: () => this.currentState === 'reconnecting',
      open: () => this.open(),
      adopt: (c) => this.adopt(c),
      restore: async (conn) => {
        await this.leases.restore(conn);
        await this.subs.restore(conn);
      },
      isCurrent: (conn) => this.isCurrent(conn),
      abandon: (conn) => {
        if (this.conn !== conn) return;
        this.conn = undefined;
        this.liveness.stop();
        conn.destroy();
      },
      done: (c, attempts) => {
        this.startRequested = false;
        this.currentState = 'connected';
        this.waiters.resolveAll(c.conn);
        const daemonRestarted = c.init.instanceId !== previousInstanceId;
        if (daemonRestarted) this.emit('daemonRestarted', { previousInstanceId, instanceId: c.init.instanceId, daemonPid: c.init.daemon.pid });
        this.emit('reconnected', { instanceId: c.init.instanceId, connectionId: c.init.connectionId, daemonPid: c.init.daemon.pid, attempts, daemonRestarted });
      },
      fail: (err) => this.fail(err),
      signal: this.closeController.signal,
    };
    void reconnect(host, cfg);
  }

  private whenConnected(opts: CallOptions): Promise<Connection> {
    if (this.currentState === 'closed') return Promise.reject(this.closedError());
    if (this.currentState === 'stopped') return Promise.reject(this.stoppedError());
    const live = this.liveConnection();
    if (live) return Promise.resolve(live);
    return this.waiters.wait(opts.timeoutMs ?? this.requestTimeoutMs);
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
    this.liveness.stop();
    this.waiters.rejectAll(this.closedError());
    this.subs.endAll(err);
  }

  /**
   * Closes the connection. Held leases are not released (a disconnect starts their grace period,
   * so this or another process can reclaim them) unless `releaseLeases` is set.
   */
  async close(opts: { releaseLeases?: boolean; releaseTimeoutMs?: number } = {}): Promise<void> {
    if (this.currentState === 'closed') return;
    if (opts.releaseLeases && this.leases.held.size > 0) {
      // Mid-reconnect, wait a little for the daemon: a lease left in grace would, by default,
      // have its running turn cancelled when the grace ends.
      const connected = await this.whenConnected({ timeoutMs: opts.releaseTimeoutMs ?? 5_000 }).then(
        () => true,
        () => false,
      );
      if (connected) await Promise.all([...this.leases.held.values()].map((l) => l.release().catch(() => undefined)));
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
}
