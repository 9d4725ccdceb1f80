// The host process (DESIGN.md §4): listens on the private socket, authenticates every connection,
// routes requests through the method table, fans events out, exits when idle, and stays true to its
// discovery record.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import {
  AstraError,
  LIMITS,
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  initializeParamsSchema,
  initializeResultSchema,
  type DaemonStatus,
  type Infer,
  type Session,
} from '../protocol/index.js';
import { Connection, checkSocketPath, endpointFor, packEventBody } from '../ipc/index.js';
import {
  acquireLock,
  ensurePrivateDir,
  newInstanceId,
  newToken,
  probeSocket,
  readRecord,
  removeRecordIfOwned,
  removeStaleSocket,
  resolvePaths,
  tokensEqual,
  tryAcquireLock,
  writeRecord,
  type AstraPaths,
  type DiscoveryRecord,
} from '../discovery/index.js';
import { Runtime, createShellEngine, createSyntheticEngine, type Engine } from '../runtime/index.js';
import { LeaseHost } from './lease-host.js';
import { silentLogger, type Logger } from './logger.js';
import { Peer } from './peer.js';
import { createRouter, servedMethods, type Handlers } from './router.js';
import { SubscriptionHub } from './subscriptions.js';
import { ASTRA_VERSION } from '../discovery/index.js';

export interface DaemonOptions {
  /** Where everything lives; defaults to resolvePaths(env). */
  paths?: AstraPaths;
  env?: NodeJS.ProcessEnv;
  /** Engines by name; `shell` is built in. */
  engines?: Record<string, Engine>;
  /** Shorthand for a single custom engine, used as the default. */
  engine?: Engine;
  defaultEngine?: string;
  /** 0 = never exit when idle. */
  idleTimeoutMs?: number;
  graceMs?: number;
  maxConnections?: number;
  maxInFlightPerConnection?: number;
  maxSubscriptionsPerConnection?: number;
  maxQueuedBytes?: number;
  /** Bytes of events all sessions together keep in memory for subscribers that are behind (RuntimeOptions.catchUpCacheBytes). */
  catchUpCacheBytes?: number;
  /** Large journal records with direct I/O (RuntimeOptions.journalDirectIO); env ASTRA_JOURNAL_DIRECT_IO=0 turns it off. */
  journalDirectIO?: boolean;
  slowConsumerMs?: number;
  /** A connection that sends nothing (not even ping) for this long is closed. */
  silentConnectionMs?: number;
  selfCheckMs?: number;
  maxInputChars?: number;
  /** A loaded session nobody uses (no subscriber, turn or approval) is closed after this long. */
  sessionUnloadMs?: number;
  logger?: Logger;
  now?: () => number;
}

const INSTANCE_LOCK = {
  stale: 2_000,
  onCompromised: () => {
    // A long event-loop stall can make the lock look stale; the socket bind still arbitrates.
  },
};

export type StopReason = 'shutdown' | 'signal' | 'idle' | 'replaced' | 'error';

function flagFromEnv(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw === '1' || raw === 'true' || raw === 'on') return true;
  if (raw === '0' || raw === 'false' || raw === 'off') return false;
  throw new AstraError('invalid_params', `${name} must be 1 or 0 (on or off), got "${raw}"`);
}

function numberFromEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new AstraError('invalid_params', `${name} must be a number of milliseconds ≥ 0, got "${raw}"`);
  return n;
}

export class Daemon {
  readonly paths: AstraPaths;
  readonly endpoint: string;
  readonly instanceId = newInstanceId();
  readonly startedAt: number;
  readonly log: Logger;
  private readonly token = newToken();
  private readonly now: () => number;
  private readonly cfg: Required<
    Pick<
      DaemonOptions,
      | 'idleTimeoutMs'
      | 'graceMs'
      | 'maxConnections'
      | 'maxInFlightPerConnection'
      | 'maxSubscriptionsPerConnection'
      | 'maxQueuedBytes'
      | 'slowConsumerMs'
      | 'silentConnectionMs'
      | 'selfCheckMs'
      | 'maxInputChars'
      | 'sessionUnloadMs'
      | 'catchUpCacheBytes'
      | 'journalDirectIO'
    >
  >;
  private readonly engines: Record<string, Engine>;
  private readonly defaultEngine: string;
  private server: net.Server | undefined;
  private runtime!: Runtime;
  private leaseHost!: LeaseHost;
  private hub!: SubscriptionHub;
  private route!: ReturnType<typeof createRouter>;
  private handlers!: Handlers;
  private readonly peers = new Map<string, Peer>();
  private releaseInstanceLock: (() => Promise<void>) | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private housekeepingTimer: NodeJS.Timeout | undefined;
  private selfCheckTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private replaced = false;
  private malformedRecordChecks = 0;
  private lastUnloadAt = 0;
  private readonly exitListeners: ((reason: StopReason) => void)[] = [];

  constructor(opts: DaemonOptions = {}) {
    const env = opts.env ?? process.env;
    this.paths = opts.paths ?? resolvePaths(env);
    this.endpoint = endpointFor(this.paths.runtimeDir);
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
    this.log = opts.logger ?? silentLogger();
    this.cfg = {
      idleTimeoutMs: opts.idleTimeoutMs ?? numberFromEnv(env, 'ASTRA_IDLE_TIMEOUT_MS') ?? 10 * 60_000,
      graceMs: opts.graceMs ?? numberFromEnv(env, 'ASTRA_LEASE_GRACE_MS') ?? 30_000,
      maxConnections: opts.maxConnections ?? numberFromEnv(env, 'ASTRA_MAX_CONNECTIONS') ?? 256,
      maxInFlightPerConnection: opts.maxInFlightPerConnection ?? 256,
      maxSubscriptionsPerConnection: opts.maxSubscriptionsPerConnection ?? 256,
      maxQueuedBytes: opts.maxQueuedBytes ?? numberFromEnv(env, 'ASTRA_MAX_QUEUED_BYTES') ?? 64 * 1024 * 1024,
      slowConsumerMs: opts.slowConsumerMs ?? numberFromEnv(env, 'ASTRA_SLOW_CONSUMER_MS') ?? 30_000,
      silentConnectionMs: opts.silentConnectionMs ?? numberFromEnv(env, 'ASTRA_SILENT_CONNECTION_MS') ?? 120_000,
      selfCheckMs: opts.selfCheckMs ?? numberFromEnv(env, 'ASTRA_SELF_CHECK_MS') ?? 2_000,
      maxInputChars: opts.maxInputChars ?? LIMITS.maxInputChars,
      sessionUnloadMs: opts.sessionUnloadMs ?? numberFromEnv(env, 'ASTRA_SESSION_UNLOAD_MS') ?? 10 * 60_000,
      catchUpCacheBytes: opts.catchUpCacheBytes ?? numberFromEnv(env, 'ASTRA_CATCHUP_CACHE_BYTES') ?? 64 * 1024 * 1024,
      journalDirectIO: opts.journalDirectIO ?? flagFromEnv(env, 'ASTRA_JOURNAL_DIRECT_IO') ?? true,
    };
    this.engines = { shell: createShellEngine(), synthetic: createSyntheticEngine(), ...(opts.engines ?? {}) };
    if (opts.engine) this.engines.custom = opts.engine;
    this.defaultEngine = opts.defaultEngine ?? (opts.engine ? 'custom' : 'shell');
  }

  get idleTimeoutMs(): number {
    return this.cfg.idleTimeoutMs;
  }

  /** Called once when the daemon has stopped, with why. */
  onExit(fn: (reason: StopReason) => void): void {
    this.exitListeners.push(fn);
  }

  /**
   * Takes the instance lock, clears a dead predecessor's socket, opens the runtime, listens, and only
   * then publishes the discovery record. Resolves false when another daemon is already serving.
   */
  async start(): Promise<boolean> {
    ensurePrivateDir(this.paths.runtimeDir);
    fs.mkdirSync(this.paths.dataDir, { recursive: true, mode: 0o700 });
    checkSocketPath(this.endpoint);
    // The instance lock serializes start-ups; a live daemon keeps it fresh, a SIGKILLed one's goes
    // stale within INSTANCE_LOCK_STALE_MS. The socket bind stays the final arbiter (NOTES.md).
    this.releaseInstanceLock = await tryAcquireLock(this.paths.instanceLockPath, INSTANCE_LOCK);
    if (!this.releaseInstanceLock) {
      if ((await probeSocket(this.endpoint)) === 'listening') {
        this.log.info('another daemon is already running; exiting');
        return false;
      }
      this.releaseInstanceLock = await acquireLock(this.paths.instanceLockPath, { ...INSTANCE_LOCK, timeoutMs: INSTANCE_LOCK.stale + 3_000 });
    }
    const probe = await probeSocket(this.endpoint);
    if (probe === 'listening') {
      this.log.info({ endpoint: this.endpoint }, 'another daemon is already listening; exiting');
      await this.releaseInstanceLock();
      return false;
    }
    if (probe === 'refused') {
      await removeStaleSocket(this.endpoint);
      this.log.info({ endpoint: this.endpoint }, 'removed a dead daemon\'s socket');
    } else if (probe === 'not_socket') {
      await this.releaseInstanceLock();
      throw new AstraError('unsafe_runtime_dir', `${this.endpoint} exists and is not a socket; remove it and start again`, {
        path: this.endpoint,
      });
    }

    this.runtime = await Runtime.open({
      dataDir: this.paths.dataDir,
      engines: this.engines,
      defaultEngine: this.defaultEngine,
      maxInputChars: this.cfg.maxInputChars,
      logger: this.log,
      now: this.now,
      // Journal bodies in the wire's encoding: they go out to subscribers as they are.
      packEventBody,
      catchUpCacheBytes: this.cfg.catchUpCacheBytes,
      journalDirectIO: this.cfg.journalDirectIO,
    });
    this.hub = new SubscriptionHub(this.runtime, {
      maxQueuedBytes: this.cfg.maxQueuedBytes,
      maxSubscriptionsPerConnection: this.cfg.maxSubscriptionsPerConnection,
    });
    this.leaseHost = new LeaseHost(this.runtime, {
      dataDir: this.paths.dataDir,
      graceMs: this.cfg.graceMs,
      now: this.now,
      log: this.log,
      findPeer: (id) => this.peers.get(id),
    });
    await this.leaseHost.restore();
    this.runtime.on('turnEnded', () => this.scheduleIdle());
    this.handlers = this.createHandlers();
    this.route = createRouter(this.handlers, {
      checkController: (sessionId, peer, epoch) => this.leaseHost.check(sessionId, peer.id, epoch),
      checkAcceptingMutations: () => {
        if (this.stopping) throw new AstraError('shutting_down', 'the daemon is shutting down; reconnect to start a new one');
      },
    });

    await this.listen();
    this.publishRecord();
    this.housekeepingTimer = setInterval(() => this.housekeeping(), 1_000);
    this.housekeepingTimer.unref();
    this.selfCheckTimer = setInterval(() => void this.selfCheck(), this.cfg.selfCheckMs);
    this.selfCheckTimer.unref();
    this.scheduleIdle();
    this.log.info(
      { instanceId: this.instanceId, endpoint: this.endpoint, idleTimeoutMs: this.cfg.idleTimeoutMs, version: ASTRA_VERSION },
      'daemon started',
    );
    return true;
  }

  private listen(): Promise<void> {
    const server = net.createServer({ highWaterMark: 256 * 1024 } as net.ServerOpts, (socket) => this.accept(socket));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.endpoint, () => {
        server.off('error', reject);
        server.on('error', (err) => this.log.error({ err }, 'server error'));
        if (process.platform !== 'win32') fs.chmodSync(this.endpoint, 0o600);
        resolve();
      });
    });
  }

  private publishRecord(): void {
    const record: DiscoveryRecord = {
      schemaVersion: 1,
      instanceId: this.instanceId,
      ownerId: process.getuid?.() ?? 0,
      pid: process.pid,
      endpoint: this.endpoint,
      token: this.token,
      protocolVersion: PROTOCOL_VERSION,
      version: ASTRA_VERSION,
      startedAt: this.startedAt,
      logFile: this.paths.logFile,
      idleTimeoutMs: this.cfg.idleTimeoutMs,
    };
    writeRecord(this.paths.recordPath, record);
  }

  // ---- connections and the handshake (DESIGN.md §3) ----

  private accept(socket: net.Socket): void {
    const conn = new Connection(socket, {
      maxIncomingBytes: LIMITS.maxRequestBytes,
      maxOutgoingBytes: LIMITS.maxFrameBytes,
      requestTimeoutMs: 0,
      label: 'client',
    });
    const peer = new Peer(`c_${crypto.randomBytes(6).toString('hex')}`, conn, this.now());
    if (this.stopping || this.peers.size >= this.cfg.maxConnections) {
      const err = this.stopping
        ? new AstraError('shutting_down', 'the daemon is shutting down; reconnect to start a new one')
        : new AstraError('overloaded', `the daemon serves at most ${this.cfg.maxConnections} connections; retry with backoff`, {
            limit: this.cfg.maxConnections,
          });
      // Answer the client's first request (its initialize) with the error, then close.
      conn.onRequest(() => {
        setImmediate(() => conn.close(err));
        throw err;
      });
      setTimeout(() => conn.destroy(err), LIMITS.handshakeDeadlineMs).unref();
      return;
    }
    this.peers.set(peer.id, peer);
    this.cancelIdle();
    const handshakeTimer = setTimeout(() => {
      if (!peer.authenticated) {
        this.log.info({ connectionId: peer.id }, 'no initialize within the deadline; closing');
        conn.close(new AstraError('handshake_timeout', `no initialize request within ${LIMITS.handshakeDeadlineMs} ms`));
      }
    }, LIMITS.handshakeDeadlineMs);
    handshakeTimer.unref();

    conn.onRequest((method, params) => this.onRequest(peer, method, params));
    conn.onNotification((method, params) => {
      peer.lastSeenAt = this.now();
      if (method === 'initialized' && peer.authenticated) peer.initialized = true;
      void params;
    });
    conn.onClose((err) => {
      clearTimeout(handshakeTimer);
      this.peers.delete(peer.id);
      this.hub.dropPeer(peer);
      this.log.info({ connectionId: peer.id, client: peer.info?.name, reason: err?.reason }, 'connection closed');
      void this.leaseHost.disconnect(peer).catch((e: unknown) => this.log.error({ err: e }, 'could not persist a lease grace'));
      this.scheduleIdle();
    });
  }

  private async onRequest(peer: Peer, method: string, params: unknown): Promise<unknown> {
    peer.lastSeenAt = this.now();
    if (!peer.authenticated) return this.handshake(peer, method, params);
    if (!peer.initialized) {
      throw new AstraError('not_initialized', 'send the `initialized` notification after the initialize response before any request');
    }
    if (peer.inFlight >= this.cfg.maxInFlightPerConnection) {
      throw new AstraError('overloaded', `at most ${this.cfg.maxInFlightPerConnection} requests may be in flight per connection; retry with backoff`);
    }
    peer.inFlight++;
    try {
      return await this.route(method, params, peer);
    } catch (e) {
      if (e instanceof AstraError) throw e;
      this.log.error({ err: e, method, connectionId: peer.id }, 'request failed');
      throw new AstraError('internal_error', `${method} failed inside the daemon; see the daemon log (astra daemon logs)`);
    } finally {
      peer.inFlight--;
    }
  }

  /** Fails closed: any problem answers one typed error, then the connection is closed. */
  private handshake(peer: Peer, method: string, params: unknown): Infer<typeof initializeResultSchema> {
    const fail = (err: AstraError): never => {
      this.log.info({ connectionId: peer.id, reason: err.reason }, 'handshake refused');
      setImmediate(() => peer.conn.close(err));
      throw err;
    };
    if (method !== 'initialize') fail(new AstraError('not_initialized', 'the first request must be initialize'));
    const problem = initializeParamsSchema.check(params ?? {}, 'params');
    if (problem) fail(new AstraError('invalid_params', `initialize: ${problem}`));
    const p = params as Infer<typeof initializeParamsSchema>;
    if (!tokensEqual(p.token, this.token)) {
      fail(new AstraError('unauthorized', 'wrong token; read it again from the discovery record (daemon.json) and reconnect'));
    }
    if (p.protocolVersion < SUPPORTED_PROTOCOL_VERSIONS.min || p.protocolVersion > SUPPORTED_PROTOCOL_VERSIONS.max) {
      fail(
        new AstraError(
          'incompatible_protocol',
          `the client speaks protocol ${p.protocolVersion} but this daemon (astra ${ASTRA_VERSION}) speaks ${SUPPORTED_PROTOCOL_VERSIONS.min}` +
            `${SUPPORTED_PROTOCOL_VERSIONS.max !== SUPPORTED_PROTOCOL_VERSIONS.min ? `-${SUPPORTED_PROTOCOL_VERSIONS.max}` : ''}; ` +
            'run `astra daemon restart` to start a daemon of your version',
          {
            clientProtocolVersion: p.protocolVersion,
            supported: { ...SUPPORTED_PROTOCOL_VERSIONS },
            daemonVersion: ASTRA_VERSION,
            // Lets a client that was asked to replace an idle daemon do so safely (DESIGN.md §4).
            idle: this.peers.size <= 1 && this.runtime.runningTurns().length === 0,
          },
        ),
      );
    }
    if (p.instanceId !== undefined && p.instanceId !== null && p.instanceId !== this.instanceId) {
      fail(new AstraError('wrong_instance', `this daemon is instance ${this.instanceId}, not ${p.instanceId}`, { instanceId: this.instanceId }));
    }
    peer.authenticated = true;
    peer.info = { name: p.clientInfo.name, version: p.clientInfo.version };
    if (p.clientInfo.pid !== undefined && p.clientInfo.pid !== null) peer.info.pid = p.clientInfo.pid;
    for (const m of p.capabilities?.optOutNotificationMethods ?? []) peer.mutedNotifications.add(m);
    peer.batchEvents = p.capabilities?.batchEvents === true;
    this.log.info({ connectionId: peer.id, client: peer.info.name, clientVersion: peer.info.version }, 'client connected');
    return {
      instanceId: this.instanceId,
      connectionId: peer.id,
      protocolVersion: PROTOCOL_VERSION,
      daemon: { version: ASTRA_VERSION, pid: process.pid, startedAt: this.startedAt },
      limits: { maxRequestBytes: LIMITS.maxRequestBytes, maxFrameBytes: LIMITS.maxFrameBytes, maxInputChars: this.cfg.maxInputChars },
      methods: servedMethods(this.handlers),
    };
  }

  // ---- the methods ----

  private withController(session: Session): Session {
    const view = this.leaseHost.leases.view(session.id);
    const out: Session = { ...session, epoch: Math.max(session.epoch, view.epoch) };
    if (view.holder) {
      const c: NonNullable<Session['controller']> = {
        connectionId: view.holder.connectionId,
        clientName: view.holder.clientName,
        since: view.since ?? session.updatedAt,
      };
      if (view.holder.pid !== undefined) c.pid = view.holder.pid;
      if (view.graceUntil !== undefined) c.graceUntil = view.graceUntil;
      out.controller = c;
    } else {
      delete out.controller;
    }
    return out;
  }

  private createHandlers(): Handlers {
    const rt = this.runtime;
    return {
      ping: () => ({ now: this.now() }),
      'daemon/status': () => this.status(),
      'daemon/shutdown': (p) => {
        setImmediate(() => void this.stop('shutdown', p.reason ?? 'requested by a client'));
        return {};
      },
      'session/create': async (p) => ({ session: this.withController(await rt.createSession(p)) }),
      'session/list': async (p) => {
        const page = await rt.listSessions(p);
        return { ...page, sessions: page.sessions.map((s) => this.withController(s)) };
      },
      'session/read': async (p) => {
        const r = await rt.readSession(p.sessionId, p);
        return { ...r, session: this.withController(r.session) };
      },
      'session/subscribe': (p, peer) => this.hub.subscribe(peer, p.sessionId, p.sinceSeq ?? 0),
      'session/unsubscribe': (p, peer) => {
        this.hub.unsubscribe(peer, p.sessionId);
        return {};
      },
      'session/rename': async (p) => ({ session: this.withController(await rt.renameSession(p.sessionId, p.title)) }),
      'session/archive': async (p) => ({ session: this.withController(await rt.archiveSession(p.sessionId)) }),
      'session/delete': async (p) => {
        await rt.deleteSession(p.sessionId);
        return { sessionId: p.sessionId };
      },
      'lease/acquire': (p, peer) => this.leaseHost.acquire(peer, p.sessionId, p),
      'lease/release': async (p, peer) => {
        await this.leaseHost.release(peer, p.sessionId, p.epoch);
        return {};
      },
      'turn/start': async (p) => {
        this.cancelIdle();
        return rt.startTurn(p.sessionId, p.input, p.idempotencyKey);
      },
      'turn/cancel': (p) => rt.cancelTurn(p.sessionId, p.turnId),
      'mutation/status': (p) => rt.mutationStatus(p.sessionId, p.idempotencyKey),
    };
  }

  async status(): Promise<DaemonStatus> {
    // Loaded sessions, and those with a controller even if closed as idle.
    const sessionIds = new Set<string>([...this.runtime.loadedSessionIds(), ...this.leaseHost.heldSessionIds()]);
    const sessions: DaemonStatus['sessions'] = [];
    for (const id of sessionIds) {
      const peeked = this.runtime.peekSession(id);
      if (!peeked) continue;
      const s = this.withController(peeked);
      const subscribers = this.hub.subscriberCount(id);
      const controllerSubscribed =
        s.controller !== undefined && this.peers.has(s.controller.connectionId) && this.hub.sessionsOf(this.peers.get(s.controller.connectionId)!).includes(id);
      sessions.push({
        id: s.id,
        title: s.title,
        state: s.state,
        headSeq: s.headSeq,
        epoch: s.epoch,
        controller: s.controller
          ? { ...s.controller, ...(s.controller.graceUntil === undefined ? {} : { graceUntil: s.controller.graceUntil }) }
          : null,
        observers: subscribers - (controllerSubscribed ? 1 : 0),
        runningTurnId: s.runningTurnId ?? null,
        pendingApprovals: this.runtime.pendingApprovals(id).length,
      });
    }
    const now = this.now();
    return {
      running: true,
      instanceId: this.instanceId,
      pid: process.pid,
      version: ASTRA_VERSION,
      protocolVersion: PROTOCOL_VERSION,
      startedAt: this.startedAt,
      uptimeMs: Math.max(0, now - this.startedAt),
      endpoint: this.endpoint,
      logFile: this.paths.logFile,
      dataDir: this.paths.dataDir,
      idleTimeoutMs: this.cfg.idleTimeoutMs,
      connections: [...this.peers.values()]
        .filter((p) => p.authenticated)
        .map((p) => {
          const c: DaemonStatus['connections'][number] = {
            id: p.id,
            clientName: p.clientName,
            clientVersion: p.info?.version ?? '',
            connectedAt: p.connectedAt,
            queuedBytes: p.conn.queuedBytes,
            subscriptions: this.hub.sessionsOf(p),
          };
          if (p.info?.pid !== undefined) c.pid = p.info.pid;
          return c;
        }),
      sessions,
    };
  }

  // ---- idle exit, housekeeping, self-check (DESIGN.md §4, §7) ----

  private cancelIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private isIdle(): boolean {
    return this.peers.size === 0 && this.runtime.runningTurns().length === 0;
  }

  private scheduleIdle(): void {
    this.cancelIdle();
    if (this.stopping || this.cfg.idleTimeoutMs === 0 || !this.isIdle()) return;
    this.idleTimer = setTimeout(() => {
      if (this.isIdle()) {
        this.log.info({ idleTimeoutMs: this.cfg.idleTimeoutMs }, 'idle: no client and no running turn; exiting');
        void this.stop('idle', 'idle timeout');
      }
    }, this.cfg.idleTimeoutMs);
  }

  private housekeeping(): void {
    const now = this.now();
    if (now - this.lastUnloadAt >= Math.min(60_000, this.cfg.sessionUnloadMs)) {
      this.lastUnloadAt = now;
      void this.runtime.unloadIdle(this.cfg.sessionUnloadMs).then(
        (ids) => ids.length && this.log.debug({ sessions: ids }, 'closed idle sessions'),
        (e: unknown) => this.log.warn({ err: e }, 'closing idle sessions failed'),
      );
    }
    for (const peer of this.peers.values()) {
      // Not draining: bytes are queued and the queue has not shrunk since we started watching it.
      // (A lagged subscriber stops adding, so a reader that does not read stays put.)
      const queued = peer.conn.queuedBytes;
      if (queued === 0 || peer.stuckQueueBytes === undefined || queued < peer.stuckQueueBytes) {
        peer.stuckQueueBytes = queued === 0 ? undefined : queued;
        peer.stuckSince = now;
      } else if (now - peer.stuckSince > this.cfg.slowConsumerMs) {
        this.log.warn({ connectionId: peer.id, queuedBytes: queued }, 'slow consumer; closing');
        peer.conn.destroy(new AstraError('slow_consumer', `the connection could not drain its queue for ${this.cfg.slowConsumerMs} ms`));
        continue;
      }
      if (peer.authenticated && now - peer.lastSeenAt > this.cfg.silentConnectionMs && peer.inFlight === 0) {
        this.log.warn({ connectionId: peer.id }, 'connection silent past the bound; closing');
        peer.conn.destroy();
      }
    }
  }

  /** The record must still name this instance, and the socket file must still exist. */
  private async selfCheck(): Promise<void> {
    if (this.stopping) return;
    let record: DiscoveryRecord | undefined;
    try {
      record = readRecord(this.paths.recordPath);
      this.malformedRecordChecks = 0;
    } catch (e) {
      // Possibly caught mid-write by someone else: look again next time, and only put our own
      // record back when it stays unreadable.
      if (++this.malformedRecordChecks < 3) return;
      this.log.warn({ err: e }, 'the discovery record is unreadable; writing it again');
      this.malformedRecordChecks = 0;
      this.publishRecord();
      return;
    }
    if (record && record.instanceId !== this.instanceId) {
      this.log.warn({ other: record.instanceId }, 'the discovery record names another instance; exiting');
      this.replaced = true;
      await this.stop('replaced', 'replaced by another daemon instance');
      return;
    }
    let socketPresent = true;
    try {
      socketPresent = fs.lstatSync(this.endpoint).isSocket();
    } catch {
      socketPresent = false;
    }
    if (!socketPresent && process.platform !== 'win32') {
      this.log.warn({ endpoint: this.endpoint }, 'the socket file was deleted; listening again');
      const old = this.server;
      try {
        ensurePrivateDir(this.paths.runtimeDir);
        // Close the orphaned server first: closing a Unix server unlinks its path, which would
        // remove the new socket file if done after listening again.
        await new Promise<void>((resolve) => (old ? old.close(() => resolve()) : resolve()));
        await this.listen();
        this.publishRecord();
      } catch (e) {
        this.log.error({ err: e }, 'could not recreate the socket; exiting');
        await this.stop('error', 'socket lost');
      }
      return;
    }
    if (!record) {
      this.log.warn('the discovery record was deleted; writing it again');
      this.publishRecord();
    }
  }

  // ---- shutdown ----

  stop(why: StopReason, reason = why as string): Promise<void> {
    this.stopping ??= this.shutdown(why, reason);
    return this.stopping;
  }

  private async shutdown(why: StopReason, reason: string): Promise<void> {
    this.log.info({ why, reason }, 'shutting down');
    this.cancelIdle();
    if (this.housekeepingTimer) clearInterval(this.housekeepingTimer);
    if (this.selfCheckTimer) clearInterval(this.selfCheckTimer);
    this.server?.close();
    for (const peer of this.peers.values()) peer.notify('daemon/shuttingDown', { reason });
    this.leaseHost?.close();
    if (this.runtime) {
      await this.cancelRunningTurns();
      try {
        await this.runtime.close();
      } catch (e) {
        this.log.error({ err: e }, 'flushing the journals failed');
      }
    }
    await Promise.all([...this.peers.values()].map((p) => this.closePeer(p)));
    if (!this.replaced) {
      try {
        removeRecordIfOwned(this.paths.recordPath, this.instanceId);
      } catch (e) {
        this.log.warn({ err: e }, 'could not remove the discovery record');
      }
      if (process.platform !== 'win32') {
        try {
          fs.unlinkSync(this.endpoint);
        } catch {
          // already gone
        }
      }
    }
    await this.releaseInstanceLock?.().catch(() => undefined);
    this.log.info({ why }, 'daemon stopped');
    for (const fn of this.exitListeners) fn(why);
  }

  private async cancelRunningTurns(): Promise<void> {
    const running = this.runtime.runningTurns();
    if (running.length === 0) return;
    const ended = new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.runtime.runningTurns().length === 0) resolve();
      };
      this.runtime.on('turnEnded', check);
    });
    for (const t of running) await this.runtime.cancelTurn(t.sessionId, t.turnId).catch(() => undefined);
    await Promise.race([ended, new Promise((r) => setTimeout(r, 5_000).unref())]);
  }

  private closePeer(peer: Peer): Promise<void> {
    return new Promise((resolve) => {
      if (peer.conn.closed) return resolve();
      const timer = setTimeout(() => {
        peer.conn.destroy();
        resolve();
      }, 1_000);
      timer.unref();
      peer.conn.onClose(() => {
        clearTimeout(timer);
        resolve();
      });
      peer.conn.close(new AstraError('shutting_down'));
    });
  }
}

/** Builds a daemon; call `start()` to serve. Library users pass their own engine here. */
export function createDaemon(opts: DaemonOptions = {}): Daemon {
  return new Daemon(opts);
}
