// Connect-or-spawn (docs/operations.md): read the discovery record, connect, authenticate; when no daemon
// answers, take the spawn lock (or connect to the daemon its holder started), look again, start the
// daemon detached (client/spawn.ts), wait until it answers, release.
import net from 'node:net';
import {
  AstraError,
  LIMITS,
  PROTOCOL_VERSION,
  initializeResultSchema,
  type Infer,
} from '../protocol/index.js';
import { Connection, DirectReads } from '../ipc/index.js';
import {
  ensurePrivateDir,
  isProcessAlive,
  readRecord,
  resolvePaths,
  restartInProgress,
  tryAcquireLock,
  type AstraPaths,
  type DiscoveryRecord,
  type ReleaseLock,
} from '../discovery/index.js';
import { logLinesSince, logSize, spawnDaemon } from './spawn.js';
import type { ConnectOptions, RestartWaitInfo, ValidateMode, WaitingInfo } from './connect-options.js';

export { DAEMON_NODE_FLAGS, daemonEntryPath, spawnDaemon } from './spawn.js';

/**
 * A spawn lock whose holder stopped refreshing it for this long is taken over. Its holder refreshes
 * it every half of this; on a loaded machine a few seconds' stall is ordinary, and a lock taken from
 * a live holder only costs a second daemon start that loses the start-up race.
 */
const SPAWN_LOCK_STALE_MS = 10_000;

export type InitializeResult = Infer<typeof initializeResultSchema>;
export type { ConnectOptions, RestartWaitInfo, ValidateMode, WaitingInfo };

/** When a slow handshake is reported to onWaiting. */
export const WAITING_NOTICE_MS = 1_000;
/** How long a running daemon has to answer the handshake. */
export const HANDSHAKE_TIMEOUT_MS = 5_000;

export interface Connected {
  conn: Connection;
  init: InitializeResult;
  record: DiscoveryRecord;
  paths: AstraPaths;
  /** True when this call started the daemon. */
  spawned: boolean;
}

export function envFor(opts: { home?: string; env?: NodeJS.ProcessEnv }): NodeJS.ProcessEnv {
  const env = { ...(opts.env ?? process.env) };
  if (opts.home) env.ASTRA_HOME = opts.home;
  return env;
}

/** The connect or handshake failed because nobody (alive) serves the endpoint. */
function isNoDaemonError(e: unknown): boolean {
  if (e instanceof AstraError) return e.reason === 'connection_closed' || e.reason === 'shutting_down';
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'ENOTSOCK' || code === 'EPIPE' || code === 'ECONNRESET';
}

/** The discovery record, or undefined when there is none or it is malformed (the next daemon overwrites it). */
export function readUsableRecord(recordPath: string): DiscoveryRecord | undefined {
  try {
    return readRecord(recordPath);
  } catch (e) {
    if (e instanceof AstraError && e.reason === 'invalid_record') return undefined;
    throw e;
  }
}

function openSocket(endpoint: string, timeoutMs: number, reads: DirectReads): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // Large frames (command output) are read straight into their own buffers (ipc/direct-reads.ts).
    const socket = net.createConnection({ path: endpoint, onread: reads.onread });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error(`connecting to ${endpoint} timed out`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Connects to the daemon a record names and performs the handshake. */
export async function handshake(record: DiscoveryRecord, opts: ConnectOptions): Promise<{ conn: Connection; init: InitializeResult }> {
  const started = Date.now();
  const waiting = opts.onWaiting
    ? setTimeout(() => opts.onWaiting?.({ pid: record.pid, waitedMs: Date.now() - started }), WAITING_NOTICE_MS)
    : undefined;
  try {
    return await handshakeOnce(record, opts, started + HANDSHAKE_TIMEOUT_MS);
  } catch (e) {
    if (e instanceof AstraError && e.reason === 'request_timeout') throw unresponsive(record, Date.now() - started);
    if ((e as NodeJS.ErrnoException).code === 'ETIMEDOUT') throw unresponsive(record, Date.now() - started);
    throw e;
  } finally {
    if (waiting) clearTimeout(waiting);
  }
}

/** A daemon that accepts the connection but does not answer (SIGSTOPped, stuck): name it and the fix. */
function unresponsive(record: DiscoveryRecord, waitedMs: number): AstraError {
  const alive = isProcessAlive(record.pid);
  return new AstraError(
    'request_timeout',
    `the daemon (pid ${record.pid}) did not answer within ${(waitedMs / 1000).toFixed(1)} s${alive ? ' although it is running (stopped or stuck?)' : ''}; ` +
      'run `astra daemon restart`, or `astra daemon stop --force` to end it',
    { pid: record.pid, endpoint: record.endpoint, waitedMs },
  );
}

async function handshakeOnce(record: DiscoveryRecord, opts: ConnectOptions, deadline: number): Promise<{ conn: Connection; init: InitializeResult }> {
  const reads = new DirectReads();
  const socket = await openSocket(record.endpoint, Math.max(1, deadline - Date.now()), reads);
  const conn = new Connection(socket, {
    directReads: reads,
    maxIncomingBytes: LIMITS.maxFrameBytes,
    maxOutgoingBytes: LIMITS.maxRequestBytes,
    requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
    label: 'daemon',
    // Frames come from the daemon the token authenticated; the envelope check still refuses
    // non-plain values, so the per-frame extension pre-scan is skipped (ipc/connection.ts).
    extensionScan: 'onError',
  });
  opts.onConnection?.(conn);
  try {
    const params: Record<string, unknown> = {
      protocolVersion: PROTOCOL_VERSION,
      token: record.token,
      clientInfo: { name: opts.clientName, version: opts.clientVersion ?? '0.0.0', pid: process.pid },
    };
    if (opts.instanceId) params.instanceId = opts.instanceId;
    const capabilities: Record<string, unknown> = {};
    if (opts.optOutNotificationMethods) capabilities.optOutNotificationMethods = opts.optOutNotificationMethods;
    if (opts.batchEvents) capabilities.batchEvents = true;
    if (opts.experimentalApi) capabilities.experimentalApi = true;
    if (Object.keys(capabilities).length > 0) params.capabilities = capabilities;
    const init = await conn.request('initialize', params, { timeoutMs: Math.max(1, deadline - Date.now()) });
    const problem = initializeResultSchema.check(init, 'initialize result');
    if (problem) throw new AstraError('invalid_request', `the daemon answered initialize oddly: ${problem}`);
    if (opts.validate === 'envelope' && (init as InitializeResult).protocolVersion === PROTOCOL_VERSION) conn.trustShapes();
    conn.notify('initialized', {});
    return { conn, init: init as InitializeResult };
  } catch (e) {
    conn.destroy();
    throw e;
  }
}

/** Reads the record and connects; undefined when no daemon answers there. */
async function tryConnect(paths: AstraPaths, opts: ConnectOptions): Promise<Connected | undefined> {
  for (let attempt = 0; ; attempt++) {
    const record = readUsableRecord(paths.recordPath);
    if (!record) return undefined;
    try {
      const { conn, init } = await handshake(record, opts);
      return { conn, init, record, paths, spawned: false };
    } catch (e) {
      if (isNoDaemonError(e)) return undefined;
      // A new daemon listens before it publishes its record, and a running one puts an altered
      // record right at its next self-check: wait that long for the record to change. One that
      // stays refused is another daemon's or altered for good: say so, with the fix, at once.
      if (e instanceof AstraError && e.reason === 'unauthorized') {
        const now = attempt < 3 ? await recordChange(paths.recordPath, record.token, repairWaitMs(envFor(opts))) : 'same';
        if (now === 'changed') continue;
        if (now === 'gone') return undefined;
        throw refusedToken(paths, record);
      }
      throw e;
    }
  }
}

/** How long a running daemon may take to put its record right (its self-check, 2 s by default). */
function repairWaitMs(env: NodeJS.ProcessEnv): number {
  const configured = Number(env.ASTRA_SELF_CHECK_MS);
  return Math.min(Number.isFinite(configured) && configured > 0 ? configured : 2_000, 10_000) + 500;
}

/** Waits up to `waitMs` for the record to carry another token than `token`, or to go. */
async function recordChange(recordPath: string, token: string, waitMs: number): Promise<'changed' | 'gone' | 'same'> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const now = readUsableRecord(recordPath);
    if (!now) return 'gone';
    if (now.token !== token) return 'changed';
    if (Date.now() >= deadline) return 'same';
    await new Promise((r) => setTimeout(r, 50));
  }
}

function refusedToken(paths: AstraPaths, record: DiscoveryRecord): AstraError {
  return new AstraError(
    'unauthorized',
    `the daemon listening on ${record.endpoint} refuses the token in ${paths.recordPath}: the record was altered, or written by ` +
      'another daemon (another Astra, a copied home), and no daemon put it right; run `astra daemon restart` to replace the daemon ' +
      '(or `astra daemon stop --force`, then try again)',
    { recordPath: paths.recordPath, endpoint: record.endpoint, pid: record.pid },
  );
}

/** Stops the idle daemon of another version named by the record (SIGTERM, then waits for it). */
async function stopIncompatibleDaemon(paths: AstraPaths, cause: AstraError): Promise<void> {
  const record = readUsableRecord(paths.recordPath);
  if (!record || !isProcessAlive(record.pid)) return;
  process.kill(record.pid, 'SIGTERM');
  const deadline = Date.now() + 5_000;
  while (isProcessAlive(record.pid)) {
    if (Date.now() > deadline) {
      throw new AstraError('incompatible_protocol', `${cause.message}; it did not exit within 5 s of SIGTERM, so it was left running`, cause.data);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Connects to the running daemon, or starts one. Any number of racing processes end with exactly
 * one daemon: they serialize on the spawn lock, and the daemon's instance lock and socket bind are
 * the final arbiters.
 */
export async function connectOrSpawn(opts: ConnectOptions): Promise<Connected> {
  const env = envFor(opts);
  const paths = resolvePaths(env);
  let first: Connected | undefined;
  try {
    first = await tryConnect(paths, opts);
  } catch (e) {
    if (!(opts.replaceIdleIncompatibleDaemon && e instanceof AstraError && e.reason === 'incompatible_protocol' && e.data.idle === true)) throw e;
    await stopIncompatibleDaemon(paths, e);
  }
  if (first) return first;
  if (opts.autoStart === false) {
    throw new AstraError('daemon_not_running', 'no Astra daemon is running; start one with `astra daemon start`', {
      recordPath: paths.recordPath,
    });
  }
  ensurePrivateDir(paths.runtimeDir);
  const startTimeoutMs = opts.startTimeoutMs ?? 15_000;
  const got = await spawnLockOrDaemon(paths, opts, startTimeoutMs);
  if ('conn' in got) return got;
  try {
    const again = await tryConnect(paths, opts);
    if (again) return again;
    // A restart that began while we took the lock: its daemon, not ours.
    if (!opts.explicitStart && restartInProgress(paths.runtimeDir)) {
      await got.release();
      return await connectOrSpawn(opts);
    }
    return await startAndWait(paths, env, opts, startTimeoutMs);
  } finally {
    await got.release();
  }
}

/**
 * Takes the spawn lock, or connects to the daemon whoever holds it started: racing clients do not
 * queue through the lock once a daemon answers. A lock that vanishes under a client (taken over as
 * stale by another at the worst moment) is only a reason to look again (discovery/locks.ts).
 */
async function spawnLockOrDaemon(paths: AstraPaths, opts: ConnectOptions, timeoutMs: number): Promise<Connected | { release: ReleaseLock }> {
  // At least the lock's stale time, so a dead holder's lock is reached.
  let deadline = Date.now() + Math.max(timeoutMs, SPAWN_LOCK_STALE_MS + 2_000);
  let toldRestart: number | undefined;
  for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
    // `astra daemon restart` is starting the daemon: wait for it, never start one of ours.
    const restart = opts.explicitStart ? undefined : restartInProgress(paths.runtimeDir);
    if (restart === undefined) {
      const release = await tryAcquireLock(paths.spawnLockPath, { stale: SPAWN_LOCK_STALE_MS });
      if (release) return { release };
    }
    const c = await tryConnect(paths, opts);
    if (c) return c;
    if (restart !== undefined && Date.now() < restart.until) {
      if (toldRestart !== restart.pid) opts.onRestartWait?.({ pid: restart.pid, until: restart.until });
      toldRestart = restart.pid;
      deadline = Math.max(deadline, restart.until + 2_000);
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 50));
      continue;
    }
    if (Date.now() >= deadline) {
      throw new AstraError(
        'lock_timeout',
        `another Astra process has been starting the daemon for ${Math.round(Math.max(timeoutMs, SPAWN_LOCK_STALE_MS + 2_000) / 1000)} s ` +
          `and none answers yet (it holds ${paths.spawnLockPath}.lock); try again, and see \`astra daemon logs\` if it persists`,
        { targetFile: paths.spawnLockPath },
      );
    }
    // Jittered: racing clients should not look in lockstep.
    await new Promise((r) => setTimeout(r, delay / 2 + Math.random() * delay));
  }
}

/** Starts a daemon (the spawn lock held) and waits until it answers, or says why it did not. */
async function startAndWait(paths: AstraPaths, env: NodeJS.ProcessEnv, opts: ConnectOptions, startTimeoutMs: number): Promise<Connected> {
  const deadline = Date.now() + startTimeoutMs;
  const logStart = logSize(paths.logFile);
  const child = spawnDaemon(paths, env, opts.daemonArgs ?? [], opts.explicitStart === true);
  let exitCode: number | null | undefined;
  void child.exited.then((code) => (exitCode = code));
  // Poll, but wake as soon as the daemon says it is ready (a daemon that never says so, such as
  // an older build, is still found by polling).
  let readySignalled = false;
  void child.ready.then(() => (readySignalled = true));
  for (let delay = 10; Date.now() < deadline; delay = Math.min(delay * 2, 100)) {
    const c = await tryConnect(paths, opts);
    if (c) return { ...c, spawned: true };
    if (exitCode !== undefined && exitCode !== 0) {
      throw new AstraError(
        'spawn_failed',
        `the daemon exited with code ${exitCode} before answering; it wrote to ${paths.logFile}:\n${logLinesSince(paths.logFile, logStart)}`,
        { logFile: paths.logFile, exitCode },
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const sleep = new Promise((r) => (timer = setTimeout(r, delay)));
    await (readySignalled ? sleep : Promise.race([sleep, child.ready]));
    clearTimeout(timer);
  }
  throw new AstraError(
    'spawn_failed',
    `the daemon did not answer within ${startTimeoutMs} ms; it wrote to ${paths.logFile}:\n${logLinesSince(paths.logFile, logStart)}`,
    { logFile: paths.logFile },
  );
}

/** An incompatible_protocol that names both versions and the fix, whatever the daemon's own message said. */
export function explainIncompatible(e: AstraError, env: NodeJS.ProcessEnv): AstraError {
  let record: DiscoveryRecord | undefined;
  try {
    record = readRecord(resolvePaths(env).recordPath);
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
