// Reconnect with resume: after a dropped connection, connect (or start a daemon) again with backoff,
// reclaim leases and resume subscriptions, then let waiting calls through. A daemon that dies at
// start is not started again and again: each spawn that died before answering doubles the wait
// before the next, and after MAX_DEAD_SPAWNS of them the client gives up with the daemon's log.
import { AstraError, type ErrorReason } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { toAstraError } from './results.js';
import type { Connected } from './connect.js';

/** Errors no amount of reconnecting fixes. */
const FATAL_CONNECT_REASONS: ReadonlySet<ErrorReason> = new Set(['incompatible_protocol', 'unsafe_runtime_dir', 'socket_path_too_long']);
/** Spawned daemons that exited before answering, in one reconnect, before the client gives up. */
export const MAX_DEAD_SPAWNS = 3;
/** The least wait after the first daemon that died at start; doubled after each further one. */
const DEAD_SPAWN_DELAY_MS = 500;

export interface ReconnectHost {
  /** Still reconnecting (not closed, stopped or connected meanwhile). */
  reconnecting(): boolean;
  open(): Promise<Connected>;
  /** Makes `c` the client's connection (restore runs on it next). */
  adopt(c: Connected): void;
  /** Reclaims leases and resumes subscriptions on the adopted connection. */
  restore(conn: Connection): Promise<void>;
  isCurrent(conn: Connection): boolean;
  /** The adopted connection failed during restore: drop it and try again. */
  abandon(conn: Connection): void;
  /** Restored: the client is connected again. */
  done(c: Connected, attempts: number): void;
  fail(err: AstraError): void;
  readonly signal: AbortSignal;
}

/** A spawn_failed for a daemon that exited before answering (connect.ts puts its exit code in data). */
function diedAtStart(err: AstraError): boolean {
  return err.reason === 'spawn_failed' && typeof err.data.exitCode === 'number';
}

export async function reconnect(host: ReconnectHost, cfg: Required<BackoffOptions>): Promise<void> {
  const started = Date.now();
  let lastError: AstraError | undefined;
  let deadSpawns = 0;
  for (let attempt = 0; host.reconnecting(); attempt++) {
    let delay = backoffDelay(attempt, cfg);
    if (deadSpawns > 0) delay = Math.max(delay, DEAD_SPAWN_DELAY_MS * 2 ** (deadSpawns - 1));
    if (Date.now() + delay - started > cfg.maxElapsedMs) {
      host.fail(
        new AstraError(
          lastError?.reason ?? 'daemon_not_running',
          `could not reconnect to the Astra daemon within ${cfg.maxElapsedMs} ms (${attempt} attempts)` + (lastError ? `; last error: ${lastError.message}` : ''),
          { attempts: attempt },
        ),
      );
      return;
    }
    await sleep(delay, host.signal);
    if (!host.reconnecting()) return;
    let c: Connected;
    try {
      c = await host.open();
    } catch (e) {
      lastError = toAstraError(e);
      if (FATAL_CONNECT_REASONS.has(lastError.reason)) {
        host.fail(lastError);
        return;
      }
      if (diedAtStart(lastError) && ++deadSpawns >= MAX_DEAD_SPAWNS) {
        host.fail(
          new AstraError(
            'spawn_failed',
            `the daemon died at start ${deadSpawns} times in a row, so it is not started again; ${lastError.message}\n` +
              'fix what the log says (a full disk, a bad ASTRA_* setting, ...), then connect again or run `astra daemon start`',
            { ...lastError.data, attempts: attempt + 1, deadSpawns },
          ),
        );
        return;
      }
      continue;
    }
    if (!host.reconnecting()) {
      c.conn.close();
      return;
    }
    host.adopt(c);
    try {
      await host.restore(c.conn);
    } catch (e) {
      lastError = toAstraError(e);
      host.abandon(c.conn);
      continue;
    }
    if (!host.isCurrent(c.conn)) continue;
    host.done(c, attempt + 1);
    return;
  }
}

/** Calls waiting for the reconnect: let through once connected, or rejected when the client stops or closes. */
export class Waiters {
  private waiting: { resolve: (c: Connection) => void; reject: (e: AstraError) => void }[] = [];

  /** Waits up to `timeoutMs` (0 = no limit) for resolveAll. */
  wait(timeoutMs: number): Promise<Connection> {
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
      this.waiting.push(waiter);
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.waiting = this.waiting.filter((w) => w !== waiter);
          reject(new AstraError('connection_closed', `not connected to the Astra daemon: still reconnecting after ${timeoutMs} ms; try again later`));
        }, timeoutMs);
      }
    });
  }

  resolveAll(conn: Connection): void {
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) w.resolve(conn);
  }

  rejectAll(err: AstraError): void {
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) w.reject(err);
  }
}
