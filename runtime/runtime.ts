// Runtime: the domain the daemon hosts — sessions, turns, approvals, idempotency — over durable
// per-session journals (docs/architecture.md, runtime/). It knows nothing of sockets or leases' rules; the daemon
// composes it with the lease manager and overlays `controller` on the Session objects it returns.
//
// Files: <dataDir>/sessions/<id>/journal.astra (the truth), meta.json (a summary so start-up reads no
// journals; rebuilt from the journal when missing or stale). Leases live with the daemon (leases.json).
//
// This is the runtime's public surface (one method per operation the daemon calls, with its
// contract); each method's work lives in its room (sessions.ts the map of sessions and their loading,
// turns.ts, approvals.ts, idempotency.ts, session-host.ts and its parts). The engines are registered
// by whoever opens it (RuntimeOptions.engines); it names none.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { EventData, OnControllerLost, Session, SessionEvent, TurnStatus, ApprovalPolicy, TraceContext } from '../protocol/index.js';
import { AstraError, LIMITS } from '../protocol/index.js';
import { Approvals } from './approvals.js';
import type { ApprovalRequest, Engine } from './engine.js';
import { defaultPackEventBody } from './event-body.js';
import { fingerprint } from './idempotency.js';
import { newId } from './ids.js';
import { silentLogger, type RuntimeLogger } from './logger.js';
import type { HostOptions, SessionHost } from './session-host.js';
import { META_FORMAT_VERSION, type SessionMeta } from './session-meta.js';
import { Sessions } from './sessions.js';
import type { SubscribeOptions, SubscriptionHandle, SubscriptionSink } from './feed/subscription-feed.js';
import type { CreateSessionParams, RuntimeEvents, RuntimeOptions } from './runtime-options.js';
import { Turns } from './turns.js';

export type { CreateSessionParams, RuntimeEvents, RuntimeOptions, SubscriptionHandle, SubscriptionSink };

const DEFAULT_READ_MAX_BYTES = 7 * 1024 * 1024;
const DEFAULT_READ_LIMIT = 1000;

export class Runtime {
  private readonly sessions: Sessions;
  private readonly engines: Record<string, Engine>;
  /** The first engine registered unless RuntimeOptions.defaultEngine says otherwise; undefined with none. */
  private readonly defaultEngine: string | undefined;
  private readonly logger: RuntimeLogger;
  private readonly now: () => number;
  private readonly listeners: { [K in keyof RuntimeEvents]: RuntimeEvents[K][] } = { approvalRequested: [], approvalSettled: [], turnEnded: [], event: [] };
  private readonly approvals = new Approvals((a) => this.emit('approvalRequested', a), () => this.now(), (a) => this.emit('approvalSettled', a), () => this.approvalTimeoutMs);
  private approvalTimeoutMs = 0;
  private readonly turns: Turns;
  private closed = false;

  private constructor(opts: RuntimeOptions) {
    this.engines = { ...(opts.engines ?? {}) };
    const names = Object.keys(this.engines);
    this.defaultEngine = opts.defaultEngine ?? names[0];
    if (this.defaultEngine !== undefined && !this.engineOf(this.defaultEngine))
      throw new AstraError('invalid_params', `defaultEngine '${this.defaultEngine}' is not among the engines: ${names.join(', ') || '(none registered)'}`);
    this.logger = opts.logger ?? silentLogger;
    this.now = opts.now ?? Date.now;
    this.approvalTimeoutMs = opts.approvalTimeoutMs ?? 0;
    this.turns = new Turns({
      engineOf: (name) => this.engineOf(name),
      maxInputChars: opts.maxInputChars ?? LIMITS.maxInputChars,
      logger: this.logger,
      approvals: this.approvals,
      isClosed: () => this.closed,
      ended: (sessionId, turnId, status) => this.emit('turnEnded', sessionId, turnId, status),
    });
    const hostOpts: HostOptions = {
      logger: this.logger,
      now: this.now,
      groupCommitMs: opts.groupCommitMs ?? 5,
      cacheBytes: opts.cacheBytesPerSession ?? 8 * 1024 * 1024,
      catchUp: { limit: opts.catchUpCacheBytes ?? 64 * 1024 * 1024, used: 0 },
      directIO: opts.journalDirectIO ?? true,
      commandScreens: opts.commandScreens ?? true,
      engineOf: (name) => this.engineOf(name),
      packEventBody: opts.packEventBody ?? defaultPackEventBody,
      // Every event passes here: skip the emit (and its argument array) when nobody listens.
      onPublish: (e) => {
        if (this.listeners.event.length > 0) this.emit('event', e.event);
      },
      onBlocked: (host, err) => {
        if (err) this.turns.diskFull(host, err);
      },
    };
    this.sessions = new Sessions(path.join(opts.dataDir, 'sessions'), hostOpts, this.logger, this.now);
  }

  /** Opens the sessions' directory (Sessions.open: a session with a stale meta is loaded, its running turn marked interrupted). */
  static async open(opts: RuntimeOptions): Promise<Runtime> {
    const rt = new Runtime(opts);
    await rt.sessions.open();
    return rt;
  }

  /** The engine registered under `name` (own names only: 'constructor' is no engine). */
  private engineOf(name: string): Engine | undefined {
    return Object.hasOwn(this.engines, name) ? this.engines[name] : undefined;
  }

  // ---- events ----

  on<K extends keyof RuntimeEvents>(event: K, fn: RuntimeEvents[K]): void {
    this.listeners[event].push(fn);
  }

  off<K extends keyof RuntimeEvents>(event: K, fn: RuntimeEvents[K]): void {
    const list = this.listeners[event] as RuntimeEvents[K][];
    const i = list.indexOf(fn);
    if (i >= 0) list.splice(i, 1);
  }

  private emit<K extends keyof RuntimeEvents>(event: K, ...args: Parameters<RuntimeEvents[K]>): void {
    for (const fn of this.listeners[event]) {
      try {
        (fn as (...a: Parameters<RuntimeEvents[K]>) => void)(...args);
      } catch (e) {
        this.logger.error({ event, err: (e as Error).message }, 'runtime listener threw');
      }
    }
  }

  // ---- loading ----

  private checkOpen(): void {
    if (this.closed) throw new AstraError('shutting_down', 'The runtime is closed.');
  }

  private async load(id: string): Promise<SessionHost> {
    this.checkOpen();
    return this.sessions.load(id);
  }

  // ---- sessions ----

  async createSession(p: CreateSessionParams = {}): Promise<Session> {
    this.checkOpen();
    const engine = p.engine ?? this.defaultEngine;
    if (engine === undefined) throw new AstraError('invalid_params', 'This runtime has no engines: register one in RuntimeOptions.engines (Runtime.open).', { field: 'engine' });
    if (!this.engineOf(engine))
      throw new AstraError('invalid_params', `Unknown engine '${engine}'. Known engines: ${Object.keys(this.engines).join(', ') || '(none registered)'}.`, { engine });
    const cwd = path.resolve(p.cwd ?? os.homedir());
    let isDir = false;
    try {
      isDir = fs.statSync(cwd).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) throw new AstraError('invalid_params', `The workspace ${cwd} is not a directory; create it first or pass another cwd.`, { cwd });
    const engineOptions = this.engineOptionsFor(engine, p.engineOptions ?? undefined);
    const params = {
      title: p.title ?? '',
      cwd,
      engine,
      approvalPolicy: p.approvalPolicy ?? 'ask',
      onControllerLost: p.onControllerLost ?? 'cancel',
      engineOptions,
      approvalTimeoutMs: p.approvalTimeoutMs ?? undefined,
    } as const;
    const key = p.idempotencyKey;
    // The engine's availability and prepare run only for a create that will happen (not for a key's repeat).
    const eng = this.engineOf(engine)!;
    const create = async (idem: { key: string; fingerprint: string } | undefined) => {
      const a = await eng.availability?.(engineOptions);
      if (a?.available === false) throw new AstraError('engine_unavailable', `The ${engine} engine cannot run a session now: ${a.reason ?? 'it says it is unavailable'}`, { engine });
      return this.doCreate(eng.prepare ? { ...params, engineOptions: await eng.prepare.call(eng, engineOptions, { cwd }) } : params, idem);
    };
    if (key === undefined) return create(undefined);
    const fp = fingerprint({ m: 'session/create', title: p.title, cwd: params.cwd, engine, approvalPolicy: p.approvalPolicy, onControllerLost: p.onControllerLost, engineOptions: p.engineOptions, approvalTimeoutMs: p.approvalTimeoutMs });
    const conflict = () => new AstraError('idempotency_conflict', `Idempotency key ${key} was used to create a session with different params.`, { idempotencyKey: key });
    return this.sessions.createKeys.run(key, fp, conflict, () => create({ key, fingerprint: fp }), {
      record: (s) => ({ sessionId: s.id }),
      fromDone: async (r) => (await this.load((r as { sessionId: string }).sessionId)).toSession(),
    });
  }

  /** What the engine makes of engineOptions (invalid_params from it); an engine without parseOptions takes none. */
  private engineOptionsFor(engine: string, raw: Record<string, unknown> | undefined): object | undefined {
    const parse = this.engineOf(engine)!.parseOptions;
    if (parse) return parse(raw);
    if (raw !== undefined && Object.keys(raw).length > 0)
      throw new AstraError('invalid_params', `The ${engine} engine takes no engineOptions (got ${Object.keys(raw).join(', ')}); leave them out.`, { field: 'engineOptions', engine });
    return undefined;
  }

  private async doCreate(
    params: { title: string; cwd: string; engine: string; approvalPolicy: ApprovalPolicy; onControllerLost: OnControllerLost; engineOptions: object | undefined; approvalTimeoutMs: number | undefined },
    idem: { key: string; fingerprint: string } | undefined,
  ): Promise<Session> {
    const id = newId('ses');
    const now = Math.floor(this.now());
    const meta: SessionMeta = {
      format: META_FORMAT_VERSION,
      id,
      title: params.title,
      cwd: params.cwd,
      engine: params.engine,
      approvalPolicy: params.approvalPolicy,
      onControllerLost: params.onControllerLost,
      archived: false,
      createdAt: now,
      updatedAt: now,
      headSeq: 0,
      epoch: 0,
      journalBytes: 0,
    };
    if (params.engineOptions) meta.engineOptions = params.engineOptions;
    if (params.approvalTimeoutMs !== undefined) meta.approvalTimeoutMs = params.approvalTimeoutMs;
    if (idem) {
      meta.createKey = idem.key;
      meta.createFingerprint = idem.fingerprint;
    }
    const settings: Record<string, unknown> = { onControllerLost: params.onControllerLost };
    if (params.engineOptions) settings.engineOptions = params.engineOptions;
    if (params.approvalTimeoutMs !== undefined) settings.approvalTimeoutMs = params.approvalTimeoutMs;
    return (await this.sessions.create(meta, settings, idem)).toSession();
  }

  async getSession(id: string): Promise<Session> {
    return (await this.load(id)).toSession();
  }

  /**
   * The session as it stands, without loading it or counting as a use (for status displays):
   * from the loaded host, else from its meta. Undefined for an unknown id.
   */
  peekSession(id: string): Session | undefined {
    return this.sessions.peek(id);
  }

  async listSessions(p: { cursor?: string; limit?: number; includeArchived?: boolean } = {}): Promise<{ sessions: Session[]; nextCursor?: string }> {
    this.checkOpen();
    return this.sessions.list(p);
  }

  async readSession(
    id: string,
    p: { sinceSeq?: number; limit?: number; maxBytes?: number } = {},
  ): Promise<{ session: Session; events: SessionEvent[]; headSeq: number; nextSeq?: number }> {
    const host = await this.load(id);
    const since = Math.max(0, p.sinceSeq ?? 0);
    host.checkCursor(since);
    const limit = Math.max(1, Math.min(p.limit ?? DEFAULT_READ_LIMIT, 100_000));
    const maxBytes = Math.max(1024, p.maxBytes ?? DEFAULT_READ_MAX_BYTES);
    const headSeq = host.publishedSeq;
    const events = (await host.readPublished(since, limit, maxBytes)).map((e) => e.event);
    const result: { session: Session; events: SessionEvent[]; headSeq: number; nextSeq?: number } = { session: host.toSession(), events, headSeq };
    const lastSeq = events.length ? events[events.length - 1]!.seq : since;
    if (lastSeq < headSeq) result.nextSeq = lastSeq;
    return result;
  }

  async renameSession(id: string, title: string): Promise<Session> {
    const host = await this.load(id);
    host.checkWritable();
    host.append('session.updated', { title });
    await host.sync();
    return host.toSession();
  }

  /** Removes a session and its files for good; refused while a turn runs. */
  async deleteSession(id: string): Promise<void> {
    const host = await this.load(id);
    const running = host.state.running;
    if (running) throw new AstraError('turn_in_progress', `Session ${id} has a running turn; cancel it before deleting the session.`, { sessionId: id, turnId: running.turnId });
    await this.sessions.remove(host);
  }

  async archiveSession(id: string): Promise<Session> {
    const host = await this.load(id);
    if (host.meta.archived) return host.toSession();
    const running = host.state.running;
    if (running) throw new AstraError('turn_in_progress', `Session ${id} has a running turn; cancel it before archiving.`, { sessionId: id, turnId: running.turnId });
    host.checkWritable();
    host.append('session.updated', { state: 'archived' });
    await host.sync();
    return host.toSession();
  }

  /** Undoes archiveSession: listed again, turns allowed. Unarchiving a live session changes nothing. */
  async unarchiveSession(id: string): Promise<Session> {
    const host = await this.load(id);
    if (!host.meta.archived) return host.toSession();
    host.checkWritable();
    host.append('session.updated', { state: 'idle' });
    await host.sync();
    return host.toSession();
  }

  // ---- turns ----

  /** `trace`: the request's W3C trace context, on the turn's log lines and in EngineContext.trace. */
  async startTurn(id: string, input: { text: string }, idempotencyKey: string, terminal?: { cols: number; rows: number }, trace?: TraceContext): Promise<{ turnId: string }> {
    return this.turns.start(await this.load(id), input.text, idempotencyKey, terminal, trace);
  }

  async cancelTurn(id: string, turnId?: string): Promise<{ turnId: string; status: TurnStatus }> {
    return this.turns.cancel(await this.load(id), turnId);
  }

  async commandInput(id: string, turnId: string, data: Uint8Array): Promise<Record<string, never>> {
    this.turns.input(await this.load(id), turnId, data);
    return {};
  }

  async commandResize(id: string, turnId: string, cols: number, rows: number): Promise<{ applied: boolean }> {
    return this.turns.resize(await this.load(id), turnId, cols, rows);
  }

  /**
   * What became of a keyed mutation. A session/create key is answered without a sessionId (the
   * client that lost the answer has none) and with one: its result is the session as it is now.
   */
  async mutationStatus(id: string | undefined, idempotencyKey: string): Promise<{ state: 'unknown' | 'in_progress' | 'done'; result?: unknown }> {
    const created = this.sessions.createKeys.status(idempotencyKey);
    if (created.state === 'in_progress' && id === undefined) return created;
    if (created.state === 'done') {
      const sessionId = (created.result as { sessionId: string }).sessionId;
      if (id === undefined || id === sessionId) return { state: 'done', result: { session: await this.getSession(sessionId) } };
    }
    if (id === undefined) return { state: 'unknown' };
    return (await this.load(id)).state.idempotency.status(idempotencyKey);
  }

  runningTurns(): { sessionId: string; turnId: string }[] {
    const out: { sessionId: string; turnId: string }[] = [];
    for (const [id, host] of this.sessions.hosts()) {
      const running = host.state.running;
      if (running) out.push({ sessionId: id, turnId: running.turnId });
    }
    return out;
  }

  loadedSessionIds(): string[] {
    return [...this.sessions.hosts()].map(([id]) => id);
  }

  /**
   * Closes the loaded sessions nobody is using — no subscriber, no running turn, no pending
   * approval, not asked for in `idleMs` — so a long-lived daemon's memory does not grow with every
   * session it ever touched. Their meta stays; the next call loads them again. Returns their ids.
   */
  async unloadIdle(idleMs: number): Promise<string[]> {
    if (this.closed) return [];
    return this.sessions.unloadIdle(idleMs);
  }

  // ---- subscriptions ----

  /**
   * Registers the sink, then resolves with the headSeq at that moment. The backlog (seq > sinceSeq)
   * is delivered asynchronously afterwards — never before this promise resolves — in pages, awaiting
   * sink.waitForCapacity between pages; then sink.onReplayed(throughSeq), then live events. Rejects
   * with not_found, or cursor_ahead (data.headSeq) for a sinceSeq beyond the head; nothing is then
   * registered. `opts.screen` and `opts.historyLines`: see SubscribeOptions (subscription-feed.ts).
   */
  async subscribe(id: string, sinceSeq: number, sink: SubscriptionSink, opts: SubscribeOptions = {}): Promise<SubscriptionHandle> {
    const host = await this.load(id);
    return host.subscribe(sinceSeq, sink, opts);
  }

  // ---- leases (persistence only; the rules live in lease/) ----

  async appendLeaseChange(id: string, data: EventData<'lease.changed'>): Promise<SessionEvent> {
    const host = await this.load(id);
    host.checkWritable();
    const e = host.append('lease.changed', data);
    await host.sync();
    return e;
  }

  // ---- approvals ----

  pendingApprovals(id: string): ApprovalRequest[] {
    return this.approvals.pending(this.sessions.loaded(id));
  }

  /** `revision`: the one the answer is for (absent: the current one); an old one or an expired approval is approval_expired. */
  async resolveApproval(id: string, approvalId: string, decision: 'approve' | 'deny', by?: { clientName?: string; connectionId?: string }, revision?: number, optionId?: string): Promise<void> {
    return this.approvals.resolve(await this.load(id), approvalId, decision, by, revision, optionId);
  }

  // ---- shutdown ----

  /** Cancels nothing: flushes and fsyncs every loaded journal and writes fresh meta files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const errors: Error[] = [];
    for (const [id, host] of [...this.sessions.hosts()]) {
      try {
        await host.close();
      } catch (err) {
        errors.push(err as Error);
        this.logger.error({ sessionId: id, err: (err as Error).message }, 'journal close failed');
      }
    }
    if (errors.length) throw new AstraError('internal_error', `${errors.length} journal(s) failed to close: ${errors[0]!.message}`);
  }
}
