// What an application passes to AstraClient.connect and what the client tells it (its events).
import { AstraError, type Decision, type ServerParamsOf } from '../protocol/index.js';
import type { BackoffOptions } from './backoff.js';
import type { ConnectOptions, RestartWaitInfo, ValidateMode, WaitingInfo } from './connect-options.js';
import type { ControllerLease } from './lease.js';
import type { LeaseLost } from './leases.js';
import type { Resynced } from './subscriptions.js';

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
  /** Take the experimental surface (capabilities.experimentalApi): experimental methods and event fields. Default false. */
  experimentalApi?: boolean;
  /**
   * How much of what the daemon sends is checked. 'envelope' (the default): frames from the daemon
   * the token authenticated, speaking this protocol version, are trusted for shape — each frame's
   * envelope, each event's `sessionId`, `seq`, `ts`, `type` and that `data` is a map are checked,
   * not the data of each event type. 'full': every frame is walked and every event checked against
   * the schema of its type (for tests and debugging a daemon; costs about a quarter of the client's
   * CPU on a busy stream). ASTRA_CLIENT_VALIDATE=full in the environment sets 'full' when this is unset.
   */
  validate?: ValidateMode;
  /** A running daemon has not answered the handshake for about a second (hung?): say so (see ConnectOptions). */
  onWaiting?: (info: WaitingInfo) => void;
  /** No daemon answers and `astra daemon restart` is starting one: this client waits for it (see ConnectOptions). */
  onRestartWait?: (info: RestartWaitInfo) => void;
}

export interface AcquireControllerOptions {
  /** Demote the current holder (it is told with lease/revoked). */
  takeover?: boolean;
  /** A resume token from an earlier grant (e.g. persisted before a crash): reclaims the lease within grace. */
  resumeToken?: string;
}

export type ApprovalRequest = ServerParamsOf<'approval/request'>;
/** `optionId`: one of the request's `options` (an acp agent's), whose kind agrees with the decision. */
export type ApprovalAnswer = Decision | { decision: Decision; optionId?: string };
export type ApprovalHandler = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** 'stopped': the daemon was stopped on purpose (`astra daemon stop`); nothing reconnects until resume(). */
export type ClientState = 'connected' | 'reconnecting' | 'stopped' | 'closed';

export interface ClientEvents {
  /** The connection dropped (not by close(), not by a deliberate stop); the client is reconnecting unless reconnect is off. */
  disconnected: { error: AstraError | undefined; daemonShuttingDown: boolean; shutdownReason?: string };
  /** Connected again, leases reclaimed and subscriptions resumed. */
  reconnected: { instanceId: string; connectionId: string; daemonPid: number; attempts: number; daemonRestarted: boolean };
  /** The new connection reached a different daemon instance (the old one crashed, stopped or was replaced). */
  daemonRestarted: { previousInstanceId: string; instanceId: string; daemonPid: number };
  /**
   * The daemon said it was stopped on purpose (daemon/shuttingDown reason 'stopped') and went: the
   * client does not start it again. Leases and subscriptions are kept; `client.resume()` starts a
   * daemon and restores them, as a reconnect does (`reconnected` follows).
   */
  stopped: { message: string };
  /** Control of a session was lost: taken over, expired, or not reclaimable after a reconnect. */
  /** `holder` is who controls the session now, when the daemon said (after a takeover). */
  leaseLost: LeaseLost;
  /** A lease was reclaimed after a reconnect; its resumeToken changed (persist the new one). */
  leaseReclaimed: { sessionId: string; lease: ControllerLease };
  /** A subscription's cursor was ahead of the session's head (`cursor_ahead`): it goes on from headSeq. */
  resynced: Resynced;
  /**
   * What the daemon says about a session that no event can carry (session/notice): reason
   * 'disk_full' — the session's events cannot be written, so none arrive and its running turn is
   * being stopped; its error and turn.completed events come once there is space — and 'disk_ok'
   * (they are written and arrive again). Ignore a reason you do not know.
   */
  notice: { sessionId: string; reason: string; message: string; path?: string };
  /**
   * An approval this client was asked (its approval handler's request) was settled another way:
   * `reason` 'answered' (elsewhere, e.g. by a later controller), 'expired', 'cancelled' (its turn
   * ended). The daemon ignores any later answer; drop the prompt.
   */
  approvalResolved: { sessionId: string; approvalId: string; decision: 'approve' | 'deny'; reason: string };
  /** Something went wrong outside any call: a bad frame from the daemon, or the client gave up reconnecting (then it is closed). */
  error: AstraError;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_PING_INTERVAL_MS = 15_000;
export const DEFAULT_PING_TIMEOUT_MS = 10_000;

/** Throws invalid_params for a bad clientName, a time that is not a number of ms ≥ 0, or an unknown validate mode. */
export function checkClientOptions(opts: AstraClientOptions): void {
  if (typeof opts?.clientName !== 'string' || opts.clientName.length === 0 || opts.clientName.length > 256)
    throw new AstraError('invalid_params', 'clientName must be a non-empty string of at most 256 characters');
  for (const k of ['requestTimeoutMs', 'pingIntervalMs', 'pingTimeoutMs', 'startTimeoutMs'] as const) {
    const v = opts[k];
    if (v !== undefined && (typeof v !== 'number' || Number.isNaN(v) || v < 0))
      throw new AstraError('invalid_params', `${k} must be a number of milliseconds ≥ 0, got ${String(v)}`);
  }
  if (opts.validate !== undefined && opts.validate !== 'envelope' && opts.validate !== 'full')
    throw new AstraError('invalid_params', `validate must be 'envelope' or 'full', got ${String(opts.validate)}`);
}

/** The application's options that connecting takes (`startRequested`: resume() asked for a daemon even without autoStart). */
export function connectOptionsOf(o: AstraClientOptions, startRequested: boolean): ConnectOptions {
  return {
    clientName: o.clientName,
    ...(o.clientVersion !== undefined ? { clientVersion: o.clientVersion } : {}),
    ...(startRequested ? { autoStart: true } : o.autoStart !== undefined ? { autoStart: o.autoStart } : {}),
    ...(o.home !== undefined ? { home: o.home } : {}),
    ...(o.env !== undefined ? { env: o.env } : {}),
    ...(o.startTimeoutMs !== undefined ? { startTimeoutMs: o.startTimeoutMs } : {}),
    ...(o.daemonArgs !== undefined ? { daemonArgs: o.daemonArgs } : {}),
    ...(o.replaceIdleIncompatibleDaemon !== undefined ? { replaceIdleIncompatibleDaemon: o.replaceIdleIncompatibleDaemon } : {}),
    ...(o.optOutNotificationMethods !== undefined ? { optOutNotificationMethods: o.optOutNotificationMethods } : {}),
    ...(o.experimentalApi === true ? { experimentalApi: true } : {}),
    ...(o.onWaiting !== undefined ? { onWaiting: o.onWaiting } : {}),
    ...(o.onRestartWait !== undefined ? { onRestartWait: o.onRestartWait } : {}),
  };
}
