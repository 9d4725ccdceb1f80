// Exponential backoff with full jitter: the n-th delay is uniform in [0, min(max, initial * 2^n)],
// which spreads many clients reconnecting to one restarted daemon.

import { AstraError } from '../protocol/index.js';

export interface BackoffOptions {
  /** First delay's upper bound (default 100 ms). */
  initialDelayMs?: number;
  /** Cap on any one delay (default 5 s). */
  maxDelayMs?: number;
  /** Give up once this much time has passed since the first failure (default 60 s; Infinity = never). */
  maxElapsedMs?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffOptions> = { initialDelayMs: 100, maxDelayMs: 5_000, maxElapsedMs: 60_000 };

export function backoffDelay(attempt: number, opts: Required<BackoffOptions>, random: () => number = Math.random): number {
  const ceiling = Math.min(opts.maxDelayMs, opts.initialDelayMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

export function resolveBackoff(opts: BackoffOptions | undefined): Required<BackoffOptions> {
  const out = { ...DEFAULT_BACKOFF, ...(opts ?? {}) };
  for (const [k, v] of Object.entries(out)) {
    if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw new AstraError('invalid_params', `reconnect.${k} must be a number of milliseconds ≥ 0, got ${String(v)}`);
  }
  return out;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
