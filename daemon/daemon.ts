// The host process (docs/operations.md): takes the instance lock, opens the runtime, listens on the private
// socket, accepts connections and stops. Its rooms: config.ts (settings), startup.ts (who serves),
// handshake.ts, router.ts and
// handlers.ts (requests), status.ts, watchdog.ts (idle exit, housekeeping, self-check),
// subscriptions.ts (events to subscribers), lease-host.ts (controllers).
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { AstraError, LIMITS, PROTOCOL_VERSION, type DaemonStatus, type TraceContext } from '../protocol/index.js';
import { Connection, endpointFor, packEventBody, SOCKET_HIGH_MARK } from '../ipc/index.js';
import {
  ASTRA_VERSION,
  ensurePrivateDir,
  newInstanceId,
  newToken,
  removeRecordIfOwned,
  resolvePaths,
  writeRecord,
  type AstraPaths,
  type DiscoveryRecord,
} from '../discovery/index.js';
import { acpEngineConfig, chatEngineConfig, createAcpEngine, createChatEngine, createShellEngine, createSyntheticEngine } from '../engines/index.js';
import { Runtime, type Engine } from '../runtime/index.js';
import { resolveConfig, type DaemonConfig, type DaemonOptions } from './config.js';
import { createHandlers } from './handlers.js';
import { capabilitiesFor } from './capabilities.js';
import { TurnOwners } from './turn-owners.js';
import { armHandshakeDeadline, handshake, type HandshakeContext } from './handshake.js';
import { LeaseHost } from './lease-host.js';
import { droppedLogLines, silentLogger, type Logger } from './logger.js';
import { Peer } from './peer.js';
import { createRouter, servedMethods } from './router.js';
import { arbitrate } from './startup.js';
import { buildStatus } from './status.js';
import { SubscriptionHub } from './subscriptions.js';
import { Watchdog } from './watchdog.js';

export type { DaemonOptions } from './config.js';

/** Why the daemon stops; the same words go to clients in daemon/shuttingDown's `reason`. */
export type ShutdownReason = 'stopped' | 'restarting' | 'idle' | 'signal' | 'replaced' | 'error';
/** 'shutdown' is the old name of 'stopped', still accepted from embedders. */
export type StopReason = ShutdownReason | 'shutdown';

const SHUTTING_DOWN = 'the daemon is shutting down; reconnect to start a new one';

export class Daemon {
  readonly paths: AstraPaths;
  readonly endpoint: string;
  readonly instanceId = newInstanceId();
  readonly startedAt: number;
  readonly log: Logger;
  private readonly token = newToken();
  private readonly now: () => number;
  private readonly cfg: DaemonConfig;
  private readonly engines: Record<string, Engine>;
  private readonly defaultEngine: string;
  private server: net.Server | undefined;
  private runtime!: Runtime;
  private leaseHost!: LeaseHost;
  private hub!: SubscriptionHub;
  private turnOwners: TurnOwners | undefined;
  private route!: ReturnType<typeof createRouter>;
  private handshakeContext!: HandshakeContext;
  private watchdog!: Watchdog;
  private writtenRecord: DiscoveryRecord | undefined;
  private readonly peers = new Map<string, Peer>();
  private releaseInstanceLock: (() => Promise<void>) | undefined;
  private stopping: Promise<void> | undefined;
  private readonly exitListeners: ((reason: ShutdownReason) => void)[] = [];
  private readonly onTurnEnded = (): void => this.watchdog.becameIdle();
  /** The acp engine: its agent processes are stopped at shutdown. */
  private readonly acp: ReturnType<typeof createAcpEngine>;

  constructor(opts: DaemonOptions = {}) {
    const env = opts.env ?? process.env;
    this.paths = opts.paths ?? resolvePaths(env);
    this.endpoint = endpointFor(this.paths.runtimeDir);
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
    this.log = opts.logger ?? silentLogger();
    this.cfg = resolveConfig(opts, env);
    // The key is read here, from the daemon's environment, and nowhere else.
    const chat = createChatEngine(chatEngineConfig(env), env);
    this.acp = createAcpEngine(acpEngineConfig(env));
    this.engines = { shell: createShellEngine({ terminal: this.cfg.terminal }), synthetic: createSyntheticEngine(), chat, acp: this.acp, ...(opts.engines ?? {}) };
    if (opts.engine) this.engines.custom = opts.engine;
    this.defaultEngine = opts.defaultEngine ?? (opts.engine ? 'custom' : 'shell');
  }

  get idleTimeoutMs(): number {
    return this.cfg.idleTimeoutMs;
  }

  /** Called once when the daemon has stopped, with why. */
  onExit(fn: (reason: ShutdownReason) => void): void {
    this.exitListeners.push(fn);
  }

  /**
   * Takes the instance lock, clears a dead predecessor's socket, opens the runtime, listens, and only
   * then publishes the discovery record. Resolves false when another daemon is already serving.
   */
  async start(): Promise<boolean> {
    this.releaseInstanceLock = await arbitrate(this.paths, this.endpoint, this.log);
    if (!this.releaseInstanceLock) return false;
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
      approvalTimeoutMs: this.cfg.approvalTimeoutMs,
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
    this.watchdog = new Watchdog({
      cfg: this.cfg,
      paths: this.paths,
      endpoint: this.endpoint,
      instanceId: this.instanceId,
      log: this.log,
      now: this.now,
      runtime: this.runtime,
      peers: this.peers,
      isStopping: () => this.stopping !== undefined,
      record: () => this.writtenRecord!,
      publishRecord: () => this.publishRecord(),
      listenAgain: () => this.listenAgain(),
      exit: (why, message) => void this.stop(why, message),
    });
    this.runtime.on('turnEnded', this.onTurnEnded);
    this.turnOwners = new TurnOwners({ runtime: this.runtime, leases: this.leaseHost.leases, graceMs: this.cfg.graceMs, log: this.log });
    const handlers = createHandlers({
      runtime: this.runtime,
      turnOwners: this.turnOwners,
      leaseHost: this.leaseHost,
      hub: this.hub,
      now: this.now,
      status: () => this.status(),
      capabilities: (peer) => capabilitiesFor(capabilitySource, peer),
      requestStop: (restart, message, caller) => {
        setImmediate(() => void this.stop(restart ? 'restarting' : 'stopped', message));
        return [...this.peers.values()].filter((p) => p.authenticated && p !== caller).length;
      },
    });
    const capabilitySource = { engines: this.engines, home: this.paths.home ?? this.paths.dataDir, methods: servedMethods(handlers) };
    this.route = createRouter(handlers, {
      checkController: (sessionId, peer, epoch) => this.leaseHost.check(sessionId, peer.id, epoch),
      checkAcceptingMutations: () => {
        if (this.stopping) throw new AstraError('shutting_down', SHUTTING_DOWN);
      },
    });
    this.handshakeContext = {
      instanceId: this.instanceId,
      token: this.token,
      startedAt: this.startedAt,
      maxInputChars: this.cfg.maxInputChars,
      capabilities: (peer) => capabilitiesFor(capabilitySource, peer),
      // This connection is the only one: nobody else would lose their daemon.
      replaceable: () => this.peers.size <= 1 && this.runtime.runningTurns().length === 0,
      log: this.log,
    };

    await this.listen();
    this.publishRecord();
    this.watchdog.start();
    this.log.info(
      { instanceId: this.instanceId, endpoint: this.endpoint, idleTimeoutMs: this.cfg.idleTimeoutMs, version: ASTRA_VERSION },
      'daemon started',
    );
    return true;
  }

  private listen(): Promise<void> {
    const server = net.createServer({ highWaterMark: SOCKET_HIGH_MARK } as net.ServerOpts, (socket) => this.accept(socket));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.endpoint, () => {
        server.off('error', reject);
        server.on('error', (err) => this.log.error({ err }, 'server error'));
        if (process.platform !== 'win32') fs.chmodSync(this.endpoint, 0o600);
        this.server = server;
        resolve();
      });
    });
  }

  /**
   * The socket file was deleted. A Unix server keeps listening on its fd after an unlink, but nobody
   * can reach it; a new server on a fresh file at the same path can. The old server is closed first
   * and without waiting: closing unlinks its path (which would remove the new file if done later),
   * and its close callback waits for every accepted connection — those stay up, served as before.
   */
  private async listenAgain(): Promise<void> {
    ensurePrivateDir(this.paths.runtimeDir);
    const old = this.server;
    this.server = undefined;
    old?.close();
    await this.listen();
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
    this.writtenRecord = record;
  }

  // ---- connections (the handshake is in handshake.ts, the methods in handlers.ts) ----

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
        ? new AstraError('shutting_down', SHUTTING_DOWN)
        : new AstraError('overloaded', `the daemon serves at most ${this.cfg.maxConnections} connections; retry with backoff`, {
            limit: this.cfg.maxConnections,
          });
      // Answer the client's first request (its initialize) with the error, then close.
      conn.onRequest(() => {
        setImmediate(() => conn.close(err));
        throw err;
      });
      const refusal = setTimeout(() => conn.destroy(err), LIMITS.handshakeDeadlineMs);
      refusal.unref();
      // A refused client that leaves at once must not be held (with its buffers) until the deadline.
      conn.onClose(() => clearTimeout(refusal));
      return;
    }
    this.peers.set(peer.id, peer);
    this.watchdog.activity();
    const handshakeTimer = armHandshakeDeadline(peer, this.log);
    conn.onRequest((method, params, req) => this.onRequest(peer, method, params, req.trace));
    conn.onNotification((method) => {
      peer.lastSeenAt = this.now();
      if (method === 'initialized' && peer.authenticated) peer.initialized = true;
    });
    conn.onClose((err) => {
      clearTimeout(handshakeTimer);
      this.peers.delete(peer.id);
      this.hub.dropPeer(peer);
      this.turnOwners?.dropped(peer.id);
      this.log.info({ connectionId: peer.id, client: peer.info?.name, reason: err?.reason }, 'connection closed');
      void this.leaseHost.disconnect(peer).catch((e: unknown) => this.log.error({ err: e }, 'could not persist a lease grace'));
      this.watchdog.becameIdle();
      this.watchdog.activity();
    });
  }

  private async onRequest(peer: Peer, method: string, params: unknown, trace?: TraceContext): Promise<unknown> {
    peer.lastSeenAt = this.now();
    if (method !== 'ping') this.watchdog.activity();
    if (!peer.authenticated) return handshake(this.handshakeContext, peer, method, params);
    if (!peer.initialized) {
      throw new AstraError('not_initialized', 'send the `initialized` notification after the initialize response before any request');
    }
    if (peer.inFlight >= this.cfg.maxInFlightPerConnection) {
      throw new AstraError('overloaded', `at most ${this.cfg.maxInFlightPerConnection} requests may be in flight per connection; retry with backoff`);
    }
    peer.inFlight++;
    // A request's trace context is on its log lines (and handed to the engine by turn/start).
    const traced = trace?.traceparent !== undefined ? { traceparent: trace.traceparent, ...(trace.tracestate !== undefined ? { tracestate: trace.tracestate } : {}) } : undefined;
    if (traced) this.log.debug({ method, connectionId: peer.id, ...traced }, 'request');
    try {
      return await this.route(method, params, peer, traced);
    } catch (e) {
      if (e instanceof AstraError) throw e;
      this.log.error({ err: e, method, connectionId: peer.id, ...traced }, 'request failed');
      throw new AstraError('internal_error', `${method} failed inside the daemon; see the daemon log (astra daemon logs)`);
    } finally {
      peer.inFlight--;
    }
  }

  status(): Promise<DaemonStatus> {
    return buildStatus({
      instanceId: this.instanceId,
      startedAt: this.startedAt,
      endpoint: this.endpoint,
      paths: this.paths,
      idleTimeoutMs: this.cfg.idleTimeoutMs,
      now: this.now,
      runtime: this.runtime,
      leaseHost: this.leaseHost,
      hub: this.hub,
      peers: this.peers,
      logLinesDropped: () => droppedLogLines(this.log),
    });
  }

  // ---- stopping ----

  /** Stops once; later calls get the same promise. `message` is the reason in words, for clients and the log. */
  stop(why: StopReason = 'stopped', message?: string): Promise<void> {
    const reason: ShutdownReason = why === 'shutdown' ? 'stopped' : why;
    this.stopping ??= this.shutdown(reason, message ?? reason);
    return this.stopping;
  }

  private async shutdown(why: ShutdownReason, message: string): Promise<void> {
    this.log.info({ why, reason: message }, 'shutting down');
    this.watchdog?.stop();
    this.server?.close();
    for (const peer of this.peers.values()) peer.notify('daemon/shuttingDown', { reason: why, message });
    this.leaseHost?.close();
    this.turnOwners?.close();
    if (this.runtime) {
      this.runtime.off('turnEnded', this.onTurnEnded);
      await this.cancelRunningTurns();
      try {
        await this.runtime.close();
      } catch (e) {
        this.log.error({ err: e }, 'flushing the journals failed');
      }
    }
    this.hub?.close(undefined, 'daemon_shutdown');
    this.acp.close();
    await Promise.all([...this.peers.values()].map((p) => this.closePeer(p)));
    // A replaced daemon leaves the record and socket to the instance that replaced it.
    if (why !== 'replaced') {
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
    let check = (): void => undefined;
    const ended = new Promise<void>((resolve) => {
      check = () => {
        if (this.runtime.runningTurns().length === 0) resolve();
      };
      this.runtime.on('turnEnded', check);
    });
    for (const t of running) await this.runtime.cancelTurn(t.sessionId, t.turnId).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
    this.runtime.off('turnEnded', check);
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
