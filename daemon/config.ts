// The daemon's settings: what an embedder passes, what the environment says, and each default once.
// Where the runtime or the lease manager owns a default (catch-up cache, direct I/O, lease grace),
// it is imported or left to them rather than repeated here.
import { AstraError, LIMITS } from '../protocol/index.js';
import { DEFAULT_GRACE_MS } from '../lease/index.js';
import type { AstraPaths } from '../discovery/index.js';
import type { Engine } from '../runtime/index.js';
import type { Logger } from './logger.js';

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
  /** Shell commands in a pseudo-terminal where one can be had ('auto', the default) or on pipes ('pipes'); env ASTRA_TERMINAL. */
  terminal?: 'auto' | 'pipes';
  /** A connection with bytes queued that takes none of them for this long is closed (slow_consumer). */
  slowConsumerMs?: number;
  /** A connection that sends nothing (not even ping) for this long is closed. */
  silentConnectionMs?: number;
  selfCheckMs?: number;
  maxInputChars?: number;
  /** Approvals of a session created without approvalTimeoutMs expire (denied) after this long; 0 = never; env ASTRA_APPROVAL_TIMEOUT_MS. Default 1 h. */
  approvalTimeoutMs?: number;
  /** A loaded session nobody uses (no subscriber, turn or approval) is closed after this long. */
  sessionUnloadMs?: number;
  /** Quiet this long (no request but pings, no connection coming or going, no turn), the daemon runs a full GC and malloc_trim once (idle-release.ts); 0 = never. */
  idleReleaseMs?: number;
  logger?: Logger;
  now?: () => number;
}

/** The resolved settings. The two runtime-owned ones stay undefined unless set: the runtime defaults them. */
export interface DaemonConfig {
  idleTimeoutMs: number;
  graceMs: number;
  maxConnections: number;
  maxInFlightPerConnection: number;
  maxSubscriptionsPerConnection: number;
  maxQueuedBytes: number;
  slowConsumerMs: number;
  silentConnectionMs: number;
  selfCheckMs: number;
  maxInputChars: number;
  approvalTimeoutMs: number;
  sessionUnloadMs: number;
  idleReleaseMs: number;
  catchUpCacheBytes: number | undefined;
  journalDirectIO: boolean | undefined;
  terminal: 'auto' | 'pipes';
}

export const DEFAULTS = {
  idleTimeoutMs: 10 * 60_000,
  maxConnections: 256,
  maxInFlightPerConnection: 256,
  maxSubscriptionsPerConnection: 256,
  maxQueuedBytes: 64 * 1024 * 1024,
  slowConsumerMs: 30_000,
  silentConnectionMs: 120_000,
  selfCheckMs: 2_000,
  sessionUnloadMs: 10 * 60_000,
  approvalTimeoutMs: 60 * 60_000,
  // Past the screen worker's 30 s idle stop (pty/remote-screen.ts), so its thread is gone by then.
  idleReleaseMs: 45_000,
} as const;

/** How often housekeeping (session unload, slow and silent connections) runs. */
export const HOUSEKEEPING_MS = 1_000;

function flagFromEnv(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw === '1' || raw === 'true' || raw === 'on') return true;
  if (raw === '0' || raw === 'false' || raw === 'off') return false;
  throw new AstraError('invalid_params', `${name} must be 1 or 0 (on or off), got "${raw}"`);
}

function terminalFromEnv(env: NodeJS.ProcessEnv): 'auto' | 'pipes' {
  const raw = env.ASTRA_TERMINAL;
  if (raw === undefined || raw === '' || raw === 'auto') return 'auto';
  if (raw === 'pipes') return 'pipes';
  throw new AstraError('invalid_params', `ASTRA_TERMINAL must be auto or pipes, got "${raw}"`);
}

function numberFromEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new AstraError('invalid_params', `${name} must be a number of milliseconds ≥ 0, got "${raw}"`);
  return n;
}

export function resolveConfig(opts: DaemonOptions, env: NodeJS.ProcessEnv): DaemonConfig {
  return {
    idleTimeoutMs: opts.idleTimeoutMs ?? numberFromEnv(env, 'ASTRA_IDLE_TIMEOUT_MS') ?? DEFAULTS.idleTimeoutMs,
    graceMs: opts.graceMs ?? numberFromEnv(env, 'ASTRA_LEASE_GRACE_MS') ?? DEFAULT_GRACE_MS,
    maxConnections: opts.maxConnections ?? numberFromEnv(env, 'ASTRA_MAX_CONNECTIONS') ?? DEFAULTS.maxConnections,
    maxInFlightPerConnection: opts.maxInFlightPerConnection ?? DEFAULTS.maxInFlightPerConnection,
    maxSubscriptionsPerConnection: opts.maxSubscriptionsPerConnection ?? DEFAULTS.maxSubscriptionsPerConnection,
    maxQueuedBytes: opts.maxQueuedBytes ?? numberFromEnv(env, 'ASTRA_MAX_QUEUED_BYTES') ?? DEFAULTS.maxQueuedBytes,
    slowConsumerMs: opts.slowConsumerMs ?? numberFromEnv(env, 'ASTRA_SLOW_CONSUMER_MS') ?? DEFAULTS.slowConsumerMs,
    silentConnectionMs: opts.silentConnectionMs ?? numberFromEnv(env, 'ASTRA_SILENT_CONNECTION_MS') ?? DEFAULTS.silentConnectionMs,
    selfCheckMs: opts.selfCheckMs ?? numberFromEnv(env, 'ASTRA_SELF_CHECK_MS') ?? DEFAULTS.selfCheckMs,
    maxInputChars: opts.maxInputChars ?? LIMITS.maxInputChars,
    approvalTimeoutMs: opts.approvalTimeoutMs ?? numberFromEnv(env, 'ASTRA_APPROVAL_TIMEOUT_MS') ?? DEFAULTS.approvalTimeoutMs,
    sessionUnloadMs: opts.sessionUnloadMs ?? numberFromEnv(env, 'ASTRA_SESSION_UNLOAD_MS') ?? DEFAULTS.sessionUnloadMs,
    idleReleaseMs: opts.idleReleaseMs ?? numberFromEnv(env, 'ASTRA_IDLE_RELEASE_MS') ?? DEFAULTS.idleReleaseMs,
    catchUpCacheBytes: opts.catchUpCacheBytes ?? numberFromEnv(env, 'ASTRA_CATCHUP_CACHE_BYTES'),
    journalDirectIO: opts.journalDirectIO ?? flagFromEnv(env, 'ASTRA_JOURNAL_DIRECT_IO'),
    terminal: opts.terminal ?? terminalFromEnv(env),
  };
}
